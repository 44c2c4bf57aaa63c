// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of matmul, linear, conv2d.
//
// A shape error is reported by type inference and then, for the same op, by the
// InferTypeOpInterface verifier ("failed to infer returned types"). A declared
// result type that differs from the inferred one gives "inferred type(s) ...
// are incompatible with return type(s)" followed by the same; a float result
// stored in another float type of the same shape is valid (a fused cast, see
// fused-store.mlir). Ops whose custom form has no result type (grad, grad_seed,
// minimize) infer it while parsing, so they report only the inference error.

func.func @matmul_rank0(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error@+2 {{'tg.matmul' operands must have rank >= 1, got 'tensor<f32>' and 'tensor<3xf32>'}}
  // expected-error@+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<f32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+2 {{'tg.matmul' contraction dims differ: lhs 'tensor<2x3xf32>' has 3 in dim 1, rhs 'tensor<4x5xf32>' has 4 in dim 0}}
  // expected-error@+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_contraction_vec(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{'tg.matmul' contraction dims differ: lhs 'tensor<2x3xf32>' has 3 in dim 1, rhs 'tensor<4xf32>' has 4 in dim 0}}
  // expected-error@+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<5x4x6xf32>) {
  // expected-error@+2 {{'tg.matmul' batch dims [2] of 'tensor<2x3x4xf32>' and [5] of 'tensor<5x4x6xf32>' do not broadcast (batch dim 0)}}
  // expected-error@+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3x4xf32>, tensor<5x4x6xf32> -> tensor<2x3x6xf32>
  return
}

// -----

func.func @matmul_declared(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+2 {{'tg.matmul' op inferred type(s) 'tensor<2x5xf32>' are incompatible with return type(s) of operation 'tensor<2x6xf32>'}}
  // expected-error@+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @matmul_int(%a: tensor<2x3xi32>, %b: tensor<3x5xi32>) {
  // expected-error@+1 {{'tg.matmul' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2x3xi32>'}}
  %0 = tg.matmul %a, %b : tensor<2x3xi32>, tensor<3x5xi32> -> tensor<2x5xi32>
  return
}

// -----

func.func @linear_rank0(%x: tensor<f32>, %w: tensor<8x16xf32>) {
  // expected-error@+2 {{'tg.linear' input must have rank >= 1, got 'tensor<f32>'}}
  // expected-error@+1 {{'tg.linear' op failed to infer returned types}}
  %0 = tg.linear %x, %w : tensor<f32>, tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<4x16xf32>, %w: tensor<16xf32>) {
  // expected-error@+2 {{'tg.linear' weight must be 2-D [out, in], got 'tensor<16xf32>'}}
  // expected-error@+1 {{'tg.linear' op failed to infer returned types}}
  %0 = tg.linear %x, %w : tensor<4x16xf32>, tensor<16xf32> -> tensor<4xf32>
  return
}

// -----

func.func @linear_features(%x: tensor<4x16xf32>, %w: tensor<8x12xf32>) {
  // expected-error@+2 {{'tg.linear' input 'tensor<4x16xf32>' has 16 features (last dim) but weight 'tensor<8x12xf32>' expects 12 (dim 1)}}
  // expected-error@+1 {{'tg.linear' op failed to infer returned types}}
  %0 = tg.linear %x, %w : tensor<4x16xf32>, tensor<8x12xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{'tg.linear' bias 'tensor<4xf32>' must be [8] to match weight 'tensor<8x16xf32>'}}
  // expected-error@+1 {{'tg.linear' op failed to infer returned types}}
  %0 = tg.linear %x, %w, %b : tensor<4x16xf32>, tensor<8x16xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_bias_rank(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<1x8xf32>) {
  // expected-error@+2 {{'tg.linear' bias 'tensor<1x8xf32>' must be [8] to match weight 'tensor<8x16xf32>'}}
  // expected-error@+1 {{'tg.linear' op failed to infer returned types}}
  %0 = tg.linear %x, %w, %b : tensor<4x16xf32>, tensor<8x16xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @conv_input_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' input must be 4-D [N, C, H, W], got 'tensor<3x8x8xf32>'}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<4x6x6xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' weight must be 4-D [O, C/groups, KH, KW], got 'tensor<4x3x3xf32>'}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_stride_count(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' 'stride' needs 2 values (H, W), got 1}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_stride_zero(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' 'stride' values must be >= 1, got [1, 0]}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 0] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_padding_negative(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' 'padding' values must be >= 0, got [-1, 0]}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [-1, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x4x6xf32>
  return
}

// -----

func.func @conv_dilation_count(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' 'dilation' needs 2 values (H, W), got 3}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_dilation_zero(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' 'dilation' values must be >= 1, got [0, 1]}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [0, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_groups_zero(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' 'groups' must be >= 1, got 0}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 0 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_input_groups(%x: tensor<2x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' input channels 3 of 'tensor<2x3x8x8xf32>' are not divisible by groups 2}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : tensor<2x3x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_output_groups(%x: tensor<2x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' output channels 3 of weight 'tensor<3x2x3x3xf32>' are not divisible by groups 2}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : tensor<2x4x8x8xf32>, tensor<3x2x3x3xf32> -> tensor<2x3x6x6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<2x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' weight 'tensor<4x2x3x3xf32>' has 2 input channels (dim 1) but input 'tensor<2x3x8x8xf32>' with groups 1 needs 3}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_channels_groups(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' weight 'tensor<4x4x3x3xf32>' has 4 input channels (dim 1) but input 'tensor<2x4x8x8xf32>' with groups 2 needs 2}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+2 {{'tg.conv2d' bias 'tensor<3xf32>' must be [4] to match weight 'tensor<4x3x3x3xf32>'}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_kernel_too_big(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' kernel extent 3 (dilated) exceeds padded input 2 in spatial dim 2 of 'tensor<1x1x2x2xf32>'}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x1x1xf32>
  return
}

// -----

func.func @conv_dilated_too_big(%x: tensor<1x1x5x5xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' kernel extent 7 (dilated) exceeds padded input 5 in spatial dim 3 of 'tensor<1x1x5x5xf32>'}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 3] groups 1 : tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x1xf32>
  return
}

// -----

func.func @conv_declared(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d' op inferred type(s) 'tensor<2x4x8x8xf32>' are incompatible with return type(s) of operation 'tensor<2x4x6x6xf32>'}}
  // expected-error@+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @conv_missing_groups(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{'tg.conv2d' op requires attribute 'groups'}}
  %0 = "tg.conv2d"(%x, %w) <{stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>}> {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}
