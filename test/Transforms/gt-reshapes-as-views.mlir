// RUN: gt-opt %s --split-input-file --gt-reshapes-as-views | FileCheck %s
// RUN: gt-opt %s --split-input-file --gt-lower-to-linalg --gt-gpu-pipeline | FileCheck %s --check-prefix=GPU

// Unit axes in or out, neighbouring axes split or merged: views. A 0-d tensor expands into
// all-unit axes with no groups.
// CHECK-LABEL: func.func @views
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [64, 1] : tensor<64xf32> into tensor<64x1xf32>
// CHECK: tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: tensor.expand_shape %arg2 [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK-NOT: tensor.reshape
func.func @views(%a: tensor<64xf32>, %b: tensor<2x3x4xf32>, %c: tensor<f32>) -> (tensor<64x1xf32>, tensor<6x4xf32>, tensor<1x1xf32>) {
  %s1 = arith.constant dense<[64, 1]> : tensor<2xi64>
  %s2 = arith.constant dense<[6, 4]> : tensor<2xi64>
  %0 = tensor.reshape %a(%s1) : (tensor<64xf32>, tensor<2xi64>) -> tensor<64x1xf32>
  %1 = tensor.reshape %b(%s2) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %2 = tensor.reshape %c(%s1) : (tensor<f32>, tensor<2xi64>) -> tensor<1x1xf32>
  return %0, %1, %2 : tensor<64x1xf32>, tensor<6x4xf32>, tensor<1x1xf32>
}

// -----

// Anything else stays a tensor.reshape: axes regrouped across boundaries, the same rank.
// CHECK-LABEL: func.func @not_views
// CHECK: tensor.reshape %arg0
// CHECK: tensor.reshape %arg1
func.func @not_views(%a: tensor<2x3xf32>, %b: tensor<4x6xf32>) -> (tensor<3x2xf32>, tensor<3x8xf32>) {
  %s1 = arith.constant dense<[3, 2]> : tensor<2xi64>
  %s2 = arith.constant dense<[3, 8]> : tensor<2xi64>
  %0 = tensor.reshape %a(%s1) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %1 = tensor.reshape %b(%s2) : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x8xf32>
}

// -----

// A row sum with keepdims through a CUDA worker's pipeline: the fill of its accumulator and the
// block-parallel reduction, two kernels; the result is a view of the reduction's buffer. Before,
// bufferization copied the fill into a second buffer (a third kernel) because the reduction's
// result went on to a tensor.reshape.
// GPU-LABEL: llvm.func @rowsum_keepdims
// GPU-COUNT-2: gpu.launch_func
// GPU-NOT: gpu.launch_func
// GPU: llvm.return
func.func @rowsum_keepdims(%x: tensor<64x128xf32>) -> tensor<64x1xf32> {
  %0 = gt.sum %x {axes = array<i64: 1>, keepdims = true} : tensor<64x128xf32> -> tensor<64x1xf32>
  return %0 : tensor<64x1xf32>
}
