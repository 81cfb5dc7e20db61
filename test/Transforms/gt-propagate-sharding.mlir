// RUN: gt-opt %s --gt-propagate-sharding --split-input-file | FileCheck %s

// Data parallel: rows of x split, weights replicated. The matmul keeps the row split, the
// bias add keeps it, and the mean over the split rows becomes a partial sum.
// CHECK-LABEL: func.func @data_parallel
func.func @data_parallel(%x: tensor<8x4xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>},
                         %w: tensor<4x3xf32> {gt.sharding = #gt.sharding<replicated over [0, 1]>},
                         %b: tensor<3xf32> {gt.sharding = #gt.sharding<replicated over [0, 1]>}) {
  // CHECK: gt.matmul {{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1]>
  %y = gt.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  // CHECK: gt.add {{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1]>
  %z = gt.add %y, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  // CHECK: gt.mean {{.*}}gt.sharding = #gt.sharding<partial(sum) over [0, 1]>
  %l = gt.mean %z {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x3xf32> -> tensor<f32>
  // Reducing the other axis keeps the split (renumbered when axes before it drop).
  // CHECK: gt.sum {{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1]>
  %s = gt.sum %z {axes = array<i64: 1>, keepdims = false} : tensor<8x3xf32> -> tensor<8xf32>
  // The weight gradient x^T @ dy contracts the split axis: a partial sum (DDP's all_reduce).
  // CHECK: gt.transpose {{.*}}gt.sharding = #gt.sharding<split(1) over [0, 1]>
  %xt = gt.transpose %x {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  // CHECK: gt.matmul {{.*}}gt.sharding = #gt.sharding<partial(sum) over [0, 1]>
  %dw = gt.matmul %xt, %z : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  // The update needs the whole gradient: the partial operand must become replicated.
  // CHECK: gt.sub {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [0, 1]>, #gt.sharding<replicated over [0, 1]>], gt.sharding = #gt.sharding<replicated over [0, 1]>
  %w2 = gt.sub %w, %dw : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

// Tensor parallel: a column-parallel then a row-parallel linear; one partial sum at the end.
// CHECK-LABEL: func.func @tensor_parallel
func.func @tensor_parallel(%x: tensor<5x4xf32> {gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>},
                           %w1: tensor<4x16xf32> {gt.sharding = #gt.sharding<split(1) over [0, 1, 2, 3]>},
                           %w2: tensor<16x4xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>}) {
  // CHECK: gt.matmul {{.*}}gt.sharding = #gt.sharding<split(1) over [0, 1, 2, 3]>
  %h = gt.matmul %x, %w1 : tensor<5x4xf32>, tensor<4x16xf32> -> tensor<5x16xf32>
  // CHECK: gt.relu {{.*}}gt.sharding = #gt.sharding<split(1) over [0, 1, 2, 3]>
  %a = gt.relu %h : tensor<5x16xf32> -> tensor<5x16xf32>
  // CHECK: gt.matmul {{.*}}gt.sharding = #gt.sharding<partial(sum) over [0, 1, 2, 3]>
  %y = gt.matmul %a, %w2 : tensor<5x16xf32>, tensor<16x4xf32> -> tensor<5x4xf32>
  // Two partial sums add without communication.
  // CHECK: gt.add {{.*}}gt.sharding = #gt.sharding<partial(sum) over [0, 1, 2, 3]>
  %y2 = gt.add %y, %y : tensor<5x4xf32>, tensor<5x4xf32> -> tensor<5x4xf32>
  // CHECK: gt.tanh {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [0, 1, 2, 3]>]
  %t = gt.tanh %y2 : tensor<5x4xf32> -> tensor<5x4xf32>
  return
}

// -----

// Reshape keeps the split when the split axis survives; max over it is a partial max; an
// argmax over it needs the whole axis; a signal's worker set moves the op.
// CHECK-LABEL: func.func @layout
func.func @layout(%x: tensor<13x6xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>}) {
  // CHECK: gt.reshape {{.*}}gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>
  %r = gt.reshape %x : tensor<13x6xf32> -> tensor<13x2x3xf32>
  // CHECK: gt.reshape {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [0, 1, 2, 3]>]
  %f = gt.reshape %x : tensor<13x6xf32> -> tensor<78xf32>
  // CHECK: gt.max {{.*}}gt.sharding = #gt.sharding<partial(max) over [0, 1, 2, 3]>
  %m = gt.max %x {axes = array<i64: 0>, keepdims = false} : tensor<13x6xf32> -> tensor<6xf32>
  // CHECK: gt.argmax {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [0, 1, 2, 3]>]
  %i = gt.argmax %x {axes = array<i64: 0>, keepdims = false} : tensor<13x6xf32> -> tensor<6xi64>
  // CHECK: gt.exp {{.*}}gt.operand_shardings = [#gt.sharding<split(0) over [2, 3]>], gt.sharding = #gt.sharding<split(0) over [2, 3]>, gt.workers = array<i64: 2, 3>
  %e = gt.exp %x {gt.workers = array<i64: 2, 3>} : tensor<13x6xf32> -> tensor<13x6xf32>
  return
}

// -----

// Merging the split axis with the dims after it, or splitting it, keeps the split when every
// worker's rows stay its block of the new dim (the group's size divides the split axis).
// CHECK-LABEL: func.func @merge_split
func.func @merge_split(%x: tensor<8x4x5xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>},
                       %y: tensor<32x5xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>},
                       %z: tensor<6x5xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>}) {
  // CHECK: gt.reshape %{{.*}} {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>} : tensor<8x4x5xf32> -> tensor<32x5xf32>
  %m = gt.reshape %x : tensor<8x4x5xf32> -> tensor<32x5xf32>
  // CHECK: gt.reshape %{{.*}} {gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>} : tensor<32x5xf32> -> tensor<8x4x5xf32>
  %s = gt.reshape %y : tensor<32x5xf32> -> tensor<8x4x5xf32>
  // 6 rows over 4 workers are 2, 2, 1, 1; merged to 30 they would be 8, 8, 7, 7: gathered.
  // CHECK: gt.reshape {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [0, 1, 2, 3]>]
  %u = gt.reshape %z : tensor<6x5xf32> -> tensor<30xf32>
  return
}

// -----

// Batched matmul (attention's q @ k^T) with the batch split: both operands keep the split;
// an operand that broadcasts over the batch (rank 2 here) is used whole.
// CHECK-LABEL: func.func @batched
func.func @batched(%q: tensor<8x4x16x8xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>},
                   %k: tensor<8x4x8x16xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>},
                   %w: tensor<8x3xf32>) {
  // CHECK: gt.matmul %{{.*}} {gt.sharding = #gt.sharding<split(0) over [0, 1]>} : tensor<8x4x16x8xf32>, tensor<8x4x8x16xf32>
  %s = gt.matmul %q, %k : tensor<8x4x16x8xf32>, tensor<8x4x8x16xf32> -> tensor<8x4x16x16xf32>
  // CHECK: gt.matmul {{.*}}gt.operand_shardings = [#gt.sharding<split(0) over [0, 1]>, #gt.sharding<replicated over [0, 1]>], gt.sharding = #gt.sharding<split(0) over [0, 1]>
  %p = gt.matmul %q, %w : tensor<8x4x16x8xf32>, tensor<8x3xf32> -> tensor<8x4x16x3xf32>
  return
}

// -----

// Without signals or shardings every op stays on its worker.
// CHECK-LABEL: func.func @unsharded
func.func @unsharded(%x: tensor<3xf32> {gt.worker = 1 : i64}) {
  // CHECK: gt.neg %{{.*}} {gt.sharding = #gt.sharding<replicated over [1]>}
  %y = gt.neg %x : tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

// A shard: signal shards the compute too: an operand entering the signal's workers from outside
// (an activation from a one-worker pipeline stage) is split along the signal's axis when no
// operand is split yet; the weight, already on those workers, stays replicated. A split
// operand already there wins, and an operand too short to give each worker a row stays whole.
// CHECK-LABEL: func.func @signal_splits_entering_operands
func.func @signal_splits_entering_operands(%h: tensor<8x4xf32> {gt.sharding = #gt.sharding<replicated over [0]>},
                                           %w: tensor<4x3xf32> {gt.sharding = #gt.sharding<replicated over [1, 2, 3]>},
                                           %x: tensor<8x4xf32> {gt.sharding = #gt.sharding<split(0) over [1, 2]>},
                                           %s: tensor<1x4xf32> {gt.sharding = #gt.sharding<replicated over [0]>}) {
  // CHECK: gt.matmul {{.*}}gt.operand_shardings = [#gt.sharding<split(0) over [1, 2]>, #gt.sharding<replicated over [1, 2]>], gt.sharding = #gt.sharding<split(0) over [1, 2]>
  %y = gt.matmul %h, %w {gt.signal_axis = 0 : i64, gt.workers = array<i64: 1, 2>} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  // CHECK: gt.add {{.*}}gt.operand_shardings = [#gt.sharding<split(0) over [1, 2]>, #gt.sharding<split(0) over [1, 2]>], gt.sharding = #gt.sharding<split(0) over [1, 2]>
  %z = gt.add %x, %h {gt.signal_axis = 0 : i64, gt.workers = array<i64: 1, 2>} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  // CHECK: gt.neg {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [1, 2]>], gt.sharding = #gt.sharding<replicated over [1, 2]>
  %n = gt.neg %s {gt.signal_axis = 0 : i64, gt.workers = array<i64: 1, 2>} : tensor<1x4xf32> -> tensor<1x4xf32>
  return
}

// -----

// No signal: an op runs on the largest worker group among its operands, scalars aside, and
// between groups of one size on the one that needs the fewest bytes moved in. An optimizer's
// scalar (made on the session's worker 0) goes to the parameter on worker 1, not the
// parameter to the scalar, whichever operand comes first.
// CHECK-LABEL: func.func @a_scalar_goes_to_the_data
func.func @a_scalar_goes_to_the_data(%s: tensor<f32> {gt.sharding = #gt.sharding<replicated over [0]>},
                                     %p: tensor<64xf32> {gt.sharding = #gt.sharding<replicated over [1]>},
                                     %q: tensor<64xf32> {gt.sharding = #gt.sharding<replicated over [0, 1]>},
                                     %r: tensor<64xf32> {gt.sharding = #gt.sharding<replicated over [2]>},
                                     %v: tensor<2x64xf32> {gt.sharding = #gt.sharding<replicated over [1]>},
                                     %t: tensor<f32> {gt.sharding = #gt.sharding<replicated over [0, 1, 2]>}) {
  // CHECK: gt.mul {{.*}}gt.operand_shardings = [#gt.sharding<replicated over [1]>, #gt.sharding<replicated over [1]>], gt.sharding = #gt.sharding<replicated over [1]>
  %a = gt.mul %s, %p : tensor<f32>, tensor<64xf32> -> tensor<64xf32>
  // A scalar on every worker does not pull the tensor to all of them either.
  // CHECK: gt.mul {{.*}}gt.sharding = #gt.sharding<replicated over [1]>
  %b = gt.mul %t, %p : tensor<f32>, tensor<64xf32> -> tensor<64xf32>
  // Only scalars: the largest group.
  // CHECK: gt.add {{.*}}gt.sharding = #gt.sharding<replicated over [0, 1, 2]>
  %c = gt.add %s, %t : tensor<f32>, tensor<f32> -> tensor<f32>
  // The larger group wins over bytes: %p goes to worker 0 as well.
  // CHECK: gt.sub {{.*}}gt.sharding = #gt.sharding<replicated over [0, 1]>
  %d = gt.sub %p, %q : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  // One worker each: moving %r (256 bytes) beats moving %v (512).
  // CHECK: gt.add {{.*}}gt.sharding = #gt.sharding<replicated over [1]>
  %e = gt.add %r, %v : tensor<64xf32>, tensor<2x64xf32> -> tensor<2x64xf32>
  // A tie: the earlier operand's.
  // CHECK: gt.div {{.*}}gt.sharding = #gt.sharding<replicated over [2]>
  %f = gt.div %r, %p : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  return
}
