// RUN: gt-opt %s --split-input-file --gt-empty-tensors-through-reshapes | FileCheck %s
// RUN: gt-opt %s --split-input-file --gt-fuse-pipeline | FileCheck %s --check-prefix=FUSED
// RUN: gt-opt %s --split-input-file --gt-fuse-pipeline --gt-gpu-pipeline | FileCheck %s --check-prefix=GPU

#swap = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Two parts, each transposed and merged from [2, 2] into 4 columns, then concatenated: each
// generic writes its place in the concat (the slice, expanded back), the first into the
// empty destination, the second into the first insert's result.
// CHECK-LABEL: func.func @concat_of_merged_parts
// CHECK: %[[DEST:.*]] = tensor.empty() : tensor<3x8xf32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[DEST]][0, 0] [3, 4] [1, 1]
// CHECK: %[[E0:.*]] = tensor.expand_shape %[[S0]] {{\[\[}}0], [1, 2]] output_shape [3, 2, 2]
// CHECK: %[[G0:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<3x2x2xf32>) outs(%[[E0]] : tensor<3x2x2xf32>)
// CHECK: %[[C0:.*]] = tensor.collapse_shape %[[G0]]
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[C0]] into %[[DEST]][0, 0] [3, 4] [1, 1]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[I0]][0, 4] [3, 4] [1, 1]
// CHECK: %[[E1:.*]] = tensor.expand_shape %[[S1]]
// CHECK: %[[G1:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<3x2x2xf32>) outs(%[[E1]] : tensor<3x2x2xf32>)
// CHECK: %[[C1:.*]] = tensor.collapse_shape %[[G1]]
// CHECK: tensor.insert_slice %[[C1]] into %[[I0]][0, 4] [3, 4] [1, 1]
func.func @concat_of_merged_parts(%a: tensor<3x2x2xf32>, %b: tensor<3x2x2xf32>) -> tensor<3x8xf32> {
  %ea = tensor.empty() : tensor<3x2x2xf32>
  %ta = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x2x2xf32>) outs(%ea : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3x2x2xf32>
  %ca = tensor.collapse_shape %ta [[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
  %eb = tensor.empty() : tensor<3x2x2xf32>
  %tb = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b : tensor<3x2x2xf32>) outs(%eb : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3x2x2xf32>
  %cb = tensor.collapse_shape %tb [[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
  %d = tensor.empty() : tensor<3x8xf32>
  %r0 = tensor.insert_slice %ca into %d[0, 0] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x8xf32>
  %r1 = tensor.insert_slice %cb into %r0[0, 4] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x8xf32>
  return %r1 : tensor<3x8xf32>
}

// -----

#swap = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Left alone: a generic that reads its output, and one whose result is also used elsewhere.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.extract_slice
func.func @left_alone(%a: tensor<3x2x2xf32>) -> (tensor<3x8xf32>, tensor<3x2x2xf32>) {
  %ea = tensor.empty() : tensor<3x2x2xf32>
  %ta = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x2x2xf32>) outs(%ea : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<3x2x2xf32>
  %ca = tensor.collapse_shape %ta [[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
  %tb = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x2x2xf32>) outs(%ea : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3x2x2xf32>
  %cb = tensor.collapse_shape %tb [[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
  %d = tensor.empty() : tensor<3x8xf32>
  %r0 = tensor.insert_slice %ca into %d[0, 0] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x8xf32>
  %r1 = tensor.insert_slice %cb into %r0[0, 4] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x8xf32>
  return %r1, %tb : tensor<3x8xf32>, tensor<3x2x2xf32>
}

// -----

// The fusion pipeline on the gradient of a q/k/v split: three [B, H, T, hd] gradients
// transposed back to [B, T, H, hd], merged to [B, T, C] and concatenated. Each transpose
// writes its third of the result (no insert from a temporary).
// FUSED-LABEL: func.func @qkv_grad
// FUSED-COUNT-3: linalg.generic {{.*}} outs(%expanded{{.*}} : tensor<2x4x2x2xf32>)
// On a CUDA worker (assembled to PTX here, not run): three kernels, no copy.
// GPU-NOT: memref.copy
// GPU-COUNT-3: gpu.launch_func {{.*}} @qkv_grad_kernel{{.*}}::@qkv_grad_kernel
// GPU-NOT: gpu.launch_func {{.*}} @qkv_grad_kernel
func.func @qkv_grad(%q: tensor<2x2x4x2xf32>, %k: tensor<2x2x4x2xf32>, %v: tensor<2x2x4x2xf32>) -> tensor<2x4x12xf32> {
  %qt = gt.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
  %kt = gt.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
  %vt = gt.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
  %q3 = gt.reshape %qt : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %k3 = gt.reshape %kt : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %v3 = gt.reshape %vt : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %c = gt.concat %q3, %k3, %v3 {axis = 2 : i64} : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x12xf32>
  return %c : tensor<2x4x12xf32>
}

// -----

#swap = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A generic reshaped (here twice) into a kernel's output writes that output in place: the
// restrict moves to a new to_tensor of %out, reshaped back to the generic's shape.
// CHECK-LABEL: func.func @reshaped_into_output
// CHECK: %[[T:.*]] = bufferization.to_tensor %arg1 restrict writable : memref<12xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<3x4xf32>
// CHECK: %[[E2:.*]] = tensor.expand_shape %[[E]] {{\[\[}}0], [1, 2]] output_shape [3, 2, 2]
// CHECK: %[[G:.*]] = linalg.generic {{.*}} outs(%[[E2]] : tensor<3x2x2xf32>)
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %arg1
// Left alone: an output materialized without restrict, and one the generic's result also
// reaches another way.
// CHECK-LABEL: func.func @output_left_alone
// CHECK-NOT: writable : memref
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %arg1
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %arg2
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %arg3
// The fused kernel, bufferized: the generic writes %out through a view, nothing is copied.
// FUSED-LABEL: func.func @reshaped_into_output
// FUSED: bufferization.to_tensor %arg1 restrict writable
func.func @reshaped_into_output(%in: memref<3x2x2xf32>, %out: memref<12xf32>) {
  %a = bufferization.to_tensor %in restrict : memref<3x2x2xf32>
  %e = tensor.empty() : tensor<3x2x2xf32>
  %t = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x2x2xf32>) outs(%e : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3x2x2xf32>
  %c = tensor.collapse_shape %t [[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
  %c2 = tensor.collapse_shape %c [[0, 1]] : tensor<3x4xf32> into tensor<12xf32>
  bufferization.materialize_in_destination %c2 in restrict writable %out : (tensor<12xf32>, memref<12xf32>) -> ()
  return
}

func.func @output_left_alone(%in: memref<3x2x2xf32>, %out: memref<12xf32>, %out2: memref<12xf32>,
                             %out3: memref<3x2x2xf32>) {
  %a = bufferization.to_tensor %in restrict : memref<3x2x2xf32>
  %e = tensor.empty() : tensor<3x2x2xf32>
  %t = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x2x2xf32>) outs(%e : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3x2x2xf32>
  %c = tensor.collapse_shape %t [[0, 1, 2]] : tensor<3x2x2xf32> into tensor<12xf32>
  bufferization.materialize_in_destination %c in writable %out : (tensor<12xf32>, memref<12xf32>) -> ()
  %e2 = tensor.empty() : tensor<3x2x2xf32>
  %t2 = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x2x2xf32>) outs(%e2 : tensor<3x2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<3x2x2xf32>
  %c2 = tensor.collapse_shape %t2 [[0, 1, 2]] : tensor<3x2x2xf32> into tensor<12xf32>
  bufferization.materialize_in_destination %c2 in restrict writable %out2 : (tensor<12xf32>, memref<12xf32>) -> ()
  bufferization.materialize_in_destination %t2 in restrict writable %out3 : (tensor<3x2x2xf32>, memref<3x2x2xf32>) -> ()
  return
}
