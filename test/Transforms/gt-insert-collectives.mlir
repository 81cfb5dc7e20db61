// RUN: gt-opt %s --gt-propagate-sharding --gt-insert-collectives --split-input-file | FileCheck %s

// Data parallel: the weight gradient (a partial sum) is all-reduced before the update; the
// collective carries the signal of the op that needed it.
// CHECK-LABEL: func.func @data_parallel
func.func @data_parallel(%x: tensor<8x4xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>},
                         %dy: tensor<8x3xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>},
                         %w: tensor<4x3xf32> {gt.sharding = #gt.sharding<replicated over [0, 1]>}) {
  %xt = gt.transpose %x {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %dw = gt.matmul %xt, %dy : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  // CHECK: %[[G:.*]] = gt.all_reduce %{{.*}} {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "optimizer", workers = array<i64: 0, 1>}
  // CHECK: gt.sub %{{.*}}, %[[G]] {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "optimizer"}
  %w2 = gt.sub %w, %dw {gt.signal = "optimizer"} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  // The same conversion is reused, not repeated.
  // CHECK-NOT: gt.all_reduce
  // CHECK: gt.mul %{{.*}}, %[[G]]
  %w3 = gt.mul %w2, %dw {gt.signal = "optimizer"} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

// Every layout change: split -> replicated (all_gather), split(1) -> split(0) (all_to_all),
// replicated -> split (all_slice, local), partial -> split (reduce_scatter).
// CHECK-LABEL: func.func @conversions
func.func @conversions(%x: tensor<13x8xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>},
                       %r: tensor<8x4xf32> {gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>},
                       %c: tensor<13x8xf32> {gt.sharding = #gt.sharding<split(1) over [0, 1, 2, 3]>}) {
  // CHECK: gt.all_gather %arg0 {axis = 0 : i64, gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>, workers = array<i64: 0, 1, 2, 3>}
  %i = gt.argmax %x {axes = array<i64: 0>, keepdims = false} : tensor<13x8xf32> -> tensor<8xi64>
  // CHECK: gt.all_to_all %arg2 {concat_axis = 1 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>, split_axis = 0 : i64, workers = array<i64: 0, 1, 2, 3>}
  %s = gt.add %x, %c : tensor<13x8xf32>, tensor<13x8xf32> -> tensor<13x8xf32>
  // x split along k: r is sliced locally along its rows, the product is a partial sum
  // CHECK: %[[RS:.*]] = gt.all_slice %arg1 {axis = 0 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>, workers = array<i64: 0, 1, 2, 3>}
  // CHECK: gt.matmul %{{.*}}, %[[RS]] {gt.sharding = #gt.sharding<partial(sum) over [0, 1, 2, 3]>}
  %y = gt.matmul %c, %r : tensor<13x8xf32>, tensor<8x4xf32> -> tensor<13x4xf32>
  // CHECK: gt.reduce_scatter %{{.*}} {axis = 0 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>, workers = array<i64: 0, 1, 2, 3>}
  %t = gt.shard %y {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>} : tensor<13x4xf32> -> tensor<13x4xf32>
  return
}

// -----

// Pipeline: stage 2 runs on other workers; a split with the same worker count moves as is,
// a partial value is reduced before it moves.
// CHECK-LABEL: func.func @pipeline
func.func @pipeline(%x: tensor<8x4xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>},
                    %p: tensor<4x4xf32> {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>}) {
  // CHECK: gt.move %arg0 {from = array<i64: 0, 1>, gt.sharding = #gt.sharding<split(0) over [2, 3]>, gt.signal = "stage2", to = array<i64: 2, 3>}
  %y = gt.relu %x {gt.workers = array<i64: 2, 3>, gt.signal = "stage2"} : tensor<8x4xf32> -> tensor<8x4xf32>
  // CHECK: %[[R:.*]] = gt.all_reduce %arg1 {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "stage2", workers = array<i64: 0, 1>}
  // CHECK: gt.move %[[R]] {from = array<i64: 0, 1>, gt.sharding = #gt.sharding<replicated over [2, 3]>, gt.signal = "stage2", to = array<i64: 2, 3>}
  %z = gt.tanh %p {gt.workers = array<i64: 2, 3>, gt.signal = "stage2"} : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// A replicated value entering a split group moves straight to the split layout (a scatter:
// each worker receives its block), not whole and then sliced.
// CHECK-LABEL: func.func @scatter
// CHECK: %[[M:.*]] = gt.move %arg0 {from = array<i64: 0>, gt.sharding = #gt.sharding<split(0) over [1, 2, 3]>, gt.signal = "data", to = array<i64: 1, 2, 3>}
// CHECK-NOT: gt.all_slice
// CHECK: gt.relu %[[M]]
func.func @scatter(%x: tensor<13x4xf32> {gt.sharding = #gt.sharding<replicated over [0]>}) {
  %s = gt.relu %x {gt.workers = array<i64: 1, 2, 3>, gt.signal = "data", gt.signal_axis = 0 : i64} : tensor<13x4xf32> -> tensor<13x4xf32>
  return
}
