// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-fuse-elementwise))' | FileCheck %s
// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-fuse-elementwise{recompute=1}))' | FileCheck %s --check-prefix=GPU

#row = affine_map<(d0, d1) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>

// A row's log read by every element of the row (cross-entropy's log-sum-exp): stored once per
// row, not fused into the [4, 155] generic (which would take 155 logs per row). On a GPU
// (recompute) it fuses, as MLIR's rule does.
// CHECK-LABEL: func.func @costly_broadcast
// CHECK: %[[LOG:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4xf32>)
// CHECK: math.log
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[LOG]] : tensor<4x155xf32>, tensor<4xf32>)
// CHECK-NOT: math.log
// CHECK: return
// GPU-LABEL: func.func @costly_broadcast
// GPU: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x155xf32>, tensor<4xf32>)
// GPU: math.log
// GPU-NOT: linalg.generic
// GPU: return
func.func @costly_broadcast(%x: tensor<4x155xf32>, %s: tensor<4xf32>) -> tensor<4x155xf32> {
  %e1 = tensor.empty() : tensor<4xf32>
  %log = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%s : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %l = math.log %a : f32
    linalg.yield %l : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x155xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %log : tensor<4x155xf32>, tensor<4xf32>) outs(%e2 : tensor<4x155xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x155xf32>
  return %r : tensor<4x155xf32>
}

// A cheap producer read broadcast (an add) still fuses: one generic.
// CHECK-LABEL: func.func @cheap_broadcast
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
func.func @cheap_broadcast(%x: tensor<4x155xf32>, %s: tensor<4xf32>) -> tensor<4x155xf32> {
  %e1 = tensor.empty() : tensor<4xf32>
  %add = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%s, %s : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %l = arith.addf %a, %b : f32
    linalg.yield %l : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x155xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %add : tensor<4x155xf32>, tensor<4xf32>) outs(%e2 : tensor<4x155xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x155xf32>
  return %r : tensor<4x155xf32>
}

// A costly producer read element for element (no broadcast) fuses: each exp is computed once
// either way.
// CHECK-LABEL: func.func @costly_elementwise
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @costly_elementwise(%x: tensor<4x155xf32>) -> tensor<4x155xf32> {
  %e = tensor.empty() : tensor<4x155xf32>
  %exp = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x155xf32>) outs(%e : tensor<4x155xf32>) {
  ^bb0(%a: f32, %o: f32):
    %l = math.exp %a : f32
    linalg.yield %l : f32
  } -> tensor<4x155xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %x : tensor<4x155xf32>, tensor<4x155xf32>) outs(%e : tensor<4x155xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.mulf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x155xf32>
  return %r : tensor<4x155xf32>
}
