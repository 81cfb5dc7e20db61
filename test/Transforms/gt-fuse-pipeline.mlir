// RUN: gt-opt %s --split-input-file --gt-fuse-pipeline | FileCheck %s

// What a worker does to a hot region's body: the elementwise chain and the reduction that
// consumes it become one linalg.generic; the fill value arrives as an operand.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[S:.*]]: tensor<f64>)
// CHECK: %[[V:.*]] = tensor.extract %[[S]][]
// CHECK: %[[F:.*]] = arith.truncf %[[V]]
// CHECK: linalg.fill
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<4x3xf32>, tensor<3xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.mulf %{{.*}}, %[[F]]
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @chain(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %s: tensor<f64>) -> tensor<f32> {
  %0 = gt.add %x, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = gt.relu %0 : tensor<4x3xf32> -> tensor<4x3xf32>
  %2 = gt.full(%s : tensor<f64>) : tensor<f32>
  %3 = gt.mul %1, %2 : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %4 = gt.sum %3 {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Cross-entropy, forward and gradient, as char_gpt's and word_language_model's loss regions
// have it. The target log-probabilities are computed from x at the 4 gathered positions
// (gt-fold-extracts), not as a [4, 10] tensor; the one-hot gradient is recomputed inside the
// gradient's loop from the [4, 1] indices (the one-hot lowering, gt-duplicate-broadcasts),
// and its row sum is the sum of the [4, 1] source (gt-lower-to-linalg): no [4, 10] tensor but
// x - max(x), which the gradient reuses, and the gradient itself.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[T:.*]]: tensor<4x1xi64>, %[[G:.*]]: tensor<4x1xf32>)
// CHECK: %[[PICKED:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<4x1xi64>)
// CHECK: tensor.extract %[[X]]
// CHECK: linalg.generic {{.*}} ins(%[[G]] : tensor<4x1xf32>)
// CHECK: %[[GRAD:.*]] = linalg.generic {{.*}} ins(%[[T]], %[[G]],
// CHECK: arith.cmpi eq
// CHECK: return %[[PICKED]], %[[GRAD]]
func.func @cross_entropy(%x: tensor<4x10xf32>, %t: tensor<4x1xi64>, %g: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x10xf32>) {
  %m = gt.max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %s = gt.sub %x, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
  %e = gt.exp %s : tensor<4x10xf32> -> tensor<4x10xf32>
  %z = gt.sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %l = gt.log %z : tensor<4x1xf32> -> tensor<4x1xf32>
  %lse = gt.add %l, %m : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %lp = gt.sub %x, %lse : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
  %picked = gt.gather %lp, %t {axis = 1 : i64} : tensor<4x10xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
  %oh = gt.scatter_add %t, %g {axis = 1 : i64} : tensor<4x1xi64>, tensor<4x1xf32> -> tensor<4x10xf32>
  %ohs = gt.sum %oh {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %r = gt.div %ohs, %z : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %p = gt.mul %r, %e : tensor<4x1xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  %grad = gt.sub %oh, %p : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  return %picked, %grad : tensor<4x1xf32>, tensor<4x10xf32>
}
