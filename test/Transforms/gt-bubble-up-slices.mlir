// RUN: gt-opt %s --split-input-file --gt-bubble-up-slices | FileCheck %s
// RUN: gt-opt %s --split-input-file --gt-fuse-pipeline | FileCheck %s --check-prefix=FUSED
// RUN: gt-opt %s --split-input-file --gt-fuse-pipeline --gt-gpu-pipeline | FileCheck %s --check-prefix=GPU

#id = affine_map<(d0, d1) -> (d0, d1)>
#last = affine_map<(d0, d1) -> (d1)>

// Each slice of the bias add is computed from slices of x and of the bias; the whole sum is
// not computed.
// CHECK-LABEL: func.func @split_bias_add
// CHECK-NOT: tensor<4x6xf32>) outs
// CHECK-DAG: tensor.extract_slice %arg0[0, 0] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
// CHECK-DAG: tensor.extract_slice %arg1[0] [3] [1] : tensor<6xf32> to tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: arith.addf
// CHECK-DAG: tensor.extract_slice %arg0[0, 3] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
// CHECK-DAG: tensor.extract_slice %arg1[3] [3] [1] : tensor<6xf32> to tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @split_bias_add(%x: tensor<4x6xf32>, %bias: tensor<6xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : tensor<4x6xf32>, tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  %lo = tensor.extract_slice %y[0, 0] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
  %hi = tensor.extract_slice %y[0, 3] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
  return %lo, %hi : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// A strided slice, and a size-1 axis read through the constant 0: the row operand keeps its
// one column, the other is sliced with the same strides.
// CHECK-LABEL: func.func @strided
// CHECK-DAG: tensor.extract_slice %arg0[1, 0] [2, 3] [2, 2] : tensor<4x6xf32> to tensor<2x3xf32>
// CHECK-DAG: tensor.extract_slice %arg1[1, 0] [2, 1] [2, 1] : tensor<4x1xf32> to tensor<2x1xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3xf32>)
func.func @strided(%x: tensor<4x6xf32>, %r: tensor<4x1xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<4x6xf32>, tensor<4x1xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  %s = tensor.extract_slice %y[1, 0] [2, 3] [2, 2] : tensor<4x6xf32> to tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Left alone: a use that is not a slice (the whole result is needed anyway), slices that
// together hold more than the result (overlapping windows would be computed twice), and a
// body that reads the loop indices.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: linalg.generic {{.*}} ins(%arg0 : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK-NOT: linalg.generic
func.func @left_alone(%x: tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<4x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x6xf32>
  %s = tensor.extract_slice %y[0, 0] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x6xf32>
  %z0 = tensor.extract_slice %z[0, 0] [4, 4] [1, 1] : tensor<4x6xf32> to tensor<4x4xf32>
  %z1 = tensor.extract_slice %z[0, 2] [4, 4] [1, 1] : tensor<4x6xf32> to tensor<4x4xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    %m = arith.mulf %a, %f : f32
    linalg.yield %m : f32
  } -> tensor<4x6xf32>
  %w0 = tensor.extract_slice %w[0, 3] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
  return %s, %y, %z0, %z1, %w0 : tensor<4x3xf32>, tensor<4x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>
}

// -----

// The fusion pipeline on a q/k/v split (as in char_gpt's attention): a bias add, three slices,
// each reshaped into heads and transposed, k once more. Three loop nests, each reading the
// projection directly (slices and reshapes are views), no [2, 4, 12] temporary.
// FUSED-LABEL: func.func @qkv
// FUSED-NOT: tensor<2x4x12xf32>) outs
// FUSED-COUNT-3: linalg.generic {{.*}} ins(%expanded{{.*}}, %expanded{{.*}} : tensor<2x4x2x2xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<2x2x{{[24]}}x{{[24]}}xf32>)
// FUSED-NOT: linalg.generic
// FUSED-NOT: tensor.reshape
// On a CUDA worker (assembled to PTX here, not run): one kernel per part.
// GPU-COUNT-3: gpu.launch_func {{.*}} @qkv_kernel{{.*}}::@qkv_kernel
// GPU-NOT: gpu.launch_func {{.*}} @qkv_kernel
func.func @qkv(%x: tensor<2x4x12xf32>, %b: tensor<12xf32>) -> (tensor<2x2x4x2xf32>, tensor<2x2x2x4xf32>, tensor<2x2x4x2xf32>) {
  %y = gt.add %x, %b : tensor<2x4x12xf32>, tensor<12xf32> -> tensor<2x4x12xf32>
  %q = gt.slice %y {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
  %k = gt.slice %y {starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
  %v = gt.slice %y {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
  %q4 = gt.reshape %q : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %k4 = gt.reshape %k : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %v4 = gt.reshape %v : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %qh = gt.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
  %kh = gt.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
  %vh = gt.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
  %kt = gt.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : tensor<2x2x4x2xf32> -> tensor<2x2x2x4xf32>
  return %qh, %kt, %vh : tensor<2x2x4x2xf32>, tensor<2x2x2x4xf32>, tensor<2x2x4x2xf32>
}
