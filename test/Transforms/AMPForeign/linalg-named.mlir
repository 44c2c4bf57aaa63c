// linalg named ops classified through the registration table (C++
// registerOpClass, which --ampc-amp-register calls) or the pass's class
// options are rebuilt for their class: the inputs are cast and the op gets
// the body its region builder makes for the new types. A lower op
// (linalg.matmul) reads low inputs, accumulates into its f32 output and its
// result is rounded to low after it, as autocast rounds a GEMM's result; an
// fp32 op (linalg.exp) computes and stores in f32.
// RUN: ampc-opt %s --ampc-amp-register=linalg.matmul=lower --ampc-amp-register=linalg.exp=fp32 --ampc-auto-mixed-precision="policy=reference low-type=f16" | FileCheck %s --check-prefixes=CHECK,REF16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=bf16 lower-ops=linalg.matmul fp32-ops=linalg.exp" | FileCheck %s --check-prefixes=CHECK,REFBF
// RUN: ampc-opt %s --ampc-amp-register=linalg.matmul=lower --ampc-amp-register=linalg.exp=fp32 --ampc-auto-mixed-precision="policy=fast low-type=f16" | FileCheck %s --check-prefixes=CHECK,FAST16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16 lower-ops=linalg.matmul fp32-ops=linalg.exp" | FileCheck %s --check-prefixes=CHECK,FASTBF
// The rebuilt op carries tg.compute, so a second run changes nothing.
// RUN: ampc-opt %s --ampc-amp-register=linalg.matmul=lower --ampc-amp-register=linalg.exp=fp32 --ampc-auto-mixed-precision="policy=reference low-type=f16" > %t.once
// RUN: ampc-opt %t.once --ampc-amp-register=linalg.matmul=lower --ampc-amp-register=linalg.exp=fp32 --ampc-auto-mixed-precision="policy=reference low-type=f16" > %t.twice
// RUN: diff %t.once %t.twice
// The body, in generic form: the region builder's extf of the low inputs.
// RUN: ampc-opt %s --ampc-amp-register=linalg.matmul=lower --ampc-auto-mixed-precision="policy=reference low-type=f16" --mlir-print-op-generic 2>/dev/null | FileCheck %s --check-prefix=BODY

// CHECK-LABEL: func.func @matmul_lower
// REF16: %[[A:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
// REF16: %[[B:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<8x4xf32> to tensor<8x4xf16>
// REF16: %[[M:.+]] = linalg.matmul {tg.compute = f16} ins(%[[A]], %[[B]] : tensor<4x8xf16>, tensor<8x4xf16>) outs(%arg2 : tensor<4x4xf32>) -> tensor<4x4xf32>
// REF16: %[[L:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4x4xf32> to tensor<4x4xf16>
// REF16: %[[R:.+]] = tg.relu %[[L]] : tensor<4x4xf16>
// REF16: %[[W:.+]] = tg.cast %[[R]] {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF16: return %[[W]] : tensor<4x4xf32>
// REFBF: linalg.matmul {tg.compute = bf16} ins(%{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%arg2 : tensor<4x4xf32>) -> tensor<4x4xf32>
// REFBF: tg.relu %{{.+}} : tensor<4x4xbf16>
// Under fast the relu converts the f32 result on load and stores f32.
// FAST16: %[[M:.+]] = linalg.matmul {tg.compute = f16} ins(%{{.+}}, %{{.+}} : tensor<4x8xf16>, tensor<8x4xf16>) outs(%arg2 : tensor<4x4xf32>) -> tensor<4x4xf32>
// FAST16: tg.relu %[[M]] {tg.compute = f16} : tensor<4x4xf32>
// FASTBF: %[[M:.+]] = linalg.matmul {tg.compute = bf16} ins(%{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%arg2 : tensor<4x4xf32>) -> tensor<4x4xf32>
// FASTBF: tg.relu %[[M]] {tg.compute = bf16} : tensor<4x4xf32>
// BODY-LABEL: sym_name = "matmul_lower"
// BODY: ^bb0(%{{.+}}: f16, %{{.+}}: f16, %{{.+}}: f32):
// BODY: "arith.extf"(%{{.+}}) : (f16) -> f32
// BODY: "arith.mulf"({{.+}}){{.*}} : (f32, f32) -> f32
// BODY: "arith.addf"({{.+}}){{.*}} : (f32, f32) -> f32
// BODY: }) {tg.compute = f16} : (tensor<4x8xf16>, tensor<8x4xf16>, tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @matmul_lower(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = tg.relu %r : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @exp_fp32
// CHECK: %[[X:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4xf16> to tensor<4xf32>
// CHECK: %[[O:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4xf16> to tensor<4xf32>
// CHECK: %[[E:.+]] = linalg.exp {tg.compute = f32} ins(%[[X]] : tensor<4xf32>) outs(%[[O]] : tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[B:.+]] = tg.cast %[[E]] {tg.role = "amp"} : tensor<4xf32> to tensor<4xf16>
// CHECK: return %[[B]] : tensor<4xf16>
func.func @exp_fp32(%a: tensor<4xf16>, %c: tensor<4xf16>) -> tensor<4xf16> {
  %r = linalg.exp ins(%a : tensor<4xf16>) outs(%c : tensor<4xf16>) -> tensor<4xf16>
  return %r : tensor<4xf16>
}
