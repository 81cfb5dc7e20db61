// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s

// float16 and bfloat16 are stored at 16 bits and computed in f32: each input is extended,
// the op runs in f32, the result is rounded once.
// CHECK-LABEL: func.func @exp_half
func.func @exp_half(%a: tensor<8xf16>) -> tensor<8xf16> {
  // CHECK: linalg.generic
  // CHECK: ^bb0(%[[IN:.*]]: f16, %{{.*}}: f16):
  // CHECK: %[[X:.*]] = arith.extf %[[IN]] : f16 to f32
  // CHECK: %[[E:.*]] = math.exp %[[X]] : f32
  // CHECK: %[[R:.*]] = arith.truncf %[[E]] : f32 to f16
  // CHECK: linalg.yield %[[R]] : f16
  %0 = gt.exp %a : tensor<8xf16> -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

// A bfloat16 sum accumulates in an f32 tensor and rounds at the end.
// CHECK-LABEL: func.func @sum_bf16
func.func @sum_bf16(%a: tensor<4x300xbf16>) -> tensor<4xbf16> {
  // CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
  // CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
  // CHECK: arith.extf %{{.*}} : bf16 to f32
  // CHECK: arith.addf %{{.*}} : f32
  // CHECK: linalg.generic
  // CHECK: arith.truncf %{{.*}} : f32 to bf16
  %0 = gt.sum %a {axes = array<i64: 1>} : tensor<4x300xbf16> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Products of a float16 matmul are summed in f32.
// CHECK-LABEL: func.func @matmul_half
func.func @matmul_half(%a: tensor<4x3xf16>, %b: tensor<3x5xf16>) -> tensor<4x5xf16> {
  // CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<4x5xf32>)
  // CHECK: arith.mulf %{{.*}} : f32
  // CHECK: arith.addf %{{.*}} : f32
  // CHECK: arith.truncf %{{.*}} : f32 to f16
  %0 = gt.matmul %a, %b : tensor<4x3xf16>, tensor<3x5xf16> -> tensor<4x5xf16>
  return %0 : tensor<4x5xf16>
}

// -----

// int64 -> bfloat16 converts through f32 (LLVM has no direct integer-to-bf16 conversion on x86).
// CHECK-LABEL: func.func @cast_bf16
func.func @cast_bf16(%a: tensor<6xi64>) -> tensor<6xbf16> {
  // CHECK: %[[F:.*]] = arith.sitofp %{{.*}} : i64 to f32
  // CHECK: arith.truncf %[[F]] : f32 to bf16
  %0 = gt.cast %a : tensor<6xi64> -> tensor<6xbf16>
  return %0 : tensor<6xbf16>
}
