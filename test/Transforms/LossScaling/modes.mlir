// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-loss-scaling --split-input-file | FileCheck %s --check-prefix=DYN
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-loss-scaling="hysteresis=2 min-scale=1 max-scale=1e6 growth-interval=100 growth-factor=4 backoff-factor=0.25 init=1024" --split-input-file | FileCheck %s --check-prefix=HYST
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-loss-scaling="mode=static init=1024" --split-input-file | FileCheck %s --check-prefix=STATIC
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-loss-scaling="mode=none" --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-loss-scaling --ampc-loss-scaling="mode=static" --split-input-file | FileCheck %s --check-prefix=DYN

// Loss scaling of a training step made by autodiff (SGD with momentum and
// clipping), in every mode.

// DYN-LABEL: func.func @sgd_step(
// DYN-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {tg.input = "x"}, %[[W:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"}, %[[M:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.state = "w.momentum_buffer"},
// DYN-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {tg.init = #tg.init<full(65536.0)>, tg.state = "loss_scale.scale"}, %[[T:[a-z0-9]+]]: tensor<i32> {tg.init = #tg.init<zeros>, tg.state = "loss_scale.growth_tracker"}, %[[H:[a-z0-9]+]]: tensor<i32> {tg.init = #tg.init<full(1.0)>, tg.state = "loss_scale.hysteresis_left"})
// DYN-SAME: -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.state_out = "w.momentum_buffer"}, tensor<f32> {tg.state_out = "loss_scale.scale"}, tensor<i32> {tg.state_out = "loss_scale.growth_tracker"}, tensor<i32> {tg.state_out = "loss_scale.hysteresis_left"})
// DYN-SAME: attributes {tg.loss_scale = {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64, hysteresis = 1 : i64, init = 6.553600e+04 : f64, mode = "dynamic"}}
// The seed is the scale; the returned loss is the unscaled one.
// DYN: %[[L:.+]] = tg.mean
// DYN: %[[SEED:.+]] = tg.grad_seed %[[L]] scale %[[S]] {tg.role = "grad"} : tensor<f32>, tensor<f32>
// DYN: %[[G:.+]] = tg.reshape %{{.+}} shape [3]
// One fused check-and-unscale over the gradients, before clipping.
// DYN: %[[U:.+]], %[[F:.+]] = tg.check_finite_and_unscale %[[G]] scale %[[S]] {tg.role = "loss_scale"} : tensor<3xf32>
// DYN-NOT: tg.check_finite_and_unscale
// DYN: %[[C:.+]], %{{.+}} = tg.clip_grad_norm %[[U]] max_norm 1.000000e+00 found_inf(%[[F]] : tensor<f32>) {tg.role = "optimizer"} : tensor<3xf32>
// DYN: %[[NEW:.+]]:2 = tg.sgd_update params(%[[W]] : tensor<3xf32>) grads(%[[C]] : tensor<3xf32>) momentum_buffers(%[[M]] : tensor<3xf32>) found_inf(%[[F]] : tensor<f32>)
// DYN: %[[S2:.+]], %[[T2:.+]], %[[H2:.+]] = tg.update_scale %[[S]], %[[T]], %[[H]] found_inf %[[F]] {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64, hysteresis = 1 : i64, tg.role = "loss_scale"} : tensor<f32>
// DYN: return %[[L]], %[[NEW]]#0, %[[NEW]]#1, %[[S2]], %[[T2]], %[[H2]]

// Every option reaches the state initialisers, the update op and the record.
// HYST-LABEL: func.func @sgd_step(
// HYST-SAME: tensor<f32> {tg.init = #tg.init<full(1024.0)>, tg.state = "loss_scale.scale"}
// HYST-SAME: tensor<i32> {tg.init = #tg.init<full(2.0)>, tg.state = "loss_scale.hysteresis_left"}
// HYST-SAME: attributes {tg.loss_scale = {backoff_factor = 2.500000e-01 : f64, growth_factor = 4.000000e+00 : f64, growth_interval = 100 : i64, hysteresis = 2 : i64, init = 1.024000e+03 : f64, max_scale = 1.000000e+06 : f64, min_scale = 1.000000e+00 : f64, mode = "dynamic"}}
// HYST: tg.update_scale %{{.+}}, %{{.+}}, %{{.+}} found_inf %{{.+}} {backoff_factor = 2.500000e-01 : f64, growth_factor = 4.000000e+00 : f64, growth_interval = 100 : i64, hysteresis = 2 : i64, max_scale = 1.000000e+06 : f64, min_scale = 1.000000e+00 : f64, tg.role = "loss_scale"} : tensor<f32>

// A static scale: a constant seed, the same check-and-unscale and predicated
// updates, no scaler state and no update.
// STATIC-LABEL: func.func @sgd_step(
// STATIC-NOT: loss_scale.scale
// STATIC-SAME: attributes {tg.loss_scale = {mode = "static", scale = 1.024000e+03 : f64}}
// STATIC: %[[S:.+]] = tg.constant dense<1.024000e+03> : tensor<f32>
// STATIC: tg.grad_seed %{{.+}} scale %[[S]]
// STATIC: %[[U:.+]], %[[F:.+]] = tg.check_finite_and_unscale %{{.+}} scale %[[S]]
// STATIC: tg.clip_grad_norm %[[U]] max_norm 1.000000e+00 found_inf(%[[F]] : tensor<f32>)
// STATIC: tg.sgd_update {{.+}} found_inf(%[[F]] : tensor<f32>)
// STATIC-NOT: tg.update_scale

// NONE-LABEL: func.func @sgd_step(
// NONE-NOT: tg.loss_scale
// NONE-NOT: found_inf
// NONE: tg.grad_seed %{{.+}} : tensor<f32>
// NONE-NOT: tg.check_finite_and_unscale
// NONE-NOT: found_inf
// NONE: return
func.func @sgd_step(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %n : tensor<f32>, tensor<3xf32>
}

// -----

// AdamW: the step count is predicated like the moments (same op).
// DYN-LABEL: func.func @adamw_step(
// DYN: %[[U:.+]]:2, %[[F:.+]] = tg.check_finite_and_unscale %{{.+}}, %{{.+}} scale %{{.+}} : tensor<3xf32>, tensor<f32>
// DYN: tg.adamw_update params(%{{.+}}, %{{.+}} : tensor<3xf32>, tensor<f32>) grads(%[[U]]#0, %[[U]]#1 : tensor<3xf32>, tensor<f32>) exp_avgs({{.+}}) exp_avg_sqs({{.+}}) step(%{{.+}} : tensor<i32>) found_inf(%[[F]] : tensor<f32>)
// DYN: tg.update_scale
// STATIC-LABEL: func.func @adamw_step(
// STATIC: tg.adamw_update {{.+}} found_inf(%{{.+}} : tensor<f32>)
// NONE-LABEL: func.func @adamw_step(
// NONE: tg.adamw_update
// NONE-NOT: found_inf
func.func @adamw_step(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}, %b: tensor<f32> {tg.param = "b", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<f32> {tg.param_out = "b"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %z = tg.add %y, %b : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %l = tg.mean %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n:2 = tg.minimize %l wrt %w, %b with "adamw" {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<f32>, tensor<3xf32>, tensor<f32>
  return %l, %n#0, %n#1 : tensor<f32>, tensor<3xf32>, tensor<f32>
}

// -----

// An inference graph (no seed) is left alone in every mode.
// DYN-LABEL: func.func @inference(
// DYN-NOT: tg.loss_scale
// DYN-NOT: loss_scale.scale
// DYN: return
// STATIC-LABEL: func.func @inference(
// STATIC-NOT: tg.constant
func.func @inference(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = tg.relu %x : tensor<3xf32>
  return %y : tensor<3xf32>
}
