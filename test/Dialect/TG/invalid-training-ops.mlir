// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier errors of the backward, optimizer and loss-scaler ops and of the
// training-state attributes. Shape errors come from type inference, so the
// custom forms that infer while parsing report only that error.

func.func @unary_grad_shape(%dy: tensor<4x8xf32>, %x: tensor<8xf32>) {
  // expected-error@+2 {{'tg.relu_grad' gradient 'tensor<4x8xf32>' must have the shape [8] of the forward result}}
  // expected-error@+1 {{'tg.relu_grad' op failed to infer returned types}}
  %0 = tg.relu_grad %dy, %x : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @gelu_grad_approx(%dy: tensor<8xf32>, %x: tensor<8xf32>) {
  // expected-error@+2 {{'tg.gelu_grad' approximate must be "none" or "tanh", got "erf"}}
  // expected-error@+1 {{'tg.gelu_grad' op failed to infer returned types}}
  %0 = tg.gelu_grad %dy, %x approximate "erf" : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @binary_grad_shape(%dy: tensor<4x3xf32>, %a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{'tg.maximum_grad' gradient 'tensor<4x3xf32>' must have the shape [4, 8] of the forward result}}
  // expected-error@+1 {{'tg.maximum_grad' op failed to infer returned types}}
  %0:2 = tg.maximum_grad %dy, %a, %b : tensor<4x3xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @max_grad_result(%dy: tensor<4xf32>, %x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error@+2 {{'tg.max_grad' forward result 'tensor<8xf32>' must have the shape [4] of max over dims [1] of 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.max_grad' op failed to infer returned types}}
  %0 = tg.max_grad %dy, %x, %y dims [1] : tensor<4xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_grad_dim(%dy: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.softmax_grad' dim 2 is out of range for 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.softmax_grad' op failed to infer returned types}}
  %0 = tg.softmax_grad %dy, %y dim 2 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_grad_weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{'tg.layer_norm_grad' weight 'tensor<4xf32>' must be [8] to match the last dim of input 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.layer_norm_grad' op failed to infer returned types}}
  %0:3 = tg.layer_norm_grad %dy, %x, %w eps 1.0e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @conv2d_grad_shape(%dy: tensor<2x4x7x7xf32>, %x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d_grad' gradient 'tensor<2x4x7x7xf32>' must have the shape [2, 4, 8, 8] of the conv2d result}}
  // expected-error@+1 {{'tg.conv2d_grad' op failed to infer returned types}}
  %0:2 = tg.conv2d_grad %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x7x7xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv2d_grad_groups(%dy: tensor<2x4x8x8xf32>, %x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{'tg.conv2d_grad' input 'tensor<2x3x8x8xf32>' and weight 'tensor<4x3x3x3xf32>' do not fit groups 2}}
  // expected-error@+1 {{'tg.conv2d_grad' op failed to infer returned types}}
  %0:2 = tg.conv2d_grad %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @pool_grad_shape(%dy: tensor<2x3x3x3xf32>, %x: tensor<2x3x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d_grad' gradient 'tensor<2x3x3x3xf32>' must have the shape [2, 3, 4, 4] of the pooling result}}
  // expected-error@+1 {{'tg.max_pool2d_grad' op failed to infer returned types}}
  %0 = tg.max_pool2d_grad %dy, %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x3x3xf32>, tensor<2x3x8x8xf32>
  return
}

// -----

func.func @embedding_grad_shape(%dy: tensor<4x16xf32>, %ids: tensor<4x8xi32>) {
  // expected-error@+2 {{'tg.embedding_grad' gradient 'tensor<4x16xf32>' must be the ids' shape [4, 8] plus the embedding dim}}
  // expected-error@+1 {{'tg.embedding_grad' op failed to infer returned types}}
  %0 = tg.embedding_grad %dy, %ids num_embeddings 10 : tensor<4x16xf32>, tensor<4x8xi32> -> tensor<10x16xf32>
  return
}

// -----

func.func @cross_entropy_grad_scalar(%dy: tensor<4xf32>, %l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error@+2 {{'tg.cross_entropy_grad' gradient 'tensor<4xf32>' must have the shape [] of the loss result}}
  // expected-error@+1 {{'tg.cross_entropy_grad' op failed to infer returned types}}
  %0 = tg.cross_entropy_grad %dy, %l, %y : tensor<4xf32>, tensor<4x10xf32>, tensor<4xi32> -> tensor<4x10xf32>
  return
}

// -----

func.func @broadcast_to_bad(%x: tensor<3xf32>) {
  // expected-error@+2 {{'tg.broadcast_to' cannot broadcast 'tensor<3xf32>' to [4, 2]}}
  // expected-error@+1 {{'tg.broadcast_to' op failed to infer returned types}}
  %0 = tg.broadcast_to %x shape [4, 2] : tensor<3xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @sgd_grad_count(%w: tensor<4xf32>, %b: tensor<2xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'tg.sgd_update' needs one gradient per parameter: 2 parameters but 1 gradients}}
  %0:2 = tg.sgd_update params(%w, %b : tensor<4xf32>, tensor<2xf32>) grads(%g : tensor<4xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @sgd_grad_shape(%w: tensor<4xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{'tg.sgd_update' gradient #0 'tensor<3xf32>' does not have the shape of parameter 'tensor<4xf32>'}}
  %0 = tg.sgd_update params(%w : tensor<4xf32>) grads(%g : tensor<3xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @sgd_missing_buffers(%w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'tg.sgd_update' op momentum 9.000000e-01 needs one momentum buffer per parameter: 1 parameters but 0 buffers}}
  %0 = tg.sgd_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

// Updates of 16-bit params (--low-update): compensation buffers need kahan,
// belong to 16-bit params of their type, and the mode is a known one.
func.func @sgd_comp_without_kahan(%w: tensor<4xbf16>, %g: tensor<4xbf16>, %c: tensor<4xbf16>) {
  // expected-error@+1 {{'tg.sgd_update' op compensation buffers need low_update = kahan}}
  %0:2 = tg.sgd_update params(%w : tensor<4xbf16>) grads(%g : tensor<4xbf16>) comps(%c : tensor<4xbf16>) {comp_params = array<i64: 0>, lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @sgd_comp_of_f32(%w: tensor<4xf32>, %g: tensor<4xf32>, %c: tensor<4xbf16>) {
  // expected-error@+1 {{'tg.sgd_update' op compensation buffer #0 must have its 16-bit parameter's type 'tensor<4xf32>', got 'tensor<4xbf16>'}}
  %0:2 = tg.sgd_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) comps(%c : tensor<4xbf16>) {comp_params = array<i64: 0>, low_update = "kahan", lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @sgd_bad_mode(%w: tensor<4xbf16>, %g: tensor<4xbf16>) {
  // expected-error@+1 {{'tg.sgd_update' op low_update must be nearest, stochastic or kahan, got 'up'}}
  %0 = tg.sgd_update params(%w : tensor<4xbf16>) grads(%g : tensor<4xbf16>) {low_update = "up", lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @adamw_moments_differ(%w: tensor<4xbf16>, %g: tensor<4xbf16>, %m: tensor<4xbf16>, %v: tensor<4xf32>, %s: tensor<i32>) {
  // expected-error@+1 {{'tg.adamw_update' op exp_avg #0 and exp_avg_sq #0 must have one dtype}}
  %0:3, %1 = tg.adamw_update params(%w : tensor<4xbf16>) grads(%g : tensor<4xbf16>) exp_avgs(%m : tensor<4xbf16>) exp_avg_sqs(%v : tensor<4xf32>) step(%s : tensor<i32>) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, lr = 0.001 : f64, weight_decay = 0.01 : f64}
  return
}

// -----

func.func @sgd_nesterov(%w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'tg.sgd_update' op nesterov needs momentum > 0}}
  %0 = tg.sgd_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = true, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @sgd_negative_lr(%w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'tg.sgd_update' op lr must be finite and >= 0, got -1}}
  %0 = tg.sgd_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) {lr = -1.0 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return
}

// -----

func.func @adamw_beta(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<i32>) {
  // expected-error@+1 {{'tg.adamw_update' op beta2 must be in [0, 1), got 1}}
  %0:4 = tg.adamw_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) exp_avgs(%m : tensor<4xf32>) exp_avg_sqs(%m : tensor<4xf32>) step(%s : tensor<i32>) {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 1.0 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}
  return
}

// -----

func.func @adamw_state_count(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<i32>) {
  // expected-error@+1 {{'tg.adamw_update' needs one exp_avg_sq per parameter: 1 parameters but 2 exp_avg_sqs}}
  %0:4 = tg.adamw_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) exp_avgs(%m : tensor<4xf32>) exp_avg_sqs(%m, %m : tensor<4xf32>, tensor<4xf32>) step(%s : tensor<i32>) {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}
  return
}

// -----

func.func @adamw_step_type(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{'tg.adamw_update' op operand #4 must be rank-0 tensor of i32, but got 'tensor<f32>'}}
  %0:4 = tg.adamw_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>) exp_avgs(%m : tensor<4xf32>) exp_avg_sqs(%m : tensor<4xf32>) step(%s : tensor<f32>) {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}
  return
}

// -----

func.func @clip_max_norm(%g: tensor<4xf32>) {
  // expected-error@+1 {{'tg.clip_grad_norm' max_norm must be finite and > 0, got 0}}
  %0:2 = tg.clip_grad_norm %g max_norm 0.0 : tensor<4xf32>
  return
}

// -----

func.func @found_inf_type(%g: tensor<4xf32>, %f: tensor<4xf32>) {
  // expected-error@+1 {{'tg.clip_grad_norm' op operand #1 must be rank-0 tensor of f32 or i32 (found_inf), but got 'tensor<4xf32>'}}
  %0:2 = tg.clip_grad_norm %g max_norm 1.0 found_inf(%f : tensor<4xf32>) : tensor<4xf32>
  return
}

// -----

func.func @unscale_no_grads(%s: tensor<f32>) {
  // expected-error@+2 {{'tg.check_finite_and_unscale' needs at least one gradient}}
  // expected-error@+1 {{'tg.check_finite_and_unscale' op failed to infer returned types}}
  %f = "tg.check_finite_and_unscale"(%s) : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @update_scale_growth(%s: tensor<f32>, %t: tensor<i32>, %h: tensor<i32>, %f: tensor<f32>) {
  // expected-error@+1 {{'tg.update_scale' op growth_factor must be finite and > 1, got 1}}
  %0:3 = tg.update_scale %s, %t, %h found_inf %f {growth_factor = 1.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64, hysteresis = 1 : i64} : tensor<f32>
  return
}

// -----

func.func @update_scale_backoff(%s: tensor<f32>, %t: tensor<i32>, %h: tensor<i32>, %f: tensor<f32>) {
  // expected-error@+1 {{'tg.update_scale' op backoff_factor must be in (0, 1), got 1.5}}
  %0:3 = tg.update_scale %s, %t, %h found_inf %f {growth_factor = 2.0 : f64, backoff_factor = 1.5 : f64, growth_interval = 2000 : i64, hysteresis = 1 : i64} : tensor<f32>
  return
}

// -----

func.func @update_scale_hysteresis(%s: tensor<f32>, %t: tensor<i32>, %h: tensor<i32>, %f: tensor<f32>) {
  // expected-error@+1 {{'tg.update_scale' op hysteresis must be in [1, 2^31), got 0}}
  %0:3 = tg.update_scale %s, %t, %h found_inf %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64, hysteresis = 0 : i64} : tensor<f32>
  return
}

// -----

func.func @update_scale_bounds(%s: tensor<f32>, %t: tensor<i32>, %h: tensor<i32>, %f: tensor<f32>) {
  // expected-error@+1 {{'tg.update_scale' op min_scale 1.000000e+02 exceeds max_scale 1.000000e+01}}
  %0:3 = tg.update_scale %s, %t, %h found_inf %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 20 : i64, hysteresis = 1 : i64, min_scale = 100.0 : f64, max_scale = 10.0 : f64} : tensor<f32>
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0: 'tg.state' must be a string}}
func.func @state_not_string(%x: tensor<2xf32> {tg.state = 1 : i64}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0 cannot be both state and an input or a parameter}}
func.func @state_and_param(%x: tensor<2xf32> {tg.param = "w", tg.state = "w.exp_avg"}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op result #0: 'tg.state_out' must be a string}}
func.func @state_out_not_string(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.state_out = 3 : i64}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{'func.func' op 'tg.loss_scale' needs mode = "dynamic", "static" or "none"}}
func.func @loss_scale_mode() attributes {tg.loss_scale = {mode = "sometimes"}} {
  return
}

// -----

// expected-error@+1 {{'func.func' op 'tg.loss_scale' entry 'growth_interval' must be an integer}}
func.func @loss_scale_entry() attributes {tg.loss_scale = {mode = "dynamic", growth_interval = 2.0 : f64}} {
  return
}

// -----

// expected-error@+1 {{'func.func' op 'tg.loss_scale' has an unknown entry 'speed'}}
func.func @loss_scale_unknown() attributes {tg.loss_scale = {mode = "dynamic", speed = 2.0 : f64}} {
  return
}

// -----

func.func @loss_scale_on_op(%x: tensor<2xf32>) {
  // expected-error@+1 {{'tg.neg' op 'tg.loss_scale' belongs on a function}}
  %0 = tg.neg %x {tg.loss_scale = {mode = "none"}} : tensor<2xf32>
  return
}

// -----

// expected-error@+1 {{expected '('}}
func.func @init_full_needs_value(%x: tensor<f32> {tg.state = "s", tg.init = #tg.init<full>}) {
  return
}
