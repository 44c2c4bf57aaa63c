// RUN: ampc-opt %s --canonicalize --split-input-file | FileCheck %s

// A cast to the type it already has disappears.
// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4xf16>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]] : tensor<4xf16>
func.func @cast_same_type(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = tg.cast %x : tensor<4xf16> to tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// f16 -> f32 is exact, so the round trip gives back the original value.
// CHECK-LABEL: func.func @cast_f16_f32_f16
// CHECK-SAME: (%[[X:.+]]: tensor<4x4xf16>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]] : tensor<4x4xf16>
func.func @cast_f16_f32_f16(%x: tensor<4x4xf16>) -> tensor<4x4xf16> {
  %0 = tg.cast %x : tensor<4x4xf16> to tensor<4x4xf32>
  %1 = tg.cast %0 : tensor<4x4xf32> to tensor<4x4xf16>
  return %1 : tensor<4x4xf16>
}

// -----

// Same for bf16.
// CHECK-LABEL: func.func @cast_bf16_f32_bf16
// CHECK-SAME: (%[[X:.+]]: tensor<3xbf16>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]] : tensor<3xbf16>
func.func @cast_bf16_f32_bf16(%x: tensor<3xbf16>) -> tensor<3xbf16> {
  %0 = tg.cast %x : tensor<3xbf16> to tensor<3xf32>
  %1 = tg.cast %0 : tensor<3xf32> to tensor<3xbf16>
  return %1 : tensor<3xbf16>
}

// -----

// Numerics guarantee: f32 -> f16 rounds (and overflows to inf above 65504), so
// f32 -> f16 -> f32 is NOT the identity. Folding it would silently remove the
// rounding step that automatic mixed precision relies on (and that a user who
// writes cast(cast(x, to=f16), to=f32) asked for). Both casts must remain.
// CHECK-LABEL: func.func @cast_f32_f16_f32_kept
// CHECK-SAME: (%[[X:.+]]: tensor<4x4xf32>)
// CHECK: %[[H:.+]] = tg.cast %[[X]] : tensor<4x4xf32> to tensor<4x4xf16>
// CHECK: %[[F:.+]] = tg.cast %[[H]] : tensor<4x4xf16> to tensor<4x4xf32>
// CHECK: return %[[F]] : tensor<4x4xf32>
func.func @cast_f32_f16_f32_kept(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tg.cast %x : tensor<4x4xf32> to tensor<4x4xf16>
  %1 = tg.cast %0 : tensor<4x4xf16> to tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// Likewise f32 -> bf16 -> f32 and f32 -> bf16 -> f16 (the inner cast rounds).
// CHECK-LABEL: func.func @cast_rounding_inner_kept
// CHECK-SAME: (%[[X:.+]]: tensor<2xf32>)
// CHECK: %[[B:.+]] = tg.cast %[[X]] : tensor<2xf32> to tensor<2xbf16>
// CHECK-DAG: tg.cast %[[B]] : tensor<2xbf16> to tensor<2xf32>
// CHECK-DAG: tg.cast %[[B]] : tensor<2xbf16> to tensor<2xf16>
func.func @cast_rounding_inner_kept(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf16>) {
  %0 = tg.cast %x : tensor<2xf32> to tensor<2xbf16>
  %1 = tg.cast %0 : tensor<2xbf16> to tensor<2xf32>
  %2 = tg.cast %0 : tensor<2xbf16> to tensor<2xf16>
  return %1, %2 : tensor<2xf32>, tensor<2xf16>
}

// -----

// f16 -> f32 is exact, so f16 -> f32 -> bf16 rounds once either way and
// becomes one direct cast.
// CHECK-LABEL: func.func @cast_f16_f32_bf16
// CHECK-SAME: (%[[X:.+]]: tensor<8xf16>)
// CHECK-NEXT: %[[C:.+]] = tg.cast %[[X]] : tensor<8xf16> to tensor<8xbf16>
// CHECK-NEXT: return %[[C]] : tensor<8xbf16>
func.func @cast_f16_f32_bf16(%x: tensor<8xf16>) -> tensor<8xbf16> {
  %0 = tg.cast %x : tensor<8xf16> to tensor<8xf32>
  %1 = tg.cast %0 : tensor<8xf32> to tensor<8xbf16>
  return %1 : tensor<8xbf16>
}

// -----

// Exact integer widening: i32 -> i64 -> i32 is the identity and
// i32 -> i64 -> f32 is one cast.
// CHECK-LABEL: func.func @cast_int_widening
// CHECK-SAME: (%[[X:.+]]: tensor<4xi32>)
// CHECK-NEXT: %[[F:.+]] = tg.cast %[[X]] : tensor<4xi32> to tensor<4xf32>
// CHECK-NEXT: return %[[F]], %[[X]] : tensor<4xf32>, tensor<4xi32>
func.func @cast_int_widening(%x: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = tg.cast %x : tensor<4xi32> to tensor<4xi64>
  %1 = tg.cast %0 : tensor<4xi64> to tensor<4xf32>
  %2 = tg.cast %0 : tensor<4xi64> to tensor<4xi32>
  return %1, %2 : tensor<4xf32>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>, %[[I:.+]]: tensor<3xi64>)
// CHECK-NOT: tg.neg
// CHECK: return %[[X]], %[[I]] : tensor<2x3xf32>, tensor<3xi64>
func.func @neg_neg(%x: tensor<2x3xf32>, %i: tensor<3xi64>) -> (tensor<2x3xf32>, tensor<3xi64>) {
  %0 = tg.neg %x : tensor<2x3xf32>
  %1 = tg.neg %0 : tensor<2x3xf32>
  %2 = tg.neg %i : tensor<3xi64>
  %3 = tg.neg %2 : tensor<3xi64>
  return %1, %3 : tensor<2x3xf32>, tensor<3xi64>
}

// -----

// A triple neg is one neg.
// CHECK-LABEL: func.func @neg_odd
// CHECK-SAME: (%[[X:.+]]: tensor<2xf16>)
// CHECK-NEXT: %[[N:.+]] = tg.neg %[[X]] : tensor<2xf16>
// CHECK-NEXT: return %[[N]] : tensor<2xf16>
func.func @neg_odd(%x: tensor<2xf16>) -> tensor<2xf16> {
  %0 = tg.neg %x : tensor<2xf16>
  %1 = tg.neg %0 : tensor<2xf16>
  %2 = tg.neg %1 : tensor<2xf16>
  return %2 : tensor<2xf16>
}

// -----

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NOT: tg.reshape
// CHECK: return %[[X]], %[[X]] : tensor<2x3xf32>, tensor<2x3xf32>
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = tg.reshape %x shape [2, 3] : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tg.reshape %x shape [-1, 3] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// reshape(reshape(x)) is one reshape of x; back to x's own shape it is x.
// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.+]] = tg.reshape %[[X]] shape [4, -1] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]], %[[X]] : tensor<4x6xf32>, tensor<2x3x4xf32>
func.func @reshape_reshape(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>, tensor<2x3x4xf32>) {
  %0 = tg.reshape %x shape [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = tg.reshape %0 shape [4, -1] : tensor<6x4xf32> -> tensor<4x6xf32>
  %2 = tg.reshape %0 shape [2, 3, 4] : tensor<6x4xf32> -> tensor<2x3x4xf32>
  return %1, %2 : tensor<4x6xf32>, tensor<2x3x4xf32>
}

// -----

// reshape of a constant is a constant of the new shape.
// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.+]] = tg.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NEXT: %[[S:.+]] = tg.constant dense<7> : tensor<1x2x1xi32>
// CHECK-NEXT: return %[[C]], %[[S]] : tensor<3x2xf32>, tensor<1x2x1xi32>
func.func @reshape_constant() -> (tensor<3x2xf32>, tensor<1x2x1xi32>) {
  %c = tg.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %0 = tg.reshape %c shape [3, 2] : tensor<6xf32> -> tensor<3x2xf32>
  %s = tg.constant dense<7> : tensor<2xi32>
  %1 = tg.reshape %s shape [1, 2, 1] : tensor<2xi32> -> tensor<1x2x1xi32>
  return %0, %1 : tensor<3x2xf32>, tensor<1x2x1xi32>
}

// -----

// The identity permutation folds; any other stays.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[S:.+]]: tensor<f32>)
// CHECK-NEXT: %[[T:.+]] = tg.transpose %[[X]] perm [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]], %[[S]] : tensor<2x3x4xf32>, tensor<2x4x3xf32>, tensor<f32>
func.func @transpose_identity(%x: tensor<2x3x4xf32>, %s: tensor<f32>) -> (tensor<2x3x4xf32>, tensor<2x4x3xf32>, tensor<f32>) {
  %0 = tg.transpose %x perm [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %1 = tg.transpose %x perm [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %2 = tg.transpose %s perm [] : tensor<f32> -> tensor<f32>
  return %0, %1, %2 : tensor<2x3x4xf32>, tensor<2x4x3xf32>, tensor<f32>
}

// -----

// A transpose that swaps two equal dims keeps the type but is no identity.
// CHECK-LABEL: func.func @transpose_square_kept
// CHECK: tg.transpose %{{.+}} perm [1, 0] : tensor<3x3xf32> -> tensor<3x3xf32>
func.func @transpose_square_kept(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = tg.transpose %x perm [1, 0] : tensor<3x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// A slice over the full range folds; a partial one stays.
// CHECK-LABEL: func.func @slice_full_range
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[S:.+]] = tg.slice %[[X]] dim 1 start 0 end 7 : tensor<4x8xf32> -> tensor<4x7xf32>
// CHECK-NEXT: return %[[X]], %[[S]] : tensor<4x8xf32>, tensor<4x7xf32>
func.func @slice_full_range(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x7xf32>) {
  %0 = tg.slice %x dim 1 start 0 end 8 : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = tg.slice %x dim 1 start 0 end 7 : tensor<4x8xf32> -> tensor<4x7xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x7xf32>
}

// -----

// Equal constants are deduplicated; different ones are not.
// CHECK-LABEL: func.func @constant_dedup
// CHECK-SAME: (%[[X:.+]]: tensor<2xf32>)
// CHECK-DAG: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[TWO:.+]] = tg.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NOT: tg.constant
// CHECK: %[[A:.+]] = tg.add %[[X]], %[[ONE]] : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK: %[[B:.+]] = tg.add %[[A]], %[[ONE]] : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK: %[[C:.+]] = tg.mul %[[B]], %[[TWO]] : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK: return %[[C]]
func.func @constant_dedup(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c1 = tg.constant dense<1.0> : tensor<f32>
  %0 = tg.add %x, %c1 : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %c1b = tg.constant dense<1.0> : tensor<f32>
  %1 = tg.add %0, %c1b : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %c2 = tg.constant dense<2.0> : tensor<f32>
  %2 = tg.mul %1, %c2 : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  return %2 : tensor<2xf32>
}

// -----

// Unused ops are pure, so canonicalization erases them.
// CHECK-LABEL: func.func @dead_code
// CHECK-NEXT: return
func.func @dead_code(%x: tensor<2x3xf32>) {
  %0 = tg.exp %x : tensor<2x3xf32>
  %1 = tg.transpose %0 perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}
