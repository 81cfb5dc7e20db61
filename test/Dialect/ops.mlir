// Round trip: every gt op prints and parses back unchanged.
// RUN: gt-opt %s | gt-opt | FileCheck %s

// CHECK-LABEL: func.func @creation
func.func @creation(%v: tensor<f64>, %s: tensor<i64>) {
  // CHECK: gt.upload {blob = 0 : i64} : tensor<2x3xf32>
  %0 = gt.upload {blob = 0} : tensor<2x3xf32>
  // CHECK: gt.full {value = 1.500000e+00 : f64} : tensor<2xi64>
  %1 = gt.full {value = 1.5} : tensor<2xi64>
  // CHECK: gt.full(%{{.*}} : tensor<f64>) : tensor<4xf32>
  %2 = gt.full(%v : tensor<f64>) : tensor<4xf32>
  // CHECK: gt.randn {seed = 7 : i64} : tensor<3x3xf32>
  %3 = gt.randn {seed = 7} : tensor<3x3xf32>
  // CHECK: gt.randn(%{{.*}} : tensor<i64>) : tensor<3xf64>
  %4 = gt.randn(%s : tensor<i64>) : tensor<3xf64>
  return
}

// CHECK-LABEL: func.func @compute
func.func @compute(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %w: tensor<3x5xf32>, %y: tensor<4xi64>) {
  // CHECK: %[[SUM:.*]] = gt.add %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %0 = gt.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: gt.sub %[[SUM]]
  %1 = gt.sub %0, %a : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %2 = gt.mul %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %3 = gt.div %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %4 = gt.pow %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %5 = gt.maximum %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: gt.neg {{.*}} : tensor<4x3xf32> -> tensor<4x3xf32>
  %6 = gt.neg %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %7 = gt.exp %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %8 = gt.log %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %9 = gt.sqrt %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %10 = gt.relu %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %11 = gt.sigmoid %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %12 = gt.tanh %a : tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: gt.cast {{.*}} : tensor<4xi64> -> tensor<4xf32>
  %13 = gt.cast %y : tensor<4xi64> -> tensor<4xf32>
  // CHECK: gt.gt {{.*}} -> tensor<4x3xi1>
  %14 = gt.gt %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %15 = gt.lt %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %16 = gt.ge %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %17 = gt.le %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %18 = gt.eq %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %19 = gt.ne %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  // CHECK: gt.where
  %20 = gt.where %14, %a, %b : tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: gt.matmul {{.*}} : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  %21 = gt.matmul %a, %w : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  // CHECK: gt.transpose {{.*}} {perm = array<i64: 1, 0>}
  %22 = gt.transpose %a {perm = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
  %23 = gt.reshape %a : tensor<4x3xf32> -> tensor<12xf32>
  %24 = gt.broadcast_to %b : tensor<3xf32> -> tensor<4x3xf32>
  // CHECK: gt.sum {{.*}} {axes = array<i64: 1>, keepdims = true}
  %25 = gt.sum %a {axes = array<i64: 1>, keepdims = true} : tensor<4x3xf32> -> tensor<4x1xf32>
  %26 = gt.mean %a {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
  %27 = gt.max %a {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
  // CHECK: gt.one_hot {{.*}} {num_classes = 10 : i64} : tensor<4xi64> -> tensor<4x10xf32>
  %28 = gt.one_hot %y {num_classes = 10} : tensor<4xi64> -> tensor<4x10xf32>
  // CHECK: gt.free {{.*}} : tensor<4x3xf32>
  gt.free %a : tensor<4x3xf32>
  return
}

// CHECK-LABEL: func.func @convolutions
func.func @convolutions(%x: tensor<8x4x28x28xf32>, %w: tensor<16x2x3x3xf32>, %g: tensor<8x16x14x14xf32>) {
  // CHECK: gt.convolution {{.*}} {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<8x4x28x28xf32>, tensor<16x2x3x3xf32> -> tensor<8x16x14x14xf32>
  %0 = gt.convolution %x, %w {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, groups = 2} : tensor<8x4x28x28xf32>, tensor<16x2x3x3xf32> -> tensor<8x16x14x14xf32>
  // CHECK: gt.convolution_backward_input {{.*}} -> tensor<8x4x28x28xf32>
  %1 = gt.convolution_backward_input %g, %w {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, groups = 2} : tensor<8x16x14x14xf32>, tensor<16x2x3x3xf32> -> tensor<8x4x28x28xf32>
  // CHECK: gt.convolution_backward_weight {{.*}} -> tensor<16x2x3x3xf32>
  %2 = gt.convolution_backward_weight %g, %x {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, groups = 2} : tensor<8x16x14x14xf32>, tensor<8x4x28x28xf32> -> tensor<16x2x3x3xf32>
  return
}

// CHECK-LABEL: func.func @max_pools
func.func @max_pools(%x: tensor<8x64x112x112xf32>, %g: tensor<8x64x56x56xf32>) {
  // CHECK: gt.max_pool {{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<8x64x112x112xf32> -> tensor<8x64x56x56xf32>
  %0 = gt.max_pool %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<8x64x112x112xf32> -> tensor<8x64x56x56xf32>
  // CHECK: gt.max_pool_backward {{.*}} -> tensor<8x64x112x112xf32>
  %1 = gt.max_pool_backward %g, %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<8x64x56x56xf32>, tensor<8x64x112x112xf32> -> tensor<8x64x112x112xf32>
  return
}
