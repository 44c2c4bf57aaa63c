// RUN: ampc-opt %s --split-input-file --verify-diagnostics
// RUN: ampc-opt %s --split-input-file --verify-diagnostics --ampc-model-copies 2>&1 | FileCheck %s
// RUN: ampc-opt %s --split-input-file --verify-diagnostics --ampc-low-params 2>&1 | FileCheck %s --check-prefix=LOW

// ampc-model-copies (opt level O2): the casts of an f32 param to f16 become
// a state argument the update writes; a param read in f32 keeps no copy.

func.func @step(%x: tensor<4x3xf16> {tg.input = "x"}, %w: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"}, %b: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "b"}, %gw: tensor<3xf32> {tg.input = "gw"}, %gb: tensor<3xf32> {tg.input = "gb"}) -> (tensor<4x3xf16>, tensor<4x3xf32>, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.param_out = "b"}) {
  %w16 = tg.cast %w {tg.role = "amp"} : tensor<3xf32> to tensor<3xf16>
  %y = tg.mul %x, %w16 : tensor<4x3xf16>, tensor<3xf16> -> tensor<4x3xf16>
  %z = tg.mul %y, %w16 : tensor<4x3xf16>, tensor<3xf16> -> tensor<4x3xf16>
  %x32 = tg.cast %x : tensor<4x3xf16> to tensor<4x3xf32>
  %u = tg.add %x32, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %new:2 = tg.sgd_update params(%w, %b : tensor<3xf32>, tensor<3xf32>) grads(%gw, %gb : tensor<3xf32>, tensor<3xf32>) {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %z, %u, %new#0, %new#1 : tensor<4x3xf16>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<3xf16> {tg.init = #tg.init<zeros>, tg.model_of = "w", tg.state = "w.model"}
// CHECK-SAME: tensor<3xf16> {tg.state_out = "w.model"}
// CHECK-NOT: tg.cast %arg1
// CHECK: tg.mul %arg0, %[[M]]
// CHECK: tg.mul %{{.*}}, %[[M]]
// CHECK: %[[NEW:.+]]:3 = tg.sgd_update params(%arg1, %arg2 : {{.*}}) models(%[[M]] : tensor<3xf16>) {{{.*}}model_params = array<i64: 0>
// CHECK: return %{{.*}}, %{{.*}}, %[[NEW]]#0, %[[NEW]]#1, %[[NEW]]#2 :

// -----

// ampc-low-params (opt level O3), before autodiff: w, read only through a
// cast to f16, becomes an f16 param (minimize's result follows); b, read in
// f32 by the add, stays f32.
func.func @lowstep(%x: tensor<4x3xf16> {tg.input = "x"}, %w: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"}, %b: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "b"}) -> (tensor<f32>, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.param_out = "b"}) {
  %w16 = tg.cast %w {tg.role = "amp"} : tensor<3xf32> to tensor<3xf16>
  %y = tg.mul %x, %w16 : tensor<4x3xf16>, tensor<3xf16> -> tensor<4x3xf16>
  %y32 = tg.cast %y : tensor<4x3xf16> to tensor<4x3xf32>
  %z = tg.add %y32, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %w1, %b1 = tg.minimize %l wrt %w, %b with "sgd" {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  return %l, %w1, %b1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
// LOW-LABEL: func.func @lowstep(
// LOW-SAME: %arg1: tensor<3xf16> {tg.init = #tg.init<zeros>, tg.param = "w"}, %arg2: tensor<3xf32>
// LOW-SAME: tensor<3xf16> {tg.param_out = "w"}, tensor<3xf32> {tg.param_out = "b"}
// LOW-NOT: tg.cast %arg1
// LOW: tg.mul %arg0, %arg1
// LOW: tg.minimize {{.*}} : tensor<f32>, tensor<3xf16>, tensor<3xf32>

// -----

func.func @bad_index(%w: tensor<3xf32>, %g: tensor<3xf32>, %m: tensor<3xf16>) -> tensor<3xf32> {
  // expected-error @+1 {{'model_params' must be increasing indices below 1, got 1}}
  %new:2 = tg.sgd_update params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>) models(%m : tensor<3xf16>) {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64, model_params = array<i64: 1>}
  return %new#0 : tensor<3xf32>
}

// -----

func.func @count(%w: tensor<3xf32>, %g: tensor<3xf32>, %m: tensor<3xf16>) -> tensor<3xf32> {
  // expected-error @+1 {{has 1 model copies but 'model_params' names 0}}
  %new:2 = tg.sgd_update params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>) models(%m : tensor<3xf16>) {lr = 1.0e-01 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %new#0 : tensor<3xf32>
}

// -----

func.func @shape(%w: tensor<3xf32>, %g: tensor<3xf32>, %v: tensor<3xf32>, %s: tensor<i32>, %m: tensor<2xf16>) -> tensor<3xf32> {
  // expected-error @+1 {{model copy #0 has shape of 'tensor<2xf16>' but its parameter is 'tensor<3xf32>'}}
  %p, %a, %b, %c, %t = tg.adamw_update params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>) exp_avgs(%v : tensor<3xf32>) exp_avg_sqs(%v : tensor<3xf32>) step(%s : tensor<i32>) models(%m : tensor<2xf16>) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, lr = 1.0e-03 : f64, weight_decay = 0.01 : f64, model_params = array<i64: 0>}
  return %p : tensor<3xf32>
}
