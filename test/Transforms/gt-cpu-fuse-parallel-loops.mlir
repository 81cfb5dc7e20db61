// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-cpu-fuse-parallel-loops))' | FileCheck %s

// Softmax's nests after gt-cpu-parallel-loops, in small: the masked scores (parallel), the
// row max's init (a small nest left sequential), the row max (parallel), the divide
// (parallel). Every access to %t and %m indexes the first dimension with the outer iv: one
// scf.parallel over the 32 row blocks runs the four bodies in order; the allocation between
// the nests moves above it.
// CHECK-LABEL: func.func @softmax_like
// CHECK: memref.alloc() : memref<32x64xf32>
// CHECK: memref.alloc() : memref<32xf32>
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[I]], %{{.*}}] : memref<32x64xf32>
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[I]]] : memref<32xf32>
// CHECK:   arith.maximumf
// CHECK:   arith.divf
// CHECK:   scf.reduce
// CHECK-NOT: scf.parallel
// CHECK-NOT: scf.for %{{.*}} = %c0 to %c32
// CHECK: return
func.func @softmax_like(%x: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %ninf = arith.constant 0xFF800000 : f32
  %t = memref.alloc() : memref<32x64xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i, %j] : memref<32x64xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %t[%i, %j] : memref<32x64xf32>
    }
    scf.reduce
  }
  %m = memref.alloc() : memref<32xf32>
  scf.for %i = %c0 to %c32 step %c1 {
    memref.store %ninf, %m[%i] : memref<32xf32>
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %t[%i, %j] : memref<32x64xf32>
      %a = memref.load %m[%i] : memref<32xf32>
      %b = arith.maximumf %v, %a : f32
      memref.store %b, %m[%i] : memref<32xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %t[%i, %j] : memref<32x64xf32>
      %a = memref.load %m[%i] : memref<32xf32>
      %d = arith.divf %v, %a : f32
      memref.store %d, %out[%i, %j] : memref<32x64xf32>
    }
    scf.reduce
  }
  memref.dealloc %t : memref<32x64xf32>
  memref.dealloc %m : memref<32xf32>
  return
}

// Through a reshape that keeps the first dimension (a keepdims view, 32x64 -> 32x64x1), the
// slabs are the same: fused.
// CHECK-LABEL: func.func @through_a_reshape
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
func.func @through_a_reshape(%x: memref<32x64xf32>, %shape: memref<3xi64>, %out: memref<32x64x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %t = memref.alloc() : memref<32x64xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i, %j] : memref<32x64xf32>
      memref.store %v, %t[%i, %j] : memref<32x64xf32>
    }
    scf.reduce
  }
  %r = memref.reshape %t(%shape) : (memref<32x64xf32>, memref<3xi64>) -> memref<32x64x1xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %r[%i, %j, %c0] : memref<32x64x1xf32>
      memref.store %v, %out[%i, %j, %c0] : memref<32x64x1xf32>
    }
    scf.reduce
  }
  return
}

// Left apart:
// - a column sum (the outer loop runs over the rows and every iteration adds into all of
//   %cols) after a parallel nest: made parallel it would race, and fused the sum would read
//   rows of %t other iterations have not written yet;
// - a nest reading another row of %t than its own (%t[%i + 1]);
// - nests over different ranges (32, then 16).
// The last two nests (over 16 rows, the second sequential but touching only its own row of
// %z) are fused.
// CHECK-LABEL: func.func @kept_apart
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0 to %c32
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16
// CHECK-NOT: scf.for %{{.*}} = %c0 to %c16
// CHECK: return
func.func @kept_apart(%x: memref<32x64xf32>, %cols: memref<64xf32>, %y: memref<33x64xf32>, %z: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %t = memref.alloc() : memref<33x64xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i, %j] : memref<32x64xf32>
      memref.store %v, %t[%i, %j] : memref<33x64xf32>
    }
    scf.reduce
  }
  scf.for %i = %c0 to %c32 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %t[%i, %j] : memref<33x64xf32>
      %s = memref.load %cols[%j] : memref<64xf32>
      %a = arith.addf %v, %s : f32
      memref.store %a, %cols[%j] : memref<64xf32>
    }
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i, %j] : memref<32x64xf32>
      memref.store %v, %t[%i, %j] : memref<33x64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    %n = arith.addi %i, %c1 : index
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %t[%n, %j] : memref<33x64xf32>
      memref.store %v, %y[%i, %j] : memref<33x64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i, %j] : memref<32x64xf32>
      memref.store %v, %z[%i, %j] : memref<16x64xf32>
    }
    scf.reduce
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %z[%i, %j] : memref<16x64xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %z[%i, %j] : memref<16x64xf32>
    }
  }
  return
}
