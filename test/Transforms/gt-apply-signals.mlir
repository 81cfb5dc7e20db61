// RUN: gt-opt %s --gt-apply-signals="config=%S/Inputs/signals.yaml num-workers=4" | FileCheck %s
// RUN: not gt-opt %s --gt-apply-signals="config=%S/Inputs/bad-axis.yaml num-workers=4" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not gt-opt %s --gt-apply-signals="config=%S/Inputs/bad-worker.yaml num-workers=4" 2>&1 | FileCheck %s --check-prefix=WORKER
// RUN: not gt-opt %s --gt-apply-signals="config=%S/Inputs/bad-key.yaml num-workers=4" 2>&1 | FileCheck %s --check-prefix=KEY

// Creation ops get the signal's layout; compute ops get its workers (and a shard: signal's axis);
// unknown signals and ops without a signal are left alone.
// CHECK-LABEL: func.func @signals
func.func @signals(%w: tensor<4x3xf32>) {
  // CHECK: gt.upload {{{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>, gt.signal = "data"}
  %x = gt.upload {blob = 0 : i64, gt.signal = "data"} : tensor<8x4xf32>
  // CHECK: gt.randn {gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>, gt.signal = "params"
  %p = gt.randn {seed = 1 : i64, gt.signal = "params"} : tensor<4x3xf32>
  // CHECK: gt.matmul {{.*}}gt.signal = "stage1", gt.signal_axis = 0 : i64, gt.workers = array<i64: 0, 1>
  %y = gt.matmul %x, %p {gt.signal = "stage1"} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  // A gradient op uses the entry its signal's `backward:` names.
  // CHECK: gt.neg {{.*}}gt.backward, gt.signal = "stage1", gt.signal_axis = 0 : i64, gt.workers = array<i64: 2, 3>
  %g = gt.neg %y {gt.signal = "stage1", gt.backward} : tensor<8x3xf32> -> tensor<8x3xf32>
  // A negative axis counts from the end.
  // CHECK: gt.shard {{.*}}gt.sharding = #gt.sharding<split(1) over [1, 3]>, gt.signal = "columns"
  %c = gt.shard %w {gt.signal = "columns"} : tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: gt.exp {{.*}}gt.compile
  %e = gt.exp %w {gt.signal = "hot"} : tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: gt.relu %{{.*}} {gt.signal = "nobody"} :
  %r = gt.relu %w {gt.signal = "nobody"} : tensor<4x3xf32> -> tensor<4x3xf32>
  // A scalar made under a split signal is replicated over its workers (no axis to split).
  // CHECK: gt.full {{{.*}}gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>, gt.signal = "data"
  %one = gt.full {value = 1.0 : f64, gt.signal = "data"} : tensor<f32>
  // (bad-axis.yaml's signal)
  %z = gt.full {value = 0.0 : f64, gt.signal = "rows"} : tensor<8x4xf32>
  return
}

// AXIS: bad-axis.yaml:3: signal 'rows' splits axis 2, but the tensor has rank 2 (shape [8, 4])
// WORKER: bad-worker.yaml:4: signal 'stage' names worker 7, but there are only 4 workers (0..3)
// KEY: bad-key.yaml:3: unknown key 'sharded' in signal 'layer1' (expected shard, replicated, backward, compile)
