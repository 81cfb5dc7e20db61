// RUN: gt-opt %s --gt-apply-signals="config=%S/Inputs/signals.yaml num-workers=4" --gt-propagate-sharding --gt-insert-collectives --gt-split-by-worker --gt-mark-hot-regions | FileCheck %s
// RUN: gt-opt %s --gt-apply-signals="config=%S/Inputs/signals.yaml num-workers=4" --gt-propagate-sharding --gt-insert-collectives --gt-split-by-worker --gt-mark-hot-regions --gt-verify > /dev/null
// RUN: gt-opt %s --gt-dispatcher-pipeline="config=%S/Inputs/signals.yaml num-workers=4" | FileCheck %s

// The dispatcher's sharded pipeline: fused regions form inside each worker's function, on the
// local shapes. Ops under `hot` (`compile: true`) make a region that is hot at first sight;
// the others wait until their key repeats. Values the passes added (each worker's mean and
// its share of the rows) are freed inside their region; collectives end a region.
// CHECK-LABEL: func.func @worker0
// CHECK: %[[Y:.*]] = gt.matmul {{.*}} -> tensor<2x3xf32>
// CHECK: gt.region(%[[Y]], %arg1) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, hot, key = "{{.*}}"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: gt.add {{.*}}gt.compile
// CHECK: gt.relu {{.*}}gt.compile
// CHECK: %[[P:.*]] = gt.region(%[[Y]]) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, key = "{{.*}}"} : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[M:.*]] = gt.mean
// CHECK-NEXT: %[[S:.*]] = gt.full {value = 2.500000e-01 : f64}
// CHECK-NEXT: %[[L:.*]] = gt.mul %[[M]], %[[S]] {gt.id = 7 : i64
// CHECK-NEXT: gt.free %[[M]]
// CHECK-NEXT: gt.free %[[S]]
// CHECK-NEXT: gt.yield %[[L]]
// CHECK: %[[A:.*]] = gt.all_reduce %[[P]]
// CHECK: gt.region(%[[A]]) {gt.family = "{{[0-9a-f]+}}", gt.worker = 0 : i64, key = "{{.*}}"} : (tensor<f32>) -> tensor<f32>
// CHECK: gt.free %[[A]]
// CHECK-LABEL: func.func @worker3
// CHECK: gt.region({{.*}}) {gt.family = "{{[0-9a-f]+}}", gt.worker = 3 : i64, hot, key = "{{.*}}"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @step(%w: tensor<4x3xf32> {gt.id = 1 : i64, gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>},
                %b: tensor<3xf32> {gt.id = 2 : i64, gt.sharding = #gt.sharding<replicated over [0, 1, 2, 3]>}) {
  %x = gt.upload {blob = 0 : i64, gt.id = 3 : i64, gt.signal = "data"} : tensor<8x4xf32>
  %y = gt.matmul %x, %w {gt.id = 4 : i64, gt.signal = "data"} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %z = gt.add %y, %b {gt.id = 5 : i64, gt.signal = "hot"} : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %r = gt.relu %z {gt.id = 6 : i64, gt.signal = "hot"} : tensor<8x3xf32> -> tensor<8x3xf32>
  gt.free %z : tensor<8x3xf32>
  %l = gt.mean %y {gt.id = 7 : i64, axes = array<i64: 0, 1>, keepdims = false} : tensor<8x3xf32> -> tensor<f32>
  %e = gt.exp %l {gt.id = 8 : i64} : tensor<f32> -> tensor<f32>
  %n = gt.neg %e {gt.id = 9 : i64} : tensor<f32> -> tensor<f32>
  gt.free %e : tensor<f32>
  return
}
