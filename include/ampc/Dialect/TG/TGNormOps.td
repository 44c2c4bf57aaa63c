//===- TGNormOps.td - batch norm and dropout --------*- tablegen -*-===//
//
// The two ops whose meaning depends on whether the graph trains (says
// `minimize`): `batch_norm`, with its running statistics held in `buffer`s,
// and `dropout`, whose mask comes from the counter-based generator. The
// frontend decides the mode (the `training` attribute of `tg.batch_norm`;
// `dropout` outside a training graph is the identity and builds no op).
// Included from TGOps.td. Inference: lib/Dialect/TG/TGNormOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGNORMOPS_TD
#define AMPC_DIALECT_TG_TGNORMOPS_TD

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
}

def TG_DropoutOp : TG_InferOp<"dropout", [TG_Differentiable]> {
  let summary = "`F.dropout` in training mode, with a counter-based mask";
  let description = [{
    Element `i` is kept, and scaled by `1 / (1 - p)`, when
    `u >= p` for `u` the uniform draw (24 bits, in [0, 1)) of lane `i % 4`
    of `philox4x32_10(counter = (i / 4, 2^63 + key * 2^32 + step),
    key = seed)`; otherwise it is zero. `seed` is the run's seed, `step` the
    value of the i32 scalar operand (the graph's `dropout.step` state: the
    steps taken so far), `key` the op's number in its graph (0 for the first
    `dropout` call). The mask depends on nothing else, so a continued run
    draws what an uninterrupted one would, and every backend draws the same
    bits. The gradient is the same op applied to the result's gradient (the
    same mask). The frontend builds it only in training graphs (elsewhere
    `dropout` is the identity).

    ```mlir
    %y = tg.dropout %x, %step {key = 0 : i64, p = 5.000000e-01 : f64}
        : tensor<8x16xf32>, tensor<i32> -> tensor<8x16xf32>
    ```

    Runtime kernel: `ampc_dropout_fwd`.

    `sample_elems` (set by `ampc-dropout-sample-layout` in data-parallel
    compilations, on the forward op and on its gradient alike) says that the
    input holds each sample of the batch as one contiguous block of that
    many elements. The op then lowers to `ampc_dropout_ranked_fwd`: with a
    communicator of W > 1 ranks attached to the runtime context, element
    `i` of rank `r` draws the mask of element
    `((i / S) * W + r) * S + i % S` (S = `sample_elems`), which is where
    its sample sits in one process whose batch holds every rank's samples
    (rank `r`'s sample `j` is that batch's sample `j * W + r`). With no
    communicator, or one rank, the mask is the one above, bit for bit.

    ```mlir
    %y = tg.dropout %x, %step {key = 0 : i64, p = 5.000000e-01 : f64, sample_elems = 16 : i64}
        : tensor<8x16xf32>, tensor<i32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       TG_StaticTensorOf<[I32]>:$step,
                       F64Attr:$p,
                       I64Attr:$key,
                       OptionalAttr<I64Attr>:$sample_elems);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $step attr-dict `:` type($input) `,` type($step) `->`
    type($result)
  }];
  let ampClass = TG_Follow;
  let loadConverts = ["input"];
  let keywords = [TG_Keyword<"p", "float", "0.5">];
  // p is checked, the step counter and the key come from the graph
  // (MLIRGen.cpp).
  let customFrontend = 1;
  // A call names only the input (`dropout(x, p=0.5)`).
  let languageMinOperands = 1;
  let gradients = [(TGOp<"dropout"> $dy, $step), (TG_NoGradient)];
}

def TG_CounterNextOp : TG_InferOp<"counter_next"> {
  let summary = "An i32 scalar plus one (the dropout step counter)";
  let description = [{
    `counter + 1`, computed on the device: the next value of the
    `dropout.step` state of a training graph that uses `dropout`. Runtime
    kernel: `ampc_counter_next`.

    ```mlir
    %next = tg.counter_next %step : tensor<i32>
    ```
  }];
  let arguments = (ins TG_StaticTensorOf<[I32]>:$counter);
  let results = (outs TG_StaticTensorOf<[I32]>:$result);
  let assemblyFormat = "$counter attr-dict `:` type($counter)";
  let ampClass = TG_Follow;
  let loadConverts = [];
  let training = 1;
  let language = "";
  let kernels = ["ampc_counter_next"];
  let keywords = [];
}

#endif // AMPC_DIALECT_TG_TGNORMOPS_TD
