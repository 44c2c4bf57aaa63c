// RUN: ampc-opt %s --canonicalize | FileCheck %s

// Folders never forward a value through an op that rounds or widens on store
// (a fused cast), so no rounding step disappears and no value changes type.

// CHECK-LABEL: func.func @neg_neg_rounding
// CHECK: %[[A:.+]] = tg.neg %{{.*}} : tensor<4xf32> -> tensor<4xf16>
// CHECK: %[[B:.+]] = tg.neg %[[A]] : tensor<4xf16> -> tensor<4xf32>
// CHECK: return %[[B]]
func.func @neg_neg_rounding(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.neg %x : tensor<4xf32> -> tensor<4xf16>
  %1 = tg.neg %0 : tensor<4xf16> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// CHECK-LABEL: func.func @reshape_reshape_rounding
// CHECK: %[[A:.+]] = tg.reshape %{{.*}} shape [8] : tensor<2x4xf32> -> tensor<8xf16>
// CHECK: tg.reshape %[[A]] shape [4, 2] : tensor<8xf16> -> tensor<4x2xf32>
func.func @reshape_reshape_rounding(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %0 = tg.reshape %x shape [8] : tensor<2x4xf32> -> tensor<8xf16>
  %1 = tg.reshape %0 shape [4, 2] : tensor<8xf16> -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

// An exact inner reshape still folds; the outer one keeps its fused store.
// CHECK-LABEL: func.func @reshape_reshape_exact
// CHECK: %[[A:.+]] = tg.reshape %arg0 shape [4, 2] : tensor<2x4xf32> -> tensor<4x2xf16>
// CHECK: return %[[A]]
func.func @reshape_reshape_exact(%x: tensor<2x4xf32>) -> tensor<4x2xf16> {
  %0 = tg.reshape %x shape [8] : tensor<2x4xf32> -> tensor<8xf32>
  %1 = tg.reshape %0 shape [4, 2] : tensor<8xf32> -> tensor<4x2xf16>
  return %1 : tensor<4x2xf16>
}

// CHECK-LABEL: func.func @identity_transpose_store
// CHECK: tg.transpose %{{.*}} perm [0, 1] : tensor<2x3xf32> -> tensor<2x3xf16>
func.func @identity_transpose_store(%x: tensor<2x3xf32>) -> tensor<2x3xf16> {
  %0 = tg.transpose %x perm [0, 1] : tensor<2x3xf32> -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// CHECK-LABEL: func.func @constant_reshape_store
// CHECK: tg.reshape %{{.*}} shape [4] : tensor<2x2xf32> -> tensor<4xf16>
func.func @constant_reshape_store() -> tensor<4xf16> {
  %c = tg.constant dense<1.5> : tensor<2x2xf32>
  %0 = tg.reshape %c shape [4] : tensor<2x2xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
