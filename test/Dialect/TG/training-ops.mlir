// RUN: ampc-opt %s | FileCheck %s
// RUN: ampc-opt %s | ampc-opt | FileCheck %s
// RUN: ampc-opt %s --mlir-print-op-generic | ampc-opt | FileCheck %s

// Round trip of the backward, optimizer and loss-scaler ops (custom and
// generic forms) and of the training-state attributes.

// CHECK-LABEL: func.func @backward_ops(
func.func @backward_ops(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %h: tensor<4x8xf16>,
                        %b: tensor<8xf32>, %s: tensor<f32>, %m: tensor<4xf32>) {
  // CHECK: tg.relu_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>
  %0 = tg.relu_grad %dy, %x : tensor<4x8xf32>, tensor<4x8xf32>
  // The result type is printed (`-> T`) only when it differs from the
  // forward input's type.
  // CHECK: tg.abs_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf16>{{$}}
  %1 = tg.abs_grad %dy, %h : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf16>
  // CHECK: tg.silu_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf32>
  %2 = tg.silu_grad %dy, %h : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf32>
  // CHECK: tg.gelu_grad %{{.+}}, %{{.+}} approximate "tanh" : tensor<4x8xf32>, tensor<4x8xf32>
  %3 = tg.gelu_grad %dy, %x approximate "tanh" : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: tg.maximum_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  %4:2 = tg.maximum_grad %dy, %x, %b : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  // CHECK: tg.minimum_grad
  %5:2 = tg.minimum_grad %dy, %x, %b : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  // CHECK: tg.pow_grad
  %6:2 = tg.pow_grad %dy, %x, %b : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  // CHECK: tg.max_grad %{{.+}}, %{{.+}}, %{{.+}} dims [1] : tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  %7 = tg.max_grad %m, %x, %m dims [1] : tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  // CHECK: tg.softmax_grad %{{.+}}, %{{.+}} dim 1 : tensor<4x8xf32>, tensor<4x8xf32>
  %8 = tg.softmax_grad %dy, %x dim 1 : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: tg.log_softmax_grad %{{.+}}, %{{.+}} dim 0 : tensor<4x8xf32>, tensor<4x8xf32>
  %9 = tg.log_softmax_grad %dy, %x dim 0 : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: tg.layer_norm_grad %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %10:3 = tg.layer_norm_grad %dy, %x, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: tg.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}} eps 9.9999999999999995E-7 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  %11:2 = tg.rms_norm_grad %dy, %x, %b eps 1.0e-06 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  // CHECK: tg.broadcast_to %{{.+}} shape [2, 4, 8] : tensor<4x8xf32> -> tensor<2x4x8xf32>
  %12 = tg.broadcast_to %x shape [2, 4, 8] : tensor<4x8xf32> -> tensor<2x4x8xf32>
  return
}

// CHECK-LABEL: func.func @conv_pool_embedding_losses(
func.func @conv_pool_embedding_losses(%dy: tensor<2x4x8x8xf32>, %x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                                      %dp: tensor<2x3x4x4xf32>, %de: tensor<4x8x16xf32>, %ids: tensor<4x8xi32>,
                                      %dl: tensor<f32>, %logits: tensor<64x10xf32>, %labels: tensor<64xi64>) {
  // CHECK: tg.conv2d_grad %{{.+}}, %{{.+}}, %{{.+}} stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  %0:2 = tg.conv2d_grad %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  // CHECK: tg.max_pool2d_grad %{{.+}}, %{{.+}} kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  %1 = tg.max_pool2d_grad %dp, %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  // CHECK: tg.avg_pool2d_grad %{{.+}}, %{{.+}} kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf16>
  %2 = tg.avg_pool2d_grad %dp, %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf16>
  // CHECK: tg.embedding_grad %{{.+}}, %{{.+}} num_embeddings 100 : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<100x16xf32>
  %3 = tg.embedding_grad %de, %ids num_embeddings 100 : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<100x16xf32>
  // CHECK: tg.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<64x10xf32>, tensor<64xi64> -> tensor<64x10xf32>
  %4 = tg.cross_entropy_grad %dl, %logits, %labels : tensor<f32>, tensor<64x10xf32>, tensor<64xi64> -> tensor<64x10xf32>
  // CHECK: tg.mse_loss_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
  %5:2 = tg.mse_loss_grad %dl, %logits, %logits : tensor<f32>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
  return
}

// CHECK-LABEL: func.func @optimizers(
// CHECK-SAME: %{{.+}}: tensor<4x4xf32> {tg.init = #tg.init<zeros>, tg.state = "w.momentum_buffer"}
// CHECK-SAME: %{{.+}}: tensor<f32> {tg.init = #tg.init<full(65536.0)>, tg.state = "loss_scale.scale"}
// CHECK-SAME: %{{.+}}: tensor<i32> {tg.init = #tg.init<full(2.0)>, tg.state = "loss_scale.hysteresis_left"}
// CHECK-SAME: -> (tensor<4x4xf32> {tg.state_out = "w.momentum_buffer"})
// CHECK-SAME: attributes {tg.loss_scale = {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64, hysteresis = 2 : i64, init = 6.553600e+04 : f64, max_scale = 1.000000e+06 : f64, min_scale = 1.000000e+00 : f64, mode = "dynamic"}}
func.func @optimizers(%w: tensor<4x4xf32>, %b: tensor<4xf16>, %gw: tensor<4x4xf32>, %gb: tensor<4xf16>,
                      %mw: tensor<4x4xf32> {tg.state = "w.momentum_buffer", tg.init = #tg.init<zeros>},
                      %mb: tensor<4xf32>, %step: tensor<i32>,
                      %scale: tensor<f32> {tg.state = "loss_scale.scale", tg.init = #tg.init<full(65536.0)>},
                      %tracker: tensor<i32>,
                      %hyst: tensor<i32> {tg.state = "loss_scale.hysteresis_left", tg.init = #tg.init<full(2.0)>})
    -> (tensor<4x4xf32> {tg.state_out = "w.momentum_buffer"})
    attributes {tg.loss_scale = {mode = "dynamic", init = 65536.0 : f64, growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64, max_scale = 1.0e6 : f64}} {
  // CHECK: %[[U:.+]]:2, %[[F:.+]] = tg.check_finite_and_unscale %{{.+}}, %{{.+}} scale %{{.+}} : tensor<4x4xf32>, tensor<4xf16>
  %u:2, %found = tg.check_finite_and_unscale %gw, %gb scale %scale : tensor<4x4xf32>, tensor<4xf16>
  // CHECK: %[[C:.+]]:2, %{{.+}} = tg.clip_grad_norm %[[U]]#0, %[[U]]#1 max_norm 1.000000e+00 found_inf(%[[F]] : tensor<f32>) : tensor<4x4xf32>, tensor<4xf16>
  %c:2, %norm = tg.clip_grad_norm %u#0, %u#1 max_norm 1.0 found_inf(%found : tensor<f32>) : tensor<4x4xf32>, tensor<4xf16>
  // CHECK: tg.clip_grad_norm %{{.+}} max_norm 2.000000e+00 : tensor<4x4xf32>
  %c2, %norm2 = tg.clip_grad_norm %gw max_norm 2.0 : tensor<4x4xf32>
  // CHECK: tg.sgd_update params(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4xf16>) grads(%[[C]]#0, %[[C]]#1 : tensor<4x4xf32>, tensor<4xf16>) momentum_buffers(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4xf32>) found_inf(%[[F]] : tensor<f32>) {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 0.000000e+00 : f64}
  %n:4 = tg.sgd_update params(%w, %b : tensor<4x4xf32>, tensor<4xf16>) grads(%c#0, %c#1 : tensor<4x4xf32>, tensor<4xf16>) momentum_buffers(%mw, %mb : tensor<4x4xf32>, tensor<4xf32>) found_inf(%found : tensor<f32>) {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = true, weight_decay = 0.0 : f64}
  // CHECK: tg.sgd_update params(%{{.+}} : tensor<4x4xf32>) grads(%{{.+}} : tensor<4x4xf32>) {lr
  %p = tg.sgd_update params(%w : tensor<4x4xf32>) grads(%gw : tensor<4x4xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  // CHECK: tg.adamw_update params(%{{.+}} : tensor<4x4xf32>) grads(%{{.+}} : tensor<4x4xf32>) exp_avgs(%{{.+}} : tensor<4x4xf32>) exp_avg_sqs(%{{.+}} : tensor<4x4xf32>) step(%{{.+}} : tensor<i32>) found_inf(%{{.+}} : tensor<f32>) {beta1
  %a:4 = tg.adamw_update params(%w : tensor<4x4xf32>) grads(%gw : tensor<4x4xf32>) exp_avgs(%mw : tensor<4x4xf32>) exp_avg_sqs(%mw : tensor<4x4xf32>) step(%step : tensor<i32>) found_inf(%found : tensor<f32>) {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}
  // CHECK: tg.update_scale %{{.+}}, %{{.+}}, %{{.+}} found_inf %[[F]] {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64, hysteresis = 2 : i64, max_scale = 1.000000e+06 : f64, min_scale = 1.000000e+00 : f64} : tensor<f32>
  %s2:3 = tg.update_scale %scale, %tracker, %hyst found_inf %found {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64, hysteresis = 2 : i64, min_scale = 1.0 : f64, max_scale = 1.0e6 : f64} : tensor<f32>
  return %n#2 : tensor<4x4xf32>
}
