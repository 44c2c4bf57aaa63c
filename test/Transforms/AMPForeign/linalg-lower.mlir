// A linalg named op classified lower cannot be retyped in place (its body's
// block arguments and its destination tie its element types): the pass
// refuses it with an error at the op, in both policies and low types, and
// whether it is classified through the registration table or an option.
// RUN: ampc-opt %s --ampc-amp-register=linalg.matmul=lower --ampc-auto-mixed-precision="policy=reference low-type=f16" -verify-diagnostics
// RUN: ampc-opt %s --ampc-amp-register=linalg.matmul=lower --ampc-auto-mixed-precision="policy=fast low-type=bf16" -verify-diagnostics
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=f16 lower-ops=linalg.matmul" -verify-diagnostics

func.func @linalg_lower(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'linalg.matmul' must compute in}}
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
