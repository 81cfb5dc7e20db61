// Dynamic sizes: only elementwise ops, value reductions and index_select's indices inside a size-generic worker kernel
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
  // expected-error @+1 {{takes dynamic sizes only as an elementwise op, a sum, mean, max, min or prod, or an index_select}}
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

// -----

// index_select takes any number of indices (an embedding's tokens), but its table's sizes
// shape the code (the bounds check).
func.func @index_select_of_a_dynamic_table(%t: tensor<?x16xf32>, %i: tensor<?xi64>) -> tensor<?x16xf32> attributes {gt.dynamic_sizes} {
  // expected-error @+1 {{takes dynamic sizes only in its indices}}
  %0 = gt.index_select %t, %i {axis = 0 : i64} : tensor<?x16xf32>, tensor<?xi64> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @index_select_of_dynamic_indices(%t: tensor<65x16xf32>, %i: tensor<?xi64>) -> tensor<?x16xf32> attributes {gt.dynamic_sizes} {
  %0 = gt.index_select %t, %i {axis = 0 : i64} : tensor<65x16xf32>, tensor<?xi64> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @index_select_result_disagrees(%t: tensor<65x16xf32>, %i: tensor<?xi64>) -> tensor<?x8xf32> attributes {gt.dynamic_sizes} {
  // expected-error @+1 {{does not fit its operands by the op table}}
  %0 = gt.index_select %t, %i {axis = 0 : i64} : tensor<65x16xf32>, tensor<?xi64> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
