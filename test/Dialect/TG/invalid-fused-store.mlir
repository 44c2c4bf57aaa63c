// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// What the relaxed result-type rule of fused stores still rejects, and the
// verifier of `tg.compute`.

func.func @float_to_int_result(%a: tensor<2xi32>, %b: tensor<2xi32>) {
  // expected-error@+2 {{'tg.add' op inferred type(s) 'tensor<2xi32>' are incompatible with return type(s) of operation 'tensor<2xi64>'}}
  // expected-error@+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %a, %b : tensor<2xi32>, tensor<2xi32> -> tensor<2xi64>
  return
}

// -----

func.func @shape_still_exact(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error@+2 {{'tg.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf16>'}}
  // expected-error@+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x5xf16>
  return
}

// -----

func.func @unary_shape(%a: tensor<2xf32>) {
  // expected-error@+2 {{'tg.relu' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf16>'}}
  // expected-error@+1 {{'tg.relu' op failed to infer returned types}}
  %0 = tg.relu %a : tensor<2xf32> -> tensor<3xf16>
  return
}

// -----

func.func @constant_exact() {
  // expected-error@+2 {{'tg.constant' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<f16>'}}
  // expected-error@+1 {{'tg.constant' op failed to infer returned types}}
  %0 = "tg.constant"() <{value = dense<1.0> : tensor<f32>}> : () -> tensor<f16>
  return
}

// -----

func.func @grad_exact(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{'tg.grad' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error@+1 {{'tg.grad' op failed to infer returned types}}
  %0 = "tg.grad"(%l, %w) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @compute_not_a_float_type(%a: tensor<2xf32>) {
  // expected-error@+1 {{'tg.relu' op 'tg.compute' must be one of f32, f16, bf16, got i32}}
  %0 = tg.relu %a {tg.compute = i32} : tensor<2xf32>
  return
}

// -----

func.func @compute_not_a_type(%a: tensor<2xf32>) {
  // expected-error@+1 {{'tg.relu' op 'tg.compute' must be one of f32, f16, bf16, got "f16"}}
  %0 = tg.relu %a {tg.compute = "f16"} : tensor<2xf32>
  return
}

// -----

func.func @compute_on_integer_op(%a: tensor<2xi32>) {
  // expected-error@+1 {{'tg.neg' op 'tg.compute' needs an op that computes a float result (not a cast or constant)}}
  %0 = tg.neg %a {tg.compute = f32} : tensor<2xi32>
  return
}

// -----

func.func @compute_on_cast(%a: tensor<2xf32>) {
  // expected-error@+1 {{'tg.cast' op 'tg.compute' needs an op that computes a float result (not a cast or constant)}}
  %0 = tg.cast %a {tg.compute = f16} : tensor<2xf32> to tensor<2xf16>
  return
}
