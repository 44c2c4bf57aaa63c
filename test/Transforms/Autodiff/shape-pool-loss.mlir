// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s

// Backward graphs of the shape ops (concat, transpose, slice, reshape,
// broadcast_to), pooling, embedding and the losses.

// reshape -> reshape back; slice -> zeros around dy (concat); transpose ->
// the inverse permutation; concat -> one slice per input.
// CHECK-LABEL: func.func @shapes(
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [8, 4]
// CHECK: %[[R:.+]] = tg.reshape %[[DY]] shape [4, 2, 4] {tg.role = "grad"} : tensor<8x4xf32> -> tensor<4x2x4xf32>
// CHECK: %[[Z1:.+]] = tg.constant dense<0.000000e+00> : tensor<4x2x2xf32>
// CHECK: %[[Z2:.+]] = tg.constant dense<0.000000e+00> : tensor<4x2x2xf32>
// CHECK: %[[P:.+]] = tg.concat %[[Z1]], %[[R]], %[[Z2]] dim 2 {tg.role = "grad"} : tensor<4x2x2xf32>, tensor<4x2x4xf32>, tensor<4x2x2xf32> -> tensor<4x2x8xf32>
// CHECK: %[[T:.+]] = tg.transpose %[[P]] perm [1, 2, 0] {tg.role = "grad"} : tensor<4x2x8xf32> -> tensor<2x8x4xf32>
// CHECK: %[[DX:.+]] = tg.slice %[[T]] dim 1 start 0 end 3 {tg.role = "grad"} : tensor<2x8x4xf32> -> tensor<2x3x4xf32>
// CHECK: %[[DY2:.+]] = tg.slice %[[T]] dim 1 start 3 end 8 {tg.role = "grad"} : tensor<2x8x4xf32> -> tensor<2x5x4xf32>
// CHECK: return %[[DX]], %[[DY2]]
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x5x4xf32>) {
  %c = tg.concat %x, %y dim 1 : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x8x4xf32>
  %t = tg.transpose %c perm [2, 0, 1] : tensor<2x8x4xf32> -> tensor<4x2x8xf32>
  %s = tg.slice %t dim 2 start 2 end 6 : tensor<4x2x8xf32> -> tensor<4x2x4xf32>
  %r = tg.reshape %s shape [8, 4] : tensor<4x2x4xf32> -> tensor<8x4xf32>
  %l = tg.sum %r dims [0, 1] : tensor<8x4xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %x, %y : tensor<f32>, tensor<2x3x4xf32>, tensor<2x5x4xf32>
  return %g#0, %g#1 : tensor<2x3x4xf32>, tensor<2x5x4xf32>
}

// -----

// A slice at the start needs zeros after it only; a concat of mixed types
// casts each piece back to its input's type.
// CHECK-LABEL: func.func @slice_concat_mixed(
// CHECK: %[[Z:.+]] = tg.constant dense<0.000000e+00> : tensor<3x2xf32>
// CHECK: %[[P:.+]] = tg.concat %{{.+}}, %[[Z]] dim 1 {tg.role = "grad"} : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<3x6xf32>
// CHECK: %[[A:.+]] = tg.slice %[[P]] dim 1 start 0 end 2 {tg.role = "grad"} : tensor<3x6xf32> -> tensor<3x2xf32>
// CHECK: %[[AC:.+]] = tg.cast %[[A]] {tg.role = "grad"} : tensor<3x2xf32> to tensor<3x2xf16>
// CHECK: %[[B:.+]] = tg.slice %[[P]] dim 1 start 2 end 6 {tg.role = "grad"} : tensor<3x6xf32> -> tensor<3x4xf32>
// CHECK: return %[[AC]], %[[B]] : tensor<3x2xf16>, tensor<3x4xf32>
func.func @slice_concat_mixed(%a: tensor<3x2xf16>, %b: tensor<3x4xf32>) -> (tensor<3x2xf16>, tensor<3x4xf32>) {
  %c = tg.concat %a, %b dim 1 : tensor<3x2xf16>, tensor<3x4xf32> -> tensor<3x6xf32>
  %s = tg.slice %c dim 1 start 0 end 4 : tensor<3x6xf32> -> tensor<3x4xf32>
  %l = tg.sum %s dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %a, %b : tensor<f32>, tensor<3x2xf16>, tensor<3x4xf32>
  return %g#0, %g#1 : tensor<3x2xf16>, tensor<3x4xf32>
}

// -----

// broadcast_to differentiates to a sum over the broadcast dims.
// CHECK-LABEL: func.func @broadcast_to(
// CHECK: %[[S:.+]] = tg.sum %{{.+}} dims [0, 2] keepdim {tg.role = "grad"} : tensor<2x4x3xf32> -> tensor<1x4x1xf32>
// CHECK: %[[R:.+]] = tg.reshape %[[S]] shape [4, 1] {tg.role = "grad"} : tensor<1x4x1xf32> -> tensor<4x1xf32>
// CHECK: return %[[R]]
func.func @broadcast_to(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %b = tg.broadcast_to %x shape [2, 4, 3] : tensor<4x1xf32> -> tensor<2x4x3xf32>
  %l = tg.sum %b dims [0, 1, 2] : tensor<2x4x3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<4x1xf32>
  return %g : tensor<4x1xf32>
}

// -----

// Pooling backward ops carry the forward kernel, stride and padding.
// CHECK-LABEL: func.func @pools(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3x8x8xf32>
// CHECK: %[[MP:.+]] = tg.max_pool2d %[[X]]
// CHECK: %[[CNT:.+]] = tg.constant dense<9.600000e+01> : tensor<f32>
// CHECK: %[[DY:.+]] = tg.broadcast_to %{{.+}} shape [2, 3, 4, 4]
// CHECK: %[[DA:.+]] = tg.avg_pool2d_grad %[[DY]], %[[MP]] kernel [3, 3] stride [1, 1] padding [1, 1] {tg.role = "grad"} : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>
// CHECK: %[[DX:.+]] = tg.max_pool2d_grad %[[DA]], %[[X]] kernel [2, 2] stride [2, 2] padding [0, 0] {tg.role = "grad"} : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
// CHECK: return %[[DX]]
func.func @pools(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> {
  %m = tg.max_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  %a = tg.avg_pool2d %m kernel [3, 3] stride [1, 1] padding [1, 1] : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xf32>
  %l = tg.mean %a dims [0, 1, 2, 3] : tensor<2x3x4x4xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<2x3x8x8xf32>
  return %g : tensor<2x3x8x8xf32>
}

// -----

// cross_entropy and mse_loss backward ops take the loss gradient (here the
// seed itself); the embedding gradient is a scatter-add into the table.
// Integer ids and labels get no gradient.
// CHECK-LABEL: func.func @losses_embedding(
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<10x4xf32>, %[[IDS:[a-z0-9]+]]: tensor<2x3xi32>, %[[LAB:[a-z0-9]+]]: tensor<6xi64>, %[[TGT:[a-z0-9]+]]: tensor<6x4xf32>
// CHECK: %[[F:.+]] = tg.reshape
// CHECK: %[[SEED:.+]] = tg.grad_seed
// CHECK: %[[DM:.+]], %{{.+}} = tg.mse_loss_grad %[[SEED]], %[[F]], %[[TGT]] {tg.role = "grad"} : tensor<f32>, tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>, tensor<6x4xf32>
// CHECK: %[[DC:.+]] = tg.cross_entropy_grad %[[SEED]], %[[F]], %[[LAB]] {tg.role = "grad"} : tensor<f32>, tensor<6x4xf32>, tensor<6xi64> -> tensor<6x4xf32>
// CHECK: %[[DF:.+]] = tg.add %[[DM]], %[[DC]]
// CHECK: %[[DE:.+]] = tg.reshape %[[DF]] shape [2, 3, 4]
// CHECK: %[[DT:.+]] = tg.embedding_grad %[[DE]], %[[IDS]] num_embeddings 10 {tg.role = "grad"} : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<10x4xf32>
// CHECK: return %[[DT]]
func.func @losses_embedding(%t: tensor<10x4xf32>, %ids: tensor<2x3xi32>, %labels: tensor<6xi64>, %target: tensor<6x4xf32>) -> tensor<10x4xf32> {
  %e = tg.embedding %t, %ids : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %f = tg.reshape %e shape [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %ce = tg.cross_entropy %f, %labels : tensor<6x4xf32>, tensor<6xi64> -> tensor<f32>
  %mse = tg.mse_loss %f, %target : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<f32>
  %l = tg.add %ce, %mse : tensor<f32>, tensor<f32> -> tensor<f32>
  %g = tg.grad %l wrt %t : tensor<f32>, tensor<10x4xf32>
  return %g : tensor<10x4xf32>
}
