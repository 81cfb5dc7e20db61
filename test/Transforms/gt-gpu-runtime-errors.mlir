// RUN: gt-opt %s --split-input-file --pass-pipeline="builtin.module(gpu.module(gt-gpu-runtime-errors))" | FileCheck %s
// RUN: gt-opt %s --split-input-file --gt-lower-to-linalg="checks=true" --gt-gpu-pipeline | FileCheck %s --check-prefix=PTX

// A kernel's call of gt_runtime_error (copied in by gpu-kernel-outlining) becomes writes to
// the module's error global: word 0 exchanged for 1, and the call's arguments in words 1-4 by
// the thread that found 0 there. The declaration goes.
// CHECK-LABEL: gpu.module @checked
// CHECK: memref.global @gt_error : memref<5xi64> = dense<0> {alignment = 8 : i64}
// CHECK-NOT: func.func private @gt_runtime_error
// CHECK: gpu.func @kernel(%[[OP:.*]]: i64, %[[CHECK:.*]]: i64, %[[VALUE:.*]]: i64, %[[BOUND:.*]]: i64, %[[BAD:.*]]: i1)
// CHECK: scf.if %[[BAD]] {
// CHECK: %[[G:.*]] = memref.get_global @gt_error : memref<5xi64>
// CHECK: %[[OLD:.*]] = memref.atomic_rmw assign %{{.*}}, %[[G]][%{{.*}}] : (i64, memref<5xi64>) -> i64
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[OLD]], %{{.*}} : i64
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.store %[[OP]], %[[G]][%{{.*}}] : memref<5xi64>
// CHECK: memref.store %[[CHECK]], %[[G]][%{{.*}}] : memref<5xi64>
// CHECK: memref.store %[[VALUE]], %[[G]][%{{.*}}] : memref<5xi64>
// CHECK: memref.store %[[BOUND]], %[[G]][%{{.*}}] : memref<5xi64>
// CHECK-NOT: func.call
module attributes {gpu.container_module} {
  gpu.module @checked {
    func.func private @gt_runtime_error(i64, i64, i64, i64)
    gpu.func @kernel(%op: i64, %check: i64, %value: i64, %bound: i64, %bad: i1) kernel {
      scf.if %bad {
        func.call @gt_runtime_error(%op, %check, %value, %bound) : (i64, i64, i64, i64) -> ()
      }
      gpu.return
    }
  }
}

// -----

// A module without checks keeps no global.
// CHECK-LABEL: gpu.module @unchecked
// CHECK-NOT: gt_error
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @unchecked {
    gpu.func @kernel() kernel {
      gpu.return
    }
  }
}

// -----

// Through the whole GPU pipeline (what a CUDA worker compiles): gather's out-of-range check in
// PTX, a public 40-byte global the worker finds with cuModuleGetGlobal, exchanged atomically
// and written only on the failing path; the host code calls no gt_runtime_error.
// PTX-LABEL: llvm.func @gather
// PTX-NOT: llvm.call @gt_runtime_error
// PTX: gpu.binary @gather_kernel
// PTX-SAME: .visible .global .align 8 .b8 gt_error[40];
// PTX-SAME: atom.global.exch.b64
// PTX-SAME: st.global.u64 {{.*}}[gt_error+8]
// PTX-SAME: st.global.u64 {{.*}}[gt_error+32]
func.func @gather(%x: tensor<4x10xf32>, %i: tensor<4x1xi64>) -> tensor<4x1xf32> {
  %0 = gt.gather %x, %i {axis = 1 : i64} : tensor<4x10xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// A 0-d index's check is serial code (no loop over it): the load, the check around its call and
// the clamped index's store run together as one single-thread kernel (gt-gpu-loops once left the
// check outside: "computes a value used outside its serial region", the GPU's one_hot(tensor(2))).
// PTX-LABEL: llvm.func @one_hot_of_a_scalar
// PTX-NOT: llvm.call @gt_runtime_error
// PTX: gpu.binary @one_hot_of_a_scalar_kernel
// PTX-SAME: gt_error[40];
// PTX-SAME: atom.global.exch.b64
func.func @one_hot_of_a_scalar(%i: tensor<i64>) -> tensor<5xi64> {
  %0 = gt.one_hot %i {num_classes = 5 : i64} : tensor<i64> -> tensor<5xi64>
  return %0 : tensor<5xi64>
}

// -----

// Without checks there is no global.
// PTX-LABEL: llvm.func @add
// PTX: gpu.binary @add_kernel
// PTX-NOT: gt_error
func.func @add(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gt.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
