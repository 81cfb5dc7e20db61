// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s

// Size-generic worker kernels (a func with gt.dynamic_sizes): elementwise ops and reductions
// take `?` sizes, which the lowering reads from the operands (tensor.dim). A broadcast axis stays
// a static 1 and keeps its constant-0 indexing map.

// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @add_any_batch
func.func @add_any_batch(%a: tensor<?x?xf32>, %b: tensor<?x1xf32>) -> tensor<?x?xf32> attributes {gt.dynamic_sizes} {
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
  // CHECK-DAG: %[[D0:.*]] = tensor.dim %arg0, %[[C0]]
  // CHECK-DAG: %[[D1:.*]] = tensor.dim %arg0, %[[C1]]
  // CHECK: %[[E:.*]] = tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]]
  // CHECK-SAME: outs(%[[E]] : tensor<?x?xf32>)
  %0 = gt.add %a, %b : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// A mean divides by the product of the reduced sizes, read at run time; keepdims reshapes to a
// shape built from the kept sizes.
// CHECK-LABEL: func.func @mean_keepdims
func.func @mean_keepdims(%a: tensor<?x?xf32>) -> tensor<?x1xf32> attributes {gt.dynamic_sizes} {
  // CHECK: %[[N:.*]] = tensor.dim %arg0
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
  // CHECK: arith.index_cast
  // CHECK: arith.sitofp
  // CHECK: arith.divf
  // CHECK: tensor.from_elements
  // CHECK: tensor.reshape {{.*}} -> tensor<?x1xf32>
  %0 = gt.mean %a {axes = array<i64: 1>, keepdims = true} : tensor<?x?xf32> -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// index_select with any number of indices (an embedding's tokens): the result's axis is their
// count, read from the indices; the table stays static (its size bounds each index).
// CHECK-LABEL: func.func @index_select_any_count
func.func @index_select_any_count(%t: tensor<65x16xf32>, %i: tensor<?xi64>) -> tensor<?x16xf32> attributes {gt.dynamic_sizes} {
  // CHECK: %[[N:.*]] = tensor.dim %arg1
  // CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x16xf32>
  // CHECK: linalg.generic
  // CHECK-SAME: outs(%[[E]] : tensor<?x16xf32>)
  // CHECK: arith.constant 64 : i64
  // CHECK: tensor.extract %arg0
  %0 = gt.index_select %t, %i {axis = 0 : i64} : tensor<65x16xf32>, tensor<?xi64> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
