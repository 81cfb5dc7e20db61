// RUN: gt-opt %s --gt-lower-to-linalg="checks=true" --split-input-file | FileCheck %s
// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s --check-prefix=OFF

// With checks (CPU workers), an index outside [0, size) calls gt_runtime_error(op, check,
// value, bound) before the clamp; the op number is not asserted (the spec numbers ops), check 0 is
// IndexOutOfRange and the bound is the indexed axis' size. Without, only the clamp.
// CHECK: func.func private @gt_runtime_error(i64, i64, i64, i64)
// CHECK-LABEL: func.func @gather
// OFF-NOT: gt_runtime_error
// OFF-LABEL: func.func @gather
func.func @gather(%x: tensor<4x10xf32>, %i: tensor<4x1xi64>) -> tensor<4x1xf32> {
  // CHECK: linalg.generic
  // CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
  // CHECK: %[[LOW:.*]] = arith.cmpi slt, %[[IDX:.*]], %[[ZERO]] : i64
  // CHECK: %[[TEN:.*]] = arith.constant 10 : i64
  // CHECK: %[[HIGH:.*]] = arith.cmpi sge, %[[IDX]], %[[TEN]] : i64
  // CHECK: %[[BAD:.*]] = arith.ori %[[LOW]], %[[HIGH]] : i1
  // CHECK: %[[CHECK:.*]] = arith.constant 0 : i64
  // CHECK: %[[BOUND:.*]] = arith.constant 10 : i64
  // CHECK: scf.if %[[BAD]] {
  // CHECK: func.call @gt_runtime_error(%{{.*}}, %[[CHECK]], %[[IDX]], %[[BOUND]])
  // CHECK: arith.maxsi
  // CHECK: arith.minsi
  %0 = gt.gather %x, %i {axis = 1 : i64} : tensor<4x10xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Integer floor_divide by zero: check 1 (DivisionByZero) with the dividend, bound 0.
// CHECK-LABEL: func.func @floor_divide
func.func @floor_divide(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  // CHECK: linalg.generic
  // CHECK: ^bb0(%[[X:.*]]: i64, %[[Y:.*]]: i64, %{{.*}}: i64):
  // CHECK: %[[BYZERO:.*]] = arith.cmpi eq, %[[Y]], %{{.*}} : i64
  // CHECK: %[[KIND:.*]] = arith.constant 1 : i64
  // CHECK: scf.if %[[BYZERO]] {
  // CHECK: func.call @gt_runtime_error(%{{.*}}, %[[KIND]], %[[X]], %{{.*}})
  %0 = gt.floor_divide %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// one_hot: each label outside [0, num_classes) is reported (check 2) by a generic over the
// labels alone, which yields them clamped; the [4, 10] generic compares without a check (its
// loop holds no call, so it vectorizes, and gt-fuse-elementwise keeps the check out of it).
// CHECK-LABEL: func.func @one_hot
func.func @one_hot(%y: tensor<4xi64>) -> tensor<4x10xf32> {
  // CHECK: %[[LABELS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4xi64>) outs(%{{.*}} : tensor<4xi64>)
  // CHECK: %[[TWO:.*]] = arith.constant 2 : i64
  // CHECK: scf.if
  // CHECK: func.call @gt_runtime_error(%{{.*}}, %[[TWO]], %{{.*}}, %{{.*}})
  // CHECK: arith.minsi
  // CHECK: linalg.generic {{.*}} ins(%[[LABELS]] : tensor<4xi64>) outs(%{{.*}} : tensor<4x10xf32>)
  // CHECK-NOT: gt_runtime_error
  // CHECK: return
  %0 = gt.one_hot %y {num_classes = 10} : tensor<4xi64> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// index_select reads each index for a whole row: the indices are checked (check 0, bound 10)
// and clamped once, by their own generic; the gather's generic has no check.
// CHECK-LABEL: func.func @index_select
func.func @index_select(%x: tensor<10x8xf32>, %i: tensor<5xi64>) -> tensor<5x8xf32> {
  // CHECK: %[[IDX:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<5xi64>) outs(%{{.*}} : tensor<5xi64>)
  // CHECK: func.call @gt_runtime_error
  // CHECK: linalg.generic {{.*}} ins(%[[IDX]] : tensor<5xi64>) outs(%{{.*}} : tensor<5x8xf32>)
  // CHECK-NOT: gt_runtime_error
  // CHECK: tensor.extract
  // CHECK: return
  %0 = gt.index_select %x, %i {axis = 0 : i64} : tensor<10x8xf32>, tensor<5xi64> -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

// Float floor_divide has no check (x / 0 is inf, as PyTorch).
// CHECK-LABEL: func.func @float_floor_divide
// CHECK-NOT: gt_runtime_error
func.func @float_floor_divide(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gt.floor_divide %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
