//===- TGSeedOps2.td - GEMM-family and prelu ops of the fp16 list -*- tablegen -*-===//
//
// More ops of PyTorch's CUDA autocast fp16 list (torch_fp16 and nn_fp16 of
// torch/testing/_internal/autocast_test_lists.py): the fused GEMM-plus-add
// family `addmm`, `baddbmm`, `addbmm`, `addmv`, `addr`, and `prelu`.
// Included from TGOps.td after TGSeedOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGSEEDOPS2_TD
#define AMPC_DIALECT_TG_TGSEEDOPS2_TD

// `beta * input + alpha * (lhs · rhs)`: one GEMM whose C operand holds
// `beta * input` broadcast to the result (beta accumulation), accumulated in
// f32 and rounded once to the result type.
class TG_AddGemmOp<string mnemonic, string torchName, string product,
                   string example> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let summary = "`beta * input + alpha * " # product # "` (`" # torchName # "`)";
  let description = [{
    PyTorch's argument order and defaults: `}] # mnemonic # [{(input, a, b,
    beta=1.0, alpha=1.0)`. `input` broadcasts to the result shape as in
    PyTorch (it may not enlarge it); with `beta = 0` it is not read (NaN in
    it does not propagate). Mixed float dtypes compute in the widest one.

    ```mlir
    }] # example # [{
    ```

    Runtime kernel: `ampc_}] # mnemonic # [{_fwd`, one GEMM call (a batched
    one for `baddbmm`, one per batch entry accumulating for `addbmm`) whose
    C operand is first filled with `beta * input`; the GEMM accumulates
    into it with beta 1. Gradients: `beta * dy` summed to `input`'s shape;
    `alpha` times the matmul gradients for `a` and `b`.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$lhs,
                       TG_FloatTensor:$rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $lhs `,` $rhs attr-dict `:` type($input) `,` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
  let ampClass = TG_Lower;
  // The GEMM reads its matrices in their compute precision; `input` is
  // converted as it is copied into the accumulator.
  let loadConverts = ["input"];
  let torch = torchName;
}

def TG_AddmmOp : TG_AddGemmOp<"addmm", "torch.addmm", "(a @ b)",
    "%y = tg.addmm %c, %a, %b {alpha = 2.0 : f64, beta = 0.5 : f64} : tensor<5xf32>, tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x5xf32>"> {
}
def TG_BaddbmmOp : TG_AddGemmOp<"baddbmm", "torch.baddbmm", "bmm(a, b)",
    "%y = tg.baddbmm %c, %a, %b : tensor<2x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>"> {
}
def TG_AddbmmOp : TG_AddGemmOp<"addbmm", "torch.addbmm",
    "sum over i of a[i] @ b[i]",
    "%y = tg.addbmm %c, %a, %b : tensor<3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<3x5xf32>"> {
}
def TG_AddmvOp : TG_AddGemmOp<"addmv", "torch.addmv", "mv(a, v)",
    "%y = tg.addmv %c, %a, %v : tensor<3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<3xf32>"> {
}
def TG_AddrOp : TG_AddGemmOp<"addr", "torch.addr", "outer(u, v)",
    "%y = tg.addr %c, %u, %v : tensor<1xf32>, tensor<3xf32>, tensor<4xf32> -> tensor<3x4xf32>"> {
}

def TG_PreluOp : TG_InferOp<"prelu", [TG_Differentiable]> {
  let summary = "Parametric ReLU, `x > 0 ? x : w * x` (`F.prelu`)";
  let description = [{
    `weight` is `[1]` (one slope) or `[C]`, one slope per channel of dim 1
    of `input` (`input` must then have rank >= 2), as `F.prelu`. The result
    has `input`'s shape. In PyTorch's CUDA autocast fp16 list (nn_fp16).

    ```mlir
    %y = tg.prelu %x, %w : tensor<2x3x5xf32>, tensor<3xf32> -> tensor<2x3x5xf32>
    ```

    Runtime kernel: `ampc_prelu_fwd` (the broadcasting binary path, the
    weight viewed as `[C, 1, ...]`); gradient `tg.prelu_grad`.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->`
    type($result)
  }];
  let ampClass = TG_Lower;
  let torch = "F.prelu";
}

def TG_PreluGradOp : TG_InferOp<"prelu_grad"> {
  let summary = "Gradients of `tg.prelu` with respect to input and weight";
  let description = [{
    `d input = input > 0 ? grad : w * grad` (the input's shape) and
    `d weight` = the sum of `input > 0 ? 0 : input * grad` over every dim but
    the channel dim (the weight's shape), both in the promoted type of the
    three operands. Runtime kernel: `ampc_prelu_bwd`.

    ```mlir
    %dx, %dw = tg.prelu_grad %dy, %x, %w
        : tensor<2x3x5xf32>, tensor<2x3x5xf32>, tensor<3xf32>
        -> tensor<2x3x5xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($grad) `,` type($input)
    `,` type($weight) `->` type($input_grad) `,` type($weight_grad)
  }];
  let ampClass = TG_Lower;
  let kernels = ["ampc_prelu_bwd"];
  let training = 1;
  let language = "";
}

//===----------------------------------------------------------------------===//
// Convolutions over 1 and 3 spatial dims, and their transposed forms
//===----------------------------------------------------------------------===//

// `kind` is the spelling of the spatial keywords: "single" (one integer or
// a list of one) for 1-D, "triple" for 3-D.
class TG_ConvNdOp<string mnemonic, string torchName, string layout,
                  string kind, string example> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let summary = "Convolution, " # layout # " (`" # torchName # "`)";
  let description = [{
    PyTorch's layouts and argument order: `}] # mnemonic # [{(x, w[, b],
    stride=1, padding=0, dilation=1, groups=1)`; `b` is `[O]`. The spatial
    attributes hold one value per spatial dim (a single integer in the
    language sets all of them).

    ```mlir
    }] # example # [{
    ```

    Runtime kernel: `ampc_}] # mnemonic # [{_fwd`, the im2col + GEMM core
    of conv2d (one GEMM per image and group, f32 accumulation). Gradient:
    `tg.}] # mnemonic # [{_grad` and a `tg.sum` of `dy` for the bias.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `stride` $stride `padding` $padding
    `dilation` $dilation `groups` $groups attr-dict
    `:` type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let ampClass = TG_Lower;
  let loadConverts = ["bias"];
  let torch = torchName;
  let keywords = [TG_Keyword<"stride", kind, "1">, TG_Keyword<"padding", kind, "0">,
                  TG_Keyword<"dilation", kind, "1">, TG_Keyword<"groups", "int", "1">];
}

def TG_Conv1dOp : TG_ConvNdOp<"conv1d", "F.conv1d",
    "NCL input, OIL weight", "single",
    "%y = tg.conv1d %x, %w stride [1] padding [1] dilation [1] groups 1 : tensor<2x3x9xf32>, tensor<4x3x3xf32> -> tensor<2x4x9xf32>">;
def TG_Conv3dOp : TG_ConvNdOp<"conv3d", "F.conv3d",
    "NCDHW input, OIDHW weight", "triple",
    "%y = tg.conv3d %x, %w stride [1, 1, 1] padding [0, 0, 0] dilation [1, 1, 1] groups 1 : tensor<1x2x4x5x5xf32>, tensor<3x2x3x3x3xf32> -> tensor<1x3x2x3x3xf32>">;

class TG_ConvTransposeNdOp<string mnemonic, string torchName, string conv,
                           string kind, string example> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let summary = "Transposed convolution (`" # torchName # "`)";
  let description = [{
    PyTorch's layout and argument order: `}] # mnemonic # [{(x, w[, b],
    stride=1, padding=0, output_padding=0, groups=1, dilation=1)`, `x`
    `[N, C_in, spatial...]`, `w` `[C_in, C_out/groups, k...]`, `b`
    `[C_out]`. Each output size is `(in - 1) * stride - 2 * padding +
    dilation * (k - 1) + output_padding + 1`: the gradient of a `}] # conv
    # [{` with weight `w` with respect to its input. `output_padding` must be
    smaller than the stride or the dilation in each dim, as in PyTorch.

    ```mlir
    }] # example # [{
    ```

    Runtime kernel: `ampc_}] # mnemonic # [{_fwd` (the backward-data path
    of }] # conv # [{: GEMM and col2im on both backends). The gradient is a
    `tg.}] # conv # [{` of `dy` for `x` and the weight gradient of
    `tg.}] # conv # [{_grad` for `w`.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$output_padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `stride` $stride `padding` $padding
    `output_padding` $output_padding `dilation` $dilation `groups` $groups
    attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? `->`
    type($result)
  }];
  let ampClass = TG_Lower;
  let loadConverts = ["bias"];
  let torch = torchName;
  let keywords = [TG_Keyword<"stride", kind, "1">, TG_Keyword<"padding", kind, "0">,
                  TG_Keyword<"output_padding", kind, "0">,
                  TG_Keyword<"groups", "int", "1">, TG_Keyword<"dilation", kind, "1">];
}

def TG_ConvTranspose1dOp : TG_ConvTransposeNdOp<"conv_transpose1d",
    "F.conv_transpose1d", "conv1d", "single",
    "%y = tg.conv_transpose1d %x, %w stride [2] padding [1] output_padding [1] dilation [1] groups 1 : tensor<2x4x5xf32>, tensor<4x3x3xf32> -> tensor<2x3x10xf32>">;
def TG_ConvTranspose3dOp : TG_ConvTransposeNdOp<"conv_transpose3d",
    "F.conv_transpose3d", "conv3d", "triple",
    "%y = tg.conv_transpose3d %x, %w stride [1, 1, 1] padding [0, 0, 0] output_padding [0, 0, 0] dilation [1, 1, 1] groups 1 : tensor<1x2x2x3x3xf32>, tensor<2x3x3x3x3xf32> -> tensor<1x3x4x5x5xf32>">;

class TG_ConvNdGradOp<string mnemonic, string fwd> : TG_InferOp<mnemonic> {
  let summary = "Gradients of `tg." # fwd # "` with respect to input and weight";
  let description = [{
    `grad` is the gradient of `tg.}] # fwd # [{ %input, %weight` with the
    same attributes (its shape must be that convolution's output shape).
    Returns `d input` (a transposed convolution of `grad`) and `d weight`
    (the correlation of `input` with `grad`), in the promoted type of the
    three operands. The bias gradient is a `tg.sum` of `grad`. Runtime
    kernel: `ampc_}] # fwd # [{_bwd`.
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation,
                       I64Attr:$groups);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `stride` $stride `padding` $padding
    `dilation` $dilation `groups` $groups attr-dict
    `:` type($grad) `,` type($input) `,` type($weight)
    `->` type($input_grad) `,` type($weight_grad)
  }];
  // A backward GEMM: low precision, like the forward conv.
  let ampClass = TG_Lower;
  let loadConverts = [];
  let kernels = ["ampc_" # fwd # "_bwd"];
  let training = 1;
  let language = "";
}

def TG_Conv1dGradOp : TG_ConvNdGradOp<"conv1d_grad", "conv1d">;
def TG_Conv3dGradOp : TG_ConvNdGradOp<"conv3d_grad", "conv3d">;

//===----------------------------------------------------------------------===//
// The fixed-rank GEMM spellings: mm, bmm, mv
//===----------------------------------------------------------------------===//

// `torch.mm`, `torch.bmm`, `torch.mv`: `torch.matmul` on fixed ranks, with
// records of their own so the AMP report and `--list-ops` name the op the
// program wrote. They share matmul's kernel.
class TG_FixedRankMatmulOp<string mnemonic, string torchName, string ranks,
                           string example> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let summary = "Matrix product on fixed ranks (`" # torchName # "`)";
  let description = [{
    `}] # ranks # [{`. The same product as `tg.matmul` on these ranks (no
    broadcasting); mixed float dtypes compute in the wider one.

    ```mlir
    }] # example # [{
    ```

    Runtime kernel: `ampc_matmul_fwd` (one GEMM, a strided-batched one for
    `bmm`). Gradients: the same op on `dy` and the transposed other operand.
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let ampClass = TG_Lower;
  let loadConverts = [];
  let kernels = ["ampc_matmul_fwd"];
  let torch = torchName;
}

def TG_MmOp : TG_FixedRankMatmulOp<"mm", "torch.mm", "a [m, k] @ b [k, n] -> [m, n]",
    "%y = tg.mm %a, %b : tensor<4x6xf32>, tensor<6x5xf32> -> tensor<4x5xf32>">;
def TG_BmmOp : TG_FixedRankMatmulOp<"bmm", "torch.bmm",
    "a [B, m, k] @ b [B, k, n] -> [B, m, n], equal batch sizes",
    "%y = tg.bmm %a, %b : tensor<3x4x6xf32>, tensor<3x6x2xf32> -> tensor<3x4x2xf32>">;
def TG_MvOp : TG_FixedRankMatmulOp<"mv", "torch.mv", "a [n, m] @ v [m] -> [n]",
    "%y = tg.mv %a, %v : tensor<4x6xf32>, tensor<6xf32> -> tensor<4xf32>">;

#endif // AMPC_DIALECT_TG_TGSEEDOPS2_TD
