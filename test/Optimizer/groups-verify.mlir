// RUN: ampc-opt %s --split-input-file --verify-diagnostics
// RUN: ampc-opt %s --split-input-file --verify-diagnostics --ampc-autodiff --ampc-optimizer-expansion 2>&1 | FileCheck %s --check-prefix=AD

// The verifier of tg.minimize's param_groups: shape of each group, operand
// indices in range, a parameter in at most one group, complete and valid
// per-group hyperparameters, no global key in a group.

func.func @ok(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"}) -> (tensor<f32>, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.param_out = "b"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %z = tg.add %y, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %w1, %b1 = tg.minimize %l wrt %w, %b with "sgd" {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} {param_groups = [{params = array<i64: 1>, hyperparams = {lr = 5.0e-01 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64}}]} : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  return %l, %w1, %b1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
// The default group (w, no momentum) and the group (b, momentum 0.9, its
// own buffer) are two updates.
// AD-LABEL: func.func @ok(
// AD-SAME: tg.state = "b.momentum_buffer"
// AD: tg.sgd_update params(%arg1 : tensor<3xf32>) {{.*}}{lr = 1.000000e-01 : f64, momentum = 0.000000e+00
// AD: tg.sgd_update params(%arg2 : tensor<3xf32>) {{.*}}momentum_buffers({{.*}}) {lr = 5.000000e-01 : f64, momentum = 9.000000e-01

// -----

func.func @out_of_range(%l: tensor<f32>, %w: tensor<3xf32> {tg.param = "w"}) -> tensor<3xf32> {
  // expected-error @+1 {{parameter group #0 names operand 3, but there are 1 parameters}}
  %w1 = tg.minimize %l wrt %w with "sgd" {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} {param_groups = [{params = array<i64: 3>, hyperparams = {lr = 5.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}}]} : tensor<f32>, tensor<3xf32>
  return %w1 : tensor<3xf32>
}

// -----

func.func @twice(%l: tensor<f32>, %w: tensor<3xf32> {tg.param = "w"}) -> tensor<3xf32> {
  // expected-error @+1 {{parameter #0 is in parameter groups #0 and #1}}
  %w1 = tg.minimize %l wrt %w with "sgd" {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} {param_groups = [{params = array<i64: 0>, hyperparams = {lr = 5.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}}, {params = array<i64: 0>, hyperparams = {lr = 5.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}}]} : tensor<f32>, tensor<3xf32>
  return %w1 : tensor<3xf32>
}

// -----

func.func @shape(%l: tensor<f32>, %w: tensor<3xf32> {tg.param = "w"}) -> tensor<3xf32> {
  // expected-error @+1 {{parameter group #0 must be {params = array<i64: ...>, hyperparams = {...}}}}
  %w1 = tg.minimize %l wrt %w with "sgd" {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} {param_groups = [{params = [0]}]} : tensor<f32>, tensor<3xf32>
  return %w1 : tensor<3xf32>
}

// -----

func.func @global(%l: tensor<f32>, %w: tensor<3xf32> {tg.param = "w"}) -> tensor<3xf32> {
  // expected-error @+1 {{unknown adamw hyperparameter 'max_grad_norm' (in parameter group #0)}}
  %w1 = tg.minimize %l wrt %w with "adamw" {lr = 1.0e-01 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64} {param_groups = [{params = array<i64: 0>, hyperparams = {lr = 1.0e-01 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64}}]} : tensor<f32>, tensor<3xf32>
  return %w1 : tensor<3xf32>
}

// -----

func.func @incomplete(%l: tensor<f32>, %w: tensor<3xf32> {tg.param = "w"}) -> tensor<3xf32> {
  // expected-error @+1 {{adamw needs hyperparameter 'eps' (in parameter group #0)}}
  %w1 = tg.minimize %l wrt %w with "adamw" {lr = 1.0e-01 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64} {param_groups = [{params = array<i64: 0>, hyperparams = {lr = 1.0e-01 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, weight_decay = 0.0 : f64}}]} : tensor<f32>, tensor<3xf32>
  return %w1 : tensor<3xf32>
}

// -----

func.func @beta(%l: tensor<f32>, %w: tensor<3xf32> {tg.param = "w"}) -> tensor<3xf32> {
  // expected-error @+1 {{beta2 must be in [0, 1), got 1.000000e+00 (in parameter group #0)}}
  %w1 = tg.minimize %l wrt %w with "adamw" {lr = 1.0e-01 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64} {param_groups = [{params = array<i64: 0>, hyperparams = {lr = 1.0e-01 : f64, beta1 = 0.9 : f64, beta2 = 1.0 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}}]} : tensor<f32>, tensor<3xf32>
  return %w1 : tensor<3xf32>
}
