// Unregistered ops (--allow-unregistered-dialect) in every class, both
// policies and both low types. They have no verifier, so the pass retypes
// them as their class says; one with a region is kept as written (follow)
// or refused (other classes, see unregistered-errors.mlir).
// RUN: ampc-opt %s --allow-unregistered-dialect --ampc-amp-register=foo.gemm=lower --ampc-amp-register=foo.norm=fp32 --ampc-amp-register=foo.add=promote --ampc-amp-register=foo.act=follow --ampc-auto-mixed-precision="policy=reference low-type=f16" | FileCheck %s --check-prefixes=CHECK,REF16
// RUN: ampc-opt %s --allow-unregistered-dialect --ampc-amp-register=foo.gemm=lower --ampc-amp-register=foo.norm=fp32 --ampc-amp-register=foo.add=promote --ampc-amp-register=foo.act=follow --ampc-auto-mixed-precision="policy=reference low-type=bf16" | FileCheck %s --check-prefixes=CHECK,REFBF
// Under the fast policy an unregistered op classified lower used to crash
// cast optimization (it asked an op without a dialect for its dialect).
// RUN: ampc-opt %s --allow-unregistered-dialect --ampc-amp-register=foo.gemm=lower --ampc-amp-register=foo.norm=fp32 --ampc-amp-register=foo.add=promote --ampc-amp-register=foo.act=follow --ampc-auto-mixed-precision="policy=fast low-type=f16" | FileCheck %s --check-prefixes=CHECK,FAST16
// RUN: ampc-opt %s --allow-unregistered-dialect --ampc-amp-register=foo.gemm=lower --ampc-amp-register=foo.norm=fp32 --ampc-amp-register=foo.add=promote --ampc-amp-register=foo.act=follow --ampc-auto-mixed-precision="policy=fast low-type=bf16" | FileCheck %s --check-prefixes=CHECK,FASTBF
// The pipeline's order (reference, then cast optimization as a pass of its
// own) on the same program, with foo.act unclassified (follow).
// RUN: ampc-opt %s --allow-unregistered-dialect --ampc-amp-register=foo.gemm=lower --ampc-amp-register=foo.norm=fp32 --ampc-amp-register=foo.add=promote --ampc-auto-mixed-precision="policy=reference" --ampc-cast-optimization | FileCheck %s --check-prefixes=CHECK,FAST16

// CHECK-LABEL: func.func @classes
// lower: inputs cast to low, result low.
// REF16: %[[A:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
// REF16: %[[B:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<8x4xf32> to tensor<8x4xf16>
// REF16: %[[G:.+]] = "foo.gemm"(%[[A]], %[[B]]) : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
// REFBF: %[[G:.+]] = "foo.gemm"(%{{.+}}, %{{.+}}) : (tensor<4x8xbf16>, tensor<8x4xbf16>) -> tensor<4x4xbf16>
// FAST16: %[[G:.+]] = "foo.gemm"(%{{.+}}, %{{.+}}) : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
// FASTBF: %[[G:.+]] = "foo.gemm"(%{{.+}}, %{{.+}}) : (tensor<4x8xbf16>, tensor<8x4xbf16>) -> tensor<4x4xbf16>
// follow: computes in its input's type.
// REF16: %[[F:.+]] = "foo.act"(%[[G]]) : (tensor<4x4xf16>) -> tensor<4x4xf16>
// REFBF: %[[F:.+]] = "foo.act"(%[[G]]) : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
// FAST16: %[[F:.+]] = "foo.act"(%[[G]]) : (tensor<4x4xf16>) -> tensor<4x4xf16>
// FASTBF: %[[F:.+]] = "foo.act"(%[[G]]) : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
// fp32: inputs cast to f32, result f32.
// REF16: %[[W:.+]] = tg.cast %[[F]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: %[[N:.+]] = "foo.norm"(%[[W]]) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// REFBF: %[[N:.+]] = "foo.norm"(%{{.+}}) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// FAST16: %[[N:.+]] = "foo.norm"(%{{.+}}) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// FASTBF: %[[N:.+]] = "foo.norm"(%{{.+}}) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// promote: the widest float input (f32 here).
// REF16: %[[W2:.+]] = tg.cast %[[G]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: "foo.add"(%[[N]], %[[W2]]) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// REFBF: "foo.add"(%[[N]], %{{.+}}) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// FAST16: "foo.add"(%[[N]], %{{.+}}) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// FASTBF: "foo.add"(%[[N]], %{{.+}}) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: return
func.func @classes(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %g = "foo.gemm"(%a, %b) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %f = "foo.act"(%g) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %n = "foo.norm"(%f) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = "foo.add"(%n, %g) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// A tg op reads an unregistered op's low result; an unknown unregistered op
// (not in the table: follow, with a remark) with a region is kept as written
// and its region's tg ops are rewritten like any others.
// CHECK-LABEL: func.func @region
// CHECK: %[[R:.+]] = "bar.region"(%{{.+}}) ({
// REF16: tg.matmul {{.+}} -> tensor<4x4xf16>
// CHECK: "bar.yield"(%{{.+}}) : (tensor<4x4xf32>) -> ()
// CHECK: }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @region(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %g = "foo.gemm"(%a, %b) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %r = "bar.region"(%g) ({
  ^bb0(%x: tensor<4x4xf32>):
    %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    "bar.yield"(%m) : (tensor<4x4xf32>) -> ()
  }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
