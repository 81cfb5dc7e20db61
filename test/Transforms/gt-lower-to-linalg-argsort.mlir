// Both lowerings of gt.argsort, run on the CPU: the dense rank form CUDA workers get (default)
// and the merge sort of CPU workers (scatter-loops). Ties keep their order, NaN sorts as the
// largest value (first when descending), and axis 0 sorts columns.
// RUN: gt-opt %s --gt-lower-to-linalg | mlir-opt --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --buffer-deallocation-pipeline --convert-scf-to-cf --expand-strided-metadata \
// RUN:   --lower-affine --finalize-memref-to-llvm --convert-arith-to-llvm --convert-index-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils | FileCheck %s
// RUN: gt-opt %s --gt-lower-to-linalg="scatter-loops=true" | mlir-opt --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --buffer-deallocation-pipeline --convert-scf-to-cf --expand-strided-metadata \
// RUN:   --lower-affine --finalize-memref-to-llvm --convert-arith-to-llvm --convert-index-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils | FileCheck %s
// RUN: gt-opt %s --gt-lower-to-linalg | FileCheck %s --check-prefix=DENSE
// RUN: gt-opt %s --gt-lower-to-linalg="scatter-loops=true" | FileCheck %s --check-prefix=LOOPS

// DENSE-LABEL: func.func @main
// DENSE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// DENSE: arith.cmpf olt
// DENSE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// LOOPS-LABEL: func.func @main
// LOOPS: scf.for
// LOOPS: arith.cmpf olt
// LOOPS-NOT: linalg.generic
func.func @main() {
  %x = arith.constant dense<[[3.0, 1.0, 0x7FC00000, 1.0, -2.0, 5.0, 1.0], [0.0, 0.0, -1.0, 2.0, 2.0, -3.0, 9.0]]> : tensor<2x7xf32>
  %a = gt.argsort %x {axis = 1 : i64, descending = false} : tensor<2x7xf32> -> tensor<2x7xi64>
  %d = gt.argsort %x {axis = 1 : i64, descending = true} : tensor<2x7xf32> -> tensor<2x7xi64>
  %c = gt.argsort %x {axis = 0 : i64, descending = false} : tensor<2x7xf32> -> tensor<2x7xi64>
  %ua = tensor.cast %a : tensor<2x7xi64> to tensor<*xi64>
  %ud = tensor.cast %d : tensor<2x7xi64> to tensor<*xi64>
  %uc = tensor.cast %c : tensor<2x7xi64> to tensor<*xi64>
  // CHECK:      [4,   1,   3,   6,   0,   5,   2],
  // CHECK-NEXT: [5,   2,   0,   1,   3,   4,   6]]
  call @printMemrefI64(%ua) : (tensor<*xi64>) -> ()
  // CHECK:      [2,   5,   0,   1,   3,   6,   4],
  // CHECK-NEXT: [6,   3,   4,   0,   1,   2,   5]]
  call @printMemrefI64(%ud) : (tensor<*xi64>) -> ()
  // CHECK:      [1,   1,   1,   0,   0,   1,   0],
  // CHECK-NEXT: [0,   0,   0,   1,   1,   0,   1]]
  call @printMemrefI64(%uc) : (tensor<*xi64>) -> ()
  return
}
func.func private @printMemrefI64(%t: tensor<*xi64>)
