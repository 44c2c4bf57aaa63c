// RUN: ampc-opt %s --ampc-optimizer-expansion --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-optimizer-expansion --split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// tg.minimize becomes a backward graph, optional clipping, and one optimizer
// op over the parameters the loss reaches, with the optimizer state as
// function arguments and results.

// Plain SGD (momentum 0): no state at all.
// CHECK-LABEL: func.func @sgd_plain(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {tg.input = "x"}, %[[W:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"})
// CHECK-SAME: -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"})
// CHECK: %[[L:.+]] = tg.mean
// CHECK: tg.grad_seed %[[L]]
// CHECK: %[[GW:.+]] = tg.reshape %{{.+}} shape [3]
// CHECK: %[[NEW:.+]] = tg.sgd_update params(%[[W]] : tensor<3xf32>) grads(%[[GW]] : tensor<3xf32>) {lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, nesterov = false, tg.role = "optimizer", weight_decay = 0.000000e+00 : f64}
// CHECK: return %[[L]], %[[NEW]] : tensor<f32>, tensor<3xf32>
// LOC-LABEL: func.func @sgd_plain(
// LOC: tg.sgd_update {{.+}} loc(fused<"optimizer">["{{.*}}minimize.mlir":[[# @LINE + 4]]:8])
func.func @sgd_plain(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %n : tensor<f32>, tensor<3xf32>
}

// -----

// SGD with momentum, Nesterov and weight decay: one f32 momentum buffer per
// parameter (an f16 parameter too), zero-initialised, returned as state.
// CHECK-LABEL: func.func @sgd_momentum(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"}, %[[B:[a-z0-9]+]]: tensor<f16> {tg.init = #tg.init<zeros>, tg.param = "b"},
// CHECK-SAME: %[[MW:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.state = "w.momentum_buffer"}, %[[MB:[a-z0-9]+]]: tensor<f32> {tg.init = #tg.init<zeros>, tg.state = "b.momentum_buffer"})
// CHECK-SAME: -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<f16> {tg.param_out = "b"}, tensor<3xf32> {tg.state_out = "w.momentum_buffer"}, tensor<f32> {tg.state_out = "b.momentum_buffer"})
// CHECK: %[[GB:.+]] = tg.cast %{{.+}} : tensor<f32> to tensor<f16>
// CHECK: %[[GW:.+]] = tg.reshape %{{.+}} shape [3]
// CHECK: %[[NEW:.+]]:4 = tg.sgd_update params(%[[W]], %[[B]] : tensor<3xf32>, tensor<f16>) grads(%[[GW]], %[[GB]] : tensor<3xf32>, tensor<f16>) momentum_buffers(%[[MW]], %[[MB]] : tensor<3xf32>, tensor<f32>) {lr = 5.000000e-02 : f64, momentum = 9.000000e-01 : f64, nesterov = true, tg.role = "optimizer", weight_decay = 1.000000e-04 : f64}
// CHECK: return %{{.+}}, %[[NEW]]#0, %[[NEW]]#1, %[[NEW]]#2, %[[NEW]]#3 : tensor<f32>, tensor<3xf32>, tensor<f16>, tensor<3xf32>, tensor<f32>
func.func @sgd_momentum(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}, %b: tensor<f16> {tg.param = "b", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<f16> {tg.param_out = "b"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %z = tg.add %y, %b : tensor<4x3xf32>, tensor<f16> -> tensor<4x3xf32>
  %l = tg.mean %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n:2 = tg.minimize %l wrt %w, %b with "sgd" {lr = 0.05 : f64, momentum = 0.9 : f64, nesterov = true, weight_decay = 1.0e-04 : f64} : tensor<f32>, tensor<3xf32>, tensor<f16>
  return %l, %n#0, %n#1 : tensor<f32>, tensor<3xf32>, tensor<f16>
}

// -----

// AdamW with max_grad_norm: clipping over all gradients first, then one
// update; state per parameter (exp_avg, exp_avg_sq) and one shared i32 step.
// A parameter the loss does not reach gets no state and comes back as is.
// CHECK-LABEL: func.func @adamw_clip(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"}, %[[U:[a-z0-9]+]]: tensor<2xf32> {tg.init = #tg.init<ones>, tg.param = "unused"}, %[[B:[a-z0-9]+]]: tensor<f32> {tg.init = #tg.init<zeros>, tg.param = "b"},
// CHECK-SAME: %[[MW:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.state = "w.exp_avg"}, %[[VW:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.state = "w.exp_avg_sq"},
// CHECK-SAME: %[[MB:[a-z0-9]+]]: tensor<f32> {tg.init = #tg.init<zeros>, tg.state = "b.exp_avg"}, %[[VB:[a-z0-9]+]]: tensor<f32> {tg.init = #tg.init<zeros>, tg.state = "b.exp_avg_sq"},
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i32> {tg.init = #tg.init<zeros>, tg.state = "adamw.step"})
// CHECK-SAME: tensor<3xf32> {tg.state_out = "w.exp_avg"}, tensor<3xf32> {tg.state_out = "w.exp_avg_sq"}, tensor<f32> {tg.state_out = "b.exp_avg"}, tensor<f32> {tg.state_out = "b.exp_avg_sq"}, tensor<i32> {tg.state_out = "adamw.step"})
// CHECK: %[[GB:.+]] = tg.reshape %{{.+}} shape [] {tg.role = "grad"} : tensor<1x1xf32> -> tensor<f32>
// CHECK: %[[GW:.+]] = tg.reshape %{{.+}} shape [3]
// CHECK: %[[C:.+]]:2, %{{.+}} = tg.clip_grad_norm %[[GW]], %[[GB]] max_norm 1.000000e+00 {tg.role = "optimizer"} : tensor<3xf32>, tensor<f32>
// CHECK: %[[R:.+]]:6, %[[S:.+]] = tg.adamw_update params(%[[W]], %[[B]] : tensor<3xf32>, tensor<f32>) grads(%[[C]]#0, %[[C]]#1 : tensor<3xf32>, tensor<f32>) exp_avgs(%[[MW]], %[[MB]] : tensor<3xf32>, tensor<f32>) exp_avg_sqs(%[[VW]], %[[VB]] : tensor<3xf32>, tensor<f32>) step(%[[STEP]] : tensor<i32>) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, tg.role = "optimizer", weight_decay = 1.000000e-02 : f64}
// CHECK: return %{{.+}}, %[[R]]#0, %[[U]], %[[R]]#1, %[[R]]#2, %[[R]]#4, %[[R]]#3, %[[R]]#5, %[[S]]
func.func @adamw_clip(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}, %u: tensor<2xf32> {tg.param = "unused", tg.init = #tg.init<ones>}, %b: tensor<f32> {tg.param = "b", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<2xf32> {tg.param_out = "unused"}, tensor<f32> {tg.param_out = "b"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %z = tg.add %y, %b : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %l = tg.mean %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n:3 = tg.minimize %l wrt %w, %u, %b with "adamw" {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64, max_grad_norm = 1.0 : f64} : tensor<f32>, tensor<3xf32>, tensor<2xf32>, tensor<f32>
  return %l, %n#0, %n#1, %n#2 : tensor<f32>, tensor<3xf32>, tensor<2xf32>, tensor<f32>
}

// -----

// SGD with clipping too; and a graph whose loss reaches no parameter at all
// is a no-op step (a warning, see errors.mlir).
// CHECK-LABEL: func.func @sgd_clip(
// CHECK: %[[C:.+]], %{{.+}} = tg.clip_grad_norm %{{.+}} max_norm 5.000000e-01 {tg.role = "optimizer"} : tensor<3xf32>
// CHECK: tg.sgd_update params(%{{.+}} : tensor<3xf32>) grads(%[[C]] : tensor<3xf32>)
func.func @sgd_clip(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64, max_grad_norm = 0.5 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %n : tensor<f32>, tensor<3xf32>
}
