// RUN: ampc-opt %s --ampc-amp-register=arith.mulf=lower --ampc-amp-register=arith.addf=promote --ampc-auto-mixed-precision="policy=reference" | FileCheck %s --check-prefix=API
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference lower-ops=arith.mulf" --ampc-amp-register=arith.addf=promote | FileCheck %s --check-prefix=OPT
// RUN: ampc-opt %s --ampc-amp-register=arith.mulf=lower --ampc-amp-register=arith.addf=promote --ampc-auto-mixed-precision="policy=fast low-type=bf16" | FileCheck %s --check-prefix=FASTBF
// RUN: not ampc-opt %s --ampc-amp-register=arith.mulf=lowest 2>&1 | FileCheck %s --check-prefix=BAD

// Ops of another dialect, classified through the C++ API
// (ampc::amp::registerOpClass, which `--ampc-amp-register` calls as an
// embedding compiler would) or a pass option, are rewritten by the same pass.
// Static float tensors are cast with tg.cast; scalars (and dynamic tensors)
// with arith.truncf/arith.extf.

// API-LABEL: func.func @tensors
// API: %[[A:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4xf32> to tensor<4xf16>
// API: %[[B:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4xf32> to tensor<4xf16>
// API: %[[M:.+]] = arith.mulf %[[A]], %[[B]] : tensor<4xf16>
// API: %[[W:.+]] = tg.cast %[[M]] {tg.role = "amp"} : tensor<4xf16> to tensor<4xf32>
// API: %[[S:.+]] = arith.addf %[[W]], %arg0 : tensor<4xf32>
// API: return %[[S]]
// OPT-LABEL: func.func @tensors
// OPT: arith.mulf %{{.*}}, %{{.*}} : tensor<4xf16>
// OPT: arith.addf %{{.*}}, %arg0 : tensor<4xf32>
// FASTBF-LABEL: func.func @tensors
// FASTBF: arith.mulf %{{.*}}, %{{.*}} : tensor<4xbf16>
// FASTBF: tg.cast %{{.*}} : tensor<4xbf16> to tensor<4xf32>
// FASTBF: arith.addf %{{.*}}, %arg0 : tensor<4xf32>
func.func @tensors(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  %1 = arith.addf %0, %a : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// API-LABEL: func.func @scalars
// API: %[[S:.+]] = arith.truncf %arg0 {tg.role = "amp"} : f32 to f16
// API: %[[T:.+]] = arith.truncf %arg1 {tg.role = "amp"} : f32 to f16
// API: %[[M:.+]] = arith.mulf %[[S]], %[[T]] : f16
// API: %[[W:.+]] = arith.extf %[[M]] {tg.role = "amp"} : f16 to f32
// API: %[[A:.+]] = arith.addf %[[W]], %arg0 : f32
// API: %[[E:.+]] = arith.extf %arg2 {tg.role = "amp"} : bf16 to f32
// API: %[[H:.+]] = arith.truncf %[[E]] {tg.role = "amp"} : f32 to f16
// API: %[[N:.+]] = arith.mulf %[[H]], %[[H]] : f16
// API: %[[E2:.+]] = arith.extf %[[N]] {tg.role = "amp"} : f16 to f32
// API: %[[R:.+]] = arith.truncf %[[E2]] {tg.role = "amp"} : f32 to bf16
// API: return %[[A]], %[[R]] : f32, bf16
func.func @scalars(%s: f32, %t: f32, %b: bf16) -> (f32, bf16) {
  %0 = arith.mulf %s, %t : f32
  %1 = arith.addf %0, %s : f32
  %2 = arith.mulf %b, %b : bf16
  return %1, %2 : f32, bf16
}

// BAD: ampc-opt: error: --ampc-amp-register expects DIALECT.OP=lower|fp32|promote|follow, got 'arith.mulf=lowest'
