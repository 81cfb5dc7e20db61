// RUN: gt-opt %s --gt-propagate-sharding --gt-insert-collectives --gt-split-by-worker --split-input-file | FileCheck %s

// Data parallel over 4 workers with 13 rows (4, 3, 3, 3): each worker runs the matmul on its
// rows; the mean over the split rows is each worker's mean times its share, then all-reduced;
// a split randn is drawn whole and sliced, so its values match the unsharded tensor. Values
// the passes added (no gt.id) are freed right after their last use.
// CHECK-LABEL: func.func @worker0
// CHECK-SAME: %arg0: tensor<4x4xf32> {gt.id = 1 : i64
// CHECK: gt.matmul %arg0, %arg1 {{.*}} -> tensor<4x3xf32>
// CHECK: %[[M:.*]] = gt.mean
// CHECK: %[[S:.*]] = gt.full {value = 0.30769230769230771 : f64} : tensor<f32>
// CHECK: %[[L:.*]] = gt.mul %[[M]], %[[S]] {gt.id = 4 : i64, gt.sharding = #gt.sharding<partial(sum) over [0, 1, 2, 3]>}
// CHECK-DAG: gt.free %[[S]] : tensor<f32>
// CHECK-DAG: gt.free %[[M]] : tensor<f32>
// CHECK: %[[A:.*]] = gt.all_reduce %[[L]] {{.*}}workers = array<i64: 0, 1, 2, 3>} : tensor<f32> -> tensor<f32>
// CHECK-NEXT: gt.exp %[[A]] {gt.id = 5
// CHECK-NEXT: gt.free %[[A]] : tensor<f32>
// CHECK: %[[R:.*]] = gt.randn {seed = 3 : i64} : tensor<13x4xf32>
// CHECK-NEXT: gt.all_slice %[[R]] {axis = 0 : i64, gt.id = 6 : i64, {{.*}} : tensor<13x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: gt.free %[[R]] : tensor<13x4xf32>
// CHECK: gt.free %{{.*}} : tensor<4x3xf32>
// CHECK-LABEL: func.func @worker1
// CHECK-SAME: %arg0: tensor<3x4xf32>
// CHECK: gt.full {value = 0.23076923076923078 : f64}
// CHECK-LABEL: func.func @worker3
// CHECK: gt.all_slice {{.*}} -> tensor<3x4xf32>
func.func @data_parallel(%x: tensor<13x4xf32> {gt.id = 1 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>},
                         %w: tensor<4x3xf32> {gt.id = 2 : i64, gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>}) {
  %y = gt.matmul %x, %w {gt.id = 3 : i64} : tensor<13x4xf32>, tensor<4x3xf32> -> tensor<13x3xf32>
  %l = gt.mean %y {gt.id = 4 : i64, axes = array<i64: 0, 1>, keepdims = false} : tensor<13x3xf32> -> tensor<f32>
  %e = gt.exp %l {gt.id = 5 : i64} : tensor<f32> -> tensor<f32>
  %r = gt.randn {gt.id = 6 : i64, seed = 3 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1, 2, 3]>} : tensor<13x4xf32>
  gt.free %y : tensor<13x3xf32>
  return
}

// -----

// Pipeline: stage 1 on workers 0 and 1, stage 2 on 2 and 3. A split with the same worker
// count moves block by block: worker 0 sends to 2, worker 1 to 3 (7 and 6 rows).
// CHECK-LABEL: func.func @worker0
// CHECK: %[[A:.*]] = gt.tanh %arg0 {{.*}} -> tensor<7x4xf32>
// CHECK: gt.send %[[A]] {gt.signal = "stage2", peer = 2 : i64} : tensor<7x4xf32>
// CHECK-LABEL: func.func @worker1
// CHECK: gt.send %{{.*}} {gt.signal = "stage2", peer = 3 : i64} : tensor<6x4xf32>
// CHECK-LABEL: func.func @worker2
// CHECK: %[[IN:.*]] = gt.recv {gt.signal = "stage2", peer = 0 : i64} : tensor<7x4xf32>
// CHECK: gt.relu %[[IN]] {gt.id = 2 : i64{{.*}} : tensor<7x4xf32> -> tensor<7x4xf32>
// CHECK-LABEL: func.func @worker3
// CHECK: gt.recv {gt.signal = "stage2", peer = 1 : i64} : tensor<6x4xf32>
func.func @pipeline(%x: tensor<13x4xf32> {gt.id = 0 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1]>}) {
  %a = gt.tanh %x {gt.id = 1 : i64, gt.workers = array<i64: 0, 1>, gt.signal = "stage1"} : tensor<13x4xf32> -> tensor<13x4xf32>
  %b = gt.relu %a {gt.id = 2 : i64, gt.workers = array<i64: 2, 3>, gt.signal = "stage2"} : tensor<13x4xf32> -> tensor<13x4xf32>
  return
}

// -----

// Tensor parallel over 2 workers: column-parallel then row-parallel; one all_reduce.
// CHECK-LABEL: func.func @worker0
// CHECK: gt.matmul %arg0, %arg1 {{.*}} : tensor<5x4xf32>, tensor<4x8xf32> -> tensor<5x8xf32>
// CHECK: gt.relu {{.*}} -> tensor<5x8xf32>
// CHECK: %[[P:.*]] = gt.matmul {{.*}} : tensor<5x8xf32>, tensor<8x4xf32> -> tensor<5x4xf32>
// CHECK: gt.all_reduce %[[P]]
// CHECK-NOT: gt.all_
// CHECK-LABEL: func.func @worker1
func.func @tensor_parallel(%x: tensor<5x4xf32> {gt.sharding = #gt.sharding<replicated over [0, 1]>},
                           %w1: tensor<4x16xf32> {gt.sharding = #gt.sharding<split(1) over [0, 1]>},
                           %w2: tensor<16x4xf32> {gt.sharding = #gt.sharding<split(0) over [0, 1]>}) {
  %h = gt.matmul %x, %w1 : tensor<5x4xf32>, tensor<4x16xf32> -> tensor<5x16xf32>
  %a = gt.relu %h : tensor<5x16xf32> -> tensor<5x16xf32>
  %y = gt.matmul %a, %w2 : tensor<5x16xf32>, tensor<16x4xf32> -> tensor<5x4xf32>
  %t = gt.tanh %y : tensor<5x4xf32> -> tensor<5x4xf32>
  return
}

// -----

// A tensor made on worker 0 outside the `data` signal is scattered to the signal's workers:
// each gets only its rows (5, 4, 4), cut by the sender; worker 0 keeps its own block.
// CHECK-LABEL: func.func @worker0
// CHECK: gt.all_slice %arg0 {axis = 0 : i64, gt.signal = "data", workers = array<i64: 0, 1, 2>} : tensor<13x4xf32> -> tensor<5x4xf32>
// CHECK: %[[B1:.*]] = gt.slice %arg0 {gt.signal = "data", starts = array<i64: 5, 0>, steps = array<i64: 1, 1>} : tensor<13x4xf32> -> tensor<4x4xf32>
// CHECK: gt.send %[[B1]] {gt.signal = "data", peer = 1 : i64} : tensor<4x4xf32>
// CHECK: %[[B2:.*]] = gt.slice %arg0 {gt.signal = "data", starts = array<i64: 9, 0>, steps = array<i64: 1, 1>} : tensor<13x4xf32> -> tensor<4x4xf32>
// CHECK: gt.send %[[B2]] {gt.signal = "data", peer = 2 : i64} : tensor<4x4xf32>
// CHECK-NOT: gt.send
// CHECK-LABEL: func.func @worker1
// CHECK: %[[IN:.*]] = gt.recv {gt.signal = "data", peer = 0 : i64} : tensor<4x4xf32>
// CHECK: gt.relu %[[IN]] {{.*}} : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-LABEL: func.func @worker2
// CHECK: gt.recv {gt.signal = "data", peer = 0 : i64} : tensor<4x4xf32>
func.func @scatter(%x: tensor<13x4xf32> {gt.id = 0 : i64, gt.sharding = #gt.sharding<replicated over [0]>}) {
  %s = gt.relu %x {gt.id = 1 : i64, gt.workers = array<i64: 0, 1, 2>, gt.signal = "data", gt.signal_axis = 0 : i64} : tensor<13x4xf32> -> tensor<13x4xf32>
  return
}

// -----

// A whole client tensor (%s, id 7, an argument on worker 0) moved to worker 1 stays there as
// a replica (gt.replica_of = 7), freed with %s rather than after its last use; a later move
// of it to workers 1 and 2 reuses that copy and sends only to worker 2. A tensor this batch
// made (%u, id 11) is kept the same way (freed by a later batch). A value the passes made
// (%v, no id) is received as a temporary and freed after its last use.
// CHECK-LABEL: func.func @worker0
// CHECK: gt.send %arg0 {gt.signal = "stage2", peer = 1 : i64} : tensor<f32>
// CHECK: gt.send %arg0 {peer = 2 : i64} : tensor<f32>
// CHECK-NOT: gt.send %arg0
// CHECK: gt.free %arg0
// CHECK-LABEL: func.func @worker1
// CHECK: %[[S:.*]] = gt.recv {gt.replica_of = 7 : i64, gt.signal = "stage2", peer = 0 : i64} : tensor<f32>
// CHECK: gt.mul %[[S]], %arg0
// CHECK: %[[U:.*]] = gt.recv {gt.replica_of = 11 : i64, gt.signal = "stage2", peer = 0 : i64} : tensor<4xf32>
// CHECK: %[[V:.*]] = gt.recv {gt.signal = "stage2", peer = 0 : i64} : tensor<4xf32>
// CHECK: gt.add %[[U]], %[[V]]
// CHECK: gt.free %[[V]]
// CHECK-NOT: gt.recv
// CHECK: gt.exp %[[S]]
// CHECK: gt.free %[[S]]
// CHECK-NOT: gt.free
// CHECK-LABEL: func.func @worker2
// CHECK: %[[S2:.*]] = gt.recv {gt.replica_of = 7 : i64, peer = 0 : i64} : tensor<f32>
// CHECK: gt.exp %[[S2]]
// CHECK: gt.free %[[S2]]
func.func @replica(%s: tensor<f32> {gt.id = 7 : i64, gt.sharding = #gt.sharding<replicated over [0]>},
                   %p: tensor<4xf32> {gt.id = 8 : i64, gt.sharding = #gt.sharding<replicated over [1]>}) {
  %t = gt.neg %s {gt.id = 9 : i64, gt.workers = array<i64: 0>} : tensor<f32> -> tensor<f32>
  %a = gt.mul %s, %p {gt.id = 10 : i64, gt.workers = array<i64: 1>, gt.signal = "stage2"} : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %u = gt.broadcast_to %t {gt.id = 11 : i64, gt.workers = array<i64: 0>, shape = array<i64: 4>} : tensor<f32> -> tensor<4xf32>
  %v = gt.exp %u {gt.workers = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
  %b = gt.add %u, %v {gt.id = 12 : i64, gt.workers = array<i64: 1>, gt.signal = "stage2"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = gt.exp %s {gt.id = 13 : i64, gt.workers = array<i64: 1, 2>} : tensor<f32> -> tensor<f32>
  gt.free %s : tensor<f32>
  return
}
