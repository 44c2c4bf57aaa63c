// RUN: ampc-opt %s --ampc-autodiff --split-input-file -verify-diagnostics

// Errors of the autodiff pass, and the verifier errors that stop malformed
// training ops before it runs (the errors of tg.minimize's expansion are in
// test/Transforms/OptimizerExpansion/errors.mlir).

// Differentiating a gradient: the path from the loss runs through the first
// backward graph, which starts at a tg.grad_seed (no gradient rule).
func.func @second_order(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tg.exp %x : tensor<3xf32>
  // expected-error@+1 {{'tg.grad_seed' op has no gradient rule, but the loss depends on it through a value being differentiated}}
  %l = tg.sum %e dims [0] : tensor<3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<3xf32>
  %l2 = tg.sum %g dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-note@+1 {{differentiated here}}
  %g2 = tg.grad %l2 wrt %x : tensor<f32>, tensor<3xf32>
  return %g2 : tensor<3xf32>
}

// -----

func.func @minimize_non_scalar(%w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>}) -> tensor<3xf32> {
  // expected-error@+1 {{'tg.minimize' loss must be a float scalar, got 'tensor<3xf32>'}}
  %a = tg.minimize %w wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<3xf32>, tensor<3xf32>
  return %a : tensor<3xf32>
}

// -----

func.func @grad_wrt_integer(%x: tensor<3xf32>, %i: tensor<3xi32>) {
  %l = tg.sum %x dims [0] : tensor<3xf32> -> tensor<f32>
  // expected-error@+1 {{'tg.grad' op operand #1 must be variadic of statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<3xi32>'}}
  %g = tg.grad %l wrt %i : tensor<f32>, tensor<3xi32>
  return
}
