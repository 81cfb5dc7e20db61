// Invalid IR: each op's verifier asks the op table, which names the problem.
// RUN: gt-opt %s --split-input-file --verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{shapes [4, 3] and [4] cannot be broadcast together}}
  %0 = gt.add %a, %b : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @wrong_result_type(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{result type should be 'tensor<4x3xf32>' by the op table}}
  %0 = gt.exp %a : tensor<4x3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{contraction sizes differ}}
  %0 = gt.matmul %a, %b : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @exp_of_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{exp: expects a floating-point tensor, got int64}}
  %0 = gt.exp %a : tensor<4xi64> -> tensor<4xi64>
  return
}

// -----

func.func @where_needs_bool(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{condition must be bool}}
  %0 = gt.where %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{cannot reshape [4, 3] (12 elements) into [5, 2]}}
  %0 = gt.reshape %a : tensor<4x3xf32> -> tensor<5x2xf32>
  return
}

// -----

func.func @axis_out_of_range(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range}}
  %0 = gt.sum %a {axes = array<i64: 2>} : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?xf32>) {
  // expected-error @+1 {{operands must be statically shaped tensors}}
  %0 = gt.neg %a : tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

func.func @full_without_value() {
  // expected-error @+1 {{needs a `value` attribute or a fill operand}}
  %0 = gt.full : tensor<4xf32>
  return
}

// -----

func.func @im2col_channels_differ(%x: tensor<2x3x5x5xf32>) -> tensor<2x3x3x4x2x2xf32> {
  // expected-error @+1 {{the batch and channel sizes differ}}
  %0 = gt.im2col %x {padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : tensor<2x3x5x5xf32> -> tensor<2x3x3x4x2x2xf32>
  return %0 : tensor<2x3x3x4x2x2xf32>
}

// -----

func.func @col2im_stride_zero(%c: tensor<2x3x3x3x2x2xf32>) -> tensor<2x3x5x5xf32> {
  // expected-error @+1 {{needs out >= 0, kernel >= 1, stride >= 1}}
  %0 = gt.col2im %c {padding = array<i64: 1, 0>, stride = array<i64: 0, 1>, dilation = array<i64: 1, 2>} : tensor<2x3x3x3x2x2xf32> -> tensor<2x3x5x5xf32>
  return %0 : tensor<2x3x5x5xf32>
}

// -----

func.func @convolution_groups_do_not_divide(%x: tensor<2x4x5x5xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x6x3x3xf32> {
  // expected-error @+1 {{the batch and channel sizes do not agree}}
  %0 = gt.convolution %x, %w {padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 4} : tensor<2x4x5x5xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x3x3xf32>
  return %0 : tensor<2x6x3x3xf32>
}

// -----

func.func @convolution_too_few_windows(%x: tensor<2x4x5x5xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x2x3xf32> {
  // expected-error @+1 {{as many windows as}}
  %0 = gt.convolution %x, %w {padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1} : tensor<2x4x5x5xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x2x3xf32>
  return %0 : tensor<2x6x2x3xf32>
}

// -----

func.func @convolution_float64(%x: tensor<2x4x5x5xf64>, %w: tensor<6x4x3x3xf64>) -> tensor<2x6x3x3xf64> {
  // expected-error @+1 {{supports float32 tensors, got float64}}
  %0 = gt.convolution %x, %w {padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1} : tensor<2x4x5x5xf64>, tensor<6x4x3x3xf64> -> tensor<2x6x3x3xf64>
  return %0 : tensor<2x6x3x3xf64>
}

// -----

func.func @max_pool_padding_over_half_the_kernel(%x: tensor<2x4x8x8xf32>) -> tensor<2x4x5x5xf32> {
  // expected-error @+1 {{padding from 0 to kernel / 2}}
  %0 = gt.max_pool %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<2x4x8x8xf32> -> tensor<2x4x5x5xf32>
  return %0 : tensor<2x4x5x5xf32>
}
