// An unregistered op with a region classified lower, fp32 or promote cannot
// be retyped safely (its region may tie its types): an error at the op.
// RUN: ampc-opt %s --allow-unregistered-dialect --split-input-file --ampc-amp-register=bar.region=lower --ampc-auto-mixed-precision="policy=fast low-type=f16" -verify-diagnostics
// RUN: ampc-opt %s --allow-unregistered-dialect --split-input-file --ampc-amp-register=bar.region=fp32 --ampc-auto-mixed-precision="policy=reference low-type=bf16" -verify-diagnostics
// RUN: ampc-opt %s --allow-unregistered-dialect --split-input-file --ampc-amp-register=bar.region=promote --ampc-auto-mixed-precision="policy=reference low-type=f16" -verify-diagnostics

func.func @region(%a: tensor<4x4xf16>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'bar.region' must compute in}}
  %r = "bar.region"(%a, %b) ({
  ^bb0(%x: tensor<4x4xf16>, %y: tensor<4x4xf32>):
    "bar.yield"(%y) : (tensor<4x4xf32>) -> ()
  }) : (tensor<4x4xf16>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
