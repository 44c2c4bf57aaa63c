// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s

// Backward graphs of the elementwise ops: broadcast operands get their
// gradient summed over the broadcast dims (sum keepdim + reshape), mixed
// types are cast back to each operand's type, and the rules follow
// PyTorch's autograd formulas.

// CHECK-LABEL: func.func @add_sub_broadcast(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x3xf32>, %[[B:[a-z0-9]+]]: tensor<3xf32>, %[[C:[a-z0-9]+]]: tensor<4x1xf32>
// CHECK: %[[SEED:.+]] = tg.grad_seed
// CHECK: %[[R:.+]] = tg.reshape %[[SEED]] shape [1, 1] {tg.role = "grad"} : tensor<f32> -> tensor<1x1xf32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %[[R]] shape [4, 3] {tg.role = "grad"} : tensor<1x1xf32> -> tensor<4x3xf32>
// CHECK: %[[SC:.+]] = tg.sum %[[DY]] dims [1] keepdim {tg.role = "grad"} : tensor<4x3xf32> -> tensor<4x1xf32>
// CHECK: %[[DC:.+]] = tg.neg %[[SC]] {tg.role = "grad"} : tensor<4x1xf32>
// CHECK: %[[SB:.+]] = tg.sum %[[DY]] dims [0] keepdim {tg.role = "grad"} : tensor<4x3xf32> -> tensor<1x3xf32>
// CHECK: %[[DB:.+]] = tg.reshape %[[SB]] shape [3] {tg.role = "grad"} : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: return %[[DY]], %[[DB]], %[[DC]]
func.func @add_sub_broadcast(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<4x1xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<4x1xf32>) {
  %t = tg.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %y = tg.sub %t, %c : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  %l = tg.sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g:3 = tg.grad %l wrt %a, %b, %c : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x1xf32>
  return %g#0, %g#1, %g#2 : tensor<4x3xf32>, tensor<3xf32>, tensor<4x1xf32>
}

// -----

// y = (a * b) / b with an f16 b: d(div) rhs = -dy * ((m / b) / b); the two
// gradients of b are reduced, cast to f16 and accumulated with tg.add.
// CHECK-LABEL: func.func @mul_div_mixed(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x3xf32>, %[[B:[a-z0-9]+]]: tensor<3xf16>
// CHECK: %[[M:.+]] = tg.mul %[[A]], %[[B]]
// CHECK: %[[DY:.+]] = tg.broadcast_to
// CHECK: %[[DM:.+]] = tg.div %[[DY]], %[[B]] {tg.role = "grad"} : tensor<4x3xf32>, tensor<3xf16> -> tensor<4x3xf32>
// CHECK: %[[Q1:.+]] = tg.div %[[M]], %[[B]]
// CHECK: %[[Q2:.+]] = tg.div %[[Q1]], %[[B]]
// CHECK: %[[P:.+]] = tg.mul %[[DY]], %[[Q2]]
// CHECK: %[[N:.+]] = tg.neg %[[P]]
// CHECK: %[[S1:.+]] = tg.sum %[[N]] dims [0] keepdim
// CHECK: %[[R1:.+]] = tg.reshape %[[S1]] shape [3]
// CHECK: %[[DB1:.+]] = tg.cast %[[R1]] {tg.role = "grad"} : tensor<3xf32> to tensor<3xf16>
// CHECK: %[[DA:.+]] = tg.mul %[[DM]], %[[B]] {tg.role = "grad"} : tensor<4x3xf32>, tensor<3xf16> -> tensor<4x3xf32>
// CHECK: %[[P2:.+]] = tg.mul %[[DM]], %[[A]]
// CHECK: %[[S2:.+]] = tg.sum %[[P2]] dims [0] keepdim
// CHECK: %[[R2:.+]] = tg.reshape %[[S2]] shape [3]
// CHECK: %[[DB2:.+]] = tg.cast %[[R2]] {tg.role = "grad"} : tensor<3xf32> to tensor<3xf16>
// CHECK: %[[DB:.+]] = tg.add %[[DB1]], %[[DB2]] {tg.role = "grad"} : tensor<3xf16>, tensor<3xf16> -> tensor<3xf16>
// CHECK: return %[[DA]], %[[DB]] : tensor<4x3xf32>, tensor<3xf16>
func.func @mul_div_mixed(%a: tensor<4x3xf32>, %b: tensor<3xf16>) -> (tensor<4x3xf32>, tensor<3xf16>) {
  %m = tg.mul %a, %b : tensor<4x3xf32>, tensor<3xf16> -> tensor<4x3xf32>
  %y = tg.div %m, %b : tensor<4x3xf32>, tensor<3xf16> -> tensor<4x3xf32>
  %l = tg.sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<4x3xf32>, tensor<3xf16>
  return %g#0, %g#1 : tensor<4x3xf32>, tensor<3xf16>
}

// -----

// maximum, minimum and pow use their backward ops, which reduce over
// broadcast dims themselves.
// CHECK-LABEL: func.func @maximum_minimum_pow(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x3xf32>, %[[B:[a-z0-9]+]]: tensor<3xf32>
// CHECK: %[[X:.+]] = tg.maximum %[[A]], %[[B]]
// CHECK: %[[N:.+]] = tg.minimum %[[X]], %[[B]]
// CHECK: %[[DY:.+]] = tg.broadcast_to
// CHECK: %[[DN:.+]], %[[DB1:.+]] = tg.pow_grad %[[DY]], %[[N]], %[[B]] {tg.role = "grad"} : tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>
// CHECK: %[[DX:.+]], %[[DB2:.+]] = tg.minimum_grad %[[DN]], %[[X]], %[[B]]
// CHECK: %[[ACC:.+]] = tg.add %[[DB1]], %[[DB2]] {tg.role = "grad"} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: %[[DA:.+]], %[[DB3:.+]] = tg.maximum_grad %[[DX]], %[[A]], %[[B]]
// CHECK: %[[DB:.+]] = tg.add %[[ACC]], %[[DB3]]
// CHECK: return %[[DA]], %[[DB]]
func.func @maximum_minimum_pow(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>) {
  %x = tg.maximum %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %n = tg.minimum %x, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %y = tg.pow %n, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
  return %g#0, %g#1 : tensor<4x3xf32>, tensor<3xf32>
}

// -----

// Every unary op in one chain, differentiated in reverse order.
// CHECK-LABEL: func.func @unary_chain(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<5xf32>
// CHECK: %[[NEG:.+]] = tg.neg %[[X]]
// CHECK: %[[ABS:.+]] = tg.abs %[[NEG]]
// CHECK: %[[EXP:.+]] = tg.exp %[[ABS]]
// CHECK: %[[LOG:.+]] = tg.log %[[EXP]]
// CHECK: %[[SQRT:.+]] = tg.sqrt %[[LOG]]
// CHECK: %[[RSQRT:.+]] = tg.rsqrt %[[SQRT]]
// CHECK: %[[RELU:.+]] = tg.relu %[[RSQRT]]
// CHECK: %[[SILU:.+]] = tg.silu %[[RELU]]
// CHECK: %[[SIG:.+]] = tg.sigmoid %[[SILU]]
// CHECK: %[[TANH:.+]] = tg.tanh %[[SIG]]
// CHECK: %[[DY:.+]] = tg.broadcast_to
// gelu
// CHECK: %[[D10:.+]] = tg.gelu_grad %[[DY]], %[[TANH]] approximate "tanh" {tg.role = "grad"} : tensor<5xf32>, tensor<5xf32>
// tanh: dy * (1 - y * y)
// CHECK: %[[SQ:.+]] = tg.mul %[[TANH]], %[[TANH]]
// CHECK: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[OM:.+]] = tg.sub %[[ONE]], %[[SQ]] {tg.role = "grad"} : tensor<f32>, tensor<5xf32> -> tensor<5xf32>
// CHECK: %[[D9:.+]] = tg.mul %[[D10]], %[[OM]]
// sigmoid: dy * (1 - y) * y
// CHECK: %[[ONE2:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[OM2:.+]] = tg.sub %[[ONE2]], %[[SIG]]
// CHECK: %[[T:.+]] = tg.mul %[[D9]], %[[OM2]]
// CHECK: %[[D8:.+]] = tg.mul %[[T]], %[[SIG]]
// CHECK: %[[D7:.+]] = tg.silu_grad %[[D8]], %[[RELU]] {tg.role = "grad"} : tensor<5xf32>, tensor<5xf32>
// CHECK: %[[D6:.+]] = tg.relu_grad %[[D7]], %[[RSQRT]] {tg.role = "grad"} : tensor<5xf32>, tensor<5xf32>
// rsqrt: dy * y^3 * -0.5
// CHECK: %[[Y2:.+]] = tg.mul %[[RSQRT]], %[[RSQRT]]
// CHECK: %[[Y3:.+]] = tg.mul %[[Y2]], %[[RSQRT]]
// CHECK: %[[T2:.+]] = tg.mul %[[D6]], %[[Y3]]
// CHECK: %[[HALF:.+]] = tg.constant dense<-5.000000e-01> : tensor<f32>
// CHECK: %[[D5:.+]] = tg.mul %[[T2]], %[[HALF]]
// sqrt: dy / (2 * y)
// CHECK: %[[TWO:.+]] = tg.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[TY:.+]] = tg.mul %[[SQRT]], %[[TWO]]
// CHECK: %[[D4:.+]] = tg.div %[[D5]], %[[TY]]
// log: dy / x
// CHECK: %[[D3:.+]] = tg.div %[[D4]], %[[EXP]]
// exp: dy * y
// CHECK: %[[D2:.+]] = tg.mul %[[D3]], %[[EXP]]
// CHECK: %[[D1:.+]] = tg.abs_grad %[[D2]], %[[NEG]] {tg.role = "grad"} : tensor<5xf32>, tensor<5xf32>
// CHECK: %[[D0:.+]] = tg.neg %[[D1]]
// CHECK: return %[[D0]]
func.func @unary_chain(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = tg.neg %x : tensor<5xf32>
  %1 = tg.abs %0 : tensor<5xf32>
  %2 = tg.exp %1 : tensor<5xf32>
  %3 = tg.log %2 : tensor<5xf32>
  %4 = tg.sqrt %3 : tensor<5xf32>
  %5 = tg.rsqrt %4 : tensor<5xf32>
  %6 = tg.relu %5 : tensor<5xf32>
  %7 = tg.silu %6 : tensor<5xf32>
  %8 = tg.sigmoid %7 : tensor<5xf32>
  %9 = tg.tanh %8 : tensor<5xf32>
  %10 = tg.gelu %9 approximate "tanh" : tensor<5xf32>
  %l = tg.sum %10 dims [0] : tensor<5xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<5xf32>
  return %g : tensor<5xf32>
}

// -----

// The gradient of a cast is cast back to the source type; the backward graph
// runs at the forward (f16) types.
// CHECK-LABEL: func.func @cast(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<5xf32>
// CHECK: %[[H:.+]] = tg.cast %[[X]] : tensor<5xf32> to tensor<5xf16>
// CHECK: %[[E:.+]] = tg.exp %[[H]] : tensor<5xf16>
// CHECK: %[[SEED:.+]] = tg.grad_seed %{{.+}} : tensor<f16>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [5] {tg.role = "grad"} : tensor<1xf16> -> tensor<5xf16>
// CHECK: %[[DE:.+]] = tg.mul %[[DY]], %[[E]] {tg.role = "grad"} : tensor<5xf16>, tensor<5xf16> -> tensor<5xf16>
// CHECK: %[[DX:.+]] = tg.cast %[[DE]] {tg.role = "grad"} : tensor<5xf16> to tensor<5xf32>
// CHECK: return %[[DX]] : tensor<5xf32>
func.func @cast(%x: tensor<5xf32>) -> tensor<5xf32> {
  %h = tg.cast %x : tensor<5xf32> to tensor<5xf16>
  %e = tg.exp %h : tensor<5xf16>
  %l = tg.sum %e dims [0] : tensor<5xf16> -> tensor<f16>
  %g = tg.grad %l wrt %x : tensor<f16>, tensor<5xf32>
  return %g : tensor<5xf32>
}

// -----

// The erf form of gelu keeps its approximate attribute.
// CHECK-LABEL: func.func @gelu_erf(
// CHECK: tg.gelu_grad %{{.+}}, %{{.+}} approximate "none"
func.func @gelu_erf(%x: tensor<5xf32>) -> tensor<5xf32> {
  %y = tg.gelu %x approximate "none" : tensor<5xf32>
  %l = tg.sum %y dims [0] : tensor<5xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<5xf32>
  return %g : tensor<5xf32>
}
