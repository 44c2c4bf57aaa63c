// RUN: ampc-opt %s --ampc-optimizer-expansion --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-optimizer-expansion --ampc-loss-scaling --split-input-file | FileCheck %s --check-prefix=SCALED

// A schedule on tg.minimize: one tg.lr_schedule over the counter state
// `lr_schedule.step` before the updates, its factor the lr_scale of every
// group's update, its new count a state result. Under loss scaling the
// counter takes found_inf (a skipped update does not advance it).

// CHECK-LABEL: func.func @sgd_groups
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<i32> {tg.init = #tg.init<zeros>, tg.state = "lr_schedule.step"}
// CHECK-SAME: -> ({{.*}}tensor<i32> {tg.state_out = "lr_schedule.step"})
// CHECK: %[[T1:[a-z0-9_]+]], %[[F:[a-z0-9_]+]] = tg.lr_schedule %[[T]] {gamma = 0.000000e+00 : f64, kind = "cosine", lr = 1.000000e-01 : f64, min_lr = 1.000000e-02 : f64, step_size = 0 : i64, {{.*}}total_steps = 20 : i64, warmup_steps = 2 : i64} : tensor<i32>, tensor<f32>
// CHECK: tg.sgd_update params(%{{.*}} : tensor<3xf32>) grads(%{{.*}} : tensor<3xf32>) lr_scale(%[[F]] : tensor<f32>) {lr = 1.000000e-01 : f64
// CHECK: tg.sgd_update params(%{{.*}} : tensor<3xf32>) grads(%{{.*}} : tensor<3xf32>) lr_scale(%[[F]] : tensor<f32>) {lr = 5.000000e-01 : f64
// CHECK: return {{.*}}%[[T1]] : {{.*}}tensor<i32>

// SCALED-LABEL: func.func @sgd_groups
// SCALED: %{{.*}}, %[[FI:[a-z0-9_]+]] = tg.check_finite_and_unscale
// SCALED: tg.lr_schedule %{{.*}} found_inf(%[[FI]] : tensor<f32>)
// SCALED: tg.sgd_update {{.*}} found_inf(%[[FI]] : tensor<f32>) lr_scale(
func.func @sgd_groups(%x: tensor<4x3xf32> {tg.input = "x"},
                      %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<ones>},
                      %b: tensor<3xf32> {tg.param = "b", tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"},
        tensor<3xf32> {tg.param_out = "b"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %z = tg.add %y, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %u:2 = tg.minimize %l wrt %w, %b with "sgd"
      {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
      {param_groups = [{params = array<i64: 1>, hyperparams = {lr = 0.5 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}}],
       schedule = {kind = "cosine", warmup_steps = 2 : i64, total_steps = 20 : i64, min_lr = 0.01 : f64, step_size = 0 : i64, gamma = 0.0 : f64}}
      : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  return %l, %u#0, %u#1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Without a schedule nothing of it appears.
// CHECK-LABEL: func.func @no_schedule
// CHECK-NOT: lr_schedule
// CHECK-NOT: lr_scale
// CHECK: return
func.func @no_schedule(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<ones>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %l = tg.sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  %u = tg.minimize %l wrt %w with "adamw"
      {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64}
      : tensor<f32>, tensor<3xf32>
  return %l, %u : tensor<f32>, tensor<3xf32>
}
