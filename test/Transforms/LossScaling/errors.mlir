// RUN: ampc-opt %s --ampc-loss-scaling --split-input-file -verify-diagnostics

// Located errors of the loss-scaling pass.

func.func @already_scaled(%l: tensor<f32>, %s: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{'tg.grad_seed' op already has a loss scale, but the function has no 'tg.loss_scale' record}}
  %seed = tg.grad_seed %l scale %s : tensor<f32>, tensor<f32>
  return %seed : tensor<f32>
}

// -----

func.func @no_gradients(%x: tensor<3xf32>) -> tensor<f32> {
  %l = tg.sum %x dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-error@+1 {{'tg.grad_seed' op starts a backward graph, but no optimizer update, gradient clipping or returned value reads a gradient that depends on it; loss scaling cannot tell which values to unscale}}
  %seed = tg.grad_seed %l : tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @already_predicated(%w: tensor<3xf32>, %f: tensor<f32>) -> tensor<3xf32> {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  %seed = tg.grad_seed %l : tensor<f32>
  %g = tg.broadcast_to %seed shape [3] : tensor<f32> -> tensor<3xf32>
  // expected-error@+1 {{'tg.sgd_update' op is already predicated on found_inf, but the step has no loss scale}}
  %n = tg.sgd_update params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>) found_inf(%f : tensor<f32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %n : tensor<3xf32>
}
