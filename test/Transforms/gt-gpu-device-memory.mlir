// RUN: gt-opt %s --gt-gpu-device-memory --split-input-file --verify-diagnostics | FileCheck %s

// Host buffers become device buffers; kernels are left alone.
// CHECK-LABEL: func.func @buffers
// CHECK: %[[M:.*]] = gpu.alloc  () : memref<4xf32>
// CHECK: gpu.launch_func  @k::@k {{.*}} args(%[[M]] : memref<4xf32>)
// CHECK: gpu.dealloc  %[[M]] : memref<4xf32>
// CHECK-NOT: memref.alloc
module attributes {gpu.container_module} {
  func.func @buffers() {
    %c1 = arith.constant 1 : index
    %m = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    memref.dealloc %m : memref<4xf32>
    return
  }
  gpu.module @k {
    gpu.func @k(%m: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<4xf32>
      memref.store %x, %m[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

func.func @host_access(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @below {{would run on the host and dereference device memory}}
  %x = memref.load %a[%c0] : memref<4xf32>
  // expected-error @below {{would run on the host and dereference device memory}}
  memref.store %x, %a[%c0] : memref<4xf32>
  return
}
