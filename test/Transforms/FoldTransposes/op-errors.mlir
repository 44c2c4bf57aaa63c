// RUN: ampc-opt %s --split-input-file --verify-diagnostics

func.func @bad_perm(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> tensor<4x6xf32> {
  // expected-error@+2 {{'tg.permuted_matmul' 'rhs_perm' [1, 1] is not a permutation of 2 dims}}
  // expected-error@+1 {{failed to infer returned types}}
  %y = tg.permuted_matmul %a, %b lhs_perm [0, 1] rhs_perm [1, 1] result_perm [0, 1] : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

func.func @perm_size(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> tensor<4x6xf32> {
  // expected-error@+2 {{'tg.permuted_matmul' 'lhs_perm' [0, 1, 2] has 3 entries for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %y = tg.permuted_matmul %a, %b lhs_perm [0, 1, 2] rhs_perm [1, 0] result_perm [0, 1] : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

func.func @contraction(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+2 {{'tg.permuted_matmul' contraction dims differ: permuted lhs [4, 8] has 8, permuted rhs [6, 8] has 6}}
  // expected-error@+1 {{failed to infer returned types}}
  %y = tg.permuted_matmul %a, %b lhs_perm [0, 1] rhs_perm [0, 1] result_perm [0, 1] : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @vector(%a: tensor<8xf32>, %b: tensor<8x6xf32>) -> tensor<6xf32> {
  // expected-error@+2 {{'tg.permuted_matmul' operands must have rank >= 2, got 'tensor<8xf32>' and 'tensor<8x6xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %y = tg.permuted_matmul %a, %b lhs_perm [0] rhs_perm [0, 1] result_perm [0] : tensor<8xf32>, tensor<8x6xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// The result type: the permuted product's shape; a fused store may change
// only the element type.
func.func @result_type(%a: tensor<4x8xf16>, %b: tensor<6x8xf16>) -> tensor<4x6xf32> {
  %y = tg.permuted_matmul %a, %b lhs_perm [0, 1] rhs_perm [1, 0] result_perm [0, 1] : tensor<4x8xf16>, tensor<6x8xf16> -> tensor<4x6xf32>
  // expected-error@+2 {{'tg.permuted_matmul' op inferred type(s) 'tensor<4x6xf16>' are incompatible with return type(s) of operation 'tensor<6x4xf16>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %z = tg.permuted_matmul %a, %b lhs_perm [0, 1] rhs_perm [1, 0] result_perm [0, 1] : tensor<4x8xf16>, tensor<6x8xf16> -> tensor<6x4xf16>
  return %y : tensor<4x6xf32>
}
