// RUN: ampc-opt %s --split-input-file --verify-diagnostics

// The verifiers of tg.lr_schedule and of tg.minimize's `schedule`.

func.func @unknown_kind(%t: tensor<i32>) -> tensor<f32> {
  // expected-error@+1 {{'tg.lr_schedule' op unknown schedule "exp"; expected "constant", "linear", "cosine" or "step"}}
  %t1, %f = tg.lr_schedule %t {kind = "exp", lr = 0.1 : f64, warmup_steps = 0 : i64, total_steps = 0 : i64, min_lr = 0.0 : f64, step_size = 0 : i64, gamma = 0.0 : f64} : tensor<i32>, tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @total_not_above_warmup(%t: tensor<i32>) -> tensor<f32> {
  // expected-error@+1 {{'tg.lr_schedule' op schedule "linear" needs total_steps > warmup_steps (5), got 5}}
  %t1, %f = tg.lr_schedule %t {kind = "linear", lr = 0.1 : f64, warmup_steps = 5 : i64, total_steps = 5 : i64, min_lr = 0.0 : f64, step_size = 0 : i64, gamma = 0.0 : f64} : tensor<i32>, tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @step_needs_step_size(%t: tensor<i32>) -> tensor<f32> {
  // expected-error@+1 {{'tg.lr_schedule' op schedule "step" needs step_size >= 1, got 0}}
  %t1, %f = tg.lr_schedule %t {kind = "step", lr = 0.1 : f64, warmup_steps = 0 : i64, total_steps = 0 : i64, min_lr = 0.0 : f64, step_size = 0 : i64, gamma = 0.5 : f64} : tensor<i32>, tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @zero_lr(%t: tensor<i32>) -> tensor<f32> {
  // expected-error@+1 {{'tg.lr_schedule' op a learning-rate schedule needs lr > 0, got 0.000000e+00}}
  %t1, %f = tg.lr_schedule %t {kind = "constant", lr = 0.0 : f64, warmup_steps = 0 : i64, total_steps = 0 : i64, min_lr = 0.0 : f64, step_size = 0 : i64, gamma = 0.0 : f64} : tensor<i32>, tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @minimize_incomplete(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<ones>}) -> tensor<3xf32> {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-error@+1 {{'tg.minimize' op schedule must be {kind = "...", warmup_steps, total_steps, step_size (integers), min_lr, gamma (floats)}}}
  %u = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} {schedule = {kind = "cosine"}} : tensor<f32>, tensor<3xf32>
  return %u : tensor<3xf32>
}

// -----

func.func @minimize_bad_cosine(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<ones>}) -> tensor<3xf32> {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-error@+1 {{'tg.minimize' op schedule "cosine" needs total_steps > warmup_steps (0), got 0}}
  %u = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} {schedule = {kind = "cosine", warmup_steps = 0 : i64, total_steps = 0 : i64, min_lr = 0.0 : f64, step_size = 0 : i64, gamma = 0.0 : f64}} : tensor<f32>, tensor<3xf32>
  return %u : tensor<3xf32>
}
