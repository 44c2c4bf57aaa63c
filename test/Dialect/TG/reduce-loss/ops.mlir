// RUN: ampc-opt %s | ampc-opt | FileCheck %s

// The ops of PyTorch's fp32 autocast list (TGReductionOps.td, TGNormOps.td,
// TGLossOps.td) and their backward ops parse, verify and
// print back in their custom forms.

// CHECK-LABEL: func.func @fwd
func.func @fwd(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>, %w: tensor<4xf32>, %y: tensor<4xi32>, %y8: tensor<4x8xi32>, %k: tensor<3xi1>, %d: tensor<3xf64>) {
  // CHECK: tg.logsumexp %{{.+}} dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %0 = tg.logsumexp %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  // CHECK: tg.norm %{{.+}} p 0x7FF0000000000000 dims [0, 1] : tensor<4x8xf16> -> tensor<f16>
  %1 = tg.norm %h p 0x7FF0000000000000 dims [0, 1] : tensor<4x8xf16> -> tensor<f16>
  // CHECK: tg.cumsum %{{.+}} dim 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = tg.cumsum %x dim 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  // Integers and bool sum into i64; f64 stays f64.
  // CHECK: tg.cumsum %{{.+}} dim 1 : tensor<4x8xi32> -> tensor<4x8xi64>
  %c0 = tg.cumsum %y8 dim 1 : tensor<4x8xi32> -> tensor<4x8xi64>
  // CHECK: tg.cumsum %{{.+}} dim 0 : tensor<3xi1> -> tensor<3xi64>
  %c1 = tg.cumsum %k dim 0 : tensor<3xi1> -> tensor<3xi64>
  // CHECK: tg.cumsum %{{.+}} dim 0 : tensor<3xf64> -> tensor<3xf64>
  %c2 = tg.cumsum %d dim 0 : tensor<3xf64> -> tensor<3xf64>
  // CHECK: tg.cosine_similarity %{{.+}}, %{{.+}} dim 1 eps 1.000000e-08 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4xf32>
  %3 = tg.cosine_similarity %x, %h dim 1 eps 1.0e-08 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4xf32>
  // CHECK: tg.kl_div %{{.+}}, %{{.+}} reduction "none" log_target : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = tg.kl_div %x, %x reduction "none" log_target : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: tg.nll_loss %{{.+}}, %{{.+}} ignore_index -100 reduction "none" : tensor<4x8xf32>, tensor<4xi32> -> tensor<4xf32>
  %5 = tg.nll_loss %x, %y ignore_index -100 reduction "none" : tensor<4x8xf32>, tensor<4xi32> -> tensor<4xf32>
  // CHECK: tg.smooth_l1_loss %{{.+}}, %{{.+}} beta 0.000000e+00 reduction "sum" : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  %6 = tg.smooth_l1_loss %x, %x beta 0.0 reduction "sum" : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @bwd
func.func @bwd(%dy: tensor<f32>, %x: tensor<2x4x3xf32>, %w: tensor<4xf32>, %a: tensor<4x8xf32>) {
  // CHECK: tg.group_norm_grad %{{.+}}, %{{.+}}, %{{.+}} groups 2 eps 1.000000e-05 : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<4xf32> -> tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
  %0:3 = tg.group_norm_grad %x, %x, %w groups 2 eps 1.0e-05 : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<4xf32> -> tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
  // CHECK: tg.l1_loss_grad %{{.+}}, %{{.+}}, %{{.+}} reduction "mean" : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %1:2 = tg.l1_loss_grad %dy, %a, %a reduction "mean" : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return
}
