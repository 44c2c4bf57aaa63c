// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-data-parallel --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-data-parallel="predivide=always" --split-input-file | FileCheck %s --check-prefix=ALWAYS
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion --ampc-data-parallel --ampc-loss-scaling --split-input-file | FileCheck %s --check-prefix=SCALED

// The gradients a graph returns through `grad` (tg.grad): ampc-autodiff
// marks each with what it is the gradient of (tg.grad_of); a parameter's
// is averaged over the ranks, an input's stays the rank's own.

// grad and minimize of the same loss: the returned gradient of w repeats
// the optimizer's backward, so it is the optimizer's averaged gradient (one
// bucket, one all-reduce of it); the input's gradient is the rank's own.
// CHECK-LABEL: func.func @with_minimize(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {tg.input = "x"}, %[[W:[a-z0-9]+]]: tensor<3xf32>
// CHECK-SAME: predivide = "none"
// CHECK: %[[GX:.+]] = tg.mul %{{.+}}, %[[W]] {tg.role = "grad"} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK: tg.grad_of %[[GX]] wrt %[[X]] {tg.role = "grad"} : tensor<4x3xf32>
// CHECK: %[[S:.+]] = tg.grad_allreduce_start %{{.+}} {bucket = 0 : i64, mean} : tensor<3xf32>
// CHECK-NOT: tg.grad_allreduce_start
// CHECK: %[[R:.+]] = tg.grad_allreduce_wait %[[S]] {bucket = 0 : i64} : tensor<3xf32>
// CHECK-NEXT: tg.grad_of %[[R]] wrt %[[W]] {tg.role = "grad"} : tensor<3xf32>
// CHECK-NEXT: %[[NEW:.+]] = tg.sgd_update params(%[[W]] : tensor<3xf32>) grads(%[[R]] : tensor<3xf32>)
// CHECK-NEXT: return %{{.+}}, %[[R]], %[[GX]], %[[NEW]]
func.func @with_minimize(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.output = 1 : i64}, tensor<4x3xf32> {tg.output = 2 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %w, %x : tensor<f32>, tensor<3xf32>, tensor<4x3xf32>
  %n = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %g#0, %g#1, %n : tensor<f32>, tensor<3xf32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// grad without minimize (DDP averages in the backward, optimizer or not):
// the parameter's gradient gets a bucket of its own, waited before the
// return; what the graph computes from it reads the average (it moves
// after the wait). The input's gradient is not in the bucket.
// CHECK-LABEL: func.func @no_minimize(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {tg.input = "x"}, %[[W:[a-z0-9]+]]: tensor<3xf32>
// CHECK-SAME: tg.data_parallel = {bucket_cap_mb = 2.500000e+01 : f64, buckets = 1 : i64, first_bucket_mb = 1.000000e+00 : f64, predivide = "none"}
// CHECK: %[[GW:.+]] = tg.reshape %{{.+}} shape [3] {tg.role = "grad"}
// CHECK-NEXT: %[[S:.+]] = tg.grad_allreduce_start %[[GW]] {bucket = 0 : i64, mean} : tensor<3xf32>
// CHECK: tg.grad_of %[[GX:.+]] wrt %[[X]]
// CHECK: %[[R:.+]] = tg.grad_allreduce_wait %[[S]] {bucket = 0 : i64} : tensor<3xf32>
// CHECK-NEXT: tg.grad_of %[[R]] wrt %[[W]]
// CHECK-NEXT: %[[SQ:.+]] = tg.mul %[[R]], %[[R]]
// CHECK-NEXT: return %[[R]], %[[GX]], %[[SQ]]
func.func @no_minimize(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<3xf32> {tg.output = 0 : i64}, tensor<4x3xf32> {tg.output = 1 : i64}, tensor<3xf32> {tg.output = 2 : i64}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %w, %x : tensor<f32>, tensor<3xf32>, tensor<4x3xf32>
  %sq = tg.mul %g#0, %g#0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %g#0, %g#1, %sq : tensor<3xf32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// The gradient of another loss is not the optimizer's: both are averaged,
// each once (two tensors in the bucket).
// CHECK-LABEL: func.func @other_loss(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {tg.init
// CHECK: %[[S:.+]]:2 = tg.grad_allreduce_start %{{.+}}, %{{.+}} {bucket = 0 : i64, mean} : tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT: %[[R:.+]]:2 = tg.grad_allreduce_wait %[[S]]#0, %[[S]]#1
// CHECK-NEXT: tg.grad_of %[[R]]#0 wrt %[[W]]
// CHECK-NEXT: tg.sgd_update params(%[[W]] : tensor<3xf32>) grads(%[[R]]#1 : tensor<3xf32>)
// CHECK-NEXT: return %{{.+}}, %[[R]]#0,
func.func @other_loss(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.output = 1 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %l2 = tg.sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g = tg.grad %l2 wrt %w : tensor<f32>, tensor<3xf32>
  %n = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %g, %n : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// 16-bit values (pre-division by default): the optimizer's seed is divided
// by W and its bucket sums; the grad statement's seed, whose backward also
// gives the input's gradient, is not (that gradient stays the rank's own,
// not a 1/W share). The returned gradient of w is the optimizer's bucket.
// With predivide=always every seed is divided (the input's gradient then
// comes out divided by W too).
// CHECK-LABEL: func.func @low(
// CHECK-SAME: predivide = "some_seeds"
// CHECK: %[[SEED1:.+]] = tg.grad_seed
// CHECK-NOT: tg.divide_by_world
// CHECK: tg.grad_of %{{.+}} wrt %arg0
// CHECK: %[[SEED2:.+]] = tg.grad_seed
// CHECK-NEXT: tg.divide_by_world %[[SEED2]] : tensor<f16>
// CHECK: %[[S:.+]] = tg.grad_allreduce_start %{{.+}} {bucket = 0 : i64} : tensor<3xf16>
// CHECK: %[[R:.+]] = tg.grad_allreduce_wait %[[S]]
// CHECK-NEXT: tg.grad_of %[[R]] wrt %arg1
// ALWAYS-LABEL: func.func @low(
// ALWAYS-SAME: predivide = "seed"
// ALWAYS: %[[SEED1:.+]] = tg.grad_seed
// ALWAYS-NEXT: tg.divide_by_world %[[SEED1]] : tensor<f16>
// ALWAYS: %[[SEED2:.+]] = tg.grad_seed
// ALWAYS-NEXT: tg.divide_by_world %[[SEED2]] : tensor<f16>
// With loss scaling after: the check reads the averaged gradient and the
// rank's own input gradient, so found_inf is summed over the ranks (bucket
// 1, after the gradients' bucket 0) before the update and the scale update
// read it; the markers name the unscaled values.
// SCALED-LABEL: func.func @low(
// SCALED: %[[R:.+]] = tg.grad_allreduce_wait %{{.+}} {bucket = 0 : i64} : tensor<3xf16>
// SCALED: %[[U:.+]]:2, %[[F:.+]] = tg.check_finite_and_unscale %[[R]], %[[GX:.+]] scale
// SCALED-NEXT: %[[FS:.+]] = tg.grad_allreduce_start %[[F]] {bucket = 1 : i64, tg.role = "loss_scale"} : tensor<f32>
// SCALED-NEXT: %[[FR:.+]] = tg.grad_allreduce_wait %[[FS]] {bucket = 1 : i64, tg.role = "loss_scale"} : tensor<f32>
// SCALED-DAG: tg.grad_of %[[U]]#0 wrt %arg1
// SCALED-DAG: tg.grad_of %[[U]]#1 wrt %arg0
// SCALED-DAG: tg.sgd_update {{.+}} grads(%[[U]]#0 : tensor<3xf16>) found_inf(%[[FR]] : tensor<f32>)
// SCALED-DAG: tg.update_scale {{.+}} found_inf %[[FR]]
func.func @low(%x: tensor<4x3xf16> {tg.input = "x"}, %w: tensor<3xf16> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f16> {tg.output = 0 : i64}, tensor<3xf16> {tg.output = 1 : i64}, tensor<4x3xf16> {tg.output = 2 : i64}, tensor<3xf16> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf16>, tensor<3xf16> -> tensor<4x3xf16>
  %l = tg.sum %y dims [0, 1] : tensor<4x3xf16> -> tensor<f16>
  %g:2 = tg.grad %l wrt %w, %x : tensor<f16>, tensor<3xf16>, tensor<4x3xf16>
  %n = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f16>, tensor<3xf16>
  return %l, %g#0, %g#1, %n : tensor<f16>, tensor<3xf16>, tensor<4x3xf16>, tensor<3xf16>
}
