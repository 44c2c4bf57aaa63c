// RUN: ampc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(ampc-buffer-planning),ampc-convert-tg-to-rt)' | FileCheck %s

// A reshape that keeps the element type is a view: no call, the output is
// the operand's buffer. Constants get their own buffer.
// CHECK-LABEL: rt.program @view
// CHECK: rt.step {
// CHECK: %[[R:[a-z0-9_]+]] = rt.view %arena[0]
// CHECK-NEXT: rt.call "ampc_relu_fwd"
// CHECK-NOT: ampc_reshape_fwd
// CHECK: %[[C:[a-z0-9_]+]] = rt.constant dense<2.000000e+00> : tensor<8x8xf32>
// CHECK: rt.call "ampc_mul_fwd"(#rt.context, %[[M:[a-z0-9_]+]], #rt.dtype<f32>, array<i64: 8, 8>, 2 : i32, %[[R]], #rt.dtype<f32>, array<i64: 8, 8>, 2 : i32, %[[C]],
// CHECK: rt.output 0, %[[R]] : tensor<8x8xf32>
// CHECK: rt.output 1, %[[M]] : tensor<8x8xf32>
func.func @view(%x: tensor<64xf32> {tg.input = "x"}) -> (tensor<8x8xf32> {tg.output = 0 : i64}, tensor<8x8xf32> {tg.output = 1 : i64}) {
  %a = tg.relu %x : tensor<64xf32>
  %r = tg.reshape %a shape [8, 8] : tensor<64xf32> -> tensor<8x8xf32>
  %c = tg.constant dense<2.0> : tensor<8x8xf32>
  %m = tg.mul %r, %c : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %r, %m : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// SGD with momentum updates its operands in place; a new parameter value
// computed elsewhere is copied into the parameter's slot.
// CHECK-LABEL: rt.program @sgd
// CHECK: rt.call "ampc_sgd_update"(#rt.context, [%w], [#rt.dtype<f32>], [%[[G:[a-z0-9_]+]]], [#rt.dtype<f32>], [%w.momentum_buffer], array<i64: 4>, 1 : i32, 1.000000e-01 : f64, 9.000000e-01 : f64, 0.000000e+00 : f64, 0 : i32, 0.000000e+00 : f64, #rt.null, #rt.dtype<f32>, #rt.null)
// CHECK-NOT: ampc_memcpy
// CHECK: }
func.func @sgd(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<zeros>},
               %m: tensor<4xf32> {tg.state = "w.momentum_buffer", tg.init = #tg.init<zeros>},
               %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<4xf32> {tg.param_out = "w"}, tensor<4xf32> {tg.state_out = "w.momentum_buffer"}) {
  %n = tg.neg %g : tensor<4xf32>
  %u:2 = tg.sgd_update params(%w : tensor<4xf32>) grads(%n : tensor<4xf32>) momentum_buffers(%m : tensor<4xf32>) {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %u#0, %u#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: rt.program @copy
// CHECK: %[[N:[a-z0-9_]+]] = rt.view %arena[0]
// CHECK: rt.call "ampc_memcpy"(#rt.context, %w, %[[N]], 16 : ui64, #rt.enum<"AMPC_MEMCPY_DEVICE_TO_DEVICE", 2>)
func.func @copy(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<ones>})
    -> (tensor<4xf32> {tg.param_out = "w"}) {
  %n = tg.neg %w : tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// A convolution gradient's results go to the call only where an op reads
// them: the input gradient of a step's own input (here unused) is passed as
// null, and the kernel skips that pass; the weight gradient is computed.
// CHECK-LABEL: rt.program @conv_grad_unused_dx
// CHECK: rt.call "ampc_conv2d_bwd"(#rt.context, #rt.null, #rt.dtype<f32>, #rt.null, 0 : i32, %[[DW:[a-z0-9_]+]], #rt.dtype<f32>, array<i64: 4, 3, 3, 3>, 4 : i32, #rt.null, #rt.dtype<f32>, #rt.null, 0 : i32, %dy, #rt.dtype<f32>, array<i64: 2, 4, 8, 8>, 4 : i32, %x,
// CHECK: rt.output 0, %[[DW]] : tensor<4x3x3x3xf32>
func.func @conv_grad_unused_dx(%dy: tensor<2x4x8x8xf32> {tg.input = "dy"}, %x: tensor<2x3x8x8xf32> {tg.input = "x"}, %w: tensor<4x3x3x3xf32> {tg.input = "w"}) -> (tensor<4x3x3x3xf32> {tg.output = 0 : i64}) {
  %dx, %dw = tg.conv2d_grad %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  return %dw : tensor<4x3x3x3xf32>
}

// -----

// Both read: both passed.
// CHECK-LABEL: rt.program @conv_grad_both
// CHECK: rt.call "ampc_conv2d_bwd"(#rt.context, %[[DX:[a-z0-9_]+]], #rt.dtype<f32>, array<i64: 2, 3, 8, 8>, 4 : i32, %[[DW:[a-z0-9_]+]], #rt.dtype<f32>, array<i64: 4, 3, 3, 3>, 4 : i32, #rt.null,
func.func @conv_grad_both(%dy: tensor<2x4x8x8xf32> {tg.input = "dy"}, %x: tensor<2x3x8x8xf32> {tg.input = "x"}, %w: tensor<4x3x3x3xf32> {tg.input = "w"}) -> (tensor<2x3x8x8xf32> {tg.output = 0 : i64}, tensor<4x3x3x3xf32> {tg.output = 1 : i64}) {
  %dx, %dw = tg.conv2d_grad %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  return %dx, %dw : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}
