//===- TGLossOps.td - the losses and their gradients -------*- tablegen -*-===//
//
// Every loss: `cross_entropy`, `mse_loss`, `l1_loss`, `smooth_l1_loss`,
// `kl_div`, `nll_loss`, `binary_cross_entropy`,
// `binary_cross_entropy_with_logits`, each with its gradient op. Included from
// TGOps.td; inference in lib/Dialect/TG/TGLossOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGLOSSOPS_TD
#define AMPC_DIALECT_TG_TGLOSSOPS_TD

//===----------------------------------------------------------------------===//
// Cross-entropy and mean squared error
//===----------------------------------------------------------------------===//

def TG_CrossEntropyOp : TG_InferOp<"cross_entropy", [TG_Differentiable]> {
  let summary = "Mean cross-entropy of logits `[N, C]` and labels `[N]`";
  let description = [{
    `F.cross_entropy(logits, labels)` with the default mean reduction;
    labels are class indices (`i32` or `i64`). The result is a scalar of the
    logits' dtype.

    ```mlir
    %l = tg.cross_entropy %logits, %labels : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IntTensor:$labels);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let torch = "F.cross_entropy";
  let gradients = [(TGOp<"cross_entropy_grad"> $dy, $logits, $labels)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Site];
  // labels below dim 1 of the logits (the classes).
  let kernelIndexBound = [1, 0, 1];
  // Apex's O2 computes the losses on the model's f32 output.
  let o2KeptF32 = 1;
}

def TG_MseLossOp : TG_InferOp<"mse_loss", [TG_Differentiable]> {
  let summary = "Mean squared error of two same-shaped tensors";
  let description = [{
    `F.mse_loss(a, b)` with the default mean reduction; a scalar of the wider
    dtype.

    ```mlir
    %l = tg.mse_loss %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let torch = "F.mse_loss";
  let gradients = [
    (TG_Result<0> (TGOp<"mse_loss_grad"> $dy, $lhs, $rhs)),
    (TG_Result<1> (TGOp<"mse_loss_grad"> $dy, $lhs, $rhs))];
  let kernelArgs = TG_BinaryArgs;
  // Apex's O2 computes the losses on the model's f32 output.
  let o2KeptF32 = 1;
}

def TG_CrossEntropyGradOp : TG_InferOp<"cross_entropy_grad"> {
  let summary = "Gradient of `tg.cross_entropy` with respect to the logits";
  let description = [{
    `dlogits = (softmax(logits) - onehot(labels)) * grad / N` with `grad` the
    scalar gradient of the mean loss. The result has the logits' type.
    Runtime kernel: `ampc_cross_entropy_bwd`.

    ```mlir
    %dl = tg.cross_entropy_grad %seed, %logits, %labels
        : tensor<f32>, tensor<64x10xf32>, tensor<64xi32> -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$logits,
                       TG_IntTensor:$labels);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits)
    `,` type($labels) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let kernels = ["ampc_cross_entropy_bwd"];
  let training = 1;
  let language = "";
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>];
}

def TG_MseLossGradOp : TG_InferOp<"mse_loss_grad"> {
  let summary = "Gradients of `tg.mse_loss` with respect to both operands";
  let description = [{
    `d lhs = 2 * (lhs - rhs) * grad / numel`, `d rhs = -d lhs`, each with its
    operand's type; `grad` is the scalar gradient of the mean loss. Runtime
    kernel: `ampc_mse_loss_bwd`.

    ```mlir
    %da, %db = tg.mse_loss_grad %seed, %a, %b
        : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>
        -> tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$lhs,
                       TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$lhs_grad, TG_FloatTensor:$rhs_grad);
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs attr-dict `:` type($grad) `,` type($lhs) `,` type($rhs)
    `->` type($lhs_grad) `,` type($rhs_grad)
  }];
  let ampClass = TG_FP32;
  let kernels = ["ampc_mse_loss_bwd"];
  let training = 1;
  let language = "";
  let kernelArgs = TG_BinaryGradArgs;
}

//===----------------------------------------------------------------------===//
// Losses with a reduction
//===----------------------------------------------------------------------===//

// A loss of two float tensors of one shape with PyTorch's `reduction`:
// "none" (the elementwise terms), "mean", "sum" (and "batchmean", the sum
// divided by the size of dim 0, for kl_div). Its gradient is the backward
// op MNEMONIC_grad.
class TG_ReducedLossOp<string mnemonic, string torchName, dag attrs,
                       list<TG_Keyword> kws> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let summary = "`" # torchName # "`";
  let arguments = !con((ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs), attrs);
  let results = (outs TG_FloatTensor:$result);
  let ampClass = TG_FP32;
  let torch = torchName;
  let keywords = kws;
  let gradients = [
    (TG_Result<0> (TGOp<mnemonic # "_grad"> $dy, $lhs, $rhs)),
    (TG_Result<1> (TGOp<mnemonic # "_grad"> $dy, $lhs, $rhs))];
}

class TG_ReducedLossGradOp<string fwd, dag attrs> : TG_InferOp<fwd # "_grad"> {
  let summary = "Gradients of `tg." # fwd # "` with respect to both operands";
  let description = [{
    `grad` is the gradient of the loss (a scalar, or the operands' shape
    with `reduction = "none"`); each result has its operand's shape and the
    promoted float type. Runtime kernel: `ampc_}] # fwd # [{_bwd`.
  }];
  let arguments = !con((ins TG_FloatTensor:$grad, TG_FloatTensor:$lhs,
                            TG_FloatTensor:$rhs), attrs);
  let results = (outs TG_FloatTensor:$lhs_grad, TG_FloatTensor:$rhs_grad);
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_" # fwd # "_bwd"];
}

defvar TG_MeanReduction = TG_Keyword<"reduction", "string", "mean", ["none", "mean", "sum"]>;

def TG_L1LossOp : TG_ReducedLossOp<"l1_loss", "F.l1_loss",
    (ins StrAttr:$reduction), [TG_MeanReduction]> {
  let description = [{
    `|a - b|` per element of two tensors of one shape, reduced by
    `reduction` ("mean" by default, "sum", or "none": the terms). Gradients
    `dy * sgn(a - b)` and its negation (0 where `a == b`).

    ```mlir
    %l = tg.l1_loss %a, %b reduction "mean" : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    ```
  }];
  let assemblyFormat = [{
    $lhs `,` $rhs `reduction` $reduction attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrReduction<"reduction">];
}
def TG_L1LossGradOp : TG_ReducedLossGradOp<"l1_loss", (ins StrAttr:$reduction)> {
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs `reduction` $reduction attr-dict `:` type($grad) `,` type($lhs) `,`
    type($rhs) `->` type($lhs_grad) `,` type($rhs_grad)
  }];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrReduction<"reduction">];
}

def TG_SmoothL1LossOp : TG_ReducedLossOp<"smooth_l1_loss", "F.smooth_l1_loss",
    (ins F64Attr:$beta, StrAttr:$reduction),
    [TG_Keyword<"beta", "float", "1.0">, TG_MeanReduction]> {
  let description = [{
    With `d = a - b`: `0.5 d² / beta` where `|d| < beta`, `|d| - 0.5 beta`
    elsewhere (`beta = 0` is the L1 loss), reduced by `reduction` as
    `l1_loss`. Gradient of `a`: `dy * d / beta` inside, `dy * sgn(d)`
    outside; of `b` its negation. `beta` must not be negative.

    ```mlir
    %l = tg.smooth_l1_loss %a, %b beta 1.0 reduction "mean"
        : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    ```
  }];
  let assemblyFormat = [{
    $lhs `,` $rhs `beta` $beta `reduction` $reduction attr-dict `:` type($lhs) `,` type($rhs)
    `->` type($result)
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrF64<"beta">,
                    TG_AttrReduction<"reduction">];
}
def TG_SmoothL1LossGradOp : TG_ReducedLossGradOp<"smooth_l1_loss",
    (ins F64Attr:$beta, StrAttr:$reduction)> {
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs `beta` $beta `reduction` $reduction attr-dict `:` type($grad) `,`
    type($lhs) `,` type($rhs) `->` type($lhs_grad) `,` type($rhs_grad)
  }];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrF64<"beta">, TG_AttrReduction<"reduction">];
}

def TG_KlDivOp : TG_ReducedLossOp<"kl_div", "F.kl_div",
    (ins StrAttr:$reduction, UnitAttr:$log_target),
    [TG_Keyword<"reduction", "string", "batchmean", ["none", "batchmean", "sum", "mean"]>,
     TG_Keyword<"log_target", "bool", "false">]> {
  let description = [{
    `F.kl_div(input, target)`: `input` (lhs) holds log-probabilities; per
    element `xlogy(t, t) - t * input` (0 where `t == 0`), or with
    `log_target` (the target holds log-probabilities) `exp(t) * (t -
    input)`. The default reduction is "batchmean" (the sum divided by the
    size of dim 0, the mathematically correct KL divergence). "mean"
    divides by the element count, as PyTorch does for its own default
    "mean" (which it warns about); "sum" and "none" as usual. Gradients as
    PyTorch's: `d input = -dy * t` (`-dy * exp(t)` with `log_target`);
    `d target = dy * (log(t) + 1 - input)`, NaN where `t == 0` (`dy * exp(t)
    * (t - input + 1)` with `log_target`).

    ```mlir
    %l = tg.kl_div %logq, %p reduction "batchmean" : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    ```
  }];
  let assemblyFormat = [{
    $lhs `,` $rhs `reduction` $reduction (`log_target` $log_target^)? attr-dict `:` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrReduction<"reduction">,
                    TG_AttrBool<"log_target">];
}
def TG_KlDivGradOp : TG_ReducedLossGradOp<"kl_div",
    (ins StrAttr:$reduction, UnitAttr:$log_target)> {
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs `reduction` $reduction (`log_target` $log_target^)? attr-dict `:`
    type($grad) `,` type($lhs) `,` type($rhs) `->` type($lhs_grad) `,` type($rhs_grad)
  }];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrReduction<"reduction">, TG_AttrBool<"log_target">];
}

def TG_NllLossOp : TG_InferOp<"nll_loss", [TG_Differentiable]> {
  let summary = "`F.nll_loss` of log-probabilities `[N, C]` and labels `[N]`";
  let description = [{
    `-logp[i, labels[i]]` per row, where labels are class indices (`i32` or
    `i64`); rows whose label equals `ignore_index` (default -100) count 0
    and are left out of the mean. `reduction`: "mean" (default; the sum
    over the counted rows divided by their number, NaN when none counts),
    "sum", or "none" (`[N]`). The gradient (`nll_loss_grad`) is `-dy` (over
    the count for "mean") at each counted row's label, 0 elsewhere.
    A label outside `[0, C)` that is not `ignore_index` selects no class
    (its row counts as 0) and is recorded in the context's index check word
    (the kernel's check site), so `ampc run` stops with a located error, as
    PyTorch raises one.

    ```mlir
    %l = tg.nll_loss %logp, %labels ignore_index -100 reduction "mean"
        : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_IntTensor:$labels,
                       I64Attr:$ignore_index, StrAttr:$reduction);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $labels `ignore_index` $ignore_index `reduction` $reduction attr-dict `:`
    type($input) `,` type($labels) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let torch = "F.nll_loss";
  let keywords = [TG_Keyword<"ignore_index", "int", "-100">, TG_MeanReduction];
  let gradients = [(TGOp<"nll_loss_grad"> $dy, $input, $labels)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrI64<"ignore_index">,
                    TG_AttrReduction<"reduction">, TG_Site];
  // labels below dim 1 of the logits (the classes).
  let kernelIndexBound = [1, 0, 1];
  // Apex's O2 computes the losses on the model's f32 output.
  let o2KeptF32 = 1;
}

def TG_NllLossGradOp : TG_InferOp<"nll_loss_grad"> {
  let summary = "Gradient of `tg.nll_loss` with respect to the log-probabilities";
  let description = [{
    `grad` is the gradient of the loss (a scalar, or `[N]` with `reduction
    = "none"`); the result has the input's shape and the promoted float
    type. Runtime kernel: `ampc_nll_loss_bwd`.

    ```mlir
    %d = tg.nll_loss_grad %dy, %logp, %labels ignore_index -100 reduction "mean"
        : tensor<f32>, tensor<64x10xf32>, tensor<64xi32> -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_IntTensor:$labels, I64Attr:$ignore_index,
                       StrAttr:$reduction);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $labels `ignore_index` $ignore_index `reduction` $reduction attr-dict
    `:` type($grad) `,` type($input) `,` type($labels) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_nll_loss_bwd"];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrI64<"ignore_index">, TG_AttrReduction<"reduction">];
  // labels below dim 1 of the log-probabilities (the classes).
  let kernelIndexBound = [2, 1, 1];
}

//===----------------------------------------------------------------------===//
// Binary cross-entropy losses
//===----------------------------------------------------------------------===//

// A mean loss of two float tensors of one shape, computed in f32 by a kernel
// of its own; its gradient is the backward op `MNEMONIC_grad`.
class TG_PairLossOp<string mnemonic, string torchName, string first> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let summary = "`" # torchName # "` with the mean reduction";
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  // fp32 (amp.md v2). PyTorch's CUDA autocast refuses binary_cross_entropy
  // (it is unsafe to autocast); ampc computes it in f32 instead.
  let ampClass = TG_FP32;
  let torch = torchName;
  let gradients = [
    (TG_Result<0> (TGOp<mnemonic # "_grad"> $dy, $lhs, $rhs)),
    (TG_Result<1> (TGOp<mnemonic # "_grad"> $dy, $lhs, $rhs))];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferPairLoss("}] # mnemonic # [{", loc,
          adaptor.getLhs(), adaptor.getRhs(), types);
    }
  }];
  // Apex's O2 computes the losses on the model's f32 output.
  let o2KeptF32 = 1;
}

class TG_PairLossGradOp<string fwd> : TG_InferOp<fwd # "_grad"> {
  let summary = "Gradients of `tg." # fwd # "` with respect to both operands";
  let description = [{
    `grad` is the scalar gradient of the mean loss; each result has its
    operand's shape and the promoted float type. Runtime kernel:
    `ampc_}] # fwd # [{_bwd`.
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$lhs,
                       TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$lhs_grad, TG_FloatTensor:$rhs_grad);
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs attr-dict `:` type($grad) `,` type($lhs) `,` type($rhs)
    `->` type($lhs_grad) `,` type($rhs_grad)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_" # fwd # "_bwd"];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferPairLossGrad("}] # fwd # [{_grad", loc,
          adaptor.getGrad(), adaptor.getLhs(), adaptor.getRhs(), types);
    }
  }];
}

def TG_BinaryCrossEntropyOp : TG_PairLossOp<"binary_cross_entropy",
    "F.binary_cross_entropy", "p"> {
  let description = [{
    `mean(-(y * log(p) + (1 - y) * log(1 - p)))` of probabilities `p` (lhs)
    and targets `y` (rhs) of one shape, each log clamped at -100 as PyTorch
    does (so `p` of exactly 0 or 1 gives a finite loss); a scalar of the
    promoted dtype. Gradients as PyTorch's: `dp = dy * (p - y) /
    max(p * (1 - p), 1e-12) / numel`, `dy = dloss * (log(1 - p) - log(p)) /
    numel`.

    ```mlir
    %l = tg.binary_cross_entropy %p, %y : tensor<8x1xf32>, tensor<8x1xf32> -> tensor<f32>
    ```
  }];
  let kernelArgs = TG_BinaryArgs;
}
def TG_BinaryCrossEntropyGradOp : TG_PairLossGradOp<"binary_cross_entropy"> {
  let kernelArgs = TG_BinaryGradArgs;
}

def TG_BinaryCrossEntropyWithLogitsOp : TG_PairLossOp<
    "binary_cross_entropy_with_logits", "F.binary_cross_entropy_with_logits",
    "x"> {
  let description = [{
    The binary cross-entropy of `sigmoid(x)` (lhs, logits) and targets `y`
    (rhs) of one shape, in PyTorch's stable form `(1 - y) * x + m +
    log(exp(-m) + exp(-x - m))` with `m = max(-x, 0)`; the mean, a scalar of
    the promoted dtype. Gradients: `dx = dloss * (sigmoid(x) - y) / numel`,
    `dy = -dloss * x / numel`.

    ```mlir
    %l = tg.binary_cross_entropy_with_logits %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
    ```
  }];
  let kernelArgs = TG_BinaryArgs;
}
def TG_BinaryCrossEntropyWithLogitsGradOp :
    TG_PairLossGradOp<"binary_cross_entropy_with_logits"> {
  let kernelArgs = TG_BinaryGradArgs;
}

#endif // AMPC_DIALECT_TG_TGLOSSOPS_TD
