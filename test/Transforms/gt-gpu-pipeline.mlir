// RUN: gt-opt %s --gt-fuse-pipeline --gt-gpu-pipeline | FileCheck %s

// What a CUDA worker does to a hot region: the add+tanh chain is ONE kernel, PTX for sm_90
// inside gpu.binary; the host side allocates through mgpuMemAlloc (the worker's caching
// allocator) and launches 12 threads in one block.
// CHECK: llvm.func @chain
// CHECK: llvm.call @mgpuStreamCreate
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @chain_kernel::@chain_kernel
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @chain_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, {{.*}}assembly = "
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry chain_kernel(
// CHECK: llvm.func @total
// CHECK: gpu.launch_func
// CHECK: gpu.binary @total_kernel
// The sum's kernel (gt-gpu-reductions): 256 threads, a tree of warp shuffles, the warps'
// partials through shared memory between two barriers; no serial kernel.
// CHECK: gpu.binary @total_kernel_0
// CHECK-SAME: .maxntid 256, 1, 1
// CHECK-SAME: .shared .align 4 .b8
// CHECK-SAME: shfl.sync.bfly.b32
// CHECK-SAME: bar.sync
// CHECK-SAME: bar.sync
func.func @chain(%x: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = gt.add %x, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = gt.tanh %0 : tensor<4x3xf32> -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// A full sum: the fill of its output, then a block-parallel reduction (two kernels).
func.func @total(%x: tensor<1000xf32>) -> tensor<f32> {
  %0 = gt.exp %x : tensor<1000xf32> -> tensor<1000xf32>
  %1 = gt.sum %0 {axes = array<i64: 0>} : tensor<1000xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// A 4-d broadcast add: one kernel over the collapsed index, which it splits back into four
// with the sizes as immediates (gpu-launch-sink-index-computations before outlining): LLVM
// turns those divisions into multiply-shifts, where a size passed as a kernel argument would
// cost a 64-bit division (div.s64, dozens of instructions) per element and axis.
// CHECK: gpu.binary @add4_kernel
// CHECK-SAME: .visible .entry add4_kernel(
// CHECK-NOT: {{div|rem}}.{{s|u}}{{32|64}}
// CHECK-SAME: mul.hi
// CHECK-NOT: {{div|rem}}.{{s|u}}{{32|64}}
func.func @add4(%x: tensor<8x12x64x64xf32>, %y: tensor<64x64xf32>) -> tensor<8x12x64x64xf32> {
  %0 = gt.add %x, %y : tensor<8x12x64x64xf32>, tensor<64x64xf32> -> tensor<8x12x64x64xf32>
  return %0 : tensor<8x12x64x64xf32>
}
