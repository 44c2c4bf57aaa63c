// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference" | FileCheck %s --check-prefix=PIN
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference low-type=bf16" | FileCheck %s --check-prefix=PINBF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference fp32-ops=gelu lower-ops=tg.add follow-ops=softmax" | FileCheck %s --check-prefix=OVR
// RUN: not ampc-opt %s --ampc-auto-mixed-precision="fp32-ops=gleu" 2>&1 | FileCheck %s --check-prefix=BADNAME

// Pins (`@f32`, `@f16`, `@bf16` in the source, `tg.pin` here) decide an op's
// compute type whatever its class: inputs cast to the pinned type, result in
// it. Overrides move ops between classes.

// PIN-LABEL: func.func @pinned_gemm
// PIN-NOT: tg.cast
// PIN: tg.matmul %arg0, %arg1 {tg.pin = f32} : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
// PINBF-LABEL: func.func @pinned_gemm
// PINBF: tg.matmul %arg0, %arg1 {tg.pin = f32} : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
func.func @pinned_gemm(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {tg.param = "w"}) -> tensor<4x2xf32> {
  %0 = tg.matmul %x, %w {tg.pin = f32} : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// An fp32-class op pinned to a 16-bit type computes in exactly that type
// (also under the other low type).
// PIN-LABEL: func.func @pinned_low
// PIN: %[[C:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
// PIN: %[[S:.+]] = tg.softmax %[[C]] dim 1 {tg.pin = f16} : tensor<4x8xf16>
// PIN: %[[B:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xbf16>
// PIN: tg.exp %[[B]] {tg.pin = bf16} : tensor<4x8xbf16>
// PINBF-LABEL: func.func @pinned_low
// PINBF: tg.softmax %{{.*}} dim 1 {tg.pin = f16} : tensor<4x8xf16>
// PINBF: tg.exp %{{.*}} {tg.pin = bf16} : tensor<4x8xbf16>
func.func @pinned_low(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tg.softmax %x dim 1 {tg.pin = f16} : tensor<4x8xf32>
  %1 = tg.exp %x {tg.pin = bf16} : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// OVR-LABEL: func.func @overrides
// gelu moved to fp32: its f16 input is widened.
// OVR: %[[G:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4xf16> to tensor<4xf32>
// OVR: tg.gelu %[[G]] approximate "tanh" : tensor<4xf32>
// add moved to lower: both inputs cast to f16.
// OVR: %[[A:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<4xf32> to tensor<4xf16>
// OVR: tg.add %arg0, %[[A]] : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
// softmax moved to follow: computes in its input's type, no cast.
// OVR: tg.softmax %arg0 dim 0 : tensor<4xf16>
func.func @overrides(%h: tensor<4xf16>, %x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xf32>, tensor<4xf16>) {
  %0 = tg.gelu %h approximate "tanh" : tensor<4xf16>
  %1 = tg.add %h, %x : tensor<4xf16>, tensor<4xf32> -> tensor<4xf32>
  %2 = tg.softmax %h dim 0 : tensor<4xf16>
  return %0, %1, %2 : tensor<4xf16>, tensor<4xf32>, tensor<4xf16>
}

// BADNAME: error: ampc-auto-mixed-precision: unknown op 'gleu' in a class override
