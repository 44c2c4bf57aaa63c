// RUN: ampc-opt %s --ampc-buffer-planning --split-input-file | FileCheck %s

// Values whose live ranges do not overlap share arena bytes: %a dies at
// %b's definition's user, so %c takes its offset; 4 x 256 bytes planned in
// 512.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: tg.arena_size = 512 : i64, tg.intermediate_bytes = 1024 : i64
// CHECK: tg.relu %{{.*}} {tg.offsets = array<i64: 0>}
// CHECK: tg.neg %{{.*}} {tg.offsets = array<i64: 256>}
// CHECK: tg.exp %{{.*}} {tg.offsets = array<i64: 0>}
// CHECK: tg.tanh %{{.*}} {tg.offsets = array<i64: 256>}
func.func @chain(%x: tensor<64xf32> {tg.input = "x"}) -> (tensor<64xf32> {tg.output = 0 : i64}) {
  %a = tg.relu %x : tensor<64xf32>
  %b = tg.neg %a : tensor<64xf32>
  %c = tg.exp %b : tensor<64xf32>
  %d = tg.tanh %c : tensor<64xf32>
  return %d : tensor<64xf32>
}

// -----

// Returned values live to the end of the step; an element-type-preserving
// reshape is a view of its operand.
// CHECK-LABEL: func.func @outputs
// CHECK-SAME: tg.arena_size = 512 : i64
// CHECK: tg.relu %{{.*}} {tg.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: tg.reshape %{{.*}} {tg.offsets = array<i64: [[A]]>}
// CHECK: tg.neg %{{.*}} {tg.offsets = array<i64: [[B:[0-9]+]]>}
func.func @outputs(%x: tensor<64xf32> {tg.input = "x"}) -> (tensor<8x8xf32> {tg.output = 0 : i64}, tensor<64xf32> {tg.output = 1 : i64}) {
  %a = tg.relu %x : tensor<64xf32>
  %r = tg.reshape %a shape [8, 8] : tensor<64xf32> -> tensor<8x8xf32>
  %b = tg.neg %x : tensor<64xf32>
  return %r, %b : tensor<8x8xf32>, tensor<64xf32>
}

// -----

// Optimizer updates are in place: the new parameter and momentum live in
// their arguments' buffers (-1: not in the arena).
// CHECK-LABEL: func.func @sgd
// CHECK: tg.sgd_update {{.*}}tg.offsets = array<i64: -1, -1>
func.func @sgd(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<zeros>},
               %m: tensor<4xf32> {tg.state = "w.momentum_buffer", tg.init = #tg.init<zeros>},
               %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<4xf32> {tg.param_out = "w"}, tensor<4xf32> {tg.state_out = "w.momentum_buffer"}) {
  %n = tg.neg %g : tensor<4xf32>
  %u:2 = tg.sgd_update params(%w : tensor<4xf32>) grads(%n : tensor<4xf32>) momentum_buffers(%m : tensor<4xf32>) {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %u#0, %u#1 : tensor<4xf32>, tensor<4xf32>
}
