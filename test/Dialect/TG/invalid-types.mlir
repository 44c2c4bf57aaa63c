// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of constant, cast, and element types /
// shapes the dialect does not allow.
//
// A shape error is reported by type inference and then, for the same op, by the
// InferTypeOpInterface verifier ("failed to infer returned types"). A declared
// result type that differs from the inferred one gives "inferred type(s) ...
// are incompatible with return type(s)" followed by the same; a float result
// stored in another float type of the same shape is valid (a fused cast, see
// fused-store.mlir). Ops whose custom form has no result type (grad, grad_seed,
// minimize) infer it while parsing, so they report only the inference error.

func.func @constant_f80() {
  // expected-error@+1 {{'tg.constant' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<f80>'}}
  %0 = tg.constant dense<1.0> : tensor<f80>
  return
}

// -----

func.func @constant_i4() {
  // expected-error@+1 {{'tg.constant' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<4xi4>'}}
  %0 = tg.constant dense<1> : tensor<4xi4>
  return
}

// -----

func.func @constant_generic_declared() {
  // expected-error@+2 {{'tg.constant' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error@+1 {{'tg.constant' op failed to infer returned types}}
  %0 = "tg.constant"() <{value = dense<1.0> : tensor<f32>}> : () -> tensor<2xf32>
  return
}

// -----

func.func @constant_not_elements() {
  // expected-error@+1 {{invalid properties {value = 1.000000e+00 : f32} for op tg.constant: Invalid attribute `value` in property conversion: 1.000000e+00 : f32}}
  %0 = "tg.constant"() <{value = 1.0 : f32}> : () -> tensor<f32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.cast' op requires the same shape for all operands and results}}
  %0 = tg.cast %x : tensor<2x3xf32> to tensor<3x2xf16>
  return
}

// -----

func.func @cast_f80(%x: tensor<2xf32>) {
  // expected-error@+1 {{'tg.cast' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<2xf80>'}}
  %0 = tg.cast %x : tensor<2xf32> to tensor<2xf80>
  return
}

// -----

func.func @cast_i4(%x: tensor<2xi4>) {
  // expected-error@+1 {{'tg.cast' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<2xi4>'}}
  %0 = tg.cast %x : tensor<2xi4> to tensor<2xf32>
  return
}

// -----

func.func @cast_dynamic(%x: tensor<?xf32>) {
  // expected-error@+1 {{'tg.cast' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = tg.cast %x : tensor<?xf32> to tensor<?xf16>
  return
}

// -----

func.func @add_f80(%a: tensor<2xf80>) {
  // expected-error@+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<2xf80>'}}
  %0 = tg.add %a, %a : tensor<2xf80>, tensor<2xf80> -> tensor<2xf80>
  return
}

// -----

func.func @add_i4(%a: tensor<2xi4>) {
  // expected-error@+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<2xi4>'}}
  %0 = tg.add %a, %a : tensor<2xi4>, tensor<2xi4> -> tensor<2xi4>
  return
}

// -----

func.func @add_unsigned(%a: tensor<2xui32>) {
  // expected-error@+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<2xui32>'}}
  %0 = tg.add %a, %a : tensor<2xui32>, tensor<2xui32> -> tensor<2xui32>
  return
}

// -----

func.func @add_dynamic(%a: tensor<?x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<?x3xf32>'}}
  %0 = tg.add %a, %b : tensor<?x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @add_unranked(%a: tensor<*xf32>, %b: tensor<2x3xf32>) {
  // expected-error@+1 {{custom op 'tg.add' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = tg.add %a, %b : tensor<*xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @add_dynamic_result(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.add' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<?x3xf32>'}}
  %0 = tg.add %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<?x3xf32>
  return
}

// -----

func.func @exp_dynamic(%a: tensor<?xf32>) {
  // expected-error@+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<?xf32>'}}
  %0 = tg.exp %a : tensor<?xf32>
  return
}

// -----

func.func @exp_f8(%a: tensor<2xf8E4M3FN>) {
  // expected-error@+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2xf8E4M3FN>'}}
  %0 = tg.exp %a : tensor<2xf8E4M3FN>
  return
}

// -----

func.func @exp_memref(%a: memref<2xf32>) {
  // expected-error@+1 {{custom op 'tg.exp' invalid kind of type specified: expected builtin.tensor, but found 'memref<2xf32>'}}
  %0 = tg.exp %a : memref<2xf32>
  return
}

// -----

func.func @matmul_dynamic(%a: tensor<?x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+1 {{'tg.matmul' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<?x3xf32>'}}
  %0 = tg.matmul %a, %b : tensor<?x3xf32>, tensor<3x5xf32> -> tensor<?x5xf32>
  return
}

// -----

func.func @matmul_f80(%a: tensor<2x3xf80>, %b: tensor<3x5xf80>) {
  // expected-error@+1 {{'tg.matmul' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2x3xf80>'}}
  %0 = tg.matmul %a, %b : tensor<2x3xf80>, tensor<3x5xf80> -> tensor<2x5xf80>
  return
}

// -----

func.func @softmax_unranked(%a: tensor<*xf32>) {
  // expected-error@+1 {{custom op 'tg.softmax' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = tg.softmax %a dim 0 : tensor<*xf32>
  return
}

// -----

func.func @reshape_dynamic(%a: tensor<?x4xf32>) {
  // expected-error@+1 {{'tg.reshape' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<?x4xf32>'}}
  %0 = tg.reshape %a shape [-1] : tensor<?x4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @grad_seed_f80(%l: tensor<f80>) {
  // expected-error@+1 {{'tg.grad_seed' loss must be a float scalar, got 'tensor<f80>'}}
  %0 = tg.grad_seed %l : tensor<f80>
  return
}

// -----

func.func @concat_dynamic(%a: tensor<?x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.concat' op operand #0 must be variadic of statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer or 1-bit signless integer values, but got 'tensor<?x3xf32>'}}
  %0 = tg.concat %a, %b dim 0 : tensor<?x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return
}
