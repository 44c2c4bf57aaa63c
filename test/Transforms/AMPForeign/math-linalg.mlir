// math ops classified fp32, through the registration table (C++
// registerOpClass, which --ampc-amp-register calls) and the pass's class
// options, and an unclassified linalg op; both policies, both low types
// (linalg ops classified lower: linalg-named.mlir).
// RUN: ampc-opt %s --ampc-amp-register=math.exp=fp32 --ampc-amp-register=math.tanh=fp32 --ampc-auto-mixed-precision="policy=reference low-type=f16" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,REF16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=bf16 fp32-ops=math.exp,math.tanh" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,REFBF
// RUN: ampc-opt %s --ampc-amp-register=math.exp=fp32 --ampc-amp-register=math.tanh=fp32 --ampc-auto-mixed-precision="policy=fast low-type=f16" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,FAST16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16 fp32-ops=math.exp,math.tanh" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,FASTBF

// An fp32 math op reads a lowered value cast to f32 and returns f32; the tg
// op after it (promote) then reads f32.
// CHECK-LABEL: func.func @math_fp32
// REF16: %[[M:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF16: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: %[[E:.+]] = math.exp %[[W]] : tensor<4x4xf32>
// REF16: tg.add %[[E]], %arg2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// REFBF: %[[W:.+]] = tg.cast %{{.+}} {tg.role = "amp"} : tensor<4x4xbf16> to tensor<4x4xf32>
// REFBF: math.exp %[[W]] : tensor<4x4xf32>
// FAST16: %[[M:.+]] = tg.matmul {{.+}} {tg.compute = f16} : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf32>
// FAST16: math.exp %[[M]] : tensor<4x4xf32>
// FASTBF: %[[M:.+]] = tg.matmul {{.+}} {tg.compute = bf16} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf32>
// FASTBF: math.exp %[[M]] : tensor<4x4xf32>
func.func @math_fp32(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %e = math.exp %m : tensor<4x4xf32>
  %s = tg.add %e, %c : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// An fp32 math op on an f16 input (and on a scalar) computes in f32.
// CHECK-LABEL: func.func @math_widens
// CHECK: %[[X:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<8xf16> to tensor<8xf32>
// CHECK: %[[T:.+]] = math.tanh %[[X]] : tensor<8xf32>
// CHECK: %[[S:.+]] = arith.extf %arg1 {tg.role = "amp"} : f16 to f32
// CHECK: %[[U:.+]] = math.tanh %[[S]] : f32
// CHECK: %[[B:.+]] = tg.cast %[[T]] {tg.role = "amp"} : tensor<8xf32> to tensor<8xf16>
// CHECK: %[[C:.+]] = arith.truncf %[[U]] {tg.role = "amp"} : f32 to f16
// CHECK: return %[[B]], %[[C]] : tensor<8xf16>, f16
func.func @math_widens(%x: tensor<8xf16>, %s: f16) -> (tensor<8xf16>, f16) {
  %t = math.tanh %x : tensor<8xf16>
  %u = math.tanh %s : f16
  return %t, %u : tensor<8xf16>, f16
}

// A linalg named op that follows (the default for an unclassified op) is
// kept in the types it was written with: destination-style ops tie their
// element types to their region, so lowered operands are cast back.
// CHECK-LABEL: func.func @linalg_follows
// REF16: %[[M:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF16: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: linalg.matmul ins(%[[W]], %arg2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%arg3 : tensor<4x4xf32>) -> tensor<4x4xf32>
// FAST16: %[[M:.+]] = tg.matmul {{.+}} -> tensor<4x4xf32>
// FAST16: linalg.matmul ins(%[[M]], %arg2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%arg3 : tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @linalg_follows(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>, %d: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %r = linalg.matmul ins(%m, %c : tensor<4x4xf32>, tensor<4x4xf32>) outs(%d : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
