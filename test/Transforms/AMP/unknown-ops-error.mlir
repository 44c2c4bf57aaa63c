// RUN: ampc-opt %s -verify-diagnostics --ampc-auto-mixed-precision="policy=reference unknown-ops=error"

// With unknown-ops=error an op that is not in the policy table fails the pass.

func.func @unknown_error(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'arith.subf' is not in the AMP policy table (classify it with --amp-fp32=/--amp-lower=/--amp-follow= or ampc::amp::registerOpClass)}}
  %0 = arith.subf %a, %b : tensor<4xf32>
  // Integer-only ops are never classified, so never reported.
  %c = arith.constant dense<1> : tensor<4xi32>
  %1 = arith.addi %c, %c : tensor<4xi32>
  return %0 : tensor<4xf32>
}
