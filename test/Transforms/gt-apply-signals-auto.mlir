// RUN: gt-opt %s --gt-apply-signals="num-workers=2 auto-shard-bytes=128" --gt-propagate-sharding | FileCheck %s
// RUN: gt-opt %s --gt-apply-signals="config=%S/Inputs/signals.yaml num-workers=4 auto-shard-bytes=128" | FileCheck %s --check-prefix=CONFIG

// GT_AUTO_SHARD: a tensor made outside any signal with at least auto-shard-bytes bytes (here
// 8x4 float32 = 128) is split along axis 0 over all workers; smaller ones, and ones with fewer
// rows than workers, are replicated over all workers. Compute follows: x @ w is data parallel.
// CHECK-LABEL: func.func @auto
func.func @auto() {
  // CHECK: gt.upload {{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1]>{{.*}} : tensor<8x4xf32>
  %x = gt.upload {blob = 0 : i64} : tensor<8x4xf32>
  // CHECK: gt.upload {{.*}}gt.sharding = #gt.sharding<replicated over [0, 1]>{{.*}} : tensor<4x3xf32>
  %w = gt.upload {blob = 1 : i64} : tensor<4x3xf32>
  // CHECK: gt.randn {{.*}}gt.sharding = #gt.sharding<replicated over [0, 1]>{{.*}} : tensor<1x64xf32>
  %r = gt.randn {seed = 1 : i64, shape = array<i64: 1, 64>} : tensor<1x64xf32>
  // CHECK: gt.matmul {{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1]>
  %y = gt.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  // A signal the config names wins over the automatic layout.
  // CONFIG: gt.upload {{.*}}gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>, gt.signal = "params"} : tensor<8x4xf32>
  %p = gt.upload {blob = 2 : i64, gt.signal = "params"} : tensor<8x4xf32>
  return
}
