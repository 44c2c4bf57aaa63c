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
