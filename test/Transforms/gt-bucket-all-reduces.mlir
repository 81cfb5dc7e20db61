// RUN: gt-opt %s --gt-bucket-all-reduces --split-input-file | FileCheck %s
// RUN: gt-opt %s --gt-bucket-all-reduces=bucket-bytes=56 --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: gt-opt %s --gt-bucket-all-reduces=bucket-bytes=0 --split-input-file | FileCheck %s --check-prefix=OFF

// A data-parallel optimizer step: three gradients (12 + 3 + 4 floats), each all-reduced
// before its update, become one all_reduce of 19 floats before the first update; each update
// reads its slice of the result.
// CHECK-LABEL: func.func @gradients
// CHECK: %[[FA:.*]] = gt.reshape %arg0 {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>, gt.signal = "params"} : tensor<4x3xf32> -> tensor<12xf32>
// CHECK: %[[FC:.*]] = gt.reshape %arg2 {{.*}} : tensor<2x2xf32> -> tensor<4xf32>
// CHECK: %[[ALL:.*]] = gt.concat %[[FA]], %arg1, %[[FC]] {axis = 0 : i64, {{.*}}} : tensor<12xf32>, tensor<3xf32>, tensor<4xf32> -> tensor<19xf32>
// CHECK: %[[R:.*]] = gt.all_reduce %[[ALL]] {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "params", workers = array<i64: 0, 1>} : tensor<19xf32> -> tensor<19xf32>
// CHECK: %[[SA:.*]] = gt.slice %[[R]] {{{.*}}starts = array<i64: 0>, steps = array<i64: 1>} : tensor<19xf32> -> tensor<12xf32>
// CHECK: %[[A:.*]] = gt.reshape %[[SA]] {{.*}} : tensor<12xf32> -> tensor<4x3xf32>
// CHECK: %[[B:.*]] = gt.slice %[[R]] {{{.*}}starts = array<i64: 12>, steps = array<i64: 1>} : tensor<19xf32> -> tensor<3xf32>
// CHECK: %[[SC:.*]] = gt.slice %[[R]] {{{.*}}starts = array<i64: 15>, steps = array<i64: 1>} : tensor<19xf32> -> tensor<4xf32>
// CHECK: %[[C:.*]] = gt.reshape %[[SC]] {{.*}} : tensor<4xf32> -> tensor<2x2xf32>
// CHECK-NOT: gt.all_reduce
// CHECK: gt.neg %[[A]]
// CHECK: gt.neg %[[B]]
// CHECK: gt.neg %[[C]]
// SMALL-LABEL: func.func @gradients
// With 56-byte buckets the 48-byte gradient stays alone and the other two (12 + 16 bytes) share one.
// SMALL: gt.all_reduce %arg0 {{.*}} : tensor<4x3xf32> -> tensor<4x3xf32>
// SMALL: gt.concat %arg1, %{{.*}} : tensor<3xf32>, tensor<4xf32> -> tensor<7xf32>
// SMALL: gt.all_reduce %{{.*}} : tensor<7xf32> -> tensor<7xf32>
// SMALL-NOT: gt.all_reduce
// OFF-LABEL: func.func @gradients
// OFF-COUNT-3: gt.all_reduce
func.func @gradients(%ga: tensor<4x3xf32> {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>},
                     %gb: tensor<3xf32> {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>},
                     %gc: tensor<2x2xf32> {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>}) {
  %a = gt.all_reduce %ga {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "params", workers = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %ua = gt.neg %a {gt.sharding = #gt.sharding<replicated over [0, 1]>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = gt.all_reduce %gb {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "params", workers = array<i64: 0, 1>} : tensor<3xf32> -> tensor<3xf32>
  %ub = gt.neg %b {gt.sharding = #gt.sharding<replicated over [0, 1]>} : tensor<3xf32> -> tensor<3xf32>
  %c = gt.all_reduce %gc {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "params", workers = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<2x2xf32>
  %uc = gt.neg %c {gt.sharding = #gt.sharding<replicated over [0, 1]>} : tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

// Not combined: an operand computed after the first all_reduce (it depends on it), another
// reduction (max), another signal, another group.
// CHECK-LABEL: func.func @apart
// SMALL-LABEL: func.func @apart
// CHECK-COUNT-5: gt.all_reduce
// CHECK-NOT: gt.concat
func.func @apart(%g: tensor<3xf32> {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>},
                 %h: tensor<3xf32> {gt.sharding = #gt.sharding<partial(max) over [0, 1]>},
                 %k: tensor<3xf32> {gt.sharding = #gt.sharding<partial(sum) over [0, 2]>}) {
  %a = gt.all_reduce %g {gt.sharding = #gt.sharding<replicated over [0, 1]>, workers = array<i64: 0, 1>} : tensor<3xf32> -> tensor<3xf32>
  %p = gt.mul %a, %g {gt.sharding = #gt.sharding<partial(sum) over [0, 1]>} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %b = gt.all_reduce %p {gt.sharding = #gt.sharding<replicated over [0, 1]>, workers = array<i64: 0, 1>} : tensor<3xf32> -> tensor<3xf32>
  %c = gt.all_reduce %h {gt.sharding = #gt.sharding<replicated over [0, 1]>, reduce = "max", workers = array<i64: 0, 1>} : tensor<3xf32> -> tensor<3xf32>
  %d = gt.all_reduce %g {gt.sharding = #gt.sharding<replicated over [0, 1]>, gt.signal = "other", workers = array<i64: 0, 1>} : tensor<3xf32> -> tensor<3xf32>
  %e = gt.all_reduce %k {gt.sharding = #gt.sharding<replicated over [0, 2]>, workers = array<i64: 0, 2>} : tensor<3xf32> -> tensor<3xf32>
  return
}
