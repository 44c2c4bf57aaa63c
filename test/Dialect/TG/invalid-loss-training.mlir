// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of cross_entropy, mse_loss, grad,
// grad_seed, minimize.
//
// A shape error is reported by type inference and then, for the same op, by the
// InferTypeOpInterface verifier ("failed to infer returned types"). A declared
// result type that differs from the inferred one gives "inferred type(s) ...
// are incompatible with return type(s)" followed by the same; a float result
// stored in another float type of the same shape is valid (a fused cast, see
// fused-store.mlir). Ops whose custom form has no result type (grad, grad_seed,
// minimize) infer it while parsing, so they report only the inference error.

func.func @cross_entropy_logits(%l: tensor<64xf32>, %y: tensor<64xi32>) {
  // expected-error@+2 {{'tg.cross_entropy' logits must be 2-D [N, C], got 'tensor<64xf32>'}}
  // expected-error@+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<64xf32>, tensor<64xi32> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<64x10xf32>, %y: tensor<32xi32>) {
  // expected-error@+2 {{'tg.cross_entropy' labels 'tensor<32xi32>' must be [64] to match logits 'tensor<64x10xf32>'}}
  // expected-error@+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<64x10xf32>, tensor<32xi32> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels_rank(%l: tensor<64x10xf32>, %y: tensor<64x1xi64>) {
  // expected-error@+2 {{'tg.cross_entropy' labels 'tensor<64x1xi64>' must be [64] to match logits 'tensor<64x10xf32>'}}
  // expected-error@+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<64x10xf32>, tensor<64x1xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_labels(%l: tensor<64x10xf32>, %y: tensor<64xf32>) {
  // expected-error@+1 {{'tg.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<64xf32>'}}
  %0 = tg.cross_entropy %l, %y : tensor<64x10xf32>, tensor<64xf32> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_declared(%l: tensor<64x10xf16>, %y: tensor<64xi32>) {
  // expected-error@+2 {{'tg.cross_entropy' op inferred type(s) 'tensor<f16>' are incompatible with return type(s) of operation 'tensor<64xf16>'}}
  // expected-error@+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<64x10xf16>, tensor<64xi32> -> tensor<64xf16>
  return
}

// -----

func.func @mse_loss_shape(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{'tg.mse_loss' operands must have the same shape, got 'tensor<4x8xf32>' and 'tensor<8xf32>'}}
  // expected-error@+1 {{'tg.mse_loss' op failed to infer returned types}}
  %0 = tg.mse_loss %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<f32>
  return
}

// -----

func.func @mse_loss_int(%a: tensor<4xi32>) {
  // expected-error@+1 {{'tg.mse_loss' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = tg.mse_loss %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<i32>
  return
}

// -----

func.func @grad_nonscalar(%l: tensor<4xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.grad' loss must be a float scalar, got 'tensor<4xf32>'}}
  %0 = tg.grad %l wrt %w : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @grad_int_loss(%l: tensor<i32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.grad' loss must be a float scalar, got 'tensor<i32>'}}
  %0 = tg.grad %l wrt %w : tensor<i32>, tensor<4xf32>
  return
}

// -----

func.func @grad_int_wrt(%l: tensor<f32>, %w: tensor<4xi32>) {
  // expected-error@+1 {{'tg.grad' op operand #1 must be variadic of statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = tg.grad %l wrt %w : tensor<f32>, tensor<4xi32>
  return
}

// -----

func.func @grad_empty(%l: tensor<f32>) {
  // expected-error@+2 {{'tg.grad' needs at least one value to differentiate with respect to}}
  // expected-error@+1 {{'tg.grad' op failed to infer returned types}}
  "tg.grad"(%l) : (tensor<f32>) -> ()
  return
}

// -----

func.func @grad_generic_declared(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{'tg.grad' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error@+1 {{'tg.grad' op failed to infer returned types}}
  %0 = "tg.grad"(%l, %w) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @grad_seed_nonscalar(%l: tensor<2xf32>) {
  // expected-error@+1 {{'tg.grad_seed' loss must be a float scalar, got 'tensor<2xf32>'}}
  %0 = tg.grad_seed %l : tensor<2xf32>
  return
}

// -----

func.func @grad_seed_scale(%l: tensor<f32>, %s: tensor<1xf32>) {
  // expected-error@+1 {{'tg.grad_seed' scale must be a float scalar, got 'tensor<1xf32>'}}
  %0 = tg.grad_seed %l scale %s : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @grad_seed_generic_declared(%l: tensor<f32>) {
  // expected-error@+2 {{'tg.grad_seed' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<f16>'}}
  // expected-error@+1 {{'tg.grad_seed' op failed to infer returned types}}
  %0 = "tg.grad_seed"(%l) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<f32>) -> tensor<f16>
  return
}

// -----

func.func @minimize_nonscalar(%l: tensor<2xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' loss must be a float scalar, got 'tensor<2xf32>'}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<2xf32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_optimizer(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op unknown optimizer "adam"; expected "sgd" or "adamw"}}
  %0 = tg.minimize %l wrt %w with "adam" {lr = 0.1 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_unknown_sgd(%l: tensor<f32>, %w: tensor<4xf32>) {
  // The name is printed as a quoted StringAttr ('"x"'); accept both.
  // expected-error-re@+1 {{'tg.minimize' op unknown sgd hyperparameter '{{"?}}beta1{{"?}}'}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64, beta1 = 0.9 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_unknown_adamw(%l: tensor<f32>, %w: tensor<4xf32>) {
  // The name is printed as a quoted StringAttr ('"x"'); accept both.
  // expected-error-re@+1 {{'tg.minimize' op unknown adamw hyperparameter '{{"?}}nesterov{{"?}}'}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64, nesterov = false} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_missing_sgd(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op sgd needs hyperparameter 'nesterov'}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_missing_adamw(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op adamw needs hyperparameter 'eps'}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, weight_decay = 0.01 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_int_lr(%l: tensor<f32>, %w: tensor<4xf32>) {
  // The name is printed as a quoted StringAttr ('"x"'); accept both.
  // expected-error-re@+1 {{'tg.minimize' op sgd hyperparameter '{{"?}}lr{{"?}}' must be a float, got 1 : i64}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 1 : i64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_float_nesterov(%l: tensor<f32>, %w: tensor<4xf32>) {
  // The name is printed as a quoted StringAttr ('"x"'); accept both.
  // expected-error-re@+1 {{'tg.minimize' op sgd hyperparameter '{{"?}}nesterov{{"?}}' must be a bool, got 1.000000e+00 : f64}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = 1.0 : f64, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_string_eps(%l: tensor<f32>, %w: tensor<4xf32>) {
  // The name is printed as a quoted StringAttr ('"x"'); accept both.
  // expected-error-re@+1 {{'tg.minimize' op adamw hyperparameter '{{"?}}eps{{"?}}' must be a float, got "tiny"}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = "tiny", weight_decay = 0.01 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_lr(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op lr must be >= 0, got -1.000000e-01}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = -0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_weight_decay(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op weight_decay must be >= 0, got -1.000000e+00}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = -1.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_max_grad_norm(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op max_grad_norm must be > 0, got 0.000000e+00}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64, max_grad_norm = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_momentum(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op momentum must be >= 0, got -9.000000e-01}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = -0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_nesterov(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op nesterov needs momentum > 0}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = true, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_beta1(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op beta1 must be in [0, 1), got 1.000000e+00}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 1.0 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_beta2(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op beta2 must be in [0, 1), got -5.000000e-01}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = -0.5 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_eps(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op eps must be >= 0, got -1.000000e-08}}
  %0 = tg.minimize %l wrt %w with "adamw" {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = -1.0e-08 : f64, weight_decay = 0.01 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_nan_lr(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'tg.minimize' op lr must be >= 0, got nan}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0x7FF8000000000000 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @minimize_int_param(%l: tensor<f32>, %w: tensor<4xi32>) {
  // expected-error@+1 {{'tg.minimize' op operand #1 must be variadic of statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<4xi32>
  return
}

// -----

func.func @minimize_generic_declared(%l: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{'tg.minimize' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error@+1 {{'tg.minimize' op failed to infer returned types}}
  %0 = "tg.minimize"(%l, %w) <{optimizer = "sgd", hyperparams = {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}}> : (tensor<f32>, tensor<4xf32>) -> tensor<4xf16>
  return
}
