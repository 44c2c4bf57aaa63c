// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier errors of batch_norm, batch_norm_update, dropout and the buffer
// attributes.

func.func @channels(%x: tensor<8x4xf32>, %c: tensor<4xf32>, %v: tensor<3xf32>) -> tensor<8x4xf32> {
  // expected-error @+2 {{'tg.batch_norm' running_var 'tensor<3xf32>' must be [4] to match dim 1 (channels) of input 'tensor<8x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = tg.batch_norm %x, %c, %c, %c, %v {eps = 1.0e-05 : f64, momentum = 0.1 : f64, training = false}
      : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @rank(%x: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.batch_norm' input must be (N, C, ...) with rank >= 2, got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = tg.batch_norm %x, %c, %c, %c, %c {eps = 1.0e-05 : f64, momentum = 0.1 : f64, training = false}
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @one_value(%x: tensor<1x4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.batch_norm_update' needs more than one value per channel to update the running variance, got input 'tensor<1x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %m, %v = tg.batch_norm_update %x, %c, %c {momentum = 0.1 : f64}
      : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return %m : tensor<4xf32>
}

// -----

func.func @p(%x: tensor<4xf32>, %s: tensor<i32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.dropout' p must be in [0, 1), got 1.000000e+00}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = tg.dropout %x, %s {key = 0 : i64, p = 1.0 : f64} : tensor<4xf32>, tensor<i32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @step(%x: tensor<4xf32>, %s: tensor<2xi32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.dropout' step must be an i32 scalar, got 'tensor<2xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = tg.dropout %x, %s {key = 0 : i64, p = 0.5 : f64} : tensor<4xf32>, tensor<2xi32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0 cannot be both a buffer and an input, a parameter or state}}
func.func @buffer_param(%x: tensor<2xf32> {tg.buffer = "b", tg.param = "b", tg.init = #tg.init<zeros>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.buffer_out' must be a string}}
func.func @buffer_out(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.buffer_out = 1 : i64}) {
  return %x : tensor<2xf32>
}
