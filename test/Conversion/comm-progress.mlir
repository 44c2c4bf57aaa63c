// RUN: ampc-opt %s --pass-pipeline='builtin.module(func.func(ampc-data-parallel{first-bucket-mb=0.00002 bucket-cap-mb=0.00003},ampc-buffer-planning),ampc-convert-tg-to-rt)' | FileCheck %s
// RUN: ampc-opt %s --pass-pipeline='builtin.module(func.func(ampc-data-parallel{delay-allreduce=true},ampc-buffer-planning),ampc-convert-tg-to-rt)' | FileCheck %s --check-prefix=DELAY
// RUN: ampc-opt %s --pass-pipeline='builtin.module(func.func(ampc-buffer-planning),ampc-convert-tg-to-rt)' | FileCheck %s --check-prefix=PLAIN

// MPI progress while a gradient bucket is in flight: the lowering calls
// ampc_grad_allreduce_progress after every call between a bucket's start
// and its wait (bucket 0, dv's, starts before dw is computed, so the calls
// computing dw progress it), and after no start or wait.
// CHECK-LABEL: rt.program @two_params
// CHECK: rt.call "ampc_grad_allreduce_start"(#rt.context, [%{{.+}}], [#rt.dtype<f32>], array<i64: 3>, 1 : i32, 0 : i64, 1 : i32, 0 : i32)
// CHECK-NEXT: rt.view
// CHECK-NEXT: rt.call "ampc_sum_bwd"
// CHECK-NEXT: rt.call "ampc_grad_allreduce_progress"(#rt.context)
// CHECK: rt.call "ampc_mul_fwd"
// CHECK-NEXT: rt.call "ampc_grad_allreduce_progress"(#rt.context)
// CHECK: rt.call "ampc_sum_fwd"
// CHECK-NEXT: rt.call "ampc_grad_allreduce_progress"(#rt.context)
// CHECK-NEXT: rt.call "ampc_grad_allreduce_start"(#rt.context, [%{{.+}}], [#rt.dtype<f32>], array<i64: 5>, 1 : i32, 1 : i64, 1 : i32, 0 : i32)
// CHECK-NEXT: rt.call "ampc_grad_allreduce_wait"({{.+}}, 0 : i64)
// CHECK-NEXT: rt.call "ampc_grad_allreduce_wait"({{.+}}, 1 : i64)
// CHECK-NEXT: rt.call "ampc_sgd_update"
// CHECK-NOT: ampc_grad_allreduce_progress

// --delay-allreduce: nothing runs between the starts and the waits.
// DELAY-LABEL: rt.program @two_params
// DELAY-NOT: ampc_grad_allreduce_progress
// DELAY: rt.call "ampc_grad_allreduce_start"
// DELAY-NEXT: rt.call "ampc_grad_allreduce_wait"
// DELAY-NOT: ampc_grad_allreduce_progress

// Without the data-parallel pass: no all-reduce, no progress call.
// PLAIN-LABEL: rt.program @two_params
// PLAIN-NOT: ampc_grad_allreduce
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
