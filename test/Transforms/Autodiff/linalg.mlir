// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s

// Backward graphs of matmul (batched, broadcast, 1-D operands), linear and
// conv2d: which ops, which shapes.

// A batched lhs with a shared 2-D rhs: da = dy @ b^T (batched); db folds the
// batch into rows, one GEMM.
// CHECK-LABEL: func.func @matmul_shared_rhs(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8x4x3xf32>, %[[B:[a-z0-9]+]]: tensor<3x5xf32>
// CHECK: %[[Y:.+]] = tg.matmul %[[A]], %[[B]]
// CHECK: %[[L:.+]] = tg.sum %[[Y]]
// CHECK: %[[SEED:.+]] = tg.grad_seed %[[L]] {tg.role = "grad"} : tensor<f32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [8, 4, 5]
// CHECK: %[[BT:.+]] = tg.transpose %[[B]] perm [1, 0] {tg.role = "grad"} : tensor<3x5xf32> -> tensor<5x3xf32>
// CHECK: %[[DA:.+]] = tg.matmul %[[DY]], %[[BT]] {tg.role = "grad"} : tensor<8x4x5xf32>, tensor<5x3xf32> -> tensor<8x4x3xf32>
// CHECK: %[[AF:.+]] = tg.reshape %[[A]] shape [32, 3]
// CHECK: %[[DYF:.+]] = tg.reshape %[[DY]] shape [32, 5]
// CHECK: %[[AFT:.+]] = tg.transpose %[[AF]] perm [1, 0] {tg.role = "grad"} : tensor<32x3xf32> -> tensor<3x32xf32>
// CHECK: %[[DB:.+]] = tg.matmul %[[AFT]], %[[DYF]] {tg.role = "grad"} : tensor<3x32xf32>, tensor<32x5xf32> -> tensor<3x5xf32>
// CHECK: return %[[DA]], %[[DB]]
func.func @matmul_shared_rhs(%a: tensor<8x4x3xf32>, %b: tensor<3x5xf32>) -> (tensor<8x4x3xf32>, tensor<3x5xf32>) {
  %y = tg.matmul %a, %b : tensor<8x4x3xf32>, tensor<3x5xf32> -> tensor<8x4x5xf32>
  %l = tg.sum %y dims [0, 1, 2] : tensor<8x4x5xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<8x4x3xf32>, tensor<3x5xf32>
  return %g#0, %g#1 : tensor<8x4x3xf32>, tensor<3x5xf32>
}

// -----

// Broadcast batch dims: each gradient is summed over the batch dims its
// operand was broadcast along.
// CHECK-LABEL: func.func @matmul_broadcast_batch(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x1x4x3xf32>, %[[B:[a-z0-9]+]]: tensor<5x3x6xf32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [2, 5, 4, 6]
// CHECK: %[[BT:.+]] = tg.transpose %[[B]] perm [0, 2, 1] {tg.role = "grad"} : tensor<5x3x6xf32> -> tensor<5x6x3xf32>
// CHECK: %[[DA:.+]] = tg.matmul %[[DY]], %[[BT]] {tg.role = "grad"} : tensor<2x5x4x6xf32>, tensor<5x6x3xf32> -> tensor<2x5x4x3xf32>
// CHECK: %[[DAS:.+]] = tg.sum %[[DA]] dims [1] keepdim {tg.role = "grad"} : tensor<2x5x4x3xf32> -> tensor<2x1x4x3xf32>
// CHECK: %[[AT:.+]] = tg.transpose %[[A]] perm [0, 1, 3, 2] {tg.role = "grad"} : tensor<2x1x4x3xf32> -> tensor<2x1x3x4xf32>
// CHECK: %[[DB:.+]] = tg.matmul %[[AT]], %[[DY]] {tg.role = "grad"} : tensor<2x1x3x4xf32>, tensor<2x5x4x6xf32> -> tensor<2x5x3x6xf32>
// CHECK: %[[DBS:.+]] = tg.sum %[[DB]] dims [0] keepdim {tg.role = "grad"} : tensor<2x5x3x6xf32> -> tensor<1x5x3x6xf32>
// CHECK: %[[DBR:.+]] = tg.reshape %[[DBS]] shape [5, 3, 6] {tg.role = "grad"} : tensor<1x5x3x6xf32> -> tensor<5x3x6xf32>
// CHECK: return %[[DAS]], %[[DBR]]
func.func @matmul_broadcast_batch(%a: tensor<2x1x4x3xf32>, %b: tensor<5x3x6xf32>) -> (tensor<2x1x4x3xf32>, tensor<5x3x6xf32>) {
  %y = tg.matmul %a, %b : tensor<2x1x4x3xf32>, tensor<5x3x6xf32> -> tensor<2x5x4x6xf32>
  %l = tg.sum %y dims [0, 1, 2, 3] : tensor<2x5x4x6xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<2x1x4x3xf32>, tensor<5x3x6xf32>
  return %g#0, %g#1 : tensor<2x1x4x3xf32>, tensor<5x3x6xf32>
}

// -----

// A 1-D lhs is a [1, k] row; dy gets the dropped dim back.
// CHECK-LABEL: func.func @matmul_vector_lhs(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3xf32>, %[[B:[a-z0-9]+]]: tensor<2x3x5xf32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [2, 5]
// CHECK: %[[DY2:.+]] = tg.reshape %[[DY]] shape [2, 1, 5] {tg.role = "grad"} : tensor<2x5xf32> -> tensor<2x1x5xf32>
// CHECK: %[[BT:.+]] = tg.transpose %[[B]] perm [0, 2, 1]
// CHECK: %[[DA:.+]] = tg.matmul %[[DY2]], %[[BT]] {tg.role = "grad"} : tensor<2x1x5xf32>, tensor<2x5x3xf32> -> tensor<2x1x3xf32>
// CHECK: %[[DAS:.+]] = tg.sum %[[DA]] dims [0] keepdim {tg.role = "grad"} : tensor<2x1x3xf32> -> tensor<1x1x3xf32>
// CHECK: %[[DA2:.+]] = tg.reshape %[[DAS]] shape [1, 3]
// CHECK: %[[DA1:.+]] = tg.reshape %[[DA2]] shape [3] {tg.role = "grad"} : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: %[[A2:.+]] = tg.reshape %[[A]] shape [1, 3]
// CHECK: %[[A2T:.+]] = tg.transpose %[[A2]] perm [1, 0] {tg.role = "grad"} : tensor<1x3xf32> -> tensor<3x1xf32>
// CHECK: %[[DB:.+]] = tg.matmul %[[A2T]], %[[DY2]] {tg.role = "grad"} : tensor<3x1xf32>, tensor<2x1x5xf32> -> tensor<2x3x5xf32>
// CHECK: return %[[DA1]], %[[DB]]
func.func @matmul_vector_lhs(%a: tensor<3xf32>, %b: tensor<2x3x5xf32>) -> (tensor<3xf32>, tensor<2x3x5xf32>) {
  %y = tg.matmul %a, %b : tensor<3xf32>, tensor<2x3x5xf32> -> tensor<2x5xf32>
  %l = tg.sum %y dims [0, 1] : tensor<2x5xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<3xf32>, tensor<2x3x5xf32>
  return %g#0, %g#1 : tensor<3xf32>, tensor<2x3x5xf32>
}

// -----

// A dot product (both 1-D): the scalar dy becomes [1, 1].
// CHECK-LABEL: func.func @matmul_dot(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3xf32>, %[[B:[a-z0-9]+]]: tensor<3xf32>
// CHECK: %[[Y:.+]] = tg.matmul %[[A]], %[[B]] : tensor<3xf32>, tensor<3xf32> -> tensor<f32>
// CHECK: %[[SEED:.+]] = tg.grad_seed %[[Y]]
// CHECK: %[[DY:.+]] = tg.reshape %[[SEED]] shape [1, 1] {tg.role = "grad"} : tensor<f32> -> tensor<1x1xf32>
// CHECK: %[[BT:.+]] = tg.transpose %{{.+}} perm [1, 0] {tg.role = "grad"} : tensor<3x1xf32> -> tensor<1x3xf32>
// CHECK: %[[DA:.+]] = tg.matmul %[[DY]], %[[BT]] {tg.role = "grad"} : tensor<1x1xf32>, tensor<1x3xf32> -> tensor<1x3xf32>
// CHECK: %[[DA1:.+]] = tg.reshape %[[DA]] shape [3]
// CHECK: %[[DB:.+]] = tg.matmul %{{.+}}, %[[DY]] {tg.role = "grad"} : tensor<3x1xf32>, tensor<1x1xf32> -> tensor<3x1xf32>
// CHECK: %[[DB1:.+]] = tg.reshape %[[DB]] shape [3]
// CHECK: return %[[DA1]], %[[DB1]]
func.func @matmul_dot(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %y = tg.matmul %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<f32>
  %g:2 = tg.grad %y wrt %a, %b : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  return %g#0, %g#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Mixed precision operands: the GEMMs compute in the promoted type and each
// gradient is cast back to its operand's type.
// CHECK-LABEL: func.func @matmul_mixed(
// CHECK: %[[DA:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<4x5xf32>, tensor<5x3xf32> -> tensor<4x3xf32>
// CHECK: %[[DAC:.+]] = tg.cast %[[DA]] {tg.role = "grad"} : tensor<4x3xf32> to tensor<4x3xf16>
// CHECK: %[[DB:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<3x4xf16>, tensor<4x5xf32> -> tensor<3x5xf32>
// CHECK: return %[[DAC]], %[[DB]] : tensor<4x3xf16>, tensor<3x5xf32>
func.func @matmul_mixed(%a: tensor<4x3xf16>, %b: tensor<3x5xf32>) -> (tensor<4x3xf16>, tensor<3x5xf32>) {
  %y = tg.matmul %a, %b : tensor<4x3xf16>, tensor<3x5xf32> -> tensor<4x5xf32>
  %l = tg.sum %y dims [0, 1] : tensor<4x5xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<4x3xf16>, tensor<3x5xf32>
  return %g#0, %g#1 : tensor<4x3xf16>, tensor<3x5xf32>
}

// -----

// linear: dx = dy @ w, dw = dy^T @ x over the folded leading dims, db = sum.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x16xf32>, %[[W:[a-z0-9]+]]: tensor<8x16xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [2, 4, 8]
// CHECK: %[[DX:.+]] = tg.matmul %[[DY]], %[[W]] {tg.role = "grad"} : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK: %[[DY2:.+]] = tg.reshape %[[DY]] shape [8, 8] {tg.role = "grad"} : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[X2:.+]] = tg.reshape %[[X]] shape [8, 16] {tg.role = "grad"} : tensor<2x4x16xf32> -> tensor<8x16xf32>
// CHECK: %[[DYT:.+]] = tg.transpose %[[DY2]] perm [1, 0]
// CHECK: %[[DW:.+]] = tg.matmul %[[DYT]], %[[X2]] {tg.role = "grad"} : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK: %[[DBS:.+]] = tg.sum %[[DY]] dims [0, 1] keepdim {tg.role = "grad"} : tensor<2x4x8xf32> -> tensor<1x1x8xf32>
// CHECK: %[[DB:.+]] = tg.reshape %[[DBS]] shape [8]
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @linear(%x: tensor<2x4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> (tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) {
  %y = tg.linear %x, %w, %b : tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %l = tg.sum %y dims [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
  %g:3 = tg.grad %l wrt %x, %w, %b : tensor<f32>, tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8xf32>
  return %g#0, %g#1, %g#2 : tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8xf32>
}

// -----

// Only the weight is wanted: no input gradient is built.
// CHECK-LABEL: func.func @linear_weight_only(
// CHECK-NOT: tg.matmul %{{.+}}, %arg1
// CHECK: %[[DW:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<3x4xf32>, tensor<4x16xf32> -> tensor<3x16xf32>
// CHECK-NEXT: tg.grad_of %[[DW]] wrt %arg1
// CHECK-NEXT: return %[[DW]]
func.func @linear_weight_only(%x: tensor<4x16xf32>, %w: tensor<3x16xf32>) -> tensor<3x16xf32> {
  %y = tg.linear %x, %w : tensor<4x16xf32>, tensor<3x16xf32> -> tensor<4x3xf32>
  %l = tg.sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %w : tensor<f32>, tensor<3x16xf32>
  return %g : tensor<3x16xf32>
}

// -----

// conv2d with stride, padding, dilation and groups: one tg.conv2d_grad with
// the forward attributes (input and weight), the bias gradient a sum.
// CHECK-LABEL: func.func @conv2d(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x9x9xf32>, %[[W:[a-z0-9]+]]: tensor<6x2x3x3xf32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [2, 6, 4, 4]
// CHECK: %[[DX:.+]], %[[DW:.+]] = tg.conv2d_grad %[[DY]], %[[X]], %[[W]] stride [2, 2] padding [1, 1] dilation [2, 2] groups 2 {tg.role = "grad"} : tensor<2x6x4x4xf32>, tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>
// CHECK: %[[DB:.+]] = tg.sum %[[DY]] dims [0, 2, 3] {tg.role = "grad"} : tensor<2x6x4x4xf32> -> tensor<6xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @conv2d(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) {
  %y = tg.conv2d %x, %w, %b stride [2, 2] padding [1, 1] dilation [2, 2] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<2x6x4x4xf32>
  %l = tg.sum %y dims [0, 1, 2, 3] : tensor<2x6x4x4xf32> -> tensor<f32>
  %g:3 = tg.grad %l wrt %x, %w, %b : tensor<f32>, tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>
  return %g#0, %g#1, %g#2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>
}
