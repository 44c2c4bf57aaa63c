// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of the elementwise binary and unary ops.
//
// A shape error is reported by type inference and then, for the same op, by the
// InferTypeOpInterface verifier ("failed to infer returned types"). A declared
// result type that differs from the inferred one gives "inferred type(s) ...
// are incompatible with return type(s)" followed by the same; a float result
// stored in another float type of the same shape is valid (a fused cast, see
// fused-store.mlir). Ops whose custom form has no result type (grad, grad_seed,
// minimize) infer it while parsing, so they report only the inference error.

func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+2 {{'tg.add' shapes 'tensor<2x3xf32>' and 'tensor<4x3xf32>' do not broadcast (dim 0 of the result)}}
  // expected-error@+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @add_broadcast_rank(%a: tensor<5x2x3xf32>, %b: tensor<4x1xf32>) {
  // expected-error@+2 {{'tg.add' shapes 'tensor<5x2x3xf32>' and 'tensor<4x1xf32>' do not broadcast (dim 1 of the result)}}
  // expected-error@+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %a, %b : tensor<5x2x3xf32>, tensor<4x1xf32> -> tensor<5x4x3xf32>
  return
}

// -----

// Valid: promotes as torch.result_type (the int with a float gives the
// float, two ints the wider).
func.func @add_int_float(%a: tensor<2xi32>, %b: tensor<2xf32>) {
  %0 = tg.add %a, %b : tensor<2xi32>, tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

// Valid: promotes as torch.result_type (the int with a float gives the
// float, two ints the wider).
func.func @add_i32_i64(%a: tensor<2xi32>, %b: tensor<2xi64>) {
  %0 = tg.add %a, %b : tensor<2xi32>, tensor<2xi64> -> tensor<2xi64>
  return
}

// -----

func.func @add_declared_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) {
  // expected-error@+2 {{'tg.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error@+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %a, %b : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @add_bool(%a: tensor<2xi1>) {
  // expected-error@+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<2xi1>'}}
  %0 = tg.add %a, %a : tensor<2xi1>, tensor<2xi1> -> tensor<2xi1>
  return
}

// -----

func.func @div_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error@+2 {{'tg.div' shapes 'tensor<2x3xf32>' and 'tensor<2xf32>' do not broadcast (dim 1 of the result)}}
  // expected-error@+1 {{'tg.div' op failed to infer returned types}}
  %0 = tg.div %a, %b : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @maximum_int_float(%a: tensor<2xf16>, %b: tensor<2xi64>) {
  %0 = tg.maximum %a, %b : tensor<2xf16>, tensor<2xi64> -> tensor<2xf16>
  return
}

// -----

func.func @minimum_i64_i32(%a: tensor<i64>, %b: tensor<3xi32>) {
  %0 = tg.minimum %a, %b : tensor<i64>, tensor<3xi32> -> tensor<3xi64>
  return
}

// -----

func.func @pow_declared(%a: tensor<3xf32>, %b: tensor<f32>) {
  // expected-error@+2 {{'tg.pow' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error@+1 {{'tg.pow' op failed to infer returned types}}
  %0 = tg.pow %a, %b : tensor<3xf32>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @neg_bool(%a: tensor<2xi1>) {
  // expected-error@+1 {{'tg.neg' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<2xi1>'}}
  %0 = tg.neg %a : tensor<2xi1>
  return
}

// -----

func.func @abs_f80(%a: tensor<2xf80>) {
  // expected-error@+1 {{'tg.abs' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<2xf80>'}}
  %0 = tg.abs %a : tensor<2xf80>
  return
}

// -----

func.func @abs_generic_declared(%a: tensor<2xi32>) {
  // expected-error@+2 {{'tg.abs' op inferred type(s) 'tensor<2xi32>' are incompatible with return type(s) of operation 'tensor<3xi32>'}}
  // expected-error@+1 {{'tg.abs' op failed to infer returned types}}
  %0 = "tg.abs"(%a) : (tensor<2xi32>) -> tensor<3xi32>
  return
}

// -----

func.func @exp_int(%a: tensor<2xi32>) {
  // expected-error@+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = tg.exp %a : tensor<2xi32>
  return
}

// -----

func.func @log_int(%a: tensor<2xi64>) {
  // expected-error@+1 {{'tg.log' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi64>'}}
  %0 = tg.log %a : tensor<2xi64>
  return
}

// -----

func.func @sqrt_bool(%a: tensor<2xi1>) {
  // expected-error@+1 {{'tg.sqrt' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi1>'}}
  %0 = tg.sqrt %a : tensor<2xi1>
  return
}

// -----

func.func @rsqrt_f80(%a: tensor<2xf80>) {
  // expected-error@+1 {{'tg.rsqrt' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xf80>'}}
  %0 = tg.rsqrt %a : tensor<2xf80>
  return
}

// -----

func.func @relu_int(%a: tensor<2xi32>) {
  // expected-error@+1 {{'tg.relu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = tg.relu %a : tensor<2xi32>
  return
}

// -----

func.func @silu_int(%a: tensor<2xi32>) {
  // expected-error@+1 {{'tg.silu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = tg.silu %a : tensor<2xi32>
  return
}

// -----

func.func @sigmoid_f80(%a: tensor<2xf80>) {
  // expected-error@+1 {{'tg.sigmoid' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xf80>'}}
  %0 = tg.sigmoid %a : tensor<2xf80>
  return
}

// -----

func.func @tanh_int(%a: tensor<2xi64>) {
  // expected-error@+1 {{'tg.tanh' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi64>'}}
  %0 = tg.tanh %a : tensor<2xi64>
  return
}

// -----

func.func @gelu_approximate(%a: tensor<2xf32>) {
  // expected-error@+2 {{'tg.gelu' approximate must be "none" or "tanh", got "erf"}}
  // expected-error@+1 {{'tg.gelu' op failed to infer returned types}}
  %0 = tg.gelu %a approximate "erf" : tensor<2xf32>
  return
}

// -----

func.func @gelu_generic_approximate(%a: tensor<2xf32>) {
  // expected-error@+2 {{'tg.gelu' approximate must be "none" or "tanh", got "fast"}}
  // expected-error@+1 {{'tg.gelu' op failed to infer returned types}}
  %0 = "tg.gelu"(%a) <{approximate = "fast"}> : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @gelu_int(%a: tensor<2xi32>) {
  // expected-error@+1 {{'tg.gelu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = tg.gelu %a approximate "none" : tensor<2xi32>
  return
}
