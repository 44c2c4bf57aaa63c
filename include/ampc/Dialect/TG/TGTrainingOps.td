//===- TGTrainingOps.td - backward, optimizer and scaler ops --*- tablegen -*-===//
//
// The ops the compiler makes for training steps (included by TGOps.td):
//  - the backward ops of the core ops of TGOps.td (elementwise, max,
//    softmax, embedding): gradients that forward `tg` ops cannot express
//    (they need a comparison, a scatter or the forward op's internals). Each
//    maps 1:1 onto an `ampc_<op>_bwd` kernel of the runtime
//    (runtime/include/ampc/runtime.h) and, like those kernels, returns every
//    operand gradient at once: a result nobody uses is simply not written
//    (the kernel gets NULL). The backward ops of the other families are in
//    their family's file (TGConvOps.td, TGLossOps.td, ...);
//  - `tg.broadcast_to`, the inverse of a sum over broadcast dims;
//  - optimizer updates, gradient clipping and the loss-scaler ops. These are
//    multi-tensor ops over every parameter of the step, like the runtime's
//    `ampc_sgd_update`, `ampc_adamw_update`, `ampc_clip_grad_norm`,
//    `ampc_check_finite_unscale` and `ampc_update_scale`. They take
//    `found_inf` as an operand instead of branching on the host.
//
// Result types are inferred; inference is the verifier, as for the forward
// ops.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGTRAININGOPS_TD
#define AMPC_DIALECT_TG_TGTRAININGOPS_TD

// Optimizer and loss-scaler ops update state in place at run time (buffer
// planning pairs each state argument with its result), so they are
// TG_StrictInferOp: their result types are exactly the inferred ones.

// A device-resident scalar flag: nonzero means "a gradient is inf or NaN".
def TG_FlagTensor : Type<And<[TensorOf<[F32, I32]>.predicate,
                              HasStaticShapePred,
                              CPred<"::llvm::cast<::mlir::ShapedType>($_self).getRank() == 0">]>,
                         "rank-0 tensor of f32 or i32 (found_inf)",
                         "::mlir::RankedTensorType">;
def TG_F32Scalar : Type<And<[TensorOf<[F32]>.predicate, HasStaticShapePred,
                             CPred<"::llvm::cast<::mlir::ShapedType>($_self).getRank() == 0">]>,
                        "rank-0 tensor of f32", "::mlir::RankedTensorType"> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}
def TG_I32Scalar : Type<And<[TensorOf<[I32]>.predicate, HasStaticShapePred,
                             CPred<"::llvm::cast<::mlir::ShapedType>($_self).getRank() == 0">]>,
                        "rank-0 tensor of i32", "::mlir::RankedTensorType"> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI32Type())";
}

// None of these is a call of the language: the compiler makes them.
let training = 1, language = "" in {

//===----------------------------------------------------------------------===//
// Broadcast
//===----------------------------------------------------------------------===//

def TG_BroadcastToOp : TG_InferOp<"broadcast_to",
    [DeclareOpInterfaceMethods<TG_GradientOpInterface>]> {
  let summary = "Broadcast to `shape` (`torch.broadcast_to`)";
  let description = [{
    Repeats `input` along the dims NumPy broadcasting adds or stretches
    (size-1 dims, and missing leading dims). The backward graphs of `sum`
    and `mean` use it; its own gradient sums over the broadcast dims.

    ```mlir
    %y = tg.broadcast_to %x shape [4, 8] : tensor<1x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `shape` $shape attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let ampClass = TG_Follow;
  // The runtime broadcasts with sum's backward kernel (a reshape when no
  // dim is stretched).
  let kernels = ["ampc_sum_bwd", "ampc_reshape_fwd"];
  // Summed over the broadcast dims (`fit`).
  let gradients = [(TG_Identity $dy)];
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

// TG_UnaryGradOp (TGOps.td): backward ops with a kernel of their own.
def TG_AbsGradOp : TG_UnaryGradOp<"abs_grad", "abs">;

def TG_GeluGradOp : TG_InferOp<"gelu_grad"> {
  let summary = "Gradient of `tg.gelu`";
  let description = [{
    `dx = dy * gelu'(x)` for the erf form (`approximate "none"`) or the tanh
    approximation, as PyTorch's `gelu_backward`. Runtime kernel:
    `ampc_gelu_bwd`.

    ```mlir
    %dx = tg.gelu_grad %dy, %x approximate "tanh" : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `approximate` $approximate attr-dict `:` type($grad) `,`
    custom<StoreType>(type($input), type($result))
  }];
  let ampClass = TG_Follow;
  let kernels = ["ampc_gelu_bwd"];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrGelu<"approximate">];
}

class TG_BinaryGradOp<string mnemonic, string fwd, TG_AmpClass cls,
                      string rule> : TG_InferOp<mnemonic> {
  let ampClass = cls;
  let kernels = ["ampc_" # fwd # "_bwd"];
  let summary = "Gradients of `tg." # fwd # "` with respect to both operands";
  let description = [{
    `grad` is the gradient of `tg.}] # fwd # [{ %lhs, %rhs`, whose shape is
    the broadcast of both operand shapes. The results are the gradients of
    `lhs` and `rhs`, each summed over the dims its operand was broadcast
    along and with that operand's type. }] # rule # [{ Runtime kernel:
    `ampc_}] # fwd # [{_bwd`.

    ```mlir
    %da, %db = tg.}] # mnemonic # [{ %dy, %a, %b : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
        -> tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$lhs,
                       TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$lhs_grad, TG_FloatTensor:$rhs_grad);
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs attr-dict `:` type($grad) `,` type($lhs) `,` type($rhs)
    `->` type($lhs_grad) `,` type($rhs_grad)
  }];
}

def TG_MaximumGradOp : TG_BinaryGradOp<"maximum_grad", "maximum", TG_Promote,
    "The larger operand gets the gradient; ties split it in half (PyTorch).">;
def TG_MinimumGradOp : TG_BinaryGradOp<"minimum_grad", "minimum", TG_Promote,
    "The smaller operand gets the gradient; ties split it in half (PyTorch).">;
def TG_PowGradOp : TG_BinaryGradOp<"pow_grad", "pow", TG_FP32,
    "`d lhs = dy * rhs * lhs^(rhs-1)`, `d rhs = dy * lhs^rhs * log(lhs)`, 0 "
    "where `lhs == 0` and `rhs >= 0` (PyTorch's `pow_backward_exponent`).">;

class TG_SoftmaxGradLikeOp<string mnemonic, string fwd, string rule> :
    TG_InferOp<mnemonic> {
  let ampClass = TG_FP32;
  let kernels = ["ampc_" # fwd # "_bwd"];
  let summary = "Gradient of `tg." # fwd # "` from its output";
  let description = [{
    `output` is the forward op's result and `grad` its gradient (same
    shape); }] # rule # [{ Runtime kernel: `ampc_}] # fwd # [{_bwd`.

    ```mlir
    %dx = tg.}] # mnemonic # [{ %dy, %y dim 1 : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$output,
                       I64Attr:$dim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $output `dim` $dim attr-dict `:` type($grad) `,`
    custom<StoreType>(type($output), type($result))
  }];
}

def TG_SoftmaxGradOp : TG_SoftmaxGradLikeOp<"softmax_grad", "softmax",
    "`dx = y * (dy - sum(dy * y, dim))`.">;
def TG_LogSoftmaxGradOp : TG_SoftmaxGradLikeOp<"log_softmax_grad",
    "log_softmax", "`dx = dy - exp(y) * sum(dy, dim)`.">;

def TG_EmbeddingGradOp : TG_InferOp<"embedding_grad"> {
  let summary = "Gradient of `tg.embedding` with respect to the table";
  let description = [{
    Scatter-add: row `ids[i]` of the `[num_embeddings, D]` result is the sum
    of the rows of `grad` (`ids.shape + [D]`) at every position `i` where
    that id occurs; rows no id selects are zero. Deterministic summation
    order. Runtime kernel: `ampc_embedding_bwd`.

    ```mlir
    %dt = tg.embedding_grad %dy, %ids num_embeddings 100
        : tensor<4x8x16xf32>, tensor<4x8xi32> -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_IntTensor:$ids,
                       I64Attr:$num_embeddings);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $ids `num_embeddings` $num_embeddings attr-dict `:` type($grad)
    `,` type($ids) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let kernels = ["ampc_embedding_bwd"];
  let kernelArgs = TG_UnaryGradArgs;
}

//===----------------------------------------------------------------------===//
// Optimizers and gradient clipping
//===----------------------------------------------------------------------===//

def TG_ClipGradNormOp : TG_StrictInferOp<"clip_grad_norm", [AttrSizedOperandSegments]> {
  let summary = "Global-norm gradient clipping (`clip_grad_norm_`)";
  let description = [{
    `torch.nn.utils.clip_grad_norm_(grads, max_norm)` over every gradient
    of the step at once: `total_norm = sqrt(sum of all squared elements)`
    (accumulated in f32), `coef = min(1, max_norm / (total_norm + 1e-6))`,
    each result is `grad * coef` in its gradient's type. The second result
    is `total_norm` (f32).

    With `found_inf` nonzero the gradients come back unchanged (the
    optimizer update that reads them is skipped as well). Runtime kernel:
    `ampc_clip_grad_norm`.

    ```mlir
    %c:2, %norm = tg.clip_grad_norm %gw, %gb max_norm 1.0 found_inf(%f : tensor<f32>)
        : tensor<4x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$grads,
                       Optional<TG_FlagTensor>:$found_inf, F64Attr:$max_norm);
  let results = (outs Variadic<TG_FloatTensor>:$clipped,
                      TG_F32Scalar:$total_norm);
  let assemblyFormat = [{
    $grads `max_norm` $max_norm (`found_inf` `(` $found_inf^ `:` type($found_inf) `)`)?
    attr-dict `:` type($grads)
  }];
  // Optimizer, clipping and scaler ops read and write f32 master state.
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["grads"];
  let lossScaleRole = TG_GradientConsumerRole;
  let kernels = ["ampc_clip_grad_norm"];
  let kernelArgs = [TG_ResBuf<1>, TG_List<0>, TG_Dtypes<0>, TG_Numels<0>, TG_Count<0>,
                    TG_AttrF64<"max_norm">, TG_FlagArg<1>];
}

def TG_SgdUpdateOp : TG_StrictInferOp<"sgd_update", [AttrSizedOperandSegments]> {
  let summary = "One `torch.optim.SGD` step over every parameter";
  let description = [{
    For each parameter `p` with gradient `g` (same shape; any float types)
    and, when `momentum != 0`, momentum buffer `buf` (f32, the parameter's
    shape), exactly PyTorch's SGD with `dampening = 0`:

    ```
    g = g + weight_decay * p                       (if weight_decay != 0)
    buf = momentum * buf + g                       (if momentum != 0)
    g = nesterov ? g + momentum * buf : buf        (if momentum != 0)
    p = p - lr * g
    ```

    computed in f32 and stored in each tensor's type. PyTorch initialises
    the buffer with a copy of the first gradient; ampc zero-initialises it,
    which gives the same first step only because dampening is 0
    (`momentum * 0 + g == g`).

    With `found_inf` nonzero nothing changes: every result is bit-identical
    to its operand. The results are the new parameters, then the new
    momentum buffers (none when `momentum == 0`). Runtime kernel:
    `ampc_sgd_update` (its `max_grad_norm` is 0: clipping is the separate
    `tg.clip_grad_norm`).

    Opt level O2: `models` are low (f16/bf16) model copies of the
    parameters `model_params` names (indices into `params`, increasing).
    The kernel stores each updated parameter once more, rounded to its
    model copy's type, in the same pass over the elements
    (`ampc_sgd_update_model`); the new model copies are the last results.
    A skipped step leaves them unchanged too.

    `lr_scale` (optional, an f32 scalar) multiplies `lr`: a learning-rate
    schedule's factor (`tg.lr_schedule`), read on the device.

    Updates of 16-bit params (`--low-update`, `--optimizer-state-dtype`):
    momentum buffers may be bf16 (or f16); `low_update` (`"nearest"`, the
    default, `"stochastic"` or `"kahan"`) says how an f32 result is written
    into a 16-bit param and 16-bit state. `"stochastic"` rounds away from
    zero with probability (discarded bits) / 2^bits, drawing Philox words
    keyed by the run's seed, the update count `counter` (an i32 scalar the
    op advances, its new value the last result), the param's index plus
    `param_base` and the element's index. `"kahan"` keeps, for the params
    `comp_params` names (16-bit, increasing indices into `params`),
    compensation buffers `comps` of the param's type: each write rounds
    `result + comp` to nearest and stores the difference back into the
    buffer; the new buffers follow the model copies in `updated`. Runtime
    kernel: `ampc_sgd_update_low`.

    ```mlir
    %p:2, %m:2 = ...
    %new:4 = tg.sgd_update params(%w, %b : tensor<4x4xf32>, tensor<4xf32>)
        grads(%gw, %gb : tensor<4x4xf32>, tensor<4xf32>)
        momentum_buffers(%mw, %mb : tensor<4x4xf32>, tensor<4xf32>)
        found_inf(%f : tensor<f32>)
        {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$params,
                       Variadic<TG_FloatTensor>:$grads,
                       Variadic<TG_FloatTensor>:$momentum_buffers,
                       Optional<TG_FlagTensor>:$found_inf,
                       Variadic<TG_FloatTensor>:$models,
                       Optional<TG_F32Scalar>:$lr_scale,
                       Variadic<TG_FloatTensor>:$comps,
                       Optional<TG_I32Scalar>:$counter,
                       F64Attr:$lr, F64Attr:$momentum, F64Attr:$weight_decay,
                       BoolAttr:$nesterov,
                       OptionalAttr<DenseI64ArrayAttr>:$model_params,
                       OptionalAttr<StrAttr>:$low_update,
                       OptionalAttr<I64Attr>:$param_base,
                       OptionalAttr<DenseI64ArrayAttr>:$comp_params);
  // New params, momentum buffers, model copies, compensation buffers, and
  // the counter when there is one.
  let results = (outs Variadic<TG_Tensor>:$updated);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)`
    `grads` `(` $grads `:` type($grads) `)`
    (`momentum_buffers` `(` $momentum_buffers^ `:` type($momentum_buffers) `)`)?
    (`found_inf` `(` $found_inf^ `:` type($found_inf) `)`)?
    (`models` `(` $models^ `:` type($models) `)`)?
    (`lr_scale` `(` $lr_scale^ `:` type($lr_scale) `)`)?
    (`comps` `(` $comps^ `:` type($comps) `)`)?
    (`counter` `(` $counter^ `:` type($counter) `)`)?
    attr-dict
  }];
  // Opt level O2 (model copies): the builder without them.
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$params, "::mlir::ValueRange":$grads,
                   "::mlir::ValueRange":$momentum_buffers,
                   "::mlir::Value":$found_inf, "::mlir::FloatAttr":$lr,
                   "::mlir::FloatAttr":$momentum,
                   "::mlir::FloatAttr":$weight_decay,
                   "::mlir::BoolAttr":$nesterov), [{
      build($_builder, $_state, params, grads, momentum_buffers, found_inf,
            ::mlir::ValueRange(), ::mlir::Value(), ::mlir::ValueRange(),
            ::mlir::Value(), lr, momentum, weight_decay, nesterov,
            ::mlir::DenseI64ArrayAttr(), ::mlir::StringAttr(),
            ::mlir::IntegerAttr(), ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The updated parameters, in the order of `params`.
    ::mlir::ResultRange getNewParams() {
      return getUpdated().take_front(getParams().size());
    }
    /// The updated momentum buffers (empty when momentum is 0).
    ::mlir::ResultRange getNewMomentumBuffers() {
      return getUpdated()
          .drop_front(getParams().size())
          .take_front(getMomentumBuffers().size());
    }
    /// The new low model copies (opt level O2), in the order of `models`.
    ::mlir::ResultRange getNewModels() {
      return getUpdated().slice(getParams().size() +
                                    getMomentumBuffers().size(),
                                getModels().size());
    }
    /// The new Kahan compensation buffers, in the order of `comps`.
    ::mlir::ResultRange getNewComps() {
      return getUpdated().slice(getParams().size() +
                                    getMomentumBuffers().size() +
                                    getModels().size(),
                                getComps().size());
    }
    /// The advanced update counter, or null.
    ::mlir::Value getNewCounter() {
      return getCounter() ? ::mlir::Value(getUpdated().back())
                          : ::mlir::Value();
    }
  }];  // Hyperparameters are checked by the verifier: the custom form parses
  // them after the result types are inferred.
  let hasVerifier = 1;
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["params", "momentum_buffers", "models", "comps", "counter"];
  let lossScaleRole = TG_GradientConsumerRole;
  let kernels = ["ampc_sgd_update"];
  let kernelArgs = [TG_List<0>, TG_Dtypes<0>, TG_List<1>, TG_Dtypes<1>, TG_List<2>,
                    TG_Numels<0>, TG_Count<0>, TG_AttrF64<"lr">, TG_AttrF64<"momentum">,
                    TG_AttrF64<"weight_decay">, TG_AttrBool<"nesterov">,
                    TG_ConstF64<"0.0">, TG_FlagArg<3>, TG_OptBuf<5>];
}

def TG_AdamWUpdateOp : TG_StrictInferOp<"adamw_update",
    [AttrSizedOperandSegments]> {
  let summary = "One `torch.optim.AdamW` step over every parameter";
  let description = [{
    For each parameter `p` with gradient `g` and moments `m = exp_avg`,
    `v = exp_avg_sq` (f32, the parameter's shape), exactly PyTorch's AdamW
    (`amsgrad = False`), with the step count `t` shared by all parameters:

    ```
    t = step + 1
    p = p * (1 - lr * weight_decay)               (decoupled weight decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    ```

    computed in f32 and stored in each tensor's type; `step` is an i32
    scalar starting at 0. With `found_inf` nonzero nothing changes, the step
    count included. Results: new parameters, new `exp_avg`s, new
    `exp_avg_sq`s (one list, `updated`), new step. Runtime kernel:
    `ampc_adamw_update`.

    Opt level O2: `models` are low model copies of the parameters
    `model_params` names (indices into `params`, increasing); the kernel
    writes each one from the updated f32 parameter in the same pass
    (`ampc_adamw_update_model`), and the new copies end the `updated` list.

    `lr_scale` (optional, an f32 scalar) multiplies `lr`: a learning-rate
    schedule's factor (`tg.lr_schedule`), read on the device.

    Updates of 16-bit params (`--low-update`, `--optimizer-state-dtype`):
    the moments may be bf16 (or f16; `exp_avg` and `exp_avg_sq` of one
    param alike), and `low_update`, `param_base`, `comps` and
    `comp_params` mean what they mean for `tg.sgd_update`, the stochastic
    rounding's update count being the step count `t`. The new compensation
    buffers follow the model copies in `updated`. Runtime kernel:
    `ampc_adamw_update_low`.

    ```mlir
    %p, %m, %v, %t = tg.adamw_update params(%w : tensor<4x4xf32>)
        grads(%gw : tensor<4x4xf32>) exp_avgs(%mw : tensor<4x4xf32>)
        exp_avg_sqs(%vw : tensor<4x4xf32>) step(%step : tensor<i32>)
        {beta1 = 9.0e-01 : f64, beta2 = 9.990e-01 : f64, eps = 1.0e-08 : f64,
         lr = 1.0e-03 : f64, weight_decay = 1.0e-02 : f64}
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$params,
                       Variadic<TG_FloatTensor>:$grads,
                       Variadic<TG_FloatTensor>:$exp_avgs,
                       Variadic<TG_FloatTensor>:$exp_avg_sqs,
                       TG_I32Scalar:$step,
                       Optional<TG_FlagTensor>:$found_inf,
                       Variadic<TG_FloatTensor>:$models,
                       Optional<TG_F32Scalar>:$lr_scale,
                       Variadic<TG_FloatTensor>:$comps,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$eps, F64Attr:$weight_decay,
                       OptionalAttr<DenseI64ArrayAttr>:$model_params,
                       OptionalAttr<StrAttr>:$low_update,
                       OptionalAttr<I64Attr>:$param_base,
                       OptionalAttr<DenseI64ArrayAttr>:$comp_params);
  // One list (new params, exp_avgs, exp_avg_sqs, models): the model copies
  // of O2 need not cover every parameter.
  let results = (outs Variadic<TG_FloatTensor>:$updated,
                      TG_I32Scalar:$new_step);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)`
    `grads` `(` $grads `:` type($grads) `)`
    `exp_avgs` `(` $exp_avgs `:` type($exp_avgs) `)`
    `exp_avg_sqs` `(` $exp_avg_sqs `:` type($exp_avg_sqs) `)`
    `step` `(` $step `:` type($step) `)`
    (`found_inf` `(` $found_inf^ `:` type($found_inf) `)`)?
    (`models` `(` $models^ `:` type($models) `)`)?
    (`lr_scale` `(` $lr_scale^ `:` type($lr_scale) `)`)?
    (`comps` `(` $comps^ `:` type($comps) `)`)?
    attr-dict
  }];
  // Opt level O2 (model copies): the builder without them.
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$params, "::mlir::ValueRange":$grads,
                   "::mlir::ValueRange":$exp_avgs,
                   "::mlir::ValueRange":$exp_avg_sqs, "::mlir::Value":$step,
                   "::mlir::Value":$found_inf, "::mlir::FloatAttr":$lr,
                   "::mlir::FloatAttr":$beta1, "::mlir::FloatAttr":$beta2,
                   "::mlir::FloatAttr":$eps,
                   "::mlir::FloatAttr":$weight_decay), [{
      build($_builder, $_state, params, grads, exp_avgs, exp_avg_sqs, step,
            found_inf, ::mlir::ValueRange(), ::mlir::Value(),
            ::mlir::ValueRange(), lr, beta1, beta2, eps, weight_decay,
            ::mlir::DenseI64ArrayAttr(), ::mlir::StringAttr(),
            ::mlir::IntegerAttr(), ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The updated parameters, in the order of `params`.
    ::mlir::ResultRange getNewParams() {
      return getUpdated().take_front(getParams().size());
    }
    /// The updated first moments, in the order of `params`.
    ::mlir::ResultRange getNewExpAvgs() {
      return getUpdated().slice(getParams().size(), getParams().size());
    }
    /// The updated second moments, in the order of `params`.
    ::mlir::ResultRange getNewExpAvgSqs() {
      return getUpdated().slice(2 * getParams().size(), getParams().size());
    }
    /// The new low model copies (opt level O2), in the order of `models`.
    ::mlir::ResultRange getNewModels() {
      return getUpdated().slice(3 * getParams().size(), getModels().size());
    }
    /// The new Kahan compensation buffers, in the order of `comps`.
    ::mlir::ResultRange getNewComps() {
      return getUpdated().take_back(getComps().size());
    }
  }];
  let hasVerifier = 1;
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["params", "exp_avgs", "exp_avg_sqs", "models", "comps", "step"];
  let lossScaleRole = TG_GradientConsumerRole;
  let kernels = ["ampc_adamw_update"];
  let kernelArgs = [TG_List<0>, TG_Dtypes<0>, TG_List<1>, TG_Dtypes<1>, TG_List<2>,
                    TG_List<3>, TG_Buf<4>, TG_Numels<0>, TG_Count<0>, TG_AttrF64<"lr">,
                    TG_AttrF64<"beta1">, TG_AttrF64<"beta2">, TG_AttrF64<"eps">,
                    TG_AttrF64<"weight_decay">, TG_ConstF64<"0.0">, TG_FlagArg<5>,
                    TG_OptBuf<7>];
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

def TG_CheckFiniteAndUnscaleOp : TG_StrictInferOp<"check_finite_and_unscale"> {
  let summary = "Fused inf/NaN check and unscale of every gradient";
  let description = [{
    One pass over all gradients of a loss-scaled step, as PyTorch's
    `torch._amp_foreach_non_finite_check_and_unscale_`: each result is its
    gradient times `1 / scale` (the reciprocal computed in f32, the product
    stored in the gradient's type), and the last result, `found_inf`, is
    1.0 when any element of any gradient is inf or NaN and 0.0 otherwise.
    The loss-scaling pass makes exactly one per training step. Runtime
    kernel: `ampc_check_finite_unscale`.

    ```mlir
    %g:2, %found_inf = tg.check_finite_and_unscale %gw, %gb scale %s
        : tensor<4x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$grads, TG_F32Scalar:$scale);
  let results = (outs Variadic<TG_FloatTensor>:$unscaled,
                      TG_F32Scalar:$found_inf);
  let assemblyFormat = [{
    $grads `scale` $scale attr-dict `:` type($grads)
  }];
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["grads"];
  let lossScaleRole = TG_UnscaleRole;
  let kernels = ["ampc_check_finite_unscale"];
  let kernelArgs = [TG_ResBuf<1>, TG_F32Dtype, TG_List<0>, TG_Dtypes<0>, TG_Numels<0>,
                    TG_Count<0>, TG_Buf<1>, TG_MarkFoundInf<1>];
}

// All result types are fixed (buildable), so ODS builds them without inference.
def TG_UpdateScaleOp : TG_Op<"update_scale", [Pure]> {
  let summary = "Dynamic loss-scale update (docs/amp.md)";
  let description = [{
    The scale update of loss scaling (docs/amp.md) on device-resident state: `scale` (f32),
    `growth_tracker` and `hysteresis_left` (i32). Returns their new values:

    ```
    if found_inf:
      growth_tracker = 0
      hysteresis_left -= 1
      if hysteresis_left <= 0: scale = max(scale * backoff_factor, min_scale)
    else:
      growth_tracker += 1
      if growth_tracker == growth_interval:
        growth_tracker = 0
        hysteresis_left = hysteresis
        if isfinite(scale * growth_factor) and scale * growth_factor <= max_scale:
          scale = scale * growth_factor
    ```

    `min_scale` and `max_scale` are optional (no bound). With
    `hysteresis = 1` this is PyTorch's `GradScaler.update()`; with 2,
    Megatron-LM's. Runtime kernel: `ampc_update_scale`.

    ```mlir
    %s2, %t2, %h2 = tg.update_scale %s, %t, %h found_inf %f
        {backoff_factor = 5.0e-01 : f64, growth_factor = 2.0 : f64,
         growth_interval = 2000 : i64, hysteresis = 1 : i64}
        : tensor<f32>
    ```
  }];
  let arguments = (ins TG_F32Scalar:$scale, TG_I32Scalar:$growth_tracker,
                       TG_I32Scalar:$hysteresis_left, TG_FlagTensor:$found_inf,
                       F64Attr:$growth_factor, F64Attr:$backoff_factor,
                       I64Attr:$growth_interval, I64Attr:$hysteresis,
                       OptionalAttr<F64Attr>:$min_scale,
                       OptionalAttr<F64Attr>:$max_scale);
  let results = (outs TG_F32Scalar:$new_scale,
                      TG_I32Scalar:$new_growth_tracker,
                      TG_I32Scalar:$new_hysteresis_left);
  let assemblyFormat = [{
    $scale `,` $growth_tracker `,` $hysteresis_left `found_inf` $found_inf
    attr-dict `:` type($found_inf)
  }];
  let hasVerifier = 1;
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["scale", "growth_tracker", "hysteresis_left"];
  let lossScaleRole = TG_ScaleUpdateRole;
  let kernels = ["ampc_update_scale"];
  let kernelArgs = [TG_Buf<0>, TG_Buf<1>, TG_Buf<2>, TG_FlagArg<3>,
                    TG_AttrF64<"growth_factor">, TG_AttrF64<"backoff_factor">,
                    TG_AttrI32<"growth_interval">, TG_AttrI32<"hysteresis">,
                    TG_AttrF64<"min_scale">, TG_AttrF64<"max_scale">];
}

} // training = 1, language = ""

#endif // AMPC_DIALECT_TG_TGTRAININGOPS_TD
