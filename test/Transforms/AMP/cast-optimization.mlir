// RUN: ampc-opt %s --ampc-cast-optimization | FileCheck %s
// RUN: ampc-opt %s --ampc-cast-optimization --ampc-cast-optimization | FileCheck %s

// The fast policy's fusions on reference-form IR. Only casts AMP inserted
// (`tg.role = "amp"`) are rewritten.

// Producer fusion, narrowing: the layer_norm computes in f32 and stores f16
// for its three GEMM readers.
// CHECK-LABEL: func.func @producer_narrowing
// CHECK: %[[H:.+]] = tg.layer_norm %arg0, %arg1, %arg2 eps 1.000000e-05 {tg.compute = f32} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf16>
// CHECK-NOT: tg.cast %[[H]]
// CHECK: tg.matmul %[[H]], %arg3
// CHECK: tg.matmul %[[H]], %arg3
// CHECK: tg.matmul %[[H]], %arg3
func.func @producer_narrowing(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) {
  %h = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %c = tg.cast %h {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
  %0 = tg.matmul %c, %m : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
  %1 = tg.matmul %c, %m : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
  %2 = tg.matmul %c, %m : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
  return %0, %1, %2 : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>
}

// Producer fusion, widening: every reader wants f32, so the GEMM writes its
// f32 accumulator directly (no rounding to f16 at all).
// CHECK-LABEL: func.func @gemm_writes_f32
// CHECK: %[[Y:.+]] = tg.matmul %arg0, %arg1 {tg.compute = f16} : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf32>
// CHECK-NEXT: tg.softmax %[[Y]] dim 1 : tensor<4x8xf32>
// CHECK-NEXT: tg.add %[[Y]], %arg2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
func.func @gemm_writes_f32(%a: tensor<4x8xf16>, %m: tensor<8x8xf16>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = tg.matmul %a, %m : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
  %c = tg.cast %y {tg.role = "amp"} : tensor<4x8xf16> to tensor<4x8xf32>
  %0 = tg.softmax %c dim 1 : tensor<4x8xf32>
  %1 = tg.add %c, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// Consumer fusion, widening: the value also has a direct reader, so it stays
// f16; the f32 readers load f16 and widen on load.
// CHECK-LABEL: func.func @consumer_widening
// CHECK: %[[Y:.+]] = tg.matmul %arg0, %arg1 : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
// CHECK-NOT: tg.cast
// CHECK: tg.softmax %[[Y]] dim 1 {tg.compute = f32} : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK: tg.relu %[[Y]] : tensor<4x8xf16>
func.func @consumer_widening(%a: tensor<4x8xf16>, %m: tensor<8x8xf16>) -> (tensor<4x8xf32>, tensor<4x8xf16>) {
  %y = tg.matmul %a, %m : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
  %c = tg.cast %y {tg.role = "amp"} : tensor<4x8xf16> to tensor<4x8xf32>
  %0 = tg.softmax %c dim 1 : tensor<4x8xf32>
  %1 = tg.relu %y : tensor<4x8xf16>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf16>
}

// Consumer fusion, narrowing, of a function argument (never restored): two
// readers load f32 and round to f16 on load (2 x 4 bytes < 4 + 2 + 2 x 2);
// with four readers the cast kernel is cheaper and stays; a GEMM reader
// keeps its cast (GEMMs read their inputs in low), but a linear's bias is
// added in the epilogue and loads f32.
// CHECK-LABEL: func.func @consumer_narrowing
// CHECK: tg.add %arg0, %arg1 {tg.compute = f16} : tensor<8xf32>, tensor<8xf16> -> tensor<8xf16>
// CHECK: tg.mul %arg0, %arg1 {tg.compute = f16} : tensor<8xf32>, tensor<8xf16> -> tensor<8xf16>
// CHECK: %[[C4:.+]] = tg.cast %arg2 {tg.role = "amp"} : tensor<8xf32> to tensor<8xf16>
// CHECK-COUNT-4: tg.sub %[[C4]], %arg1 : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
// CHECK: %[[CW:.+]] = tg.cast %arg3 {tg.role = "amp"} : tensor<8x8xf32> to tensor<8x8xf16>
// CHECK: tg.linear %{{.*}}, %[[CW]], %arg2 {tg.compute = f16} : tensor<2x8xf16>, tensor<8x8xf16>, tensor<8xf32> -> tensor<2x8xf16>
func.func @consumer_narrowing(%x: tensor<8xf32>, %h: tensor<8xf16>, %z: tensor<8xf32>, %w: tensor<8x8xf32> {tg.param = "w"}, %i: tensor<2x8xf16>) {
  %c = tg.cast %x {tg.role = "amp"} : tensor<8xf32> to tensor<8xf16>
  %0 = tg.add %c, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %1 = tg.mul %c, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %d = tg.cast %z {tg.role = "amp"} : tensor<8xf32> to tensor<8xf16>
  %2 = tg.sub %d, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %3 = tg.sub %d, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %4 = tg.sub %d, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %5 = tg.sub %d, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %cw = tg.cast %w {tg.role = "amp"} : tensor<8x8xf32> to tensor<8x8xf16>
  %e = tg.cast %z {tg.role = "amp"} : tensor<8xf32> to tensor<8xf16>
  %6 = tg.linear %i, %cw, %e : tensor<2x8xf16>, tensor<8x8xf16>, tensor<8xf16> -> tensor<2x8xf16>
  return
}

// A cast written in the source is kept, and a lossy round trip is never
// folded (f32 -> f16 -> f32 keeps both casts).
// CHECK-LABEL: func.func @source_casts
// CHECK: %[[A:.+]] = tg.cast %arg0 : tensor<4xf32> to tensor<4xf16>
// CHECK: %[[B:.+]] = tg.cast %[[A]] : tensor<4xf16> to tensor<4xf32>
// CHECK: return %[[B]]
func.func @source_casts(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = tg.cast %0 : tensor<4xf16> to tensor<4xf32>
  return %1 : tensor<4xf32>
}
