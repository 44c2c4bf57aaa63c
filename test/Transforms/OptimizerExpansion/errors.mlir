// RUN: ampc-opt %s --ampc-optimizer-expansion --split-input-file -verify-diagnostics

// Errors (and the one warning) of the optimizer expansion.

func.func @two_minimize(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<3xf32> {tg.param_out = "w"}) {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-note@+1 {{the first 'tg.minimize' is here}}
  %a = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  // expected-error@+1 {{'tg.minimize' op a graph holds at most one 'tg.minimize' (one optimizer step)}}
  %b = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %b : tensor<3xf32>
}

// -----

func.func @minimize_input(%x: tensor<3xf32> {tg.input = "x"}) -> tensor<3xf32> {
  %l = tg.sum %x dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-error@+1 {{'tg.minimize' op operand #1 is not a parameter (a function argument with 'tg.param')}}
  %a = tg.minimize %l wrt %x with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %a : tensor<3xf32>
}

// -----

func.func @minimize_twice_listed(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<3xf32>, tensor<3xf32>) {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-error@+1 {{'tg.minimize' op parameter 'w' is listed twice}}
  %a:2 = tg.minimize %l wrt %w, %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  return %a#0, %a#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

func.func @loss_reaches_no_param(%x: tensor<3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %l = tg.sum %x dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-warning@+1 {{the loss does not depend on any parameter; this training step updates nothing}}
  %a = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %a : tensor<f32>, tensor<3xf32>
}

