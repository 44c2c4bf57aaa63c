// RUN: ampc-opt %s --ampc-fold-transposes --split-input-file | FileCheck %s

// k^T of the last two dims: the rhs's trans flag; the copy is gone.
// CHECK-LABEL: func.func @last_two
// CHECK-NOT: tg.transpose
// CHECK: %[[P:.+]] = tg.permuted_matmul %arg0, %arg1 lhs_perm [0, 1] rhs_perm [1, 0] result_perm [0, 1] : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
// CHECK: return %[[P]]
func.func @last_two(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> tensor<4x6xf32> {
  %bt = tg.transpose %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %y = tg.matmul %a, %bt : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Attention's head split of q and k ([B, T, H, D] -> [B, H, T, D] and
// [B, H, D, T]) and the head merge of the product's result: one product,
// no transposes; roles stay.
// CHECK-LABEL: func.func @heads
// CHECK-NOT: tg.transpose
// CHECK: %[[S:.+]] = tg.permuted_matmul %arg0, %arg1 lhs_perm [0, 2, 1, 3] rhs_perm [0, 2, 3, 1] result_perm [0, 1, 2, 3] {tg.role = "grad"} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x4x16x16xf32>
// CHECK: %[[Y:.+]] = tg.permuted_matmul %[[S]], %arg2 lhs_perm [0, 1, 2, 3] rhs_perm [0, 2, 1, 3] result_perm [0, 2, 1, 3] : tensor<2x4x16x16xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>
// CHECK: return %[[Y]]
func.func @heads(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32> {
  %qt = tg.transpose %q perm [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %kt = tg.transpose %k perm [0, 2, 3, 1] : tensor<2x16x4x8xf32> -> tensor<2x4x8x16xf32>
  %vt = tg.transpose %v perm [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %s = tg.matmul %qt, %kt {tg.role = "grad"} : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x16x16xf32>
  %o = tg.matmul %s, %vt : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  %y = tg.transpose %o perm [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  return %y : tensor<2x16x4x8xf32>
}

// -----

// A chain of transposes composes (autodiff's q^T of the split q); the split
// stays for its other user.
// CHECK-LABEL: func.func @chain
// CHECK: %[[QT:.+]] = tg.transpose %arg0 perm [0, 2, 1, 3]
// CHECK-NOT: tg.transpose
// CHECK: tg.permuted_matmul %arg0, %arg1 lhs_perm [0, 2, 3, 1] rhs_perm [0, 1, 2, 3] result_perm [0, 1, 2, 3] : tensor<2x16x4x8xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: tg.relu %[[QT]]
func.func @chain(%q: tensor<2x16x4x8xf32>, %g: tensor<2x4x16x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) {
  %qt = tg.transpose %q perm [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %qtt = tg.transpose %qt perm [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  %d = tg.matmul %qtt, %g : tensor<2x4x8x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x8x16xf32>
  %r = tg.relu %qt : tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  return %d, %r : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
}

// -----

// Autodiff's weight gradient dy^T @ x, with mm: the lhs's trans flag.
// CHECK-LABEL: func.func @weight_grad
// CHECK: tg.permuted_matmul %arg0, %arg1 lhs_perm [1, 0] rhs_perm [0, 1] result_perm [0, 1] : tensor<32x6xf32>, tensor<32x8xf32> -> tensor<6x8xf32>
func.func @weight_grad(%dy: tensor<32x6xf32>, %x: tensor<32x8xf32>) -> tensor<6x8xf32> {
  %t = tg.transpose %dy perm [1, 0] : tensor<32x6xf32> -> tensor<6x32xf32>
  %w = tg.mm %t, %x : tensor<6x32xf32>, tensor<32x8xf32> -> tensor<6x8xf32>
  return %w : tensor<6x8xf32>
}

// -----

// Not folded: a result whose column dim would be strided (the product
// would have to be computed transposed, which OpenBLAS sums differently).
// CHECK-LABEL: func.func @result_columns_strided
// CHECK: tg.matmul
// CHECK: tg.transpose
// CHECK-NOT: tg.permuted_matmul
func.func @result_columns_strided(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<6x4xf32> {
  %y = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %t = tg.transpose %y perm [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  return %t : tensor<6x4xf32>
}

// -----

// Not folded: the unfolded product is one tall GEMM (a batch of row blocks
// against a shared rhs); the transposed lhs would make it a batch of short
// ones, whose sums OpenBLAS rounds differently.
// CHECK-LABEL: func.func @keeps_tall_gemm
// CHECK: tg.transpose
// CHECK: tg.matmul
// CHECK-NOT: tg.permuted_matmul
func.func @keeps_tall_gemm(%x: tensor<4x8x16xf32>, %w: tensor<8x5xf32>) -> tensor<4x16x5xf32> {
  %t = tg.transpose %x perm [0, 2, 1] : tensor<4x8x16xf32> -> tensor<4x16x8xf32>
  %y = tg.matmul %t, %w : tensor<4x16x8xf32>, tensor<8x5xf32> -> tensor<4x16x5xf32>
  return %y : tensor<4x16x5xf32>
}

// -----

// Not folded: a transpose that also converts (its store rounds), and one
// whose matrix dims are both strided (the last stored dim is a batch dim).
// CHECK-LABEL: func.func @not_plain
// CHECK-COUNT-2: tg.transpose
// CHECK-NOT: tg.permuted_matmul
func.func @not_plain(%a: tensor<4x8xf32>, %b: tensor<6x8xf16>, %c: tensor<3x4x8xf32>, %d: tensor<8x4x6xf32>) -> (tensor<6x4xf32>, tensor<8x3x6xf32>) {
  %at = tg.transpose %a perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf16>
  %y = tg.matmul %b, %at : tensor<6x8xf16>, tensor<8x4xf16> -> tensor<6x4xf32>
  %ct = tg.transpose %c perm [2, 0, 1] : tensor<3x4x8xf32> -> tensor<8x3x4xf32>
  %z = tg.matmul %ct, %d : tensor<8x3x4xf32>, tensor<8x4x6xf32> -> tensor<8x3x6xf32>
  return %y, %z : tensor<6x4xf32>, tensor<8x3x6xf32>
}
