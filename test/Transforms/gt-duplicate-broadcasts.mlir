// RUN: gt-opt %s --split-input-file --gt-duplicate-broadcasts | FileCheck %s

#row = affine_map<(d0, d1) -> (d0, 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A one-hot built from [4, 1] indices and read by two elementwise consumers: each gets its own
// copy, which elementwise fusion then computes inside each (gt-fuse-pipeline.mlir).
// CHECK-LABEL: func.func @one_hot
func.func @one_hot(%i: tensor<4x1xi64>, %g: tensor<4x1xf32>, %x: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x10xf32>) {
  // CHECK-COUNT-2: arith.cmpi eq
  // CHECK: arith.negf
  // CHECK: arith.mulf
  %e = tensor.empty() : tensor<4x10xf32>
  %h = linalg.generic {indexing_maps = [#row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%i, %g : tensor<4x1xi64>, tensor<4x1xf32>) outs(%e : tensor<4x10xf32>) {
  ^bb0(%idx: i64, %v: f32, %out: f32):
    %j = linalg.index 1 : index
    %k = arith.index_cast %idx : i64 to index
    %hit = arith.cmpi eq, %k, %j : index
    %z = arith.constant 0.0 : f32
    %s = arith.select %hit, %v, %z : f32
    linalg.yield %s : f32
  } -> tensor<4x10xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x10xf32>) outs(%e : tensor<4x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x10xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %x : tensor<4x10xf32>, tensor<4x10xf32>) outs(%e : tensor<4x10xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %m = arith.mulf %in, %in2 : f32
    linalg.yield %m : f32
  } -> tensor<4x10xf32>
  return %a, %b : tensor<4x10xf32>, tensor<4x10xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A producer as large as its result is computed once and read twice.
// CHECK-LABEL: func.func @same_size
func.func @same_size(%x: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x10xf32>) {
  // CHECK-COUNT-1: arith.negf
  // CHECK-NOT: arith.negf
  %e = tensor.empty() : tensor<4x10xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x10xf32>) outs(%e : tensor<4x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x10xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x10xf32>) outs(%e : tensor<4x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x10xf32>
  return %a, %h : tensor<4x10xf32>, tensor<4x10xf32>
}
