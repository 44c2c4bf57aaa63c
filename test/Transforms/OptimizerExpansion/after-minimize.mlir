// RUN: ampc-opt %s --ampc-optimizer-expansion --split-input-file -verify-diagnostics | FileCheck %s

// Ops written after tg.minimize (the return statement's expressions) read
// the parameters the step read: the pass moves the minimize to the return
// before expanding it, so they run before the in-place update.

// CHECK-LABEL: func.func @after
// CHECK: %[[L:.*]] = tg.cross_entropy
// CHECK: %[[M:.*]] = tg.mul %arg2,
// CHECK: tg.grad_seed
// CHECK: %[[U:.*]] = tg.sgd_update params(%arg2
// CHECK: return %[[L]], %[[M]], %[[U]]
func.func @after(%x: tensor<4x3xf32> {tg.input = "x"}, %l: tensor<4xi32> {tg.input = "labels"},
                 %v: tensor<3x2xf32> {tg.param = "v", tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<3x2xf32> {tg.output = 1 : i64},
        tensor<3x2xf32> {tg.param_out = "v"}) {
  %0 = tg.matmul %x, %v : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %1 = tg.cross_entropy %0, %l : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  %2 = tg.minimize %1 wrt %v with "sgd" {lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<3x2xf32>
  %3 = tg.constant dense<2.000000e+00> : tensor<f32>
  %4 = tg.mul %v, %3 : tensor<3x2xf32>, tensor<f32> -> tensor<3x2xf32>
  return %1, %4, %2 : tensor<f32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A parameter the step updates cannot be returned as it is.
func.func @param(%x: tensor<4x3xf32> {tg.input = "x"}, %l: tensor<4xi32> {tg.input = "labels"},
                 %v: tensor<3x2xf32> {tg.param = "v", tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<3x2xf32> {tg.output = 1 : i64},
        tensor<3x2xf32> {tg.param_out = "v"}) {
  %0 = tg.matmul %x, %v : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %1 = tg.cross_entropy %0, %l : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  // expected-note @below {{the optimizer step is here}}
  %2 = tg.minimize %1 wrt %v with "sgd" {lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<3x2xf32>
  // expected-error @below {{returned value #1 is parameter 'v', which this graph's optimizer updates in place; return an expression of it (the value the step read) or take the updated value from --params-out}}
  return %1, %v, %2 : tensor<f32>, tensor<3x2xf32>, tensor<3x2xf32>
}
