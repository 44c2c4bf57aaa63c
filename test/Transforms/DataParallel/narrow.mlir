// RUN: ampc-opt %s --ampc-data-parallel-narrow --split-input-file | FileCheck %s

// A reshape and a cast from f16 to f32 that only hand 16-bit gradients to
// the bucket: the bucket carries the 16-bit values, the widenings follow
// the wait. The f32 GEMM-like member (%gw, an f32 result) stays.
// CHECK-LABEL: func.func @widened(
// CHECK: %[[S:.+]] = tg.sum %{{.+}} dims [0] keepdim : tensor<4x3xf16> -> tensor<1x3xf16>
// CHECK-NOT: tg.reshape %[[S]]
// CHECK: %[[C16:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<4x3xf16>, tensor<4x3xf16> -> tensor<4x3xf16>
// CHECK-NOT: tg.cast %[[C16]]
// CHECK: %[[B:.+]]:3 = tg.grad_allreduce_start %[[S]], %[[C16]], %{{.+}} {bucket = 0 : i64} : tensor<1x3xf16>, tensor<4x3xf16>, tensor<4x3xf32>
// CHECK-NEXT: %[[W:.+]]:3 = tg.grad_allreduce_wait %[[B]]#0, %[[B]]#1, %[[B]]#2 {bucket = 0 : i64} : tensor<1x3xf16>, tensor<4x3xf16>, tensor<4x3xf32>
// CHECK-NEXT: %[[R:.+]] = tg.reshape %[[W]]#0 shape [3] : tensor<1x3xf16> -> tensor<3xf32>
// CHECK-NEXT: %[[C:.+]] = tg.cast %[[W]]#1 : tensor<4x3xf16> to tensor<4x3xf32>
// CHECK-NEXT: return %[[R]], %[[C]], %[[W]]#2
func.func @widened(%d: tensor<4x3xf16>, %e: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %s = tg.sum %d dims [0] keepdim : tensor<4x3xf16> -> tensor<1x3xf16>
  %g = tg.reshape %s shape [3] : tensor<1x3xf16> -> tensor<3xf32>
  %m = tg.mul %d, %d : tensor<4x3xf16>, tensor<4x3xf16> -> tensor<4x3xf16>
  %c = tg.cast %m : tensor<4x3xf16> to tensor<4x3xf32>
  %gw = tg.mul %e, %e : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %b:3 = tg.grad_allreduce_start %g, %c, %gw {bucket = 0 : i64} : tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  %r:3 = tg.grad_allreduce_wait %b#0, %b#1, %b#2 {bucket = 0 : i64} : tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  return %r#0, %r#1, %r#2 : tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Left alone: the 16-bit value has another reader (it would read the
// buffer while it is reduced in place), and the widened value has another
// reader besides the bucket.
// CHECK-LABEL: func.func @shared(
// CHECK: tg.grad_allreduce_start %{{.+}}, %{{.+}} {bucket = 0 : i64} : tensor<3xf32>, tensor<3xf32>
func.func @shared(%d: tensor<4x3xf16>) -> (tensor<3xf32>, tensor<3xf32>, tensor<1x3xf16>, tensor<3xf32>) {
  %s = tg.sum %d dims [0] keepdim : tensor<4x3xf16> -> tensor<1x3xf16>
  %g = tg.reshape %s shape [3] : tensor<1x3xf16> -> tensor<3xf32>
  %s2 = tg.sum %d dims [0] : tensor<4x3xf16> -> tensor<3xf16>
  %g2 = tg.cast %s2 : tensor<3xf16> to tensor<3xf32>
  %b:2 = tg.grad_allreduce_start %g, %g2 {bucket = 0 : i64} : tensor<3xf32>, tensor<3xf32>
  %r:2 = tg.grad_allreduce_wait %b#0, %b#1 {bucket = 0 : i64} : tensor<3xf32>, tensor<3xf32>
  return %r#0, %r#1, %s, %g2 : tensor<3xf32>, tensor<3xf32>, tensor<1x3xf16>, tensor<3xf32>
}
