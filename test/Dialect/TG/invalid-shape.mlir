// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of reshape, transpose, concat, slice,
// embedding.
//
// A shape error is reported by type inference and then, for the same op, by the
// InferTypeOpInterface verifier ("failed to infer returned types"). A declared
// result type that differs from the inferred one gives "inferred type(s) ...
// are incompatible with return type(s)" followed by the same; a float result
// stored in another float type of the same shape is valid (a fused cast, see
// fused-store.mlir). Ops whose custom form has no result type (grad, grad_seed,
// minimize) infer it while parsing, so they report only the inference error.

func.func @reshape_two_inferred(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{'tg.reshape' shape [-1, 2, -1] has more than one -1 (dims 0 and 2)}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [-1, 2, -1] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

func.func @reshape_zero(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.reshape' shape [0, 6] has invalid size 0 in dim 0}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [0, 6] : tensor<2x3xf32> -> tensor<0x6xf32>
  return
}

// -----

func.func @reshape_negative(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.reshape' shape [6, -2] has invalid size -2 in dim 1}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [6, -2] : tensor<2x3xf32> -> tensor<6x1xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.reshape' cannot reshape 'tensor<2x3xf32>' (6 elements) to [4, 2] (8 elements)}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [4, 2] : tensor<2x3xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @reshape_count_inferred(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.reshape' cannot reshape 'tensor<2x3xf32>' (6 elements) to [4, -1]}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [4, -1] : tensor<2x3xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @reshape_too_large(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.reshape' shape [4611686018427387904, 4] is too large}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [4611686018427387904, 4] : tensor<2x3xf32> -> tensor<6xf32>
  return
}

// -----

func.func @reshape_declared(%x: tensor<2x3xi64>) {
  // expected-error@+2 {{'tg.reshape' op inferred type(s) 'tensor<3x2xi64>' are incompatible with return type(s) of operation 'tensor<6xi64>'}}
  // expected-error@+1 {{'tg.reshape' op failed to infer returned types}}
  %0 = tg.reshape %x shape [3, -1] : tensor<2x3xi64> -> tensor<6xi64>
  return
}

// -----

func.func @transpose_length(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{'tg.transpose' perm [1, 0] has 2 entries but input 'tensor<2x3x4xf32>' has rank 3}}
  // expected-error@+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x perm [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_duplicate(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.transpose' perm [0, 0] is not a permutation of the dims of 'tensor<2x3xf32>'}}
  // expected-error@+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x perm [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_range(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.transpose' perm [2, 0] is not a permutation of the dims of 'tensor<2x3xf32>'}}
  // expected-error@+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x perm [2, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_negative(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.transpose' perm [-1, 0] is not a permutation of the dims of 'tensor<2x3xf32>'}}
  // expected-error@+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x perm [-1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_declared(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error@+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_scalars(%a: tensor<f32>) {
  // expected-error@+2 {{'tg.concat' cannot concatenate scalars ('tensor<f32>')}}
  // expected-error@+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a dim 0 : tensor<f32>, tensor<f32> -> tensor<2xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.concat' dim 2 is out of range for rank 2}}
  // expected-error@+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a dim 2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_negative_dim(%a: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.concat' dim -1 is out of range for rank 2}}
  // expected-error@+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a dim -1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+2 {{'tg.concat' input #1 'tensor<3xf32>' has a different rank than 'tensor<2x3xf32>'}}
  // expected-error@+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b dim 0 : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @concat_size(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>, %c: tensor<2x4xf32>) {
  // expected-error@+2 {{'tg.concat' input #2 'tensor<2x4xf32>' differs from 'tensor<2x3xf32>' in dim 1 (only dim 0 may differ)}}
  // expected-error@+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b, %c dim 0 : tensor<2x3xf32>, tensor<1x3xf32>, tensor<2x4xf32> -> tensor<5x3xf32>
  return
}

// -----

// Valid: the int with a float promotes to the float (torch.cat).
func.func @concat_int_float(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  %0 = tg.concat %a, %b dim 0 : tensor<2x3xf32>, tensor<2x3xi32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error@+2 {{'tg.concat' needs at least one input}}
  // expected-error@+1 {{'tg.concat' op failed to infer returned types}}
  %0 = "tg.concat"() <{dim = 0 : i64}> : () -> tensor<2xf32>
  return
}

// -----

func.func @slice_dim(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.slice' dim 2 is out of range for 'tensor<4x8xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x dim 2 start 0 end 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_empty(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.slice' range [3, 3) is empty or outside [0, 8) in dim 1 of 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x dim 1 start 3 end 3 : tensor<4x8xf32> -> tensor<4x0xf32>
  return
}

// -----

func.func @slice_reversed(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.slice' range [5, 2) is empty or outside [0, 8) in dim 1 of 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x dim 1 start 5 end 2 : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_end(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.slice' range [2, 5) is empty or outside [0, 4) in dim 0 of 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x dim 0 start 2 end 5 : tensor<4x8xf32> -> tensor<3x8xf32>
  return
}

// -----

func.func @slice_start(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.slice' range [-1, 2) is empty or outside [0, 4) in dim 0 of 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x dim 0 start -1 end 2 : tensor<4x8xf32> -> tensor<3x8xf32>
  return
}

// -----

func.func @slice_declared(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.slice' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x dim 1 start 2 end 5 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<100xf32>, %ids: tensor<4xi32>) {
  // expected-error@+2 {{'tg.embedding' table must be 2-D [V, D], got 'tensor<100xf32>'}}
  // expected-error@+1 {{'tg.embedding' op failed to infer returned types}}
  %0 = tg.embedding %t, %ids : tensor<100xf32>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<100x16xf32>, %ids: tensor<4xf32>) {
  // expected-error@+1 {{'tg.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<4xf32>'}}
  %0 = tg.embedding %t, %ids : tensor<100x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @embedding_int_table(%t: tensor<100x16xi32>, %ids: tensor<4xi32>) {
  // expected-error@+1 {{'tg.embedding' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<100x16xi32>'}}
  %0 = tg.embedding %t, %ids : tensor<100x16xi32>, tensor<4xi32> -> tensor<4x16xi32>
  return
}

// -----

func.func @embedding_declared(%t: tensor<100x16xf32>, %ids: tensor<4x2xi64>) {
  // expected-error@+2 {{'tg.embedding' op inferred type(s) 'tensor<4x2x16xf32>' are incompatible with return type(s) of operation 'tensor<4x16xf32>'}}
  // expected-error@+1 {{'tg.embedding' op failed to infer returned types}}
  %0 = tg.embedding %t, %ids : tensor<100x16xf32>, tensor<4x2xi64> -> tensor<4x16xf32>
  return
}
