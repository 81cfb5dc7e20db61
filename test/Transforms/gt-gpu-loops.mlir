// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-gpu-loops{block-size=256}))' | FileCheck %s
// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-gpu-loops{block-size=4}))' | FileCheck %s --check-prefix=EXACT

// A 2-D loop nest over 4x300 = 1200 points: collapsed, 5 blocks of 256 threads, the last
// block guarded.
// CHECK-LABEL: func.func @nest
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C1200:.*]] = arith.constant 1200 : index
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C5]])
// CHECK: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[C256]])
// CHECK: %[[M:.*]] = arith.muli %[[B]], %[[C256]]
// CHECK: %[[N:.*]] = arith.addi %[[M]], %[[T]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[N]], %[[C1200]]
// CHECK: scf.if %[[IN]]
// CHECK: arith.remsi
// CHECK: arith.divsi
// CHECK: memref.load
// CHECK: memref.store
// CHECK-NOT: gt.tiled
// With 4 threads per block, 1200 points fill 300 blocks exactly: no guard.
// EXACT-LABEL: func.func @nest
// EXACT-NOT: scf.if
// EXACT: return
func.func @nest(%a: memref<4x300xf32>, %b: memref<4x300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c300 = arith.constant 300 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c300) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<4x300xf32>
    memref.store %x, %b[%i, %j] : memref<4x300xf32>
    scf.reduce
  }
  return
}

// A full reduction is serial code at the top of the function: it becomes one thread.
// CHECK-LABEL: func.func @total
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.store
// CHECK: scf.for
// CHECK: memref.load
// CHECK: return
func.func @total(%a: memref<1000xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %out[] : memref<f32>
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %a[%i] : memref<1000xf32>
    %s = memref.load %out[] : memref<f32>
    %y = arith.addf %x, %s : f32
    memref.store %y, %out[] : memref<f32>
  }
  return
}

// A fill value read at the top (an argument nothing writes) moves into the loop that uses it,
// so the kernel reads it on the device.
// CHECK-LABEL: func.func @fill
// CHECK-NOT: memref.load
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: %[[V:.*]] = memref.load %arg0[] : memref<f64>
// CHECK: %[[F:.*]] = arith.truncf %[[V]] : f64 to f32
// CHECK: memref.store %[[F]], %arg1
func.func @fill(%v: memref<f64>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %x = memref.load %v[] : memref<f64>
  %f = arith.truncf %x : f64 to f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %out[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// A 0-d fill of another dtype (`full` of int64 from its float64 fill value) is a load, a
// conversion, an allocation and a store at the top: the allocation moves up and the rest is one
// serial region (the allocation used to split it, and the conversion's value crossed regions).
// CHECK-LABEL: func.func @fill_of_another_dtype
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<i64>
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: %[[V:.*]] = memref.load %{{.*}}[] : memref<f64>
// CHECK: %[[I:.*]] = arith.fptosi %[[V]]
// CHECK: memref.store %[[I]], %[[BUF]][]
// CHECK: return %[[BUF]]
func.func @fill_of_another_dtype(%value: memref<f64>) -> memref<i64> {
  %v = memref.load %value[] : memref<f64>
  %i = arith.fptosi %v : f64 to i64
  %buf = memref.alloc() : memref<i64>
  memref.store %i, %buf[] : memref<i64>
  return %buf : memref<i64>
}
