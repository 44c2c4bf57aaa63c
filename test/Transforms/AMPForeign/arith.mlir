// A lowered tg value meets f32 values in arith ops, which do not read mixed
// types: an arith op that follows reads its operands at their widest type
// (the f16 GEMM result is cast to f32 before an f32 addf), one whose operands
// are all lowered stays in low, and one classified promote is cast likewise.
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=f16" | FileCheck %s --check-prefixes=CHECK,REF16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=bf16" | FileCheck %s --check-prefixes=CHECK,REFBF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=f16" | FileCheck %s --check-prefixes=CHECK,FAST16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16" | FileCheck %s --check-prefixes=CHECK,FASTBF
// RUN: ampc-opt %s --ampc-amp-register=arith.addf=promote --ampc-auto-mixed-precision="policy=fast low-type=f16" | FileCheck %s --check-prefixes=CHECK,FAST16
// The output is a valid program: it parses and verifies again.
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16" | ampc-opt --verify-each > /dev/null

// CHECK-LABEL: func.func @gemm_into_addf
// REF16: %[[M:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf16>
// REF16: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: %[[S:.+]] = arith.addf %[[W]], %arg2 : tensor<4x4xf32>
// REFBF: tg.matmul {{.+}} -> tensor<4x4xbf16>
// REFBF: %[[W:.+]] = tg.cast %{{.+}} {tg.role = "amp"} : tensor<4x4xbf16> to tensor<4x4xf32>
// REFBF: arith.addf %[[W]], %arg2 : tensor<4x4xf32>
// Under fast the GEMM's only reader wants f32: it stores its f32 result.
// FAST16: %[[M:.+]] = tg.matmul %{{.+}}, %{{.+}} {tg.compute = f16} : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf32>
// FAST16: arith.addf %[[M]], %arg2 : tensor<4x4xf32>
// FASTBF: %[[M:.+]] = tg.matmul %{{.+}}, %{{.+}} {tg.compute = bf16} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf32>
// FASTBF: arith.addf %[[M]], %arg2 : tensor<4x4xf32>
// CHECK: return
func.func @gemm_into_addf(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %s = arith.addf %m, %c : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// Two lowered values: the arith op follows them in low precision, and the
// function's f32 result is cast back at the return.
// CHECK-LABEL: func.func @low_into_mulf
// REF16: %[[P:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF16: %[[Q:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF16: %[[R:.+]] = arith.mulf %[[P]], %[[Q]] : tensor<4x4xf16>
// REF16: %[[N:.+]] = arith.negf %[[R]] : tensor<4x4xf16>
// REF16: %[[B:.+]] = tg.cast %[[N]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: return %[[B]] : tensor<4x4xf32>
// REFBF: arith.mulf %{{.+}}, %{{.+}} : tensor<4x4xbf16>
// FAST16: arith.mulf %{{.+}}, %{{.+}} : tensor<4x4xf16>
// FASTBF: arith.mulf %{{.+}}, %{{.+}} : tensor<4x4xbf16>
func.func @low_into_mulf(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %p = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %q = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %r = arith.mulf %p, %q : tensor<4x4xf32>
  %n = arith.negf %r : tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}

// A cast op of another dialect keeps the types it was written with: its
// lowered operand is cast back to f32 (extf f16 -> f32 would not verify).
// CHECK-LABEL: func.func @foreign_cast
// REF16: %[[M:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF16: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: arith.truncf %[[W]] : tensor<4x4xf32> to tensor<4x4xf16>
// FAST16: %[[M:.+]] = tg.matmul {{.+}} -> tensor<4x4xf32>
// FAST16: arith.truncf %[[M]] : tensor<4x4xf32> to tensor<4x4xf16>
func.func @foreign_cast(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf16> {
  %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %t = arith.truncf %m : tensor<4x4xf32> to tensor<4x4xf16>
  return %t : tensor<4x4xf16>
}
