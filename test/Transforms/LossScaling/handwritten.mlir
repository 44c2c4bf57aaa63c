// RUN: ampc-opt %s --ampc-loss-scaling --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-loss-scaling --split-input-file | FileCheck %s --check-prefix=GRAD

// Steps that start from a hand-written tg.grad_seed (an exporter's already
// differentiated step): the gradients are the `grads` of the optimizer and
// clipping ops, and the returned values that come out of the backward graph.

// The update of v comes before the gradient of w is computed: the single
// check-and-unscale needs both, so the updates move after it.
// CHECK-LABEL: func.func @handwritten_sgd(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {tg.input = "x"}, %[[W:[a-z0-9]+]]: tensor<3xf32> {{.+}}, %[[V:[a-z0-9]+]]: tensor<3xf32> {{.+}}, %[[S:[a-z0-9]+]]: tensor<f32> {tg.init = #tg.init<full(65536.0)>, tg.state = "loss_scale.scale"}
// CHECK: %[[L:.+]] = tg.sum
// CHECK: %[[SEED:.+]] = tg.grad_seed %[[L]] scale %[[S]]
// CHECK: %[[DV:.+]] = tg.sum %{{.+}} dims [0]
// CHECK: %[[DW:.+]] = tg.sum %{{.+}} dims [0]
// CHECK: %[[U:.+]]:2, %[[F:.+]] = tg.check_finite_and_unscale %[[DV]], %[[DW]] scale %[[S]] {tg.role = "loss_scale"} : tensor<3xf32>, tensor<3xf32>
// CHECK-DAG: %[[NW:.+]] = tg.sgd_update params(%[[W]] : tensor<3xf32>) grads(%[[U]]#1 : tensor<3xf32>) found_inf(%[[F]] : tensor<f32>)
// CHECK-DAG: %[[NV:.+]] = tg.sgd_update params(%[[V]] : tensor<3xf32>) grads(%[[U]]#0 : tensor<3xf32>) found_inf(%[[F]] : tensor<f32>)
// CHECK-DAG: %[[S2:.+]], %[[T2:.+]], %[[H2:.+]] = tg.update_scale
// CHECK: return %[[L]], %[[NW]], %[[NV]], %[[S2]], %[[T2]], %[[H2]]
func.func @handwritten_sgd(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}, %v: tensor<3xf32> {tg.param = "v", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.param_out = "v"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %z = tg.mul %y, %v : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.sum %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %seed = tg.grad_seed %l : tensor<f32>
  %dz = tg.broadcast_to %seed shape [4, 3] : tensor<f32> -> tensor<4x3xf32>
  %dv0 = tg.mul %dz, %y : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %dv = tg.sum %dv0 dims [0] : tensor<4x3xf32> -> tensor<3xf32>
  %nv = tg.sgd_update params(%v : tensor<3xf32>) grads(%dv : tensor<3xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  %dy = tg.mul %dz, %v : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %dw0 = tg.mul %dy, %x : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %dw = tg.sum %dw0 dims [0] : tensor<4x3xf32> -> tensor<3xf32>
  %nw = tg.sgd_update params(%w : tensor<3xf32>) grads(%dw : tensor<3xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %l, %nw, %nv : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Hand-written clipping before AdamW: the clip's inputs are the gradients;
// both the clip and the update are predicated.
// CHECK-LABEL: func.func @handwritten_clip_adamw(
// CHECK: %[[U:.+]], %[[F:.+]] = tg.check_finite_and_unscale %[[G:.+]] scale %{{.+}} : tensor<3xf32>
// CHECK: %[[C:.+]], %{{.+}} = tg.clip_grad_norm %[[U]] max_norm 1.000000e+00 found_inf(%[[F]] : tensor<f32>) : tensor<3xf32>
// CHECK: tg.adamw_update params(%{{.+}} : tensor<3xf32>) grads(%[[C]] : tensor<3xf32>) {{.+}} found_inf(%[[F]] : tensor<f32>)
func.func @handwritten_clip_adamw(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}, %m: tensor<3xf32> {tg.state = "w.exp_avg", tg.init = #tg.init<zeros>}, %v: tensor<3xf32> {tg.state = "w.exp_avg_sq", tg.init = #tg.init<zeros>}, %t: tensor<i32> {tg.state = "adamw.step", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.state_out = "w.exp_avg"}, tensor<3xf32> {tg.state_out = "w.exp_avg_sq"}, tensor<i32> {tg.state_out = "adamw.step"}) {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  %seed = tg.grad_seed %l : tensor<f32>
  %g = tg.broadcast_to %seed shape [3] : tensor<f32> -> tensor<3xf32>
  %c, %norm = tg.clip_grad_norm %g max_norm 1.0 : tensor<3xf32>
  %p, %m2, %v2, %t2 = tg.adamw_update params(%w : tensor<3xf32>) grads(%c : tensor<3xf32>) exp_avgs(%m : tensor<3xf32>) exp_avg_sqs(%v : tensor<3xf32>) step(%t : tensor<i32>) {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}
  return %l, %p, %m2, %v2, %t2 : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<i32>
}

// -----

// No optimizer: the returned gradients (of tg.grad, or hand-written) are
// unscaled; the loss and the seed-independent outputs are not.
// GRAD-LABEL: func.func @grads_only(
// GRAD-SAME: %[[X:[a-z0-9]+]]: tensor<3xf32> {tg.input = "x"}, %[[S:[a-z0-9]+]]: tensor<f32> {{.+}}tg.state = "loss_scale.scale"
// GRAD: %[[E:.+]] = tg.exp %[[X]]
// GRAD: %[[L:.+]] = tg.sum %[[E]]
// GRAD: tg.grad_seed %[[L]] scale %[[S]]
// GRAD: %[[G:.+]] = tg.mul %{{.+}}, %[[E]]
// GRAD: %[[U:.+]], %[[F:.+]] = tg.check_finite_and_unscale %[[G]] scale %[[S]] {tg.role = "loss_scale"} : tensor<3xf32>
// GRAD: %[[S2:.+]], %[[T2:.+]], %[[H2:.+]] = tg.update_scale %[[S]], %{{.+}}, %{{.+}} found_inf %[[F]]
// GRAD: return %[[L]], %[[U]], %[[E]], %[[S2]], %[[T2]], %[[H2]]
func.func @grads_only(%x: tensor<3xf32> {tg.input = "x"}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.output = 1 : i64}, tensor<3xf32> {tg.output = 2 : i64}) {
  %e = tg.exp %x : tensor<3xf32>
  %l = tg.sum %e dims [0] : tensor<3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<3xf32>
  return %l, %g, %e : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
