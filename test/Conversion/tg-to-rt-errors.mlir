// RUN: ampc-opt %s --split-input-file --ampc-convert-tg-to-rt -verify-diagnostics

// expected-error @+1 {{not buffer-planned (run ampc-buffer-planning)}}
func.func @unplanned(%x: tensor<4xf32> {tg.input = "x"}) -> (tensor<4xf32> {tg.output = 0 : i64}) {
  %a = tg.relu %x : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// An op without a runtime lowering (tg.grad is expanded by autodiff before
// planning) is an error located at it.
func.func @nolowering(%x: tensor<4xf32> {tg.input = "x"}) -> (tensor<4xf32> {tg.output = 0 : i64}) attributes {tg.arena_size = 512 : i64, tg.intermediate_bytes = 512 : i64} {
  %l = tg.sum %x dims [0] {tg.offsets = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  // expected-error @+1 {{failed to legalize operation 'tg.grad'}}
  %g = tg.grad %l wrt %x {tg.offsets = array<i64: 256>} : tensor<f32>, tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// A result that is neither an output nor a parameter or state update.
func.func @unnamed(%x: tensor<4xf32> {tg.input = "x"}) -> tensor<4xf32> attributes {tg.arena_size = 256 : i64, tg.intermediate_bytes = 256 : i64} {
  %a = tg.relu %x {tg.offsets = array<i64: 0>} : tensor<4xf32>
  // expected-error @+1 {{result #0 has no tg.output, tg.param_out, tg.state_out or tg.buffer_out}}
  return %a : tensor<4xf32>
}
