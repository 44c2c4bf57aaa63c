//===- TGSeedOps.td - ops of PyTorch's autocast lists ------*- tablegen -*-===//
//
// Ops of PyTorch's CUDA autocast lists (torch/testing/_internal/
// autocast_test_lists.py) that the first op set did not have. Included from
// TGOps.td after the elementwise classes.
//
// `a @ b` is `tg.matmul`; `mm`, `bmm` and `mv` have records in
// TGSeedOps2.td, and the frontend builds `chain_matmul` as a chain of
// `tg.mm` (lib/Frontend/MLIRGen.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGSEEDOPS_TD
#define AMPC_DIALECT_TG_TGSEEDOPS_TD

// PyTorch's fp32 list (torch_fp32): computed and returned in f32 under AMP.

// log(1 + x); gradient dy / (1 + x).
def TG_Log1pOp : TG_UnaryOp<"log1p", "torch.log1p", TG_FloatTensor, TG_FP32,
    (TGOp<"div"> $dy, (TGOp<"add"> $input, (TG_Scalar<"1.0"> $input)))>;
// exp(x) - 1; gradient dy * (y + 1), reusing the result.
def TG_Expm1Op : TG_UnaryOp<"expm1", "torch.expm1", TG_FloatTensor, TG_FP32,
    (TGOp<"mul"> $dy, (TGOp<"add"> $result, (TG_Scalar<"1.0"> $result)))>;
// 1 / x; gradient -dy * y * y, reusing the result.
def TG_ReciprocalOp : TG_UnaryOp<"reciprocal", "torch.reciprocal",
    TG_FloatTensor, TG_FP32,
    (TGOp<"neg"> (TGOp<"mul"> $dy, (TGOp<"mul"> $result, $result)))>;

// PyTorch's fp16 list (torch_fp16): lower under AMP.

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
}

#endif // AMPC_DIALECT_TG_TGSEEDOPS_TD
