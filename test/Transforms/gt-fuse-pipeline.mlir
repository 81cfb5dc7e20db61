// RUN: gt-opt %s --gt-fuse-pipeline | FileCheck %s

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
