// Dynamic sizes: only elementwise ops and value reductions inside a size-generic worker kernel
// (a func with gt.dynamic_sizes; see gt-lower-to-linalg-dynamic-sizes.mlir).
// RUN: gt-opt %s --split-input-file --verify-diagnostics

// Outside such a kernel (the dispatcher, a user's file) sizes must be static.
func.func @dynamic_outside_a_kernel(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{operands must be statically shaped tensors}}
  %0 = gt.exp %a : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Ops that read positions (cumsum, slices, matmul, ...) keep static sizes even in a kernel.
func.func @cumsum_is_not_size_generic(%a: tensor<?xf32>) -> tensor<?xf32> attributes {gt.dynamic_sizes} {
  // expected-error @+1 {{takes dynamic sizes only as an elementwise op or a sum, mean, max, min or prod}}
  %0 = gt.cumsum %a {axis = 0 : i64} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// The op table still checks what it can: dtypes, ranks and the static sizes.
func.func @wrong_rank(%a: tensor<?x?xf32>) -> tensor<?xf32> attributes {gt.dynamic_sizes} {
  // expected-error @+1 {{does not fit its operands by the op table}}
  %0 = gt.exp %a : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
