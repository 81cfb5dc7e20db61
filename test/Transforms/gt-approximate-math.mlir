// RUN: gt-opt %s --gt-approximate-math | FileCheck %s
// RUN: gt-opt %s --gt-approximate-math=fma-to-llvm | FileCheck %s --check-prefix=LLVM

// f32 tanh becomes arithmetic (no libm / libdevice call); f64 is left alone.
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh {{.*}} : f32
// CHECK: math.fma
// CHECK: math.tanh %{{.*}} : f64
// LLVM-LABEL: func.func @tanh
// LLVM-NOT: math.fma
// LLVM: llvm.intr.fma
func.func @tanh(%x: f32, %y: f64) -> (f32, f64) {
  %0 = math.tanh %x : f32
  %1 = math.tanh %y : f64
  return %0, %1 : f32, f64
}
