// RUN: gt-opt %s --gt-place=default-worker=2 | FileCheck %s
// RUN: gt-opt %s --gt-dispatcher-pipeline | FileCheck %s --check-prefix=PIPE

// CHECK-LABEL: func.func @follow_operands
// PIPE-LABEL: func.func @follow_operands
func.func @follow_operands(%a: tensor<4xf32> {gt.worker = 1 : i64}, %b: tensor<4xf32>) {
  // Operands on worker 1 pull the op there.
  // CHECK: gt.neg %{{.*}} {gt.worker = 1 : i64}
  %0 = gt.neg %a : tensor<4xf32> -> tensor<4xf32>
  // CHECK: gt.add %{{.*}} {gt.worker = 1 : i64}
  %1 = gt.add %0, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  // No placed operand: the default worker.
  // CHECK: gt.exp %{{.*}} {gt.worker = 2 : i64}
  // PIPE: gt.exp %{{.*}} {gt.worker = 0 : i64}
  %2 = gt.exp %b : tensor<4xf32> -> tensor<4xf32>
  // CHECK: gt.randn {gt.worker = 2 : i64, seed = 1 : i64}
  %3 = gt.randn {seed = 1} : tensor<4xf32>
  // CHECK: gt.free %{{.*}} {gt.worker = 1 : i64}
  gt.free %0 : tensor<4xf32>
  return
}
