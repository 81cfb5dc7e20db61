// RUN: gt-opt %s --gt-lower-to-linalg --split-input-file | FileCheck %s
// RUN: gt-opt %s --gt-fuse-pipeline --gt-gpu-pipeline --split-input-file | FileCheck %s --check-prefix=GPU
// What a CUDA worker does to each: kernels assembled to PTX (not run here); col2im's zero fill
// is a kernel of its own.
// GPU: gpu.launch_func {{.*}} @im2col_kernel::@im2col_kernel
// GPU: gpu.binary @im2col_kernel
// GPU: gpu.launch_func {{.*}} @col2im_kernel
// GPU: gpu.binary @col2im_kernel

// im2col: one parallel generic over the windows (N, oH, oW, C, kH, kW); tap k of window o reads
// the input at o * stride - padding + k * dilation, clamped into range, and selects 0 outside it.
// CHECK-LABEL: func.func @im2col
func.func @im2col(%x: tensor<2x3x5x5xf32>) -> tensor<2x3x3x3x2x2xf32> {
  // CHECK: linalg.generic
  // CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]
  // CHECK-SAME: outs(%{{.*}} : tensor<2x3x3x3x2x2xf32>)
  // CHECK: arith.cmpi slt
  // CHECK: arith.cmpi sge
  // CHECK: arith.minsi
  // CHECK: %[[V:.*]] = tensor.extract %{{.*}} : tensor<2x3x5x5xf32>
  // CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[V]], %{{.*}} : f32
  // CHECK: linalg.yield %[[S]]
  %0 = gt.im2col %x {padding = array<i64: 1, 0>, stride = array<i64: 2, 1>, dilation = array<i64: 1, 2>} : tensor<2x3x5x5xf32> -> tensor<2x3x3x3x2x2xf32>
  return %0 : tensor<2x3x3x3x2x2xf32>
}

// -----

// col2im: the image's axes parallel (looped n, positions, channel: the channel inside), the
// kernel taps reductions (carried by a 2x2 operand whose values are unused); a tap whose window
// position does not divide by the stride adds nothing.
// CHECK-DAG: #[[TAPS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-DAG: #[[IMAGE:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2)>
// CHECK: func.func @col2im
func.func @col2im(%c: tensor<2x3x3x3x2x2xf32>) -> tensor<2x3x5x5xf32> {
  // CHECK: %[[Z:.*]] = linalg.fill
  // CHECK: linalg.generic {indexing_maps = [#[[TAPS]], #[[IMAGE]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
  // CHECK-SAME: outs(%[[Z]] : tensor<2x3x5x5xf32>)
  // CHECK: arith.divui
  // CHECK: arith.remui
  // CHECK: tensor.extract %{{.*}} : tensor<2x3x3x3x2x2xf32>
  // CHECK: arith.select
  // CHECK: arith.addf
  %0 = gt.col2im %c {padding = array<i64: 1, 0>, stride = array<i64: 2, 1>, dilation = array<i64: 1, 2>} : tensor<2x3x3x3x2x2xf32> -> tensor<2x3x5x5xf32>
  return %0 : tensor<2x3x5x5xf32>
}
