// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-copy-to-linalg))' | FileCheck %s

// CHECK-LABEL: func.func @copies
// CHECK-NEXT: linalg.copy ins(%arg0 : memref<4xf32>) outs(%arg1 : memref<4xf32>)
// CHECK-NEXT: return
func.func @copies(%a: memref<4xf32>, %b: memref<4xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  memref.copy %b, %b : memref<4xf32> to memref<4xf32>
  return
}
