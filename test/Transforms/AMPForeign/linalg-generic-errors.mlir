// linalg.generic has a body written by hand that ties its element types: it
// cannot be rebuilt for another type, so classified lower (or fp32, promote)
// it is refused with an error at the op, in both policies and low types.
// RUN: ampc-opt %s --ampc-amp-register=linalg.generic=lower --ampc-auto-mixed-precision="policy=reference low-type=f16" -verify-diagnostics
// RUN: ampc-opt %s --ampc-amp-register=linalg.generic=lower --ampc-auto-mixed-precision="policy=fast low-type=bf16" -verify-diagnostics
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=f16 fp32-ops=linalg.generic" -verify-diagnostics

#id = affine_map<(d0) -> (d0)>
func.func @generic(%a: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'linalg.generic' must compute in}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%c : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
