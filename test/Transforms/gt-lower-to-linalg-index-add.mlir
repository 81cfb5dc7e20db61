// Both lowerings of gt.index_add, run on the CPU: the sorted form CUDA workers get (default:
// a stable argsort of the clamped indices, then each result element sums its source rows in a
// loop) and the loops over the source of CPU workers (scatter-loops). Equal results, repeated
// and out-of-range indices (clamped) included, along axis 0 and axis 1.
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
// RUN: gt-opt %s --gt-lower-to-linalg | FileCheck %s --check-prefix=SORTED
// The sorted form compiles for the GPU pipeline (the segment loop is serial in each thread).
// RUN: gt-opt %s --gt-lower-to-linalg --canonicalize --gt-gpu-pipeline | FileCheck %s --check-prefix=GPU

// SORTED-LABEL: func.func @main
// SORTED: iterator_types = ["parallel", "reduction"]
// SORTED: scf.for
// SORTED-NOT: iterator_types = ["parallel", "parallel", "reduction"]
// GPU: gpu.launch_func
func.func @main() {
  %i = arith.constant dense<[2, 0, 2, 7, -1, 3, 2, 0]> : tensor<8xi64>
  %g = arith.constant dense<[[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0],
                             [5.0, 50.0], [6.0, 60.0], [7.0, 70.0], [8.0, 80.0]]> : tensor<8x2xf32>
  %r = gt.index_add %i, %g {axis = 0 : i64} : tensor<8xi64>, tensor<8x2xf32> -> tensor<5x2xf32>
  %j = arith.constant dense<[1, 1, 0]> : tensor<3xi64>
  %h = arith.constant dense<[[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]]> : tensor<2x3xf32>
  %c = gt.index_add %j, %h {axis = 1 : i64} : tensor<3xi64>, tensor<2x3xf32> -> tensor<2x2xf32>
  %ur = tensor.cast %r : tensor<5x2xf32> to tensor<*xf32>
  %uc = tensor.cast %c : tensor<2x2xf32> to tensor<*xf32>
  // rows 0 <- 2+8 and -1 clamped to 0 (+5); 2 <- 1+3+7; 3 <- 6; 4 <- 7 clamped (+4)
  // CHECK:      {{\[}}[15,   150],
  // CHECK-NEXT: [0,   0],
  // CHECK-NEXT: [11,   110],
  // CHECK-NEXT: [6,   60],
  // CHECK-NEXT: [4,   40]]
  call @printMemrefF32(%ur) : (tensor<*xf32>) -> ()
  // CHECK:      {{\[}}[4,   3],
  // CHECK-NEXT: [32,   24]]
  call @printMemrefF32(%uc) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
