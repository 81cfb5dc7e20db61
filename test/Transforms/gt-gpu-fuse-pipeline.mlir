// RUN: gt-opt %s --gt-gpu-fuse-pipeline | FileCheck %s
// RUN: gt-opt %s --gt-fuse-pipeline | FileCheck %s --check-prefix=CPU
// RUN: gt-opt %s --gt-gpu-fuse-pipeline --gt-gpu-pipeline | FileCheck %s --check-prefix=PTX

// Attention's masked softmax as a CUDA worker fuses it (gt-duplicate-broadcasts{recompute}):
// the masked, scaled scores feed the row maximum and the subtraction, and exp(x - max) feeds
// the row sum and the division; each is recomputed in its consumers, so the two row
// reductions and the final division read the scores and the mask themselves. The only
// full-size tensor is the result (on an H200 the (8, 12, 1024, 1024) form wrote and read two
// 400 MB intermediates, 3.15 ms per layer of a GPT-2 step).
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%arg2, %arg0 : tensor<64x64xi1>, tensor<2x3x64x64xf32>)
// CHECK: arith.select
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%arg2, %arg0, %{{.*}} : tensor<64x64xi1>, tensor<2x3x64x64xf32>, tensor<2x3x64x1xf32>)
// CHECK: arith.select
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: tensor.empty() : tensor<2x3x64x64xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]{{.*}} ins(%arg2, %arg0, %{{.*}}, %{{.*}} : tensor<64x64xi1>, tensor<2x3x64x64xf32>, tensor<2x3x64x1xf32>, tensor<2x3x64x1xf32>)
// CHECK: arith.select
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return

// A CPU worker stores the masked scores and the exponentials (its row blocks stay in cache:
// gt-cpu-fuse-parallel-loops), computing each element's exp once.
// CPU-LABEL: func.func @softmax
// CPU: tensor.empty() : tensor<2x3x64x64xf32>
// CPU-NOT: math.exp
// CPU: tensor.empty() : tensor<2x3x64x64xf32>
// CPU: math.exp
// CPU: tensor.empty() : tensor<2x3x64x64xf32>
// CPU-NOT: math.exp
// CPU: return

// Through the GPU pipeline: two block-parallel row reductions and one elementwise kernel that
// touch the scores, one full-size allocation (the result).
// PTX-LABEL: llvm.func @softmax
// PTX-COUNT-1: llvm.getelementptr %{{.*}}[24576] : (!llvm.ptr) -> !llvm.ptr, f32
// PTX-NOT: llvm.getelementptr %{{.*}}[24576]
// PTX: gpu.binary
func.func @softmax(%s: tensor<2x3x64x64xf32>, %scale: tensor<f64>, %mask: tensor<64x64xi1>, %ninf: tensor<f64>) -> tensor<2x3x64x64xf32> {
  %c = gt.full(%scale : tensor<f64>) : tensor<f32>
  %0 = gt.mul %s, %c : tensor<2x3x64x64xf32>, tensor<f32> -> tensor<2x3x64x64xf32>
  %f = gt.full(%ninf : tensor<f64>) : tensor<i1>
  %1 = gt.eq %mask, %f : tensor<64x64xi1>, tensor<i1> -> tensor<64x64xi1>
  %n = gt.full(%ninf : tensor<f64>) : tensor<f32>
  %2 = gt.where %1, %n, %0 : tensor<64x64xi1>, tensor<f32>, tensor<2x3x64x64xf32> -> tensor<2x3x64x64xf32>
  %3 = gt.max %2 {axes = array<i64: 3>, keepdims = true} : tensor<2x3x64x64xf32> -> tensor<2x3x64x1xf32>
  %4 = gt.sub %2, %3 : tensor<2x3x64x64xf32>, tensor<2x3x64x1xf32> -> tensor<2x3x64x64xf32>
  %5 = gt.exp %4 : tensor<2x3x64x64xf32> -> tensor<2x3x64x64xf32>
  %6 = gt.sum %5 {axes = array<i64: 3>, keepdims = true} : tensor<2x3x64x64xf32> -> tensor<2x3x64x1xf32>
  %7 = gt.div %5, %6 : tensor<2x3x64x64xf32>, tensor<2x3x64x1xf32> -> tensor<2x3x64x64xf32>
  return %7 : tensor<2x3x64x64xf32>
}
