// RUN: ampc-opt %s --ampc-data-parallel="first-bucket-mb=0.00002 bucket-cap-mb=0.00003" --split-input-file -verify-diagnostics
// RUN: not ampc-opt %s --ampc-data-parallel="predivide=sometimes" --split-input-file 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: ampc-data-parallel: predivide must be auto, always or never, got 'sometimes'

// dv's bucket starts right after dv; an op that is not a consumer reads dv
// after that, before the wait: the value would be in flight.
func.func @in_flight(%x: tensor<4x3xf32> {tg.input = "x"}, %x2: tensor<4x5xf32> {tg.input = "x2"}, %v: tensor<3xf32> {tg.param = "v", tg.init = #tg.init<zeros>}, %w: tensor<5xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "v"}, tensor<5xf32> {tg.param_out = "w"}, tensor<3xf32> {tg.output = 1 : i64}) {
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
  // expected-error @+1 {{'tg.relu' op reads a gradient while its all-reduce is in flight (bucket 0)}}
  %r = tg.relu %dv : tensor<3xf32> -> tensor<3xf32>
  %new:2 = tg.sgd_update params(%v, %w : tensor<3xf32>, tensor<5xf32>) grads(%dv, %dw : tensor<3xf32>, tensor<5xf32>) {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
  return %l, %new#0, %new#1, %r : tensor<f32>, tensor<3xf32>, tensor<5xf32>, tensor<3xf32>
}

// -----

// The ops' verifiers.
func.func @bad_wait(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %s = tg.grad_allreduce_start %a {bucket = 0 : i64} : tensor<3xf32>
  // expected-error @+1 {{'tg.grad_allreduce_wait' op waits for bucket 1, but its operands were started as bucket 0}}
  %w = tg.grad_allreduce_wait %s {bucket = 1 : i64} : tensor<3xf32>
  return %w : tensor<3xf32>
}

// -----

func.func @not_started(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'tg.grad_allreduce_wait' op operand #0 is not a result of 'tg.grad_allreduce_start'}}
  %w = tg.grad_allreduce_wait %a {bucket = 0 : i64} : tensor<3xf32>
  return %w : tensor<3xf32>
}

// -----

func.func @part_of_bucket(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %s:2 = tg.grad_allreduce_start %a, %b {bucket = 0 : i64} : tensor<3xf32>, tensor<3xf32>
  // expected-error @+1 {{'tg.grad_allreduce_wait' op takes 1 gradients, but bucket 0 started 2}}
  %w = tg.grad_allreduce_wait %s#0 {bucket = 0 : i64} : tensor<3xf32>
  return %w : tensor<3xf32>
}

// -----

func.func @negative_bucket(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'tg.grad_allreduce_start' op bucket must be in [0, 2^31), got -1}}
  %s = tg.grad_allreduce_start %a {bucket = -1 : i64} : tensor<3xf32>
  return %s : tensor<3xf32>
}
