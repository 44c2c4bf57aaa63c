// RUN: ampc-opt %s -split-input-file -verify-diagnostics

func.func @no_broadcast(%a: tensor<4x3xf32>, %b: tensor<2xf32>) -> tensor<4x3xi1> {
  // expected-error @+2 {{'tg.less' shapes 'tensor<4x3xf32>' and 'tensor<2xf32>' do not broadcast (dim 1 of the result)}}
  // expected-error @+1 {{'tg.less' op failed to infer returned types}}
  %0 = tg.less %a, %b : tensor<4x3xf32>, tensor<2xf32> -> tensor<4x3xi1>
  return %0 : tensor<4x3xi1>
}

// -----

func.func @float_result(%a: tensor<4xf32>, %b: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tg.equal %a, %b : tensor<4xf32>, tensor<4xi32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @argmax_dim(%a: tensor<4x3xf32>) -> tensor<4xi32> {
  // expected-error @+2 {{'tg.argmax' dim 2 is out of range for 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'tg.argmax' op failed to infer returned types}}
  %0 = tg.argmax %a dim 2 : tensor<4x3xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @where_condition(%c: tensor<5xi1>, %a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{'tg.where' the condition 'tensor<5xi1>' does not broadcast with shape [4, 3] (dim 1 of the result)}}
  // expected-error @+1 {{'tg.where' op failed to infer returned types}}
  %0 = tg.where %c, %a, %a : tensor<5xi1>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @bce_shapes(%p: tensor<4x3xf32>, %y: tensor<4x1xf32>) -> tensor<f32> {
  // expected-error @+2 {{'tg.binary_cross_entropy' operands must have the same shape, got 'tensor<4x3xf32>' and 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'tg.binary_cross_entropy' op failed to infer returned types}}
  %0 = tg.binary_cross_entropy %p, %y : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
