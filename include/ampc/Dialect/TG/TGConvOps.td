//===- TGConvOps.td - the convolutions and their gradients -*- tablegen -*-===//
//
// Every convolution: `conv1d`, `conv2d`, `conv3d`, `conv_transpose1d/2d/3d`
// and their gradient ops (`conv2d_grad`, `conv1d_grad`, `conv3d_grad`; a
// transposed convolution differentiates through the forward ones). Included
// from TGOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGCONVOPS_TD
#define AMPC_DIALECT_TG_TGCONVOPS_TD

// The arguments of every convolution kernel: (y, x, w, b, stride...,
// padding..., dilation..., groups), and of their backward kernels: (dx, dw,
// db (not computed: a sum of dy), dy, x, w, stride..., padding...,
// dilation..., groups), dx or dw null where no op reads it (the kernel then
// skips that pass: a network's first convolution computes no gradient of
// its input).
defvar TG_ConvArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_AttrEach<"stride">,
                      TG_AttrEach<"padding">, TG_AttrEach<"dilation">, TG_AttrI64<"groups">];
defvar TG_ConvGradArgs = [TG_ResOrNull<0>, TG_ResOrNull<1>, TG_NullTensor, TG_Opd<0>, TG_Opd<1>,
                          TG_Opd<2>, TG_AttrEach<"stride">, TG_AttrEach<"padding">,
                          TG_AttrEach<"dilation">, TG_AttrI64<"groups">];

//===----------------------------------------------------------------------===//
// The 2-D convolution and its gradient
//===----------------------------------------------------------------------===//

def TG_Conv2dOp : TG_InferOp<"conv2d", [TG_Differentiable]> {
  let summary = "2-D convolution, NCHW input, OIHW weight (`F.conv2d`)";
  let description = [{
    `x` is `[N, C, H, W]`, `w` is `[O, C/groups, KH, KW]`, the optional `b`
    is `[O]`. `stride`, `padding` and `dilation` hold (H, W) values.

    ```mlir
    %y = tg.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
        : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
    ```
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
  let keywords = [TG_Keyword<"stride", "pair", "1">, TG_Keyword<"padding", "pair", "0">,
                  TG_Keyword<"dilation", "pair", "1">, TG_Keyword<"groups", "int", "1">];
  let kernelArgs = TG_ConvArgs;
}

def TG_Conv2dGradOp : TG_InferOp<"conv2d_grad"> {
  let summary = "Gradients of `tg.conv2d` with respect to input and weight";
  let description = [{
    `grad` is the gradient of `tg.conv2d %input, %weight` with the same
    `stride`, `padding`, `dilation` and `groups` (its shape must be that
    conv's output shape). Returns `d input` (a transposed convolution of
    `grad`, the input's type) and `d weight` (the correlation of `input`
    with `grad`, the weight's type). The bias gradient is a `tg.sum` of
    `grad` over dims 0, 2, 3. Runtime kernel: `ampc_conv2d_bwd`.

    ```mlir
    %dx, %dw = tg.conv2d_grad %dy, %x, %w stride [1, 1] padding [1, 1]
        dilation [1, 1] groups 1
        : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
        -> tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
    ```
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
  let kernels = ["ampc_conv2d_bwd"];
  let training = 1;
  let language = "";
  let kernelArgs = TG_ConvGradArgs;
}

//===----------------------------------------------------------------------===//

// The 2-D transposed convolution
//===----------------------------------------------------------------------===//


def TG_ConvTranspose2dOp : TG_InferOp<"conv_transpose2d", [TG_Differentiable]> {
  let summary = "2-D transposed convolution (`F.conv_transpose2d`)";
  let description = [{
    `x` is `[N, C_in, H, W]`, `w` is PyTorch's `[C_in, C_out/groups, KH, KW]`,
    the optional `b` is `[C_out]`. The result is `[N, C_out, HO, WO]` with
    `HO = (H - 1) * stride - 2 * padding + dilation * (KH - 1) +
    output_padding + 1` (and likewise for W): the gradient of a `conv2d`
    with weight `w` with respect to its input. `output_padding` must be
    smaller than `stride` or `dilation` in each dim, as in PyTorch. All
    spatial attributes hold (H, W) values.

    ```mlir
    %y = tg.conv_transpose2d %x, %w stride [2, 2] padding [1, 1]
        output_padding [1, 1] dilation [1, 1] groups 1
        : tensor<2x8x4x4xf32>, tensor<8x3x3x3xf32> -> tensor<2x3x8x8xf32>
    ```

    Runtime kernel: `ampc_conv_transpose2d_fwd` (the backward-data path of
    conv2d: GEMM and col2im on both backends). The gradient is a `conv2d` of
    `dy` for `x` and the weight gradient of `tg.conv2d_grad` for `w`.
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
  let keywords = [TG_Keyword<"stride", "pair", "1">, TG_Keyword<"padding", "pair", "0">,
                  TG_Keyword<"output_padding", "pair", "0">,
                  TG_Keyword<"groups", "int", "1">, TG_Keyword<"dilation", "pair", "1">];
  let kernelArgs = TG_ConvArgs;
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
  let kernelArgs = TG_ConvArgs;
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
  let kernelArgs = TG_ConvArgs;
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
  let kernelArgs = TG_ConvGradArgs;
}

def TG_Conv1dGradOp : TG_ConvNdGradOp<"conv1d_grad", "conv1d">;
def TG_Conv3dGradOp : TG_ConvNdGradOp<"conv3d_grad", "conv3d">;

#endif // AMPC_DIALECT_TG_TGCONVOPS_TD
