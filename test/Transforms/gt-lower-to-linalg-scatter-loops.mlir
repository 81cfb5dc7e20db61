// RUN: gt-opt %s --gt-lower-to-linalg=scatter-loops=true --split-input-file | FileCheck %s

// With scatter-loops (CPU workers), index_add is a loop nest over the source carrying the
// result: each source element is added at its clamped index, so the work is the source's
// size (8 x 3 here), not the result's size times the number of indices.
// CHECK-LABEL: func.func @index_add
func.func @index_add(%i: tensor<8xi64>, %g: tensor<8x3xf32>) -> tensor<5x3xf32> {
  // CHECK: %[[ZERO:.*]] = linalg.fill
  // CHECK: scf.for %[[K:[a-z0-9_]+]] = {{.*}} iter_args(%[[A:[a-z0-9_]+]] = %[[ZERO]])
  // CHECK: scf.for %[[C:[a-z0-9_]+]] = {{.*}} iter_args(%[[B:[a-z0-9_]+]] = %[[A]])
  // CHECK: %[[RAW:.*]] = tensor.extract %{{.*}}[%[[K]]] : tensor<8xi64>
  // CHECK: arith.maxsi
  // CHECK: arith.minsi
  // CHECK: %[[V:.*]] = arith.index_cast
  // CHECK: %[[OLD:.*]] = tensor.extract %[[B]][%[[V]], %[[C]]]
  // CHECK: %[[NEW:.*]] = tensor.extract %{{.*}}[%[[K]], %[[C]]] : tensor<8x3xf32>
  // CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]]
  // CHECK: tensor.insert %[[SUM]] into %[[B]][%[[V]], %[[C]]]
  // CHECK-NOT: linalg.generic
  %0 = gt.index_add %i, %g {axis = 0 : i64} : tensor<8xi64>, tensor<8x3xf32> -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_add reads an index per source element; bf16 adds in f32 and rounds once per add.
// CHECK-LABEL: func.func @scatter_add
func.func @scatter_add(%i: tensor<4x2xi64>, %g: tensor<4x2xbf16>) -> tensor<4x10xbf16> {
  // CHECK: scf.for %[[R:[a-z0-9_]+]] =
  // CHECK: scf.for %[[C:[a-z0-9_]+]] =
  // CHECK: tensor.extract %{{.*}}[%[[R]], %[[C]]] : tensor<4x2xi64>
  // CHECK: arith.extf
  // CHECK: arith.addf {{.*}} : f32
  // CHECK: arith.truncf
  // CHECK: tensor.insert
  %0 = gt.scatter_add %i, %g {axis = 1 : i64} : tensor<4x2xi64>, tensor<4x2xbf16> -> tensor<4x10xbf16>
  return %0 : tensor<4x10xbf16>
}

// -----

// An empty result or source leaves only the zero fill.
// CHECK-LABEL: func.func @empty_source
func.func @empty_source(%i: tensor<0xi64>, %g: tensor<0x3xf32>) -> tensor<5x3xf32> {
  // CHECK: linalg.fill
  // CHECK-NOT: scf.for
  %0 = gt.index_add %i, %g {axis = 0 : i64} : tensor<0xi64>, tensor<0x3xf32> -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// cumsum is a running sum over the result in row-major order: the element before along the
// axis (clamped at 0, its value selected away there) plus this one, n adds per row, not the
// dense form's n^2 / 2; an f32 input is summed in f64 and rounded once at the end (as
// PyTorch's CPU kernel accumulates in double).
// CHECK-LABEL: func.func @cumsum
func.func @cumsum(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: scf.for %[[R:[a-z0-9_]+]] =
  // CHECK: scf.for %[[C:[a-z0-9_]+]] = {{.*}} iter_args(%[[S:[a-z0-9_]+]] = {{.*}} -> (tensor<3x5xf64>)
  // CHECK: %[[HAS:.*]] = arith.cmpi ugt, %[[C]]
  // CHECK: %[[PREV:.*]] = tensor.extract %[[S]][%[[R]], %{{.*}}]
  // CHECK: arith.select %[[HAS]], %[[PREV]]
  // CHECK: arith.extf {{.*}} : f32 to f64
  // CHECK: arith.addf {{.*}} : f64
  // CHECK: tensor.insert {{.*}} into %[[S]][%[[R]], %[[C]]]
  // CHECK: linalg.generic
  // CHECK: arith.truncf {{.*}} : f64 to f32
  %0 = gt.cumsum %x {axis = 1 : i64} : tensor<3x5xf32> -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
