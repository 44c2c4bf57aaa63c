// tg ops inside scf.if and scf.for regions are rewritten like top-level ones;
// the region ops keep the types they were written with, so what a region
// yields is cast back, and values carried into a loop are too.
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=f16" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,REF16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=bf16" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,REFBF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=f16" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,FAST16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16" 2>/dev/null | FileCheck %s --check-prefixes=CHECK,FASTBF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16" 2>/dev/null | ampc-opt --verify-each > /dev/null

// CHECK-LABEL: func.func @in_if
// CHECK: scf.if %arg0 -> (tensor<4x4xf32>) {
// REF16: %[[A:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
// REF16: %[[B:.+]] = tg.cast %arg2 {tg.role = "amp"} : tensor<8x4xf32> to tensor<8x4xf16>
// REF16: %[[M:.+]] = tg.matmul %[[A]], %[[B]] : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf16>
// REF16: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: scf.yield %[[W]] : tensor<4x4xf32>
// REFBF: tg.matmul {{.+}} -> tensor<4x4xbf16>
// REFBF: scf.yield %{{.+}} : tensor<4x4xf32>
// Under fast, the cast before the yield is fused into the GEMM.
// FAST16: %[[M:.+]] = tg.matmul {{.+}} {tg.compute = f16} : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf32>
// FAST16: scf.yield %[[M]] : tensor<4x4xf32>
// FASTBF: %[[M:.+]] = tg.matmul {{.+}} {tg.compute = bf16} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf32>
// FASTBF: scf.yield %[[M]] : tensor<4x4xf32>
// CHECK: } else {
// CHECK: %[[S:.+]] = tg.softmax %arg3 dim 1 : tensor<4x4xf32>
// CHECK: scf.yield %[[S]] : tensor<4x4xf32>
func.func @in_if(%p: i1, %a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = scf.if %p -> (tensor<4x4xf32>) {
    %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    scf.yield %m : tensor<4x4xf32>
  } else {
    %s = tg.softmax %c dim 1 : tensor<4x4xf32>
    scf.yield %s : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// A lowered value carried into a loop is cast back to the loop's f32
// iter_arg; in the body the GEMM reads casts of the f32 loop value and of
// the weight, placed where they are read, and the yield is cast back (fast:
// fused into the relu's store).
// CHECK-LABEL: func.func @in_for
// REF16: %[[M0:.+]] = tg.matmul {{.+}} -> tensor<4x4xf16>
// REF16: %[[I:.+]] = tg.cast %[[M0]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[X:.+]] = %[[I]]) -> (tensor<4x4xf32>) {
// REF16: %[[XC:.+]] = tg.cast %[[X]] {tg.role = "amp"} : tensor<4x4xf32> to tensor<4x4xf16>
// REF16: %[[M:.+]] = tg.matmul %[[XC]], %{{.+}} : tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
// REF16: %[[R:.+]] = tg.relu %[[M]] : tensor<4x4xf16>
// REF16: %[[Y:.+]] = tg.cast %[[R]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: scf.yield %[[Y]] : tensor<4x4xf32>
// REFBF: tg.relu %{{.+}} : tensor<4x4xbf16>
// FAST16: tg.relu %{{.+}} : tensor<4x4xf16> -> tensor<4x4xf32>
// FASTBF: tg.relu %{{.+}} : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK: return
func.func @in_for(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %lo = arith.constant 0 : index
  %hi = arith.constant 3 : index
  %one = arith.constant 1 : index
  %m0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %r = scf.for %i = %lo to %hi step %one iter_args(%x = %m0) -> (tensor<4x4xf32>) {
    %m = tg.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %y = tg.relu %m : tensor<4x4xf32>
    scf.yield %y : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}
