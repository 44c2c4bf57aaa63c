// A foreign op that does not verify once retyped as its class says is
// refused with the verifier's reason, at the op.
// RUN: ampc-opt %s --ampc-amp-register=tensor.bitcast=lower --ampc-auto-mixed-precision="policy=reference low-type=f16" -verify-diagnostics

func.func @bitcast(%a: tensor<4x4xf32>) -> tensor<4x4xi32> {
  // expected-error @+1 {{'tensor.bitcast' must compute in f16 (its AMP class), but automatic mixed precision cannot retype it: with its operands cast it does not verify ('tensor.bitcast' op operand type 'tensor<4x4xf16>' and result type 'tensor<4x4xi32>' are cast incompatible)}}
  %i = tensor.bitcast %a : tensor<4x4xf32> to tensor<4x4xi32>
  return %i : tensor<4x4xi32>
}
