// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-gpu-loops))' --verify-diagnostics --split-input-file

// A value loaded on the host and used after the serial code cannot be moved into a kernel.
func.func @escapes(%a: memref<f32>) -> f32 {
  // expected-error @below {{computes a value used outside its serial region}}
  %x = memref.load %a[] : memref<f32>
  return %x : f32
}

// -----

func.func @dynamic(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{has a dynamic loop bound}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
