// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s

// A strided slice is one tensor.extract_slice; its gradient one tensor.insert_slice.
// CHECK-LABEL: func.func @slice_and_scatter
func.func @slice_and_scatter(%x: tensor<5x3xf32>, %g: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<5x3xf32>) {
  // CHECK: tensor.extract_slice %{{.*}}[1, 0] [2, 3] [2, 1] : tensor<5x3xf32> to tensor<2x3xf32>
  %0 = gt.slice %x {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : tensor<5x3xf32> -> tensor<2x3xf32>
  // CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[1, 0] [2, 3] [2, 1] : tensor<2x3xf32> into tensor<5x3xf32>
  %1 = gt.slice_scatter %x, %g {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : tensor<5x3xf32>, tensor<2x3xf32> -> tensor<5x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<5x3xf32>
}

// -----

// concat inserts each input at its running offset along the axis.
// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x7xf32> {
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<2x7xf32>
  // CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0] [2, 3] [1, 1]
  // CHECK: tensor.insert_slice %{{.*}} into %[[A]][0, 3] [2, 4] [1, 1]
  %0 = gt.concat %a, %b {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// gather reads the input with tensor.extract at a clamped index.
// CHECK-LABEL: func.func @gather
func.func @gather(%x: tensor<4x10xf32>, %i: tensor<4x1xi64>) -> tensor<4x1xf32> {
  // CHECK: linalg.generic
  // CHECK: arith.maxsi
  // CHECK: arith.minsi
  // CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<4x10xf32>
  %0 = gt.gather %x, %i {axis = 1 : i64} : tensor<4x10xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// scatter_add (gather's gradient) is a reduction over the index axis: no atomics.
// CHECK-LABEL: func.func @scatter_add
func.func @scatter_add(%i: tensor<4x3xi64>, %g: tensor<4x3xf32>) -> tensor<4x10xf32> {
  // CHECK: linalg.fill
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
  // CHECK: arith.cmpi eq
  // CHECK: arith.select
  // CHECK: arith.addf
  %0 = gt.scatter_add %i, %g {axis = 1 : i64} : tensor<4x3xi64>, tensor<4x3xf32> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// With one index per row (cross-entropy's one-hot gradient) it is elementwise: no zero-filled
// buffer, no reduction loop, so elementwise fusion can fold it into its consumers.
// CHECK: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @scatter_add_one_hot
func.func @scatter_add_one_hot(%i: tensor<4x1xi64>, %g: tensor<4x1xf32>) -> tensor<4x10xf32> {
  // CHECK-NOT: linalg.fill
  // CHECK: linalg.generic {indexing_maps = [#[[$ROW]], #[[$ROW]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
  // CHECK: linalg.index 1
  // CHECK: arith.cmpi eq
  // CHECK: arith.select
  // CHECK: arith.addf
  %0 = gt.scatter_add %i, %g {axis = 1 : i64} : tensor<4x1xi64>, tensor<4x1xf32> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// The sum of a scatter_add over its axis is the sum of its source (negated through a neg):
// the [4, 10] result is not built for it.
// CHECK-LABEL: func.func @sum_of_scatter_add
// CHECK-SAME: (%[[I:.*]]: tensor<4x1xi64>, %[[G:.*]]: tensor<4x1xf32>)
func.func @sum_of_scatter_add(%i: tensor<4x1xi64>, %g: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4xf32>) {
  // CHECK-NOT: tensor<4x10xf32>
  // CHECK: linalg.generic {{.*}} ins(%[[G]] : tensor<4x1xf32>)
  // CHECK: arith.negf
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<4x1xf32>)
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[G]] : tensor<4x1xf32>)
  // CHECK-NOT: tensor<4x10xf32>
  %0 = gt.scatter_add %i, %g {axis = 1 : i64} : tensor<4x1xi64>, tensor<4x1xf32> -> tensor<4x10xf32>
  %1 = gt.neg %0 : tensor<4x10xf32> -> tensor<4x10xf32>
  %2 = gt.sum %1 {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %3 = gt.sum %0 {axes = array<i64: 1>} : tensor<4x10xf32> -> tensor<4xf32>
  return %2, %3 : tensor<4x1xf32>, tensor<4xf32>
}

// -----

// argmax keeps (value, index) as two outputs of one reduction; the index is the result.
// CHECK-LABEL: func.func @argmax
func.func @argmax(%x: tensor<4x3xf32>) -> tensor<4xi64> {
  // CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
  // CHECK: arith.cmpf ogt
  // CHECK: return %[[R]]#1
  %0 = gt.argmax %x {axes = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Integer floor division never traps: the divisor 0 (and -1) is replaced before arith.divsi.
// CHECK-LABEL: func.func @floor_divide
func.func @floor_divide(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  // CHECK: arith.select
  // CHECK: arith.divsi
  // CHECK: arith.remsi
  %0 = gt.floor_divide %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
