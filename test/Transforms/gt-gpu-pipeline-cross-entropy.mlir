// RUN: gt-opt %s --gt-lower-to-linalg --canonicalize --gt-gpu-pipeline | FileCheck %s

// Cross-entropy's forward and backward as one hot region (the GPT example's loss, written by
// GT_DUMP_KERNELS on a CPU worker, its buffers made function arguments and results). On an H100
// this region stayed eager: the 0-d int64 `full` of ignore_index lowers to a load, a conversion,
// an allocation and a store at the top of the function, and gt-gpu-loops cut that serial code in
// two at the allocation ("'memref.load' op computes a value used outside its serial region").
// CHECK: llvm.func @kernel
// CHECK: gpu.launch_func
module {
  func.func @kernel(%in0: tensor<64x65xf32>, %in1: tensor<64xi64>, %in2: tensor<i64>, %in3: tensor<f64>, %in4: tensor<f64>) -> (tensor<f32>, tensor<64x65xf32>) {
    %5 = gt.max %in0 {axes = array<i64: 1>, keepdims = true} : tensor<64x65xf32> -> tensor<64x1xf32>
    %6 = gt.sub %in0, %5 : tensor<64x65xf32>, tensor<64x1xf32> -> tensor<64x65xf32>
    %7 = gt.exp %6 : tensor<64x65xf32> -> tensor<64x65xf32>
    %8 = gt.sum %7 {axes = array<i64: 1>, keepdims = true} : tensor<64x65xf32> -> tensor<64x1xf32>
    %9 = gt.log %8 : tensor<64x1xf32> -> tensor<64x1xf32>
    %10 = gt.add %9, %5 : tensor<64x1xf32>, tensor<64x1xf32> -> tensor<64x1xf32>
    %11 = gt.sub %in0, %10 : tensor<64x65xf32>, tensor<64x1xf32> -> tensor<64x65xf32>
    %12 = gt.ne %in1, %in2 : tensor<64xi64>, tensor<i64> -> tensor<64xi1>
    %13 = gt.full(%in3 : tensor<f64>) : tensor<i64>
    %14 = gt.where %12, %in1, %13 : tensor<64xi1>, tensor<64xi64>, tensor<i64> -> tensor<64xi64>
    %15 = gt.reshape %14 : tensor<64xi64> -> tensor<64x1xi64>
    %16 = gt.gather %11, %15 {axis = 1 : i64} : tensor<64x65xf32>, tensor<64x1xi64> -> tensor<64x1xf32>
    %17 = gt.reshape %16 : tensor<64x1xf32> -> tensor<64xf32>
    %18 = gt.cast %12 : tensor<64xi1> -> tensor<64xf32>
    %19 = gt.neg %17 : tensor<64xf32> -> tensor<64xf32>
    %20 = gt.mul %19, %18 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
    %21 = gt.sum %18 {axes = array<i64: 0>} : tensor<64xf32> -> tensor<f32>
    %22 = gt.sum %20 {axes = array<i64: 0>} : tensor<64xf32> -> tensor<f32>
    %23 = gt.div %22, %21 : tensor<f32>, tensor<f32> -> tensor<f32>
    %24 = gt.full(%in4 : tensor<f64>) : tensor<f32>
    %25 = gt.div %24, %21 : tensor<f32>, tensor<f32> -> tensor<f32>
    %26 = gt.reshape %25 : tensor<f32> -> tensor<1xf32>
    %27 = gt.broadcast_to %26 : tensor<1xf32> -> tensor<64xf32>
    %28 = gt.mul %27, %18 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
    %29 = gt.neg %28 : tensor<64xf32> -> tensor<64xf32>
    %30 = gt.reshape %29 : tensor<64xf32> -> tensor<64x1xf32>
    %31 = gt.scatter_add %15, %30 {axis = 1 : i64} : tensor<64x1xi64>, tensor<64x1xf32> -> tensor<64x65xf32>
    %32 = gt.neg %31 : tensor<64x65xf32> -> tensor<64x65xf32>
    %33 = gt.sum %32 {axes = array<i64: 1>, keepdims = true} : tensor<64x65xf32> -> tensor<64x1xf32>
    %34 = gt.div %33, %8 : tensor<64x1xf32>, tensor<64x1xf32> -> tensor<64x1xf32>
    %35 = gt.broadcast_to %34 : tensor<64x1xf32> -> tensor<64x65xf32>
    %36 = gt.mul %35, %7 : tensor<64x65xf32>, tensor<64x65xf32> -> tensor<64x65xf32>
    %37 = gt.add %31, %36 : tensor<64x65xf32>, tensor<64x65xf32> -> tensor<64x65xf32>
    return %23, %37 : tensor<f32>, tensor<64x65xf32>
  }
}