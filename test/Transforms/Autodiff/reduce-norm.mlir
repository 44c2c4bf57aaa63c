// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s

// Backward graphs of reductions (sum, mean, max) and normalizations
// (softmax, log_softmax, layer_norm, rms_norm).

// sum: dy reshaped to the keepdim shape and broadcast back; mean: the same,
// divided by the count first; max: tg.max_grad with the forward result.
// Three uses of x accumulate.
// CHECK-LABEL: func.func @reductions(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x6xf32>
// CHECK: %[[S:.+]] = tg.sum %[[X]] dims [1] keepdim
// CHECK: %[[M:.+]] = tg.mean %[[X]] dims [0]
// CHECK: %[[MX:.+]] = tg.max %[[X]] dims [0, 1] : tensor<4x6xf32> -> tensor<f32>
// CHECK: %[[DMX:.+]] = tg.reshape %{{.+}} shape [] {tg.role = "grad"} : tensor<1x1xf32> -> tensor<f32>
// CHECK: %[[DS:.+]] = tg.sum %{{.+}} dims [1] keepdim {tg.role = "grad"} : tensor<4x6xf32> -> tensor<4x1xf32>
// CHECK: %[[DMS:.+]] = tg.sum %{{.+}} dims [0] keepdim {tg.role = "grad"} : tensor<4x6xf32> -> tensor<1x6xf32>
// CHECK: %[[DM:.+]] = tg.reshape %[[DMS]] shape [6]
// CHECK: %[[G1:.+]] = tg.max_grad %[[DMX]], %[[X]], %[[MX]] dims [0, 1] {tg.role = "grad"} : tensor<f32>, tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
// CHECK: %[[K:.+]] = tg.reshape %[[DM]] shape [1, 6] {tg.role = "grad"} : tensor<6xf32> -> tensor<1x6xf32>
// CHECK: %[[CNT:.+]] = tg.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[DIV:.+]] = tg.div %[[K]], %[[CNT]]
// CHECK: %[[G2:.+]] = tg.broadcast_to %[[DIV]] shape [4, 6] {tg.role = "grad"} : tensor<1x6xf32> -> tensor<4x6xf32>
// CHECK: %[[A1:.+]] = tg.add %[[G1]], %[[G2]]
// CHECK: %[[G3:.+]] = tg.broadcast_to %[[DS]] shape [4, 6] {tg.role = "grad"} : tensor<4x1xf32> -> tensor<4x6xf32>
// CHECK: %[[A2:.+]] = tg.add %[[A1]], %[[G3]]
// CHECK: return %[[A2]]
func.func @reductions(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %s = tg.sum %x dims [1] keepdim : tensor<4x6xf32> -> tensor<4x1xf32>
  %m = tg.mean %x dims [0] : tensor<4x6xf32> -> tensor<6xf32>
  %x2 = tg.max %x dims [0, 1] : tensor<4x6xf32> -> tensor<f32>
  %a = tg.add %s, %m : tensor<4x1xf32>, tensor<6xf32> -> tensor<4x6xf32>
  %b = tg.mul %a, %x2 : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %l = tg.sum %b dims [0, 1] : tensor<4x6xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

// A max over integers has no gradient to give: the loss does not depend on
// x through it, so only the float path is differentiated.
// CHECK-LABEL: func.func @max_int(
// CHECK-NOT: tg.max_grad
// CHECK: return
func.func @max_int(%i: tensor<4xi32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %m = tg.max %i dims [0] : tensor<4xi32> -> tensor<i32>
  %l = tg.sum %x dims [0] : tensor<4xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// softmax / log_softmax backward ops read the forward output; layer_norm and
// rms_norm backward ops return every operand's gradient at once (the f16
// bias gets its gradient cast back to f16).
// CHECK-LABEL: func.func @norms(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3x8xf32>, %[[W:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf16>, %[[V:[a-z0-9]+]]: tensor<8xf32>
// CHECK: %[[LN:.+]] = tg.layer_norm %[[X]], %[[W]], %[[B]]
// CHECK: %[[RN:.+]] = tg.rms_norm %[[LN]], %[[V]]
// CHECK: %[[SM:.+]] = tg.softmax %[[RN]] dim 2
// CHECK: %[[LSM:.+]] = tg.log_softmax %[[SM]] dim 1
// CHECK: %[[DY:.+]] = tg.broadcast_to
// CHECK: %[[D1:.+]] = tg.log_softmax_grad %[[DY]], %[[LSM]] dim 1 {tg.role = "grad"} : tensor<2x3x8xf32>, tensor<2x3x8xf32>
// CHECK: %[[D2:.+]] = tg.softmax_grad %[[D1]], %[[SM]] dim 2 {tg.role = "grad"} : tensor<2x3x8xf32>, tensor<2x3x8xf32>
// CHECK: %[[D3:.+]], %[[DV:.+]] = tg.rms_norm_grad %[[D2]], %[[LN]], %[[V]] eps 9.9999999999999995E-7 {tg.role = "grad"} : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>, tensor<8xf32>
// CHECK: %[[DX:.+]], %[[DW:.+]], %[[DB:.+]] = tg.layer_norm_grad %[[D3]], %[[X]], %[[W]] eps 1.000000e-05 {tg.role = "grad"} : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK: %[[DBH:.+]] = tg.cast %[[DB]] {tg.role = "grad"} : tensor<8xf32> to tensor<8xf16>
// CHECK: return %[[DX]], %[[DW]], %[[DBH]], %[[DV]]
func.func @norms(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf16>, %v: tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf32>) {
  %y = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf16> -> tensor<2x3x8xf32>
  %r = tg.rms_norm %y, %v eps 1.0e-06 : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %p = tg.softmax %r dim 2 : tensor<2x3x8xf32>
  %q = tg.log_softmax %p dim 1 : tensor<2x3x8xf32>
  %l = tg.sum %q dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  %g:4 = tg.grad %l wrt %x, %w, %b, %v : tensor<f32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf32>
  return %g#0, %g#1, %g#2, %g#3 : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf32>
}
