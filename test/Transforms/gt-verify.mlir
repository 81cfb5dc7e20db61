// RUN: gt-opt %s --gt-verify --split-input-file --verify-diagnostics

func.func @use_after_free(%a: tensor<4xf32>) {
  gt.free %a : tensor<4xf32>
  // expected-error @+1 {{uses a value after its gt.free}}
  %0 = gt.neg %a : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @double_free(%a: tensor<4xf32>) {
  gt.free %a : tensor<4xf32>
  // expected-error @+1 {{frees a value that was already freed}}
  gt.free %a : tensor<4xf32>
  return
}

// -----

// A well-formed stream passes unchanged.
func.func @fine(%a: tensor<4xf32>) {
  %0 = gt.neg %a : tensor<4xf32> -> tensor<4xf32>
  gt.free %a : tensor<4xf32>
  gt.free %0 : tensor<4xf32>
  return
}
