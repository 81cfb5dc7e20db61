// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s

// Bools order false < true: their comparisons are unsigned (as signed 1-bit integers true is -1
// and every ordering came out inverted), and a max over bools starts from false.
// CHECK-LABEL: func.func @bool_order
func.func @bool_order(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<i1>) {
  // CHECK: arith.cmpi ugt
  // CHECK-NOT: arith.cmpi sgt
  %0 = gt.gt %a, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  // CHECK: arith.constant false
  // CHECK: arith.ori
  %1 = gt.max %a {axes = array<i64: 0>} : tensor<4xi1> -> tensor<i1>
  return %0, %1 : tensor<4xi1>, tensor<i1>
}

// -----

// argmax takes a NaN over any number and the first NaN over a later one (cmpf uno), as
// PyTorch's: max(x, dim) then returns NaN with its index.
// CHECK-LABEL: func.func @argmax_nan
func.func @argmax_nan(%x: tensor<4x3xf32>) -> tensor<4xi64> {
  // CHECK: linalg.generic
  // CHECK: arith.cmpf ogt
  // CHECK: arith.cmpf uno
  // CHECK: arith.cmpf ord
  %0 = gt.argmax %x {axes = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
