// RUN: ampc-opt %s --split-input-file --verify-diagnostics

// A marker's gradient has the type of the value it is the gradient of.
func.func @mismatch(%g: tensor<3xf32>, %w: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'tg.grad_of' op failed to verify that all of {grad, wrt} have same type}}
  "tg.grad_of"(%g, %w) : (tensor<3xf32>, tensor<4xf32>) -> ()
  return %g : tensor<3xf32>
}

// -----

// Only float tensors have gradients.
func.func @integer(%g: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error@+1 {{'tg.grad_of' op operand #0 must be}}
  "tg.grad_of"(%g, %g) : (tensor<3xi32>, tensor<3xi32>) -> ()
  return %g : tensor<3xi32>
}
