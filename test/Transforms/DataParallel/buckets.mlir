// RUN: ampc-opt %s --ampc-data-parallel --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-data-parallel="first-bucket-mb=0.00002 bucket-cap-mb=0.00003" --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: ampc-opt %s --ampc-data-parallel="delay-allreduce=true" --split-input-file | FileCheck %s --check-prefix=DELAY
// RUN: ampc-opt %s --ampc-data-parallel="allreduce-fp32=true predivide=always" --split-input-file | FileCheck %s --check-prefix=FP32

// An f32 step: by default one bucket (everything under the first bucket's
// 1 MiB), started right after the last gradient, waited just before the
// update; no pre-division, so the bucket takes the mean.
// CHECK-LABEL: func.func @two_params(
// CHECK-SAME: tg.data_parallel = {bucket_cap_mb = 2.500000e+01 : f64, buckets = 1 : i64, first_bucket_mb = 1.000000e+00 : f64, predivide = "none"}
// CHECK: %[[SEED:.+]] = tg.grad_seed
// CHECK-NOT: tg.divide_by_world
// CHECK: %[[DV:.+]] = tg.sum %{{.+}} dims [0]
// CHECK: %[[DW:.+]] = tg.sum %{{.+}} dims [0] : tensor<4x5xf32> -> tensor<5xf32>
// CHECK-NEXT: %[[S:.+]]:2 = tg.grad_allreduce_start %[[DV]], %[[DW]] {bucket = 0 : i64, mean} : tensor<3xf32>, tensor<5xf32>
// CHECK-NEXT: %[[R:.+]]:2 = tg.grad_allreduce_wait %[[S]]#0, %[[S]]#1 {bucket = 0 : i64} : tensor<3xf32>, tensor<5xf32>
// CHECK-NEXT: tg.sgd_update params(%{{.+}}, %{{.+}} : tensor<3xf32>, tensor<5xf32>) grads(%[[R]]#0, %[[R]]#1 : tensor<3xf32>, tensor<5xf32>)

// Tiny caps (first bucket 20 bytes, then 31 bytes): dv (12 bytes) fills the
// first bucket, which starts right after dv, before dw is computed (the
// overlap); dw (20 bytes) gets the second.
// SMALL-LABEL: func.func @two_params(
// SMALL-SAME: buckets = 2 : i64
// SMALL: %[[DV:.+]] = tg.sum %{{.+}} dims [0] : tensor<4x3xf32> -> tensor<3xf32>
// SMALL-NEXT: %[[S0:.+]] = tg.grad_allreduce_start %[[DV]] {bucket = 0 : i64, mean} : tensor<3xf32>
// SMALL: %[[DW:.+]] = tg.sum %{{.+}} dims [0] : tensor<4x5xf32> -> tensor<5xf32>
// SMALL-NEXT: %[[S1:.+]] = tg.grad_allreduce_start %[[DW]] {bucket = 1 : i64, mean} : tensor<5xf32>
// SMALL-NEXT: %[[R0:.+]] = tg.grad_allreduce_wait %[[S0]] {bucket = 0 : i64} : tensor<3xf32>
// SMALL-NEXT: %[[R1:.+]] = tg.grad_allreduce_wait %[[S1]] {bucket = 1 : i64} : tensor<5xf32>
// SMALL-NEXT: tg.sgd_update {{.+}} grads(%[[R0]], %[[R1]] :

// delay-allreduce: every start after the backward, next to the waits.
// DELAY-LABEL: func.func @two_params(
// DELAY-SAME: delay_allreduce
// DELAY: %[[DW:.+]] = tg.sum %{{.+}} dims [0] : tensor<4x5xf32> -> tensor<5xf32>
// DELAY-NEXT: tg.grad_allreduce_start
// DELAY-NEXT: tg.grad_allreduce_wait
// DELAY-NEXT: tg.sgd_update

// Pre-division forced: the seed is divided by the world size and the bucket
// sums (no `mean`); allreduce-fp32 is recorded on the start.
// FP32-LABEL: func.func @two_params(
// FP32-SAME: allreduce_fp32
// FP32-SAME: predivide = "seed"
// FP32: %[[SEED:.+]] = tg.grad_seed %{{.+}} : tensor<f32>
// FP32-NEXT: %[[D:.+]] = tg.divide_by_world %[[SEED]] : tensor<f32>
// FP32-NEXT: tg.broadcast_to %[[D]]
// FP32: tg.grad_allreduce_start %{{.+}}, %{{.+}} {bucket = 0 : i64, reduce_f32} : tensor<3xf32>, tensor<5xf32>
func.func @two_params(%x: tensor<4x3xf32> {tg.input = "x"}, %x2: tensor<4x5xf32> {tg.input = "x2"}, %v: tensor<3xf32> {tg.param = "v", tg.init = #tg.init<zeros>}, %w: tensor<5xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "v"}, tensor<5xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %v : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l1 = tg.sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %z = tg.mul %x2, %w : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %l2 = tg.sum %z dims [0, 1] : tensor<4x5xf32> -> tensor<f32>
  %l = tg.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>
  %seed = tg.grad_seed %l : tensor<f32>
  %dy = tg.broadcast_to %seed shape [4, 3] : tensor<f32> -> tensor<4x3xf32>
  %dv0 = tg.mul %dy, %x : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %dv = tg.sum %dv0 dims [0] : tensor<4x3xf32> -> tensor<3xf32>
  %dz = tg.broadcast_to %seed shape [4, 5] : tensor<f32> -> tensor<4x5xf32>
  %dw0 = tg.mul %dz, %x2 : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  %dw = tg.sum %dw0 dims [0] : tensor<4x5xf32> -> tensor<5xf32>
  %new:2 = tg.sgd_update params(%v, %w : tensor<3xf32>, tensor<5xf32>) grads(%dv, %dw : tensor<3xf32>, tensor<5xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %l, %new#0, %new#1 : tensor<f32>, tensor<3xf32>, tensor<5xf32>
}

// -----

// A 16-bit step: pre-division is automatic (the seed divided by W), the f16
// and f32 gradients share a bucket and it sums.
// CHECK-LABEL: func.func @mixed(
// CHECK-SAME: predivide = "seed"
// CHECK: %[[SEED:.+]] = tg.grad_seed %{{.+}} : tensor<f32>
// CHECK-NEXT: %[[D:.+]] = tg.divide_by_world %[[SEED]] : tensor<f32>
// CHECK: tg.grad_allreduce_start %{{.+}}, %{{.+}} {bucket = 0 : i64} : tensor<3xf32>, tensor<3xf16>
// CHECK-NEXT: tg.grad_allreduce_wait
// CHECK-NEXT: tg.sgd_update
func.func @mixed(%x: tensor<4x3xf16> {tg.input = "x"}, %v: tensor<3xf16> {tg.param = "v", tg.init = #tg.init<zeros>}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf16> {tg.param_out = "v"}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %v : tensor<4x3xf16>, tensor<3xf16> -> tensor<4x3xf16>
  %y32 = tg.cast %y : tensor<4x3xf16> to tensor<4x3xf32>
  %z = tg.mul %y32, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.sum %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %seed = tg.grad_seed %l : tensor<f32>
  %dz = tg.broadcast_to %seed shape [4, 3] : tensor<f32> -> tensor<4x3xf32>
  %dw0 = tg.mul %dz, %y32 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %dw = tg.sum %dw0 dims [0] : tensor<4x3xf32> -> tensor<3xf32>
  %dy32 = tg.mul %dz, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %dy = tg.cast %dy32 : tensor<4x3xf32> to tensor<4x3xf16>
  %dv0 = tg.mul %dy, %x : tensor<4x3xf16>, tensor<4x3xf16> -> tensor<4x3xf16>
  %dv = tg.sum %dv0 dims [0] : tensor<4x3xf16> -> tensor<3xf16>
  %new:2 = tg.sgd_update params(%v, %w : tensor<3xf16>, tensor<3xf32>) grads(%dv, %dw : tensor<3xf16>, tensor<3xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %l, %new#0, %new#1 : tensor<f32>, tensor<3xf16>, tensor<3xf32>
}

// -----

// The update of v comes before w's gradient exists: the waits follow the
// last start and the early update moves after them.
// CHECK-LABEL: func.func @early_update(
// CHECK: %[[DV:.+]] = tg.sum %{{.+}} dims [0] : tensor<4x3xf32> -> tensor<3xf32>
// CHECK: %[[DW:.+]] = tg.sum %{{.+}} dims [0] : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[S:.+]]:2 = tg.grad_allreduce_start %[[DV]], %[[DW]]
// CHECK-NEXT: %[[R:.+]]:2 = tg.grad_allreduce_wait %[[S]]#0, %[[S]]#1
// CHECK-DAG: tg.sgd_update params(%{{.+}} : tensor<3xf32>) grads(%[[R]]#0 : tensor<3xf32>)
// CHECK-DAG: tg.sgd_update params(%{{.+}} : tensor<3xf32>) grads(%[[R]]#1 : tensor<3xf32>)
func.func @early_update(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}, %v: tensor<3xf32> {tg.param = "v", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.param_out = "v"}) {
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

// A forward graph (no gradient consumer) is left alone.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: tg.data_parallel
// CHECK-NOT: tg.grad_allreduce
func.func @forward(%x: tensor<4xf32> {tg.input = "x"}) -> (tensor<4xf32> {tg.output = 0 : i64}) {
  %y = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
