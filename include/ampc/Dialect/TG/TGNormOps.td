//===- TGNormOps.td - the normalizations and their gradients --*- tablegen -*-===//
//
// Every normalization with its gradient op: `layer_norm` and `rms_norm` (over
// the last dim), `group_norm` (over groups of channels) and `batch_norm`
// (over every dim but the channels), whose running statistics are held in
// `buffer`s and updated by `batch_norm_update`. The frontend decides whether
// a batch norm trains (the `training` attribute of `tg.batch_norm`, set where
// the graph says `minimize`). Included from TGOps.td; inference in
// lib/Dialect/TG/TGNormOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGNORMOPS_TD
#define AMPC_DIALECT_TG_TGNORMOPS_TD

//===----------------------------------------------------------------------===//
// Over the last dim: layer_norm, rms_norm
//===----------------------------------------------------------------------===//

def TG_LayerNormOp : TG_InferOp<"layer_norm", [TG_Differentiable]> {
  let summary = "`F.layer_norm` over the last dim, with weight and bias";
  let description = [{
    Normalizes over the last dim `D` of the input; `weight` and `bias` are
    `[D]`. The result has the input's shape and the widest float dtype of
    the operands.

    ```mlir
    %y = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$bias, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $eps attr-dict `:` type($input) `,`
    type($weight) `,` type($bias) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"eps", "float", "1e-05">];
  let gradients = [
    (TG_Result<0> (TGOp<"layer_norm_grad"> $dy, $input, $weight)),
    (TG_Result<1> (TGOp<"layer_norm_grad"> $dy, $input, $weight)),
    (TG_Result<2> (TGOp<"layer_norm_grad"> $dy, $input, $weight))];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_AttrF64<"eps">];
}

def TG_LayerNormGradOp : TG_InferOp<"layer_norm_grad"> {
  let summary = "Gradients of `tg.layer_norm` (input, weight, bias)";
  let description = [{
    Recomputes the statistics of `input` over its last dim (as the forward
    op, same `eps`) and returns `d input` (the input's shape), `d weight`
    and `d bias` (both `[D]`, the weight's type; `d bias` is the sum of
    `grad` over every dim but the last). Runtime kernel:
    `ampc_layer_norm_bwd`.

    ```mlir
    %dx, %dw, %db = tg.layer_norm_grad %dy, %x, %w eps 1.0e-05
        : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
        -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad,
                      TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `eps` $eps attr-dict `:` type($grad) `,`
    type($input) `,` type($weight) `->` type($input_grad) `,`
    type($weight_grad) `,` type($bias_grad)
  }];
  let ampClass = TG_FP32;
  let kernels = ["ampc_layer_norm_bwd"];
  let training = 1;
  let language = "";
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Res<2>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrF64<"eps">];
}

def TG_RmsNormOp : TG_InferOp<"rms_norm", [TG_Differentiable]> {
  let summary = "`F.rms_norm` over the last dim, with weight";
  let description = [{
    `x / sqrt(mean(x², last dim) + eps) * weight`, `weight` is `[D]`.

    ```mlir
    %y = tg.rms_norm %x, %w eps 1.0e-06 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       F64Attr:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` $eps attr-dict `:` type($input) `,` type($weight)
    `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"eps", "float", "1e-06">];
  let gradients = [
    (TG_Result<0> (TGOp<"rms_norm_grad"> $dy, $input, $weight)),
    (TG_Result<1> (TGOp<"rms_norm_grad"> $dy, $input, $weight))];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrF64<"eps">];
}

def TG_RmsNormGradOp : TG_InferOp<"rms_norm_grad"> {
  let summary = "Gradients of `tg.rms_norm` (input, weight)";
  let description = [{
    Recomputes `rsqrt(mean(x², last dim) + eps)` and returns `d input` (the
    input's shape) and `d weight` (`[D]`, the weight's type). Runtime
    kernel: `ampc_rms_norm_bwd`.

    ```mlir
    %dx, %dw = tg.rms_norm_grad %dy, %x, %w eps 1.0e-06
        : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
        -> tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `eps` $eps attr-dict `:` type($grad) `,`
    type($input) `,` type($weight) `->` type($input_grad) `,` type($weight_grad)
  }];
  let ampClass = TG_FP32;
  let kernels = ["ampc_rms_norm_bwd"];
  let training = 1;
  let language = "";
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrF64<"eps">];
}

//===----------------------------------------------------------------------===//
// Over groups of channels: group_norm
//===----------------------------------------------------------------------===//

def TG_GroupNormOp : TG_InferOp<"group_norm", [TG_Differentiable]> {
  let summary = "`F.group_norm(x, groups, w, b, eps)`";
  let description = [{
    `x` is `[N, C, ...]` (rank >= 2); the `C` channels form `groups` groups
    of `C / groups` channels, each normalised over its channels and every
    spatial position with the biased variance, then scaled by `weight` and
    shifted by `bias` (both `[C]`). The result has the input's shape and
    the widest float dtype of the operands. The gradient is
    `group_norm_grad`.

    ```mlir
    %y = tg.group_norm %x, %w, %b groups 2 eps 1.0e-05
        : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x3xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$bias, I64Attr:$groups, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `groups` $groups `eps` $eps attr-dict `:`
    type($input) `,` type($weight) `,` type($bias) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"groups", "int">, TG_Keyword<"eps", "float", "1e-05">];
  let gradients = [
    (TG_Result<0> (TGOp<"group_norm_grad"> $dy, $input, $weight)),
    (TG_Result<1> (TGOp<"group_norm_grad"> $dy, $input, $weight)),
    (TG_Result<2> (TGOp<"group_norm_grad"> $dy, $input, $weight))];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_AttrI64<"groups">,
                    TG_AttrF64<"eps">];
}

def TG_GroupNormGradOp : TG_InferOp<"group_norm_grad"> {
  let summary = "Gradients of `tg.group_norm` (input, weight, bias)";
  let description = [{
    Recomputes each group's statistics (same `groups` and `eps` as the
    forward op) and returns `d input` (the input's shape), `d weight` and
    `d bias` (both `[C]`, the weight's type). Runtime kernel:
    `ampc_group_norm_bwd`.

    ```mlir
    %dx, %dw, %db = tg.group_norm_grad %dy, %x, %w groups 2 eps 1.0e-05
        : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<4xf32>
        -> tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight, I64Attr:$groups, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad,
                      TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `groups` $groups `eps` $eps attr-dict `:`
    type($grad) `,` type($input) `,` type($weight) `->` type($input_grad) `,`
    type($weight_grad) `,` type($bias_grad)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_group_norm_bwd"];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Res<2>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrI64<"groups">, TG_AttrF64<"eps">];
}

//===----------------------------------------------------------------------===//
// Over every dim but the channels: batch_norm
//===----------------------------------------------------------------------===//

def TG_BatchNormOp : TG_InferOp<"batch_norm", [TG_Differentiable]> {
  let summary = "`F.batch_norm` over dim 1 of (N, C, ...)";
  let description = [{
    Normalises each channel `c` (dim 1) of the input over every other dim
    and applies `weight[c]` and `bias[c]` (both `[C]`). With `training`, the
    statistics are those of the batch (the biased variance, as PyTorch
    normalises); without it, `running_mean` and `running_var` (both `[C]`).
    The op itself never writes the running statistics: in a training graph
    the frontend also builds `tg.batch_norm_update`, whose results are the
    buffers' new values. The result has the input's shape and the widest
    float type of the input, weight and bias.

    ```mlir
    %y = tg.batch_norm %x, %w, %b, %rm, %rv {eps = 1.0e-05 : f64, momentum = 1.000000e-01 : f64, training = true}
        : tensor<8x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4x5x5xf32>
    ```

    Runtime kernel: `ampc_batch_norm_fwd`; gradient: `tg.batch_norm_grad`
    (the running statistics get none).

    `sync` (set by `--sync-batchnorm` after the pipeline on every training
    `batch_norm`, `batch_norm_grad` and `batch_norm_update`: by `ampc run`
    under W > 1 ranks, and when compiling) makes the statistics those of
    the batches of every rank
    (PyTorch's `SyncBatchNorm`): the op lowers to `ampc_sync_batch_norm_fwd`,
    which sums the per-channel values and squared deviations in f64 over
    the ranks of the communicator attached to the runtime context, so W
    ranks of batch B normalise as one process of batch W * B. With no
    communicator attached (one process) the call is `ampc_batch_norm_fwd`'s,
    bit for bit; without `training`, `sync` changes nothing.

    ```mlir
    %y = tg.batch_norm %x, %w, %b, %rm, %rv {eps = 1.0e-05 : f64, momentum = 1.000000e-01 : f64, sync, training = true}
        : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$bias, TG_FloatTensor:$running_mean,
                       TG_FloatTensor:$running_var,
                       F64Attr:$momentum,
                       F64Attr:$eps,
                       BoolAttr:$training,
                       UnitAttr:$sync);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `,` $running_mean `,` $running_var attr-dict
    `:` type($input) `,` type($weight) `,` type($bias) `,`
    type($running_mean) `,` type($running_var) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"momentum", "float", "0.1">,
                  TG_Keyword<"eps", "float", "1e-05">];
  // The running statistics must be buffers, and the mode comes from the
  // graph (MLIRGen.cpp).
  let customFrontend = 1;
  let gradients = [
    (TG_Result<0> (TGOp<"batch_norm_grad"> $dy, $input, $weight,
                   $running_mean, $running_var)),
    (TG_Result<1> (TGOp<"batch_norm_grad"> $dy, $input, $weight,
                   $running_mean, $running_var)),
    (TG_Result<2> (TGOp<"batch_norm_grad"> $dy, $input, $weight,
                   $running_mean, $running_var)),
    (TG_NoGradient), (TG_NoGradient)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_Opd<3>, TG_Opd<4>,
                    TG_AttrBool<"training">, TG_AttrF64<"eps">];
  // Apex's O2 keeps batch norm in f32 (unless keep_batchnorm_fp32=false).
  let o2KeptF32 = 1;
}

def TG_BatchNormGradOp : TG_InferOp<"batch_norm_grad"> {
  let summary = "Gradients of `tg.batch_norm` (input, weight, bias)";
  let description = [{
    With `training`, recomputes the batch statistics of `input` per channel
    (as the forward op, same `eps`) and returns PyTorch's batch-norm
    gradients; without it, the statistics are `running_mean` and
    `running_var`, so `d input = grad * weight / sqrt(running_var + eps)`.
    `d weight` and `d bias` are `[C]` of the weight's type. Runtime kernel:
    `ampc_batch_norm_bwd`; with `sync` (see `tg.batch_norm`),
    `ampc_sync_batch_norm_bwd`: the statistics and the sums of `grad` and
    `grad * xhat` that `d input` needs are taken over every rank's batch,
    while `d weight` and `d bias` stay this rank's own sums (the gradient
    all-reduce averages them like any parameter's gradient).

    ```mlir
    %dx, %dw, %db = tg.batch_norm_grad %dy, %x, %w, %rm, %rv {eps = 1.0e-05 : f64, training = true}
        : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
        -> tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight, TG_FloatTensor:$running_mean,
                       TG_FloatTensor:$running_var,
                       F64Attr:$eps,
                       BoolAttr:$training,
                       UnitAttr:$sync);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad,
                      TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `,` $running_mean `,` $running_var attr-dict
    `:` type($grad) `,` type($input) `,` type($weight) `,`
    type($running_mean) `,` type($running_var) `->` type($input_grad) `,`
    type($weight_grad) `,` type($bias_grad)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_batch_norm_bwd"];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Res<2>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_Opd<3>, TG_Opd<4>, TG_AttrBool<"training">, TG_AttrF64<"eps">];
}

def TG_BatchNormUpdateOp : TG_InferOp<"batch_norm_update"> {
  let summary = "New running statistics of a training `batch_norm`";
  let description = [{
    PyTorch's running-statistics update of a batch norm in training mode,
    per channel `c` of dim 1 over `M` = N * (spatial size) values:
    `new_mean = (1 - momentum) * running_mean + momentum * mean` and
    `new_var = (1 - momentum) * running_var + momentum * var * M / (M - 1)`
    (the unbiased variance). The results have the running statistics'
    types; the frontend returns them as the new values of their buffers
    (`tg.buffer_out`). Not differentiable. Runtime kernel:
    `ampc_batch_norm_update`; with `sync` (see `tg.batch_norm`),
    `ampc_sync_batch_norm_update`: the mean, the variance and `M` are those
    of every rank's batch, so every rank's buffers get the same values.

    ```mlir
    %m, %v = tg.batch_norm_update %x, %rm, %rv {momentum = 1.000000e-01 : f64}
        : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$running_mean,
                       TG_FloatTensor:$running_var,
                       F64Attr:$momentum,
                       UnitAttr:$sync);
  let results = (outs TG_FloatTensor:$new_running_mean,
                      TG_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $running_mean `,` $running_var attr-dict `:` type($input) `,`
    type($running_mean) `,` type($running_var) `->`
    type($new_running_mean) `,` type($new_running_var)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_batch_norm_update"];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrF64<"momentum">];
}

#endif // AMPC_DIALECT_TG_TGNORMOPS_TD
