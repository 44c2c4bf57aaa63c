// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference" | FileCheck %s --check-prefix=REF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=fast low-type=bf16" | FileCheck %s --check-prefix=FASTBF

// Integer tensors (ids, labels) are never touched; f16 and bf16 program
// inputs are read as they are, and mixed f16/bf16 promote to f32.

// REF-LABEL: func.func @integers
// REF-NOT: tg.cast %arg1
// REF-NOT: tg.cast %arg2
// REF: tg.add %arg1, %arg1 : tensor<8xi32>, tensor<8xi32> -> tensor<8xi32>
// REF: tg.embedding %arg0, %{{.*}} : tensor<16x4xf32>, tensor<8xi32> -> tensor<8x4xf32>
// REF: %[[L:.+]] = tg.cast %{{.*}} : tensor<8x4xf16> to tensor<8x4xf32>
// REF: tg.cross_entropy %[[L]], %arg2 : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
// FASTBF-LABEL: func.func @integers
// FASTBF: tg.add %arg1, %arg1 : tensor<8xi32>, tensor<8xi32> -> tensor<8xi32>
// FASTBF: tg.embedding %arg0, %{{.*}} {tg.compute = f32} : tensor<16x4xf32>, tensor<8xi32> -> tensor<8x4xbf16>
// FASTBF: tg.cross_entropy %{{.*}}, %arg2 : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
func.func @integers(%table: tensor<16x4xf32> {tg.param = "t"}, %ids: tensor<8xi32>, %labels: tensor<8xi64>, %w: tensor<4x4xf32> {tg.param = "w"}) -> tensor<f32> {
  %i = tg.add %ids, %ids : tensor<8xi32>, tensor<8xi32> -> tensor<8xi32>
  %e = tg.embedding %table, %i : tensor<16x4xf32>, tensor<8xi32> -> tensor<8x4xf32>
  %l = tg.matmul %e, %w : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %loss = tg.cross_entropy %l, %labels : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// REF-LABEL: func.func @low_inputs
// f16 input into a GEMM: read as it is; bf16 input is converted to f16.
// REF: %[[B:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4x4xbf16> to tensor<4x4xf16>
// REF: %[[M:.+]] = tg.matmul %arg0, %[[B]] : tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
// f16 + bf16 promote to f32 (as in PyTorch).
// REF: %[[H:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xf32>
// REF: %[[G:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4x4xbf16> to tensor<4x4xf32>
// REF: tg.add %[[H]], %[[G]] : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// The declared f16 result needs no cast.
// REF: return %{{.*}}, %{{.*}} : tensor<4x4xf16>, tensor<4x4xf32>
// FASTBF-LABEL: func.func @low_inputs
// FASTBF: %[[A:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x4xf16> to tensor<4x4xbf16>
// A cast written in the source stays (only casts AMP inserted are fused).
// FASTBF: %[[M:.+]] = tg.matmul %[[A]], %arg1 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
// FASTBF: tg.cast %[[M]] : tensor<4x4xbf16> to tensor<4x4xf16>
// FASTBF: tg.add %arg0, %arg1 {tg.compute = f32} : tensor<4x4xf16>, tensor<4x4xbf16> -> tensor<4x4xf32>
func.func @low_inputs(%h: tensor<4x4xf16>, %b: tensor<4x4xbf16>) -> (tensor<4x4xf16>, tensor<4x4xf32>) {
  %0 = tg.matmul %h, %b : tensor<4x4xf16>, tensor<4x4xbf16> -> tensor<4x4xf32>
  %1 = tg.cast %0 : tensor<4x4xf32> to tensor<4x4xf16>
  %2 = tg.add %h, %b : tensor<4x4xf16>, tensor<4x4xbf16> -> tensor<4x4xf32>
  return %1, %2 : tensor<4x4xf16>, tensor<4x4xf32>
}
