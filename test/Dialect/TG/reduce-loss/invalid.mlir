// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of the fp32-list reductions and losses
// and of their backward ops (TGReductionOps.td, TGNormOps.td and
// TGLossOps.td), in IR written by hand: the checks the frontend cannot reach
// (it only builds valid backward ops).

func.func @logsumexp_grad_shape(%dy: tensor<4x1xf32>, %x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error@+2 {{'tg.logsumexp_grad' forward result and gradient must have the shape [4] of the reduction of 'tensor<4x8xf32>', got 'tensor<4x1xf32>'}}
  // expected-error@+1 {{'tg.logsumexp_grad' op failed to infer returned types}}
  %0 = tg.logsumexp_grad %dy, %x, %y dims [1] : tensor<4x1xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @norm_grad_p(%dy: tensor<4xf32>, %x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error@+2 {{'tg.norm_grad' 'p' must be >= 1 or inf, got 5.000000e-01}}
  // expected-error@+1 {{'tg.norm_grad' op failed to infer returned types}}
  %0 = tg.norm_grad %dy, %x, %y p 0.5 dims [1] : tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @norm_dims(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.norm' dims [1, 0] must be sorted and distinct}}
  // expected-error@+1 {{'tg.norm' op failed to infer returned types}}
  %0 = tg.norm %x p 2.0 dims [1, 0] : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @cumsum_grad_dim(%dy: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.cumsum_grad' dim 2 is out of range for 'tensor<4x8xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.cumsum_grad' op failed to infer returned types}}
  %0 = tg.cumsum_grad %dy dim 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @group_norm_grad_eps(%dy: tensor<2x4x3xf32>, %x: tensor<2x4x3xf32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{'tg.group_norm_grad' 'eps' must be positive}}
  // expected-error@+1 {{'tg.group_norm_grad' op failed to infer returned types}}
  %0:3 = tg.group_norm_grad %dy, %x, %w groups 2 eps 0.0 : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<4xf32> -> tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @cosine_grad_shape(%dy: tensor<8xf32>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.cosine_similarity_grad' gradient 'tensor<8xf32>' must have the result's shape [4]}}
  // expected-error@+1 {{'tg.cosine_similarity_grad' op failed to infer returned types}}
  %0:2 = tg.cosine_similarity_grad %dy, %a, %b dim 1 eps 1.0e-08 : tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @l1_reduction(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.l1_loss' 'reduction' must be "none", "mean", "sum", got "batchmean"}}
  // expected-error@+1 {{'tg.l1_loss' op failed to infer returned types}}
  %0 = tg.l1_loss %a, %b reduction "batchmean" : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @kl_grad_none(%dy: tensor<f32>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.kl_div_grad' the gradient of the loss must have the loss' shape [4, 8], got 'tensor<f32>'}}
  // expected-error@+1 {{'tg.kl_div_grad' op failed to infer returned types}}
  %0:2 = tg.kl_div_grad %dy, %a, %b reduction "none" : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @nll_grad_labels(%dy: tensor<f32>, %x: tensor<4x8xf32>, %y: tensor<3xi32>) {
  // expected-error@+2 {{'tg.nll_loss_grad' labels 'tensor<3xi32>' must be [4] (one class index per row of 'tensor<4x8xf32>')}}
  // expected-error@+1 {{'tg.nll_loss_grad' op failed to infer returned types}}
  %0 = tg.nll_loss_grad %dy, %x, %y ignore_index -100 reduction "mean" : tensor<f32>, tensor<4x8xf32>, tensor<3xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @smooth_beta(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.smooth_l1_loss' 'beta' must not be negative, got -1.000000e+00}}
  // expected-error@+1 {{'tg.smooth_l1_loss' op failed to infer returned types}}
  %0 = tg.smooth_l1_loss %a, %b beta -1.0 reduction "mean" : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

// torch.cumsum of an integer is i64, not the input's type.
func.func @cumsum_int_keeps_type(%x: tensor<4xi32>) {
  // expected-error@+2 {{'tg.cumsum' op inferred type(s) 'tensor<4xi64>' are incompatible with return type(s) of operation 'tensor<4xi32>'}}
  // expected-error@+1 {{'tg.cumsum' op failed to infer returned types}}
  %0 = tg.cumsum %x dim 0 : tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

// Integers have no gradient: cumsum_grad takes floats only.
func.func @cumsum_grad_int(%dy: tensor<4xi64>) {
  // expected-error@+1 {{'tg.cumsum_grad' op operand #0 must be statically shaped tensor of}}
  %0 = tg.cumsum_grad %dy dim 0 : tensor<4xi64> -> tensor<4xi64>
  return
}
