// RUN: gt-opt %s --split-input-file --gt-fold-extracts | FileCheck %s

// An extract from an elementwise generic computes that element from the generic's inputs;
// the generic, now unused, goes away.
// CHECK-LABEL: func.func @one_element
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x1xf32>, %[[I:.*]]: index)
func.func @one_element(%x: tensor<4x8xf32>, %b: tensor<4x1xf32>, %i: index) -> f32 {
  // CHECK-NOT: linalg.generic
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[XI:.*]] = tensor.extract %[[X]][%[[I]], %[[I]]]
  // CHECK-DAG: %[[BI:.*]] = tensor.extract %[[B]][%[[I]], %[[C0]]]
  // CHECK: %[[S:.*]] = arith.subf %[[XI]], %[[BI]]
  // CHECK: return %[[S]]
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %d = arith.subf %in, %bias : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %v = tensor.extract %y[%i, %i] : tensor<4x8xf32>
  return %v : f32
}

// -----

// linalg.index in the body becomes the extracted position.
// CHECK-LABEL: func.func @index_in_body
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[I:.*]]: index)
func.func @index_in_body(%x: tensor<8xf32>, %i: index) -> f32 {
  // CHECK-NOT: linalg.generic
  // CHECK: arith.index_cast %[[I]]
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 0 : index
    %k = arith.index_cast %j : index to i64
    %f = arith.sitofp %k : i64 to f32
    %s = arith.addf %in, %f : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %v = tensor.extract %y[%i] : tensor<8xf32>
  return %v : f32
}

// -----

// A result that is also used whole stays computed once: no element is computed twice.
// CHECK-LABEL: func.func @also_used_whole
func.func @also_used_whole(%x: tensor<8xf32>, %i: index) -> (f32, tensor<8xf32>) {
  // CHECK: %[[Y:.*]] = linalg.generic
  // CHECK: tensor.extract %[[Y]]
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %v = tensor.extract %y[%i] : tensor<8xf32>
  return %v, %y : f32, tensor<8xf32>
}

// -----

// A reduction is not elementwise: its extract stays.
// CHECK-LABEL: func.func @reduction
func.func @reduction(%x: tensor<4x8xf32>, %i: index) -> f32 {
  // CHECK: %[[R:.*]] = linalg.generic
  // CHECK: tensor.extract %[[R]]
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %v = tensor.extract %r[%i] : tensor<4xf32>
  return %v : f32
}
