// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier and type inference errors of reductions, softmax/log_softmax,
// layer_norm/rms_norm, pooling.
//
// A shape error is reported by type inference and then, for the same op, by the
// InferTypeOpInterface verifier ("failed to infer returned types"). A declared
// result type that differs from the inferred one gives "inferred type(s) ...
// are incompatible with return type(s)" followed by the same; a float result
// stored in another float type of the same shape is valid (a fused cast, see
// fused-store.mlir). Ops whose custom form has no result type (grad, grad_seed,
// minimize) infer it while parsing, so they report only the inference error.

func.func @sum_dim_range(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.sum' dim 2 is out of range for 'tensor<4x8xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.sum' op failed to infer returned types}}
  %0 = tg.sum %x dims [2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @sum_negative_dim(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.sum' dim -1 is out of range for 'tensor<4x8xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.sum' op failed to infer returned types}}
  %0 = tg.sum %x dims [-1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @sum_unsorted(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.sum' dims [1, 0] must be sorted and distinct}}
  // expected-error@+1 {{'tg.sum' op failed to infer returned types}}
  %0 = tg.sum %x dims [1, 0] : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @mean_duplicate(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.mean' dims [1, 1] must be sorted and distinct}}
  // expected-error@+1 {{'tg.mean' op failed to infer returned types}}
  %0 = tg.mean %x dims [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mean_keepdim_declared(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.mean' op inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error@+1 {{'tg.mean' op failed to infer returned types}}
  %0 = tg.mean %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mean_declared(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.mean' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error@+1 {{'tg.mean' op failed to infer returned types}}
  %0 = tg.mean %x dims [1] : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}

// -----

// torch.sum of an integer tensor is i64.
func.func @sum_int(%x: tensor<4xi32>) {
  // expected-error@+2 {{'tg.sum' op inferred type(s) 'tensor<i64>' are incompatible with return type(s) of operation 'tensor<i32>'}}
  // expected-error@+1 {{'tg.sum' op failed to infer returned types}}
  %0 = tg.sum %x dims [0] : tensor<4xi32> -> tensor<i32>
  return
}

// -----

func.func @max_dim_range(%x: tensor<4xi64>) {
  // expected-error@+2 {{'tg.max' dim 1 is out of range for 'tensor<4xi64>' (rank 1)}}
  // expected-error@+1 {{'tg.max' op failed to infer returned types}}
  %0 = tg.max %x dims [0, 1] : tensor<4xi64> -> tensor<i64>
  return
}

// -----

func.func @max_bool(%x: tensor<4xi1>) {
  // expected-error@+1 {{'tg.max' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 32-bit signless integer or 64-bit signless integer or 16-bit signless integer or 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<4xi1>'}}
  %0 = tg.max %x dims [0] : tensor<4xi1> -> tensor<i1>
  return
}

// -----

func.func @max_declared_elt(%x: tensor<4xi32>) {
  // expected-error@+2 {{'tg.max' op inferred type(s) 'tensor<i32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error@+1 {{'tg.max' op failed to infer returned types}}
  %0 = tg.max %x dims [0] : tensor<4xi32> -> tensor<f32>
  return
}

// -----

func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.softmax' dim 2 is out of range for 'tensor<4x8xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.softmax' op failed to infer returned types}}
  %0 = tg.softmax %x dim 2 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_negative_dim(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'tg.log_softmax' dim -1 is out of range for 'tensor<4x8xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.log_softmax' op failed to infer returned types}}
  %0 = tg.log_softmax %x dim -1 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_int(%x: tensor<4x8xi32>) {
  // expected-error@+1 {{'tg.log_softmax' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4x8xi32>'}}
  %0 = tg.log_softmax %x dim 1 : tensor<4x8xi32>
  return
}

// -----

func.func @layer_norm_rank0(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error@+2 {{'tg.layer_norm' input must have rank >= 1, got 'tensor<f32>'}}
  // expected-error@+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %w eps 1.0e-05 : tensor<f32>, tensor<1xf32>, tensor<1xf32> -> tensor<f32>
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error@+2 {{'tg.layer_norm' eps must be >= 0, got -1.000000e-05}}
  // expected-error@+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %w eps -1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<4x8xf32>, %w: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{'tg.layer_norm' weight 'tensor<4xf32>' must be [8] to match the last dim of input 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error@+2 {{'tg.layer_norm' bias 'tensor<1x8xf32>' must be [8] to match the last dim of input 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{'tg.rms_norm' weight 'tensor<4xf32>' must be [8] to match the last dim of input 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'tg.rms_norm' op failed to infer returned types}}
  %0 = tg.rms_norm %x, %w eps 1.0e-06 : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error@+2 {{'tg.rms_norm' eps must be >= 0, got -5.000000e-01}}
  // expected-error@+1 {{'tg.rms_norm' op failed to infer returned types}}
  %0 = tg.rms_norm %x, %w eps -0.5 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_rank0(%x: tensor<bf16>, %w: tensor<1xbf16>) {
  // expected-error@+2 {{'tg.rms_norm' input must have rank >= 1, got 'tensor<bf16>'}}
  // expected-error@+1 {{'tg.rms_norm' op failed to infer returned types}}
  %0 = tg.rms_norm %x, %w eps 1.0e-06 : tensor<bf16>, tensor<1xbf16> -> tensor<bf16>
  return
}

// -----

func.func @max_pool_rank(%x: tensor<4x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d' input must be 4-D [N, C, H, W], got 'tensor<4x8x8xf32>'}}
  // expected-error@+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<4x8x8xf32> -> tensor<4x4x4xf32>
  return
}

// -----

func.func @max_pool_kernel_count(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d' 'kernel' needs 2 values (H, W), got 3}}
  // expected-error@+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel [2, 2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

func.func @max_pool_kernel_zero(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d' 'kernel' values must be >= 1, got [0, 2]}}
  // expected-error@+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel [0, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

func.func @max_pool_stride_zero(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d' 'stride' values must be >= 1, got [2, 0]}}
  // expected-error@+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel [2, 2] stride [2, 0] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

func.func @max_pool_padding_count(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d' 'padding' needs 2 values (H, W), got 1}}
  // expected-error@+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel [2, 2] stride [2, 2] padding [0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

func.func @max_pool_padding_half(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.max_pool2d' padding 2 exceeds half the kernel 3 in spatial dim 3}}
  // expected-error@+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x kernel [3, 3] stride [1, 1] padding [1, 2] : tensor<2x4x8x8xf32> -> tensor<2x4x8x10xf32>
  return
}

// -----

func.func @avg_pool_padding_half(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.avg_pool2d' padding 2 exceeds half the kernel 2 in spatial dim 2}}
  // expected-error@+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x kernel [2, 2] stride [2, 2] padding [2, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x6x4xf32>
  return
}

// -----

func.func @avg_pool_padding_negative(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.avg_pool2d' 'padding' values must be >= 0, got [0, -1]}}
  // expected-error@+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x kernel [2, 2] stride [2, 2] padding [0, -1] : tensor<2x4x8x8xf32> -> tensor<2x4x4x3xf32>
  return
}

// -----

func.func @avg_pool_kernel_too_big(%x: tensor<2x4x3x3xf32>) {
  // expected-error@+2 {{'tg.avg_pool2d' kernel 4 exceeds padded input 3 in spatial dim 3 of 'tensor<2x4x3x3xf32>'}}
  // expected-error@+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x kernel [2, 4] stride [1, 1] padding [0, 0] : tensor<2x4x3x3xf32> -> tensor<2x4x2x1xf32>
  return
}

// -----

func.func @avg_pool_declared(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{'tg.avg_pool2d' op inferred type(s) 'tensor<2x4x7x7xf32>' are incompatible with return type(s) of operation 'tensor<2x4x4x4xf32>'}}
  // expected-error@+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x kernel [2, 2] stride [1, 1] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return
}
