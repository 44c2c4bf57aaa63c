// A foreign op is retyped, then checked with its own verifier. tensor.bitcast
// needs equal bit widths, so reading a lowered f16 value as a bitcast from f32
// does not verify: as follow, the op is kept as written (its operand cast
// back to f32, no other cast left behind); classified lower, it is refused
// with the verifier's reason (verify-fallback-errors.mlir).
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=f16" 2>/dev/null | FileCheck %s --check-prefix=REF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16" 2>/dev/null | FileCheck %s --check-prefix=FAST

// REF-LABEL: func.func @bitcast
// REF: %[[M:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF-NEXT: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF-NEXT: %[[B:.+]] = tensor.bitcast %[[W]] : tensor<4x4xf32> to tensor<4x4xi32>
// REF-NEXT: return %[[B]]
// FAST-LABEL: func.func @bitcast
// FAST: %[[M:.+]] = tg.matmul {{.+}} {tg.compute = bf16} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf32>
// FAST-NEXT: tensor.bitcast %[[M]] : tensor<4x4xf32> to tensor<4x4xi32>
func.func @bitcast(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xi32> {
  %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %i = tensor.bitcast %m : tensor<4x4xf32> to tensor<4x4xi32>
  return %i : tensor<4x4xi32>
}
