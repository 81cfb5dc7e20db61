// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-cpu-parallel-loops))' | FileCheck %s
// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-cpu-parallel-loops{min-work=1000000000}))' | FileCheck %s --check-prefix=SMALL
// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-cpu-parallel-loops{dynamic-sizes=1 min-work=4096}))' | FileCheck %s --check-prefix=DYN

// 32x64x512 elements: the leading dimensions up to 16 iterations stay parallel (32 already),
// the other two become scf.for loops inside, the innermost last.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c32)
// CHECK-NEXT: scf.for %[[J:.*]] = %{{.*}} to %c64
// CHECK-NEXT: scf.for %[[K:.*]] = %{{.*}} to %c512
// CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]], %[[K]]]
// CHECK-NOT: scf.parallel
// Below min-work every loop runs on the calling thread.
// SMALL-LABEL: func.func @elementwise
// SMALL-NOT: scf.parallel
// SMALL: scf.for
// SMALL-NEXT: scf.for
// SMALL-NEXT: scf.for
// SMALL-NOT: scf.parallel
func.func @elementwise(%a: memref<32x64x512xf32>, %b: memref<32x64x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c32, %c64, %c512) step (%c1, %c1, %c1) {
    %x = memref.load %a[%i, %j, %k] : memref<32x64x512xf32>
    memref.store %x, %b[%i, %j, %k] : memref<32x64x512xf32>
    scf.reduce
  }
  return
}

// A leading dimension of 2 is too few chunks: the first two dimensions (2 x 8) stay parallel.
// CHECK-LABEL: func.func @short_leading_dimension
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c2, %c8)
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %c4096
func.func @short_leading_dimension(%a: memref<2x8x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c4096 = arith.constant 4096 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c8, %c4096) step (%c1, %c1, %c1) {
    memref.store %f, %a[%i, %j, %k] : memref<2x8x4096xf32>
    scf.reduce
  }
  return
}

// A row reduction: the rows are split, the reduction loop inside stays as it is. The work
// counts the inner loop's iterations (256 x 512 stores).
// CHECK-LABEL: func.func @rows
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%c256)
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %c512
func.func @rows(%a: memref<256x512xf32>, %out: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%r) = (%c0) to (%c256) step (%c1) {
    scf.for %c = %c0 to %c512 step %c1 {
      %x = memref.load %a[%r, %c] : memref<256x512xf32>
      %s = memref.load %out[%r] : memref<256xf32>
      %t = arith.addf %x, %s : f32
      memref.store %t, %out[%r] : memref<256xf32>
    }
    scf.reduce
  }
  return
}

// A column reduction (reduction dimensions outermost): the parallel loop is nested in the
// reduction's scf.for, so it becomes sequential; a 1-D loop of 100000 stays parallel whole.
// CHECK-LABEL: func.func @columns_then_flat
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.parallel
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c100000)
// CHECK-NEXT: memref.store
func.func @columns_then_flat(%a: memref<512x256xf32>, %out: memref<256xf32>, %flat: memref<100000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %c100000 = arith.constant 100000 : index
  %f = arith.constant 0.0 : f32
  scf.for %r = %c0 to %c512 step %c1 {
    scf.parallel (%c) = (%c0) to (%c256) step (%c1) {
      %x = memref.load %a[%r, %c] : memref<512x256xf32>
      %s = memref.load %out[%c] : memref<256xf32>
      %t = arith.addf %x, %s : f32
      memref.store %t, %out[%c] : memref<256xf32>
      scf.reduce
    }
  }
  scf.parallel (%i) = (%c0) to (%c100000) step (%c1) {
    memref.store %f, %flat[%i] : memref<100000xf32>
    scf.reduce
  }
  return
}

// Dynamic sizes: the work is unknown, so the loop runs on the calling thread.
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: scf.parallel
// CHECK: scf.for
func.func @dynamic(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// A row reduction in gt-cpu-reductions' form: each row is read 8 lanes at a time and stored
// once, so only 8192 elements are stored but 8192 x 64 are read. The loads count: the rows
// are split over the threads.
// CHECK-LABEL: func.func @vector_rows
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c8192)
// CHECK-NEXT: scf.for
// CHECK: vector.load
// SMALL-LABEL: func.func @vector_rows
// SMALL-NOT: scf.parallel
func.func @vector_rows(%a: memref<8192x64xf32>, %out: memref<8192xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c8192 = arith.constant 8192 : index
  %zero = arith.constant dense<0.0> : vector<8xf32>
  scf.parallel (%r) = (%c0) to (%c8192) step (%c1) {
    %v = scf.for %c = %c0 to %c64 step %c8 iter_args(%acc = %zero) -> (vector<8xf32>) {
      %x = vector.load %a[%r, %c] : memref<8192x64xf32>, vector<8xf32>
      %s = arith.addf %x, %acc : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    %t = vector.reduction <add>, %v : vector<8xf32> into f32
    memref.store %t, %out[%r] : memref<8192xf32>
    scf.reduce
  }
  return
}

// An eager kernel's nest (dynamic sizes): without dynamic-sizes it runs on the calling thread;
// with it, the elements it touches are counted when it runs (rows x columns) and compared with
// min-work: parallel over the rows if enough, else the same loops sequential.
// CHECK-LABEL: func.func @dynamic_sizes
// CHECK-NOT: scf.parallel
// CHECK: return
// DYN-LABEL: func.func @dynamic_sizes
// DYN: %[[R:.*]] = memref.dim %arg0, %c0
// DYN: %[[C:.*]] = memref.dim %arg0, %c1
// DYN: %[[N:.*]] = arith.muli
// DYN: %[[BIG:.*]] = arith.cmpi sge, %{{.*}}, %c4096
// DYN: scf.if %[[BIG]] {
// DYN-NEXT: scf.parallel (%[[I:.*]]) = (%c0) to (%[[R]])
// DYN-NEXT: scf.for %[[J:.*]] = %c0 to %[[C]]
// DYN: } else {
// DYN-NEXT: scf.for
// DYN-NEXT: scf.for
// DYN-NOT: scf.parallel
// DYN: return
func.func @dynamic_sizes(%a: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  %rows = memref.dim %a, %c0 : memref<?x?xf32>
  %cols = memref.dim %a, %c1 : memref<?x?xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %cols) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}

// A nest that reports a run-time error (a call under scf.if) stays on one thread.
// DYN-LABEL: func.func @dynamic_sizes_with_a_check
// DYN-NOT: scf.parallel
// DYN: return
func.func private @report(i64)
func.func @dynamic_sizes_with_a_check(%a: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %n = memref.dim %a, %c0 : memref<?xi64>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<?xi64>
    %bad = arith.cmpi eq, %x, %zero : i64
    scf.if %bad {
      func.call @report(%x) : (i64) -> ()
    }
    scf.reduce
  }
  return
}

// The same with static sizes above min-work (one_hot's check of 65536 labels) stays on one
// thread too.
// CHECK-LABEL: func.func @static_sizes_with_a_check
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @static_sizes_with_a_check(%a: memref<65536xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 65536 : index
  %zero = arith.constant 0 : i64
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<65536xi64>
    %bad = arith.cmpi eq, %x, %zero : i64
    scf.if %bad {
      func.call @report(%x) : (i64) -> ()
    }
    scf.reduce
  }
  return
}

// A reduction over the outer dimension (a bias gradient's sum over the batch): the kept
// dimension runs outermost in blocks of 64 (a multiple of 16 lanes, 8 blocks), each block's
// rows in order, so every column accumulates as on one thread.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C512:.*]]) step (%[[C64]])
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[B]], %[[C64]]
// CHECK-NEXT: %[[END:.*]] = arith.minsi %[[NEXT]], %[[C512]]
// CHECK-NEXT: scf.for %[[I:.*]] = %{{.*}} to %c2048
// CHECK-NEXT: scf.for %[[J:.*]] = %[[B]] to %[[END]]
// CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK-NEXT: memref.load %{{.*}}[%[[J]]]
// CHECK-NOT: scf.parallel
// SMALL-LABEL: func.func @column_sum
// SMALL-NOT: scf.parallel
// SMALL: scf.for %{{.*}} = %{{.*}} to %c2048
// SMALL-NEXT: scf.for %{{.*}} = %{{.*}} to %c512
func.func @column_sum(%a: memref<2048x512xf32>, %out: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c2048 = arith.constant 2048 : index
  scf.for %i = %c0 to %c2048 step %c1 {
    scf.parallel (%j) = (%c0) to (%c512) step (%c1) {
      %x = memref.load %a[%i, %j] : memref<2048x512xf32>
      %acc = memref.load %out[%j] : memref<512xf32>
      %s = arith.addf %acc, %x : f32
      memref.store %s, %out[%j] : memref<512xf32>
      scf.reduce
    }
  }
  return
}

// Two reduced dimensions and two kept ones (LayerNorm's weight gradient over [B, T, H, C]):
// the outer kept dimension gives 48 iterations already, so the inner one is one block of 300
// rounded up to 304 lanes (the minsi clips it).
// CHECK-LABEL: func.func @column_sum_2d
// CHECK: scf.parallel (%[[H:.*]], %[[B:.*]]) = (%{{.*}}, %{{.*}}) to (%c48, %c300) step (%{{.*}}, %c304{{.*}})
// CHECK: scf.for %[[I0:.*]] = %{{.*}} to %c8
// CHECK-NEXT: scf.for %[[I1:.*]] = %{{.*}} to %c16
// CHECK-NEXT: scf.for %[[J:.*]] = %[[B]] to
// CHECK-NEXT: memref.load %{{.*}}[%[[I0]], %[[I1]], %[[H]], %[[J]]]
func.func @column_sum_2d(%a: memref<8x16x48x300xf32>, %out: memref<48x300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  %c300 = arith.constant 300 : index
  scf.for %i0 = %c0 to %c8 step %c1 {
    scf.for %i1 = %c0 to %c16 step %c1 {
      scf.parallel (%h, %j) = (%c0, %c0) to (%c48, %c300) step (%c1, %c1) {
        %x = memref.load %a[%i0, %i1, %h, %j] : memref<8x16x48x300xf32>
        %acc = memref.load %out[%h, %j] : memref<48x300xf32>
        %s = arith.addf %acc, %x : f32
        memref.store %s, %out[%h, %j] : memref<48x300xf32>
        scf.reduce
      }
    }
  }
  return
}

// A store indexed by the outer loop's variable: each outer iteration writes its own row, so
// the kept iterations do not own their elements across it; the nest stays sequential (as does
// one that reads the buffer it writes at other indices).
// CHECK-LABEL: func.func @not_a_column_reduction
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c2048
// CHECK-NEXT: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %{{.*}}]
// CHECK-LABEL: func.func @reads_its_output_elsewhere
// CHECK-NOT: scf.parallel
func.func @not_a_column_reduction(%a: memref<2048x512xf32>, %out: memref<2048x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c2048 = arith.constant 2048 : index
  scf.for %i = %c0 to %c2048 step %c1 {
    scf.parallel (%j) = (%c0) to (%c512) step (%c1) {
      %x = memref.load %a[%i, %j] : memref<2048x512xf32>
      memref.store %x, %out[%i, %j] : memref<2048x512xf32>
      scf.reduce
    }
  }
  return
}
func.func @reads_its_output_elsewhere(%a: memref<2048x512xf32>, %out: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c2048 = arith.constant 2048 : index
  scf.for %i = %c0 to %c2048 step %c1 {
    scf.parallel (%j) = (%c0) to (%c512) step (%c1) {
      %x = memref.load %a[%i, %j] : memref<2048x512xf32>
      %y = memref.load %out[%c0] : memref<512xf32>
      %s = arith.addf %y, %x : f32
      memref.store %s, %out[%j] : memref<512xf32>
      scf.reduce
    }
  }
  return
}
