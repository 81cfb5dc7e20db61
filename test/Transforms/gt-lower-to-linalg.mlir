// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s

// Broadcasting becomes the indexing map of the smaller operand.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
func.func @add_broadcast(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x3xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
  // CHECK-SAME: outs(%[[E]] : tensor<4x3xf32>)
  // CHECK: arith.addf
  %0 = gt.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A size-1 axis broadcasts through a constant 0 index; int64 + float32 computes in float32.
// CHECK-DAG: #[[$COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @mixed
func.func @mixed(%a: tensor<4x3xf32>, %b: tensor<4x1xi64>) -> tensor<4x3xf32> {
  // CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$COL]], #{{.*}}]
  // CHECK: arith.sitofp %{{.*}} : i64 to f32
  // CHECK: arith.mulf
  %0 = gt.mul %a, %b : tensor<4x3xf32>, tensor<4x1xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @sum_keepdims
func.func @sum_keepdims(%a: tensor<4x3xf32>) -> tensor<4x1xf32> {
  // CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
  // CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x3xf32>) outs(%[[INIT]] : tensor<4xf32>)
  // CHECK: tensor.reshape %[[R]]
  %0 = gt.sum %a {axes = array<i64: 1>, keepdims = true} : tensor<4x3xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// CHECK-LABEL: func.func @max_all
func.func @max_all(%a: tensor<4x3xf32>) -> tensor<f32> {
  // CHECK: arith.constant 0xFF800000 : f32
  // CHECK: iterator_types = ["reduction", "reduction"]
  // CHECK: arith.maximumf
  %0 = gt.max %a {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[$C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "reduction"]}
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %0 = gt.matmul %a, %b : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A transpose is a generic reading through the permutation (so it fuses); a reshape that
// merges or splits neighbouring axes is a collapse_shape / expand_shape, any other a reshape.
// (The maps print before the function, so these are checked before its label.)
// CHECK-DAG: #[[$SWAP:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[$PERM:.*]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-LABEL: func.func @layout
func.func @layout(%a: tensor<4x3xf32>, %b: tensor<2x3x4xf32>)
    -> (tensor<3x4xf32>, tensor<12xf32>, tensor<2x2x3xf32>, tensor<3x4xf32>, tensor<4x2x3xf32>) {
  // CHECK: linalg.generic {indexing_maps = [#[[$SWAP]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<4x3xf32>) outs(%{{.*}} : tensor<3x4xf32>)
  %0 = gt.transpose %a {perm = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
  // CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %1 = gt.reshape %a : tensor<4x3xf32> -> tensor<12xf32>
  // CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 2, 3] : tensor<4x3xf32> into tensor<2x2x3xf32>
  %2 = gt.reshape %a : tensor<4x3xf32> -> tensor<2x2x3xf32>
  // CHECK: tensor.reshape %{{.*}} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  %3 = gt.reshape %a : tensor<4x3xf32> -> tensor<3x4xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$PERM]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>)
  %4 = gt.transpose %b {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<3x4xf32>, tensor<12xf32>, tensor<2x2x3xf32>, tensor<3x4xf32>, tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @one_hot
func.func @one_hot(%y: tensor<4xi64>) -> tensor<4x10xf32> {
  // CHECK: linalg.generic
  // CHECK: linalg.index 1
  // CHECK: arith.cmpi eq
  // CHECK: arith.uitofp
  %0 = gt.one_hot %y {num_classes = 10} : tensor<4xi64> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// CHECK-LABEL: func.func @creation
func.func @creation(%v: tensor<f64>) -> (tensor<2xf32>, tensor<2xf32>, tensor<3xf32>) {
  // CHECK: %[[C:.*]] = arith.constant 2.500000e+00 : f64
  // CHECK: %[[T:.*]] = arith.truncf %[[C]] : f64 to f32
  // A generic (not linalg.fill) so that fusion can fold it into consumers.
  // CHECK: linalg.generic {{.*}} outs(
  // CHECK-NEXT: ^bb0(%{{.*}}: f32):
  // CHECK-NEXT: linalg.yield %[[T]] : f32
  %0 = gt.full {value = 2.5} : tensor<2xf32>
  // CHECK: tensor.extract %{{.*}}[] : tensor<f64>
  %1 = gt.full(%v : tensor<f64>) : tensor<2xf32>
  // CHECK: linalg.generic
  // CHECK: math.log
  // CHECK: math.cos
  %2 = gt.randn {seed = 3} : tensor<3xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<3xf32>
}

// -----

// Data and lifetime ops are not compute: they stay.
// CHECK-LABEL: func.func @untouched
func.func @untouched(%a: tensor<4xf32>) {
  // CHECK: gt.upload
  %0 = gt.upload {blob = 0} : tensor<4xf32>
  // CHECK: gt.free
  gt.free %a : tensor<4xf32>
  return
}

// -----

// The identity permutation (a 0-d tensor's is empty, which linalg.transpose cannot hold: it
// crashed the verifier, found by gt-fuzz-worker-program) lowers to a copy.
// CHECK-LABEL: func.func @transpose_0d
func.func @transpose_0d(%a: tensor<f32>) -> tensor<f32> {
  // CHECK-NOT: linalg.transpose
  // CHECK: linalg.generic
  %0 = gt.transpose %a {perm = array<i64>} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}
