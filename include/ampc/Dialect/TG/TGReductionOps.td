//===- TGReductionOps.td - the reductions and their gradients --*- tablegen -*-===//
//
// The reductions, each with its gradient op: `sum`, `mean`, `max` (over
// `dims`), `logsumexp`, `norm`, the scan `cumsum` and `cosine_similarity`.
// `sum` and `mean` and the ops of PyTorch's CUDA autocast fp32 list
// (torch/testing/_internal/autocast_test_lists.py, `torch_fp32` and
// `nn_fp32`: logsumexp, cumsum, norm, cosine_similarity) are `fp32` under
// AMP: float inputs are read as f32 and the result is f32. Included from
// TGOps.td; inference in lib/Dialect/TG/TGReductionOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGREDUCTIONOPS_TD
#define AMPC_DIALECT_TG_TGREDUCTIONOPS_TD

//===----------------------------------------------------------------------===//
// sum, mean, max
//===----------------------------------------------------------------------===//

class TG_ReduceOp<string mnemonic, string torchName, Type tensorType,
                  TG_AmpClass cls> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let ampClass = cls;
  let keywords = [TG_Keyword<"dims", "dims">, TG_Keyword<"keepdim", "bool", "false">];
  let summary = "`" # torchName # "` over `dims`";
  let description = [{
    Reduces over `dims` (sorted, distinct, in range; the frontend expands
    "no dims" to all dims and negative dims to positive ones). With
    `keepdim` the reduced dims stay as size 1.

    ```mlir
    %s = tg.sum %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins tensorType:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs tensorType:$result);
  let assemblyFormat = [{
    $input `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)
  }];
}

// The sum of an integer or bool tensor is i64 (torch.sum), exact.
def TG_SumOp : TG_ReduceOp<"sum", "torch.sum", TG_Tensor, TG_FP32>;

// fp32 as in TensorFlow's deny list: reductions stay in f32.
def TG_MeanOp : TG_ReduceOp<"mean", "torch.mean", TG_FloatTensor, TG_FP32>;

def TG_MaxOp : TG_ReduceOp<"max", "torch.amax", TG_NumTensor, TG_Follow> {
  let gradients = [(TGOp<"max_grad"> $dy, $input, $result)];
}

def TG_MaxGradOp : TG_InferOp<"max_grad"> {
  let summary = "Gradient of the `tg.max` reduction";
  let description = [{
    `grad` has the shape of the forward result `result` (`tg.max %input dims
    DIMS`, same `dims` and `keepdim`); the gradient is split evenly between
    the elements of each reduced group that equal the maximum (PyTorch's
    `amax` backward). The result has the input's shape. Runtime kernel:
    `ampc_max_bwd`.

    ```mlir
    %dx = tg.max_grad %dy, %x, %y dims [1] : tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$result_value, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $result_value `dims` $dims (`keepdim` $keepdim^)? attr-dict
    `:` type($grad) `,` type($input) `,` type($result_value) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let kernels = ["ampc_max_bwd"];
  let training = 1;
  let language = "";
}

//===----------------------------------------------------------------------===//
// logsumexp, norm
//===----------------------------------------------------------------------===//

def TG_LogsumexpOp : TG_InferOp<"logsumexp", [TG_Differentiable]> {
  let summary = "`torch.logsumexp` over `dims`";
  let description = [{
    `log(sum(exp(x), dims))`, computed stably as PyTorch does: the maximum
    over `dims` is subtracted before `exp` and added back (an infinite
    maximum is replaced by 0, so all `-inf` gives `-inf`). `dims` are sorted,
    distinct and non-negative (the frontend resolves negative ones and
    expands "no dims" to all dims); with `keepdim` the reduced dims stay as
    size 1. The gradient is `logsumexp_grad`: `dy * exp(x - y)`.

    ```mlir
    %y = tg.logsumexp %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"dims", "dims">, TG_Keyword<"keepdim", "bool", "false">];
  let gradients = [(TGOp<"logsumexp_grad"> $dy, $input, $result)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrDims<"dims">, TG_AttrBool<"keepdim">];
}

def TG_NormOp : TG_InferOp<"norm", [TG_Differentiable]> {
  let summary = "`torch.norm(x, p, dims, keepdim)`: the vector p-norm over `dims`";
  let description = [{
    `(sum |x|^p)^(1/p)` over `dims` for a finite `p >= 1` (`p = 2` is
    `sqrt(sum x²)`, `p = 1` is `sum |x|`), or `max |x|` for `p = inf`
    (spelled `p=inf` in the language). `dims` and `keepdim` as for `sum`.
    Gradients as PyTorch's `norm_backward`: `p = 2`: `dy * x / y`, `p = 1`:
    `dy * sgn(x)`, other finite `p`: `dy * sgn(x) |x|^(p-1) / y^(p-1)`, each 0
    where `y` is 0; `p = inf`: `dy * sgn(x)` split evenly between the
    elements whose magnitude equals the maximum.

    ```mlir
    %n = tg.norm %x p 2.0 dims [1] : tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, F64Attr:$p,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `p` $p `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"p", "float", "2.0">, TG_Keyword<"dims", "dims">,
                  TG_Keyword<"keepdim", "bool", "false">];
  let gradients = [(TGOp<"norm_grad"> $dy, $input, $result)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrF64<"p">, TG_AttrDims<"dims">,
                    TG_AttrBool<"keepdim">];
}

// The backward op of a reduction `fwd` that needs its input and result:
// `dx` from `dy` (the result's shape), `x` and the forward result.
class TG_ReduceGradOp<string fwd, string rule, dag attrs> :
    TG_InferOp<fwd # "_grad"> {
  let summary = "Gradient of `tg." # fwd # "`";
  let description = [{
    `grad` has the shape of the forward result `result_value` (same `dims`
    and `keepdim` as the forward op); }] # rule # [{ The result has the
    input's shape and the promoted float type. Runtime kernel:
    `ampc_}] # fwd # [{_bwd`.
  }];
  let arguments = !con((ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                            TG_FloatTensor:$result_value), attrs);
  let results = (outs TG_FloatTensor:$result);
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_" # fwd # "_bwd"];
}

def TG_LogsumexpGradOp : TG_ReduceGradOp<"logsumexp",
    "`dx = dy * exp(x - y)`, `dy` and `y` broadcast over the reduced dims.",
    (ins DenseI64ArrayAttr:$dims, UnitAttr:$keepdim)> {
  let assemblyFormat = [{
    $grad `,` $input `,` $result_value `dims` $dims (`keepdim` $keepdim^)? attr-dict
    `:` type($grad) `,` type($input) `,` type($result_value) `->` type($result)
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_AttrDims<"dims">,
                    TG_AttrBool<"keepdim">];
}

def TG_NormGradOp : TG_ReduceGradOp<"norm",
    "the gradient of `tg.norm` with the same `p` (see its description).",
    (ins F64Attr:$p, DenseI64ArrayAttr:$dims, UnitAttr:$keepdim)> {
  let assemblyFormat = [{
    $grad `,` $input `,` $result_value `p` $p `dims` $dims (`keepdim` $keepdim^)? attr-dict
    `:` type($grad) `,` type($input) `,` type($result_value) `->` type($result)
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_AttrF64<"p">,
                    TG_AttrDims<"dims">, TG_AttrBool<"keepdim">];
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

def TG_CumsumOp : TG_InferOp<"cumsum", [TG_Differentiable]> {
  let summary = "`torch.cumsum` along `dim`";
  let description = [{
    `y[..., i, ...] = sum_{j <= i} x[..., j, ...]` along `dim` (non-negative;
    the frontend resolves negative dims). The result has the input's shape.
    A float input keeps its dtype: f32, f16 and bf16 sums are accumulated in
    f32, f64 sums in f64. An integer or bool input gives `i64` (as
    `torch.cumsum`), summed exactly with two's-complement wrap-around; such
    a cumsum has no gradient. The gradient of a float cumsum is the
    reversed cumulative sum of `dy` (`cumsum_grad`).

    ```mlir
    %y = tg.cumsum %x dim 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    %c = tg.cumsum %i dim 0 : tensor<5xui8> -> tensor<5xi64>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$dim);
  let results = (outs TG_NumTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"dim", "dim", "0">];
  let torch = "torch.cumsum";
  let gradients = [(TGOp<"cumsum_grad"> $dy)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrI64<"dim">];
}

def TG_CumsumGradOp : TG_InferOp<"cumsum_grad"> {
  let summary = "Gradient of `tg.cumsum`: the reversed cumulative sum";
  let description = [{
    `dx[..., i, ...] = sum_{j >= i} dy[..., j, ...]` along `dim`. Runtime
    kernel: `ampc_cumsum_bwd`.

    ```mlir
    %dx = tg.cumsum_grad %dy dim 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, I64Attr:$dim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `dim` $dim attr-dict `:` type($grad) `->` type($result)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_cumsum_bwd"];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrI64<"dim">];
}

//===----------------------------------------------------------------------===//
// cosine_similarity
//===----------------------------------------------------------------------===//

def TG_CosineSimilarityOp : TG_InferOp<"cosine_similarity", [TG_Differentiable]> {
  let summary = "`F.cosine_similarity(a, b, dim, eps)`";
  let description = [{
    `a` and `b` broadcast together (to a shape of `a`'s rank); the result
    drops `dim`. As PyTorch 1.13 computes it, each vector is divided by its
    own norm clamped below at `eps` and the products are summed:
    `sum((a / max(|a|, eps)) * (b / max(|b|, eps)), dim)`. The gradient
    (`cosine_similarity_grad`) differentiates through the clamped norms as
    PyTorch's autograd does.

    ```mlir
    %s = tg.cosine_similarity %a, %b dim 1 eps 1.0e-08
        : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs, I64Attr:$dim,
                       F64Attr:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `dim` $dim `eps` $eps attr-dict `:` type($lhs) `,` type($rhs)
    `->` type($result)
  }];
  let ampClass = TG_FP32;
  let keywords = [TG_Keyword<"dim", "dim", "1">, TG_Keyword<"eps", "float", "1e-08">];
  let torch = "F.cosine_similarity";
  let gradients = [
    (TG_Result<0> (TGOp<"cosine_similarity_grad"> $dy, $lhs, $rhs)),
    (TG_Result<1> (TGOp<"cosine_similarity_grad"> $dy, $lhs, $rhs))];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_AttrI64<"dim">, TG_AttrF64<"eps">];
}

def TG_CosineSimilarityGradOp : TG_InferOp<"cosine_similarity_grad"> {
  let summary = "Gradients of `tg.cosine_similarity` with respect to both operands";
  let description = [{
    With `na = max(|a|, eps)`, `nb = max(|b|, eps)` and `y` the forward
    result: `da = dy / na * (b / nb - y * a / na)`, `db = dy / nb * (a / na -
    y * b / nb)`, each summed to its operand's shape (broadcasting). Runtime
    kernel: `ampc_cosine_similarity_bwd`.

    ```mlir
    %da, %db = tg.cosine_similarity_grad %dy, %a, %b dim 1 eps 1.0e-08
        : tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$lhs,
                       TG_FloatTensor:$rhs, I64Attr:$dim, F64Attr:$eps);
  let results = (outs TG_FloatTensor:$lhs_grad, TG_FloatTensor:$rhs_grad);
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs `dim` $dim `eps` $eps attr-dict `:` type($grad) `,`
    type($lhs) `,` type($rhs) `->` type($lhs_grad) `,` type($rhs_grad)
  }];
  let ampClass = TG_FP32;
  let training = 1;
  let language = "";
  let kernels = ["ampc_cosine_similarity_bwd"];
  let kernelArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_AttrI64<"dim">, TG_AttrF64<"eps">];
}

#endif // AMPC_DIALECT_TG_TGREDUCTIONOPS_TD
