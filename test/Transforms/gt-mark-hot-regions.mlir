// RUN: gt-opt %s --gt-mark-hot-regions | FileCheck %s
// RUN: gt-opt %s --gt-mark-hot-regions=hot-after=1 | FileCheck %s --check-prefix=EAGER
// RUN: gt-opt %s --gt-mark-hot-regions=min-ops=3 | FileCheck %s --check-prefix=MIN3
// RUN: gt-opt %s --gt-mark-hot-regions=max-args=4 | FileCheck %s --check-prefix=MAX4
// Moving frees must never create a use after free:
// RUN: gt-opt %s --gt-mark-hot-regions --gt-verify > /dev/null

// CHECK-LABEL: func.func @repeated
// The same step twice: the first region is seen once (not hot), the second is hot, same key.
// CHECK: %[[R0:.*]] = gt.region(%arg0, %arg1) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, key = "[[KEY:[0-9a-f]+]]"}
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3xf32>):
// CHECK-NEXT:   %[[S:.*]] = gt.add %[[A]], %[[B]]
// CHECK-NEXT:   %[[T:.*]] = gt.relu %[[S]]
// Only gt.free uses %0, so it stays inside with its free; %1 is used by the matmul.
// CHECK-NEXT:   gt.free %[[S]]
// CHECK-NEXT:   gt.yield %[[T]]
// The free of an input that sat inside the run follows the region.
// CHECK: gt.free %arg0
// CHECK: gt.matmul %[[R0]], %arg2
// CHECK: gt.region(%{{.*}}, %arg1) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, hot, key = "[[KEY]]"}
// EAGER-LABEL: func.func @repeated
// EAGER-COUNT-2: gt.region({{.*}}hot
// MIN3-LABEL: func.func @repeated
// MIN3-NOT: gt.region
func.func @repeated(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %w: tensor<3x3xf32>) {
  %0 = gt.add %x, %b {gt.worker = 0 : i64} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  gt.free %x {gt.worker = 0 : i64} : tensor<4x3xf32>
  %1 = gt.relu %0 {gt.worker = 0 : i64} : tensor<4x3xf32> -> tensor<4x3xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<4x3xf32>
  %2 = gt.matmul %1, %w {gt.worker = 0 : i64} : tensor<4x3xf32>, tensor<3x3xf32> -> tensor<4x3xf32>
  %3 = gt.add %2, %b {gt.worker = 0 : i64} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %4 = gt.relu %3 {gt.worker = 0 : i64} : tensor<4x3xf32> -> tensor<4x3xf32>
  gt.free %3 {gt.worker = 0 : i64} : tensor<4x3xf32>
  return
}

// CHECK-LABEL: func.func @fill_values_not_in_key
// A different fill value gives the same key: values are run-time operands of the kernel.
// CHECK: gt.region(%arg0) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, key = "[[K2:[0-9a-f]+]]"}
// CHECK: gt.full {{.*}}value = 1.000000e-01
// CHECK: gt.region(%arg0) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, hot, key = "[[K2]]"}
// CHECK: gt.full {{.*}}value = 5.000000e-02
func.func @fill_values_not_in_key(%p: tensor<8xf32>) {
  %0 = gt.full {value = 0.1 : f64, gt.worker = 0 : i64} : tensor<f32>
  %1 = gt.mul %p, %0 {gt.worker = 0 : i64} : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<f32>
  %2 = gt.randn {seed = 1, gt.worker = 0 : i64} : tensor<8xf32>
  %3 = gt.full {value = 0.05 : f64, gt.worker = 0 : i64} : tensor<f32>
  %4 = gt.mul %p, %3 {gt.worker = 0 : i64} : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  gt.free %3 {gt.worker = 0 : i64} : tensor<f32>
  return
}

// CHECK-LABEL: func.func @split_by_worker_and_shape
// Ops on another worker start a new run; a different shape gives a different key but the same
// family (the key without sizes: at most 8 sizes of one family are compiled).
// CHECK: gt.region(%arg0) {gt.family = "[[F3:[0-9a-f]+]]", gt.worker = 0 : i64, key = "[[K3:[0-9a-f]+]]"}
// CHECK: gt.region(%arg1) {gt.family = "[[F3]]", gt.worker = 1 : i64, key = "[[K4:[0-9a-f]+]]"}
// CHECK-NOT: key = "[[K3]]"
// CHECK: return
func.func @split_by_worker_and_shape(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  %0 = gt.exp %a {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %1 = gt.neg %0 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %2 = gt.exp %b {gt.worker = 1 : i64} : tensor<5xf32> -> tensor<5xf32>
  %3 = gt.neg %2 {gt.worker = 1 : i64} : tensor<5xf32> -> tensor<5xf32>
  return
}

// CHECK-LABEL: func.func @forced
// Every op carries gt.compile (a `compile: true` signal): hot on first sight.
// CHECK: gt.region(%arg0) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, hot
func.func @forced(%a: tensor<4xf32>) {
  %0 = gt.exp %a {gt.compile, gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %1 = gt.neg %0 {gt.compile, gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @dead
// Nothing leaves the run (all of it is freed): no region, the eager path drops it.
// CHECK-NOT: gt.region
// CHECK: return
func.func @dead(%a: tensor<4xf32>) {
  %0 = gt.exp %a {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %1 = gt.neg %0 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<4xf32>
  gt.free %1 {gt.worker = 0 : i64} : tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @independent_chains
// Two loop iterations that do not depend on each other: two regions with one key (the second
// is hot), and the free of a shared input follows the last region.
// CHECK: gt.region(%arg0, %arg1) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, key = "[[K5:[0-9a-f]+]]"}
// CHECK: gt.region(%arg0, %arg1) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, hot, key = "[[K5]]"}
// CHECK: gt.free %arg1
// CHECK-NEXT: return
func.func @independent_chains(%x: tensor<4xf32>, %w: tensor<4xf32>) {
  %0 = gt.mul %x, %w {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = gt.mul %x, %w {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %2 = gt.tanh %0 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<4xf32>
  %3 = gt.tanh %1 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  gt.free %w {gt.worker = 0 : i64} : tensor<4xf32>
  gt.free %1 {gt.worker = 0 : i64} : tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @chains_sharing_a_scalar
// Two parameters' updates issued op by op (foreach: both muls, then both subs), reading one
// scalar fill: one region per parameter, each whole (its product stays inside), not one region
// per op; the fill, read by both, stays out of them.
// CHECK: %[[LR:.*]] = gt.full
// CHECK: gt.region(%arg1, %[[LR]], %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: gt.mul
// CHECK-NEXT: gt.sub
// CHECK: gt.region(%arg3, %[[LR]], %arg2) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, hot
// CHECK-NEXT: ^bb0
// CHECK-NEXT: gt.mul
// CHECK-NEXT: gt.sub
func.func @chains_sharing_a_scalar(%p: tensor<4xf32>, %g: tensor<4xf32>, %q: tensor<4xf32>, %h: tensor<4xf32>) {
  %lr = gt.full {value = 0.1 : f64, gt.worker = 0 : i64} : tensor<f32>
  %0 = gt.mul %g, %lr {gt.worker = 0 : i64} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = gt.mul %h, %lr {gt.worker = 0 : i64} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %2 = gt.sub %p, %0 {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = gt.sub %q, %1 {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<4xf32>
  gt.free %1 {gt.worker = 0 : i64} : tensor<4xf32>
  gt.free %lr {gt.worker = 0 : i64} : tensor<f32>
  return
}

// CHECK-LABEL: func.func @interleaved_chains
// Chain A (mul, tanh) starts first and ends last, around chain B (exp, neg). The free of A's
// input %x, which sat inside the run, must follow A's region, placed last (found with
// gt-verify on a real MLP batch).
// CHECK: gt.region(%arg1)
// CHECK: gt.region(%arg0, %arg1)
// CHECK: gt.free %arg0
// CHECK-NEXT: return
func.func @interleaved_chains(%x: tensor<4xf32>, %w: tensor<4xf32>) {
  %0 = gt.mul %x, %w {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = gt.exp %w {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  gt.free %x {gt.worker = 0 : i64} : tensor<4xf32>
  %2 = gt.neg %1 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %3 = gt.tanh %0 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// A chain reading six inputs takes 7 kernel arguments as one region. With at most 4 it is cut
// in order: (x + a) + b, then (. + c) + d; the last add alone is below min-ops and stays eager.
// CHECK-LABEL: func.func @too_many_args
// CHECK: gt.region(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5)
// CHECK-NOT: gt.region
// MIN3-LABEL: func.func @too_many_args
// MAX4-LABEL: func.func @too_many_args
// MAX4: %[[R1:.*]] = gt.region(%arg0, %arg1, %arg2)
// MAX4: %[[R2:.*]] = gt.region(%[[R1]], %arg3, %arg4)
// MAX4: gt.add %[[R2]], %arg5
func.func @too_many_args(%x: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>,
                         %d: tensor<4xf32>, %e: tensor<4xf32>) {
  %0 = gt.add %x, %a {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = gt.add %0, %b {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<4xf32>
  %2 = gt.add %1, %c {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  gt.free %1 {gt.worker = 0 : i64} : tensor<4xf32>
  %3 = gt.add %2, %d {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  gt.free %2 {gt.worker = 0 : i64} : tensor<4xf32>
  %4 = gt.add %3, %e {gt.worker = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  gt.free %3 {gt.worker = 0 : i64} : tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @transposes_read_by_matmul_stay_out
// relu's gradient then its transpose, read only by a matmul (a linear layer's weight
// gradient): the transpose stays an op of its own, which a CPU worker folds into the GEMM.
// The same transpose read by an elementwise op is fused as before.
// CHECK:      %[[G:.*]] = gt.region(%arg1, %arg0)
// CHECK:        gt.mul
// CHECK-NOT:    gt.transpose
// CHECK:        gt.yield
// CHECK:      %[[T:.*]] = gt.transpose %[[G]]
// CHECK-NEXT: gt.matmul %[[T]], %arg2
// CHECK:      gt.region(%arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   gt.transpose
// CHECK-NEXT:   gt.exp
func.func @transposes_read_by_matmul_stay_out(%g: tensor<4x3xf32>, %h: tensor<4x3xf32>, %x: tensor<4x5xf32>, %y: tensor<2x3xf32>) {
  %0 = gt.relu %h {gt.worker = 0 : i64} : tensor<4x3xf32> -> tensor<4x3xf32>
  %1 = gt.mul %g, %0 {gt.worker = 0 : i64} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<4x3xf32>
  %2 = gt.transpose %1 {perm = array<i64: 1, 0>, gt.worker = 0 : i64} : tensor<4x3xf32> -> tensor<3x4xf32>
  %3 = gt.matmul %2, %x {gt.worker = 0 : i64} : tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
  gt.free %2 {gt.worker = 0 : i64} : tensor<3x4xf32>
  %4 = gt.transpose %y {perm = array<i64: 1, 0>, gt.worker = 0 : i64} : tensor<2x3xf32> -> tensor<3x2xf32>
  %5 = gt.exp %4 {gt.worker = 0 : i64} : tensor<3x2xf32> -> tensor<3x2xf32>
  return
}

// CHECK-LABEL: func.func @frees_stay_where_they_were
// Independent multiplications (one-op chains: no region) and a last chain that is one. The
// frees of results no region reads stay where the client put them, so each result's memory
// comes back before the next is made; only the free of %c, which the region reads, follows it.
// CHECK: %[[M0:.*]] = gt.mul %arg0, %arg1
// CHECK-NEXT: gt.free %[[M0]]
// CHECK-NEXT: %[[M1:.*]] = gt.mul %arg0, %arg1
// CHECK-NEXT: gt.free %[[M1]]
// CHECK-NEXT: gt.region
// CHECK: gt.yield
// CHECK-NEXT: }
// CHECK-NEXT: gt.free %arg2
func.func @frees_stay_where_they_were(%a: tensor<64xf32>, %b: tensor<64xf32>, %c: tensor<64xf32>) {
  %0 = gt.mul %a, %b {gt.worker = 0 : i64} : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  gt.free %0 {gt.worker = 0 : i64} : tensor<64xf32>
  %1 = gt.mul %a, %b {gt.worker = 0 : i64} : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  gt.free %1 {gt.worker = 0 : i64} : tensor<64xf32>
  %2 = gt.add %c, %c {gt.worker = 0 : i64} : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  gt.free %c {gt.worker = 0 : i64} : tensor<64xf32>
  %3 = gt.neg %2 {gt.worker = 0 : i64} : tensor<64xf32> -> tensor<64xf32>
  gt.free %2 {gt.worker = 0 : i64} : tensor<64xf32>
  return
}
