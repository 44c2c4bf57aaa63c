// RUN: ampc-opt %s -split-input-file -verify-diagnostics --ampc-auto-mixed-precision="policy=reference"

// An op that is not in the policy table is `follow`, with a remark.

func.func @unknown_follow(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark@+1 {{'arith.subf' is not in the AMP policy table; treated as follow}}
  %0 = arith.subf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
