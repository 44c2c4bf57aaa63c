// RUN: ampc-opt %s | FileCheck %s
// RUN: ampc-opt %s | ampc-opt | FileCheck %s

// A float result may be stored in another float type than the inferred one (a
// cast fused into the store), and `tg.compute` states the precision an op
// computes in. Both round-trip through the custom assembly; unary ops print
// `-> T` only when the stored type differs from the operand type.

// CHECK-LABEL: func.func @gemm_stores_f32
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x2xf16> -> tensor<4x2xf32>
// CHECK: tg.linear %{{.*}}, %{{.*}} {tg.compute = f16} : tensor<4x8xf32>, tensor<2x8xf16> -> tensor<4x2xf16>
func.func @gemm_stores_f32(%a: tensor<4x8xf16>, %b: tensor<8x2xf16>, %x: tensor<4x8xf32>, %w: tensor<2x8xf16>) -> (tensor<4x2xf32>, tensor<4x2xf16>) {
  %0 = tg.matmul %a, %b : tensor<4x8xf16>, tensor<8x2xf16> -> tensor<4x2xf32>
  %1 = tg.linear %x, %w {tg.compute = f16} : tensor<4x8xf32>, tensor<2x8xf16> -> tensor<4x2xf16>
  return %0, %1 : tensor<4x2xf32>, tensor<4x2xf16>
}

// CHECK-LABEL: func.func @unary_fused_store
// CHECK: tg.relu %{{.*}} : tensor<2xf32> -> tensor<2xf16>
// CHECK: tg.gelu %{{.*}} approximate "tanh" : tensor<2xf32> -> tensor<2xbf16>
// CHECK: tg.softmax %{{.*}} dim 0 {tg.compute = f32} : tensor<2xf16> -> tensor<2xf32>
// CHECK: tg.exp %{{.*}} : tensor<2xf32>{{$}}
func.func @unary_fused_store(%x: tensor<2xf32>, %h: tensor<2xf16>) -> (tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf32>) {
  %0 = tg.relu %x : tensor<2xf32> -> tensor<2xf16>
  %1 = tg.gelu %x approximate "tanh" : tensor<2xf32> -> tensor<2xbf16>
  %2 = tg.softmax %h dim 0 {tg.compute = f32} : tensor<2xf16> -> tensor<2xf32>
  %3 = tg.exp %x : tensor<2xf32> -> tensor<2xf32>
  return %0, %1, %2, %3 : tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @norm_and_binary
// CHECK: tg.layer_norm %{{.*}} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf16>
// CHECK: tg.add %{{.*}}, %{{.*}} {tg.compute = f16} : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf16>
// CHECK: tg.mse_loss %{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<f32>
// CHECK: tg.concat %{{.*}}, %{{.*}} dim 0 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<8x8xf16>
func.func @norm_and_binary(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %h: tensor<4x8xf16>) {
  %0 = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf16>
  %1 = tg.add %x, %h {tg.compute = f16} : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf16>
  %2 = tg.mse_loss %h, %h : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<f32>
  %3 = tg.concat %x, %h dim 0 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<8x8xf16>
  return
}

// Integer results keep their exact type; a float op may still carry a
// compute precision.
// CHECK-LABEL: func.func @integers_exact
// CHECK: tg.add %{{.*}}, %{{.*}} : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
// CHECK: tg.embedding %{{.*}}, %{{.*}} {tg.compute = f32} : tensor<10x4xf16>, tensor<3xi32> -> tensor<3x4xf32>
func.func @integers_exact(%i: tensor<3xi32>, %t: tensor<10x4xf16>) {
  %0 = tg.add %i, %i : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  %1 = tg.embedding %t, %i {tg.compute = f32} : tensor<10x4xf16>, tensor<3xi32> -> tensor<3x4xf32>
  return
}
