// RUN: gt-opt %s --gt-approximate-math | FileCheck %s
// RUN: gt-opt %s --gt-approximate-math=fma-to-llvm | FileCheck %s --check-prefix=LLVM

// f32 tanh becomes arithmetic (no libm / libdevice call): of a = min(|x|, 9.1), 1 - 2 / (e^(2a) + 1)
// (e^ MLIR's polynomial) or, below 0.55, an odd polynomial; f64 is left alone.
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh {{.*}} : f32
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK: math.fma
// CHECK: arith.divf
// CHECK: arith.cmpf olt
// CHECK-NOT: math.{{tanh|exp|log}} {{.*}} : f32
// CHECK: math.tanh %{{.*}} : f64
// LLVM-LABEL: func.func @tanh
// LLVM-NOT: math.fma
// LLVM: llvm.intr.fma
func.func @tanh(%x: f32, %y: f64) -> (f32, f64) {
  %0 = math.tanh %x : f32
  %1 = math.tanh %y : f64
  return %0, %1 : f32, f64
}
