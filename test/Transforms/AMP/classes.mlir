// RUN: ampc-opt %s --ampc-auto-mixed-precision="low-type=f16 policy=reference" | FileCheck %s --check-prefix=REF16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="low-type=bf16 policy=reference" | FileCheck %s --check-prefix=REFBF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="low-type=f16 policy=fast" | FileCheck %s --check-prefix=FAST16
// RUN: ampc-opt %s --ampc-auto-mixed-precision="low-type=bf16 policy=fast" | FileCheck %s --check-prefix=FASTBF

// Each op class of amp.md in both policies and both low types.

// lower: every float input is cast to low, the result is low. A parameter is
// never changed, only read through a cast. The result is cast back to the
// declared type at return (fast: the GEMM stores f32 directly).
// REF16-LABEL: func.func @lower
// REF16-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x2xf32> {tg.param = "w"})
// REF16: %[[CX:.+]] = tg.cast %[[X]] {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
// REF16: %[[CW:.+]] = tg.cast %[[W]] {tg.role = "amp"} : tensor<8x2xf32> to tensor<8x2xf16>
// REF16: %[[Y:.+]] = tg.matmul %[[CX]], %[[CW]] : tensor<4x8xf16>, tensor<8x2xf16> -> tensor<4x2xf16>
// REF16: %[[R:.+]] = tg.cast %[[Y]] {tg.role = "amp"} : tensor<4x2xf16> to tensor<4x2xf32>
// REF16: return %[[R]]
// REFBF-LABEL: func.func @lower
// REFBF: tg.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xbf16>
// FAST16-LABEL: func.func @lower
// FAST16: %[[CX:.+]] = tg.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xf16>
// FAST16: %[[CW:.+]] = tg.cast %{{.*}} : tensor<8x2xf32> to tensor<8x2xf16>
// FAST16: %[[Y:.+]] = tg.matmul %[[CX]], %[[CW]] {tg.compute = f16} : tensor<4x8xf16>, tensor<8x2xf16> -> tensor<4x2xf32>
// FAST16-NEXT: return %[[Y]]
// FASTBF-LABEL: func.func @lower
// FASTBF: tg.matmul %{{.*}}, %{{.*}} {tg.compute = bf16} : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xf32>
func.func @lower(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {tg.param = "w"}) -> tensor<4x2xf32> {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// fp32: low inputs are cast to f32, the result is f32 (fast: the softmax
// loads f16 and widens on load).
// REF16-LABEL: func.func @fp32
// REF16: %[[C:.+]] = tg.cast %{{.*}} : tensor<4x8xf16> to tensor<4x8xf32>
// REF16: tg.softmax %[[C]] dim 1 : tensor<4x8xf32>
// REFBF-LABEL: func.func @fp32
// REFBF: %[[C:.+]] = tg.cast %{{.*}} : tensor<4x8xf16> to tensor<4x8xf32>
// REFBF: tg.softmax %[[C]] dim 1 : tensor<4x8xf32>
// FAST16-LABEL: func.func @fp32
// FAST16-NOT: tg.cast
// FAST16: tg.softmax %arg0 dim 1 {tg.compute = f32} : tensor<4x8xf16> -> tensor<4x8xf32>
// FASTBF-LABEL: func.func @fp32
// FASTBF: tg.softmax %arg0 dim 1 {tg.compute = f32} : tensor<4x8xf16> -> tensor<4x8xf32>
func.func @fp32(%x: tensor<4x8xf16>) -> tensor<4x8xf32> {
  %0 = tg.softmax %x dim 1 : tensor<4x8xf16>
  %1 = tg.cast %0 : tensor<4x8xf16> to tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// promote: the narrower input is cast to the widest.
// REF16-LABEL: func.func @promote
// REF16: %[[C:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4xf16> to tensor<4xf32>
// REF16: tg.add %arg0, %[[C]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// REFBF-LABEL: func.func @promote
// REFBF: %[[C:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4xf16> to tensor<4xf32>
// FAST16-LABEL: func.func @promote
// FAST16: tg.add %arg0, %arg1 {tg.compute = f32} : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
// FASTBF-LABEL: func.func @promote
// FASTBF: tg.add %arg0, %arg1 {tg.compute = f32} : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
func.func @promote(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  %0 = tg.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// promote with PyTorch's categories: a bare number never widens a tensor (it
// is rematerialised in the compute type, no cast op), and a rank-0 tensor
// does not widen a dimensioned one.
// REF16-LABEL: func.func @promote_categories
// REF16: %[[K:.+]] = tg.constant dense<2.500000e-01> : tensor<f16>
// REF16: %[[M:.+]] = tg.mul %arg0, %[[K]] : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
// REF16: %[[S:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<f32> to tensor<f16>
// REF16: tg.add %[[M]], %[[S]] : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
// REFBF-LABEL: func.func @promote_categories
// REFBF: tg.mul %arg0, %{{.*}} : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
// FAST16-LABEL: func.func @promote_categories
// FAST16: %[[M:.+]] = tg.mul %arg0, %{{.*}} : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
// FAST16: tg.add %[[M]], %arg1 {tg.compute = f16} : tensor<4xf16>, tensor<f32> -> tensor<4xf16>
// FASTBF-LABEL: func.func @promote_categories
func.func @promote_categories(%x: tensor<4xf16>, %s: tensor<f32>) -> tensor<4xf16> {
  %c = tg.constant dense<0.25> : tensor<f32>
  %0 = tg.mul %x, %c : tensor<4xf16>, tensor<f32> -> tensor<4xf32>
  %1 = tg.add %0, %s : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %2 = tg.cast %1 : tensor<4xf32> to tensor<4xf16>
  return %2 : tensor<4xf16>
}

// follow: computes in its input's type, never forces a cast (fast: the gelu
// stores the f32 the return wants, computing in low).
// REF16-LABEL: func.func @follow
// REF16: %[[Y:.+]] = tg.linear
// REF16-SAME: -> tensor<4x2xf16>
// REF16-NEXT: %[[G:.+]] = tg.gelu %[[Y]] approximate "none" : tensor<4x2xf16>
// REF16-NEXT: %[[R:.+]] = tg.relu %arg0 : tensor<4x8xf32>
// REFBF-LABEL: func.func @follow
// REFBF: tg.gelu %{{.*}} approximate "none" : tensor<4x2xbf16>
// REFBF: tg.relu %arg0 : tensor<4x8xf32>
// FAST16-LABEL: func.func @follow
// FAST16: %[[G:.+]] = tg.gelu %{{.*}} approximate "none" {tg.compute = f16} : tensor<4x2xf16> -> tensor<4x2xf32>
// FAST16: return %[[G]]
// FASTBF-LABEL: func.func @follow
// FASTBF: tg.gelu %{{.*}} approximate "none" {tg.compute = bf16} : tensor<4x2xbf16> -> tensor<4x2xf32>
func.func @follow(%x: tensor<4x8xf32>, %w: tensor<2x8xf32> {tg.param = "w"}) -> (tensor<4x2xf32>, tensor<4x8xf32>) {
  %0 = tg.linear %x, %w : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x2xf32>
  %1 = tg.gelu %0 approximate "none" : tensor<4x2xf32>
  %2 = tg.relu %x : tensor<4x8xf32>
  return %1, %2 : tensor<4x2xf32>, tensor<4x8xf32>
}
