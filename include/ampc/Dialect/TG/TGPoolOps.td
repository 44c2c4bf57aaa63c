//===- TGPoolOps.td - pooling and its gradients ------------*- tablegen -*-===//
//
// `max_pool2d`, `avg_pool2d` and their gradient ops. Included from TGOps.td;
// inference in lib/Dialect/TG/TGPoolOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGPOOLOPS_TD
#define AMPC_DIALECT_TG_TGPOOLOPS_TD

class TG_PoolOp<string mnemonic, string torchName, dag rule> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let ampClass = TG_Follow;
  // PyTorch: the stride defaults to the kernel size.
  let keywords = [TG_Keyword<"kernel", "pair">, TG_Keyword<"stride", "pair", "=kernel">,
                  TG_Keyword<"padding", "pair", "0">];
  let gradients = [rule];
  let summary = "`" # torchName # "` over NCHW input";
  let description = [{
    `kernel`, `stride` and `padding` hold (H, W) values; the frontend makes
    `stride` default to `kernel` and `padding` to 0 as PyTorch does. Output
    size per spatial dim: `floor((in + 2*padding - kernel) / stride) + 1`.
    Padding may be at most half the kernel. `avg_pool2d` counts padded
    elements (`count_include_pad=True`, PyTorch's default).

    ```mlir
    %y = tg.max_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` $kernel `stride` $stride `padding` $padding attr-dict
    `:` type($input) `->` type($result)
  }];
}

def TG_MaxPool2dOp : TG_PoolOp<"max_pool2d", "F.max_pool2d",
    (TGOp<"max_pool2d_grad"> $dy, $input)>;

def TG_AvgPool2dOp : TG_PoolOp<"avg_pool2d", "F.avg_pool2d",
    (TGOp<"avg_pool2d_grad"> $dy, $input)>;

class TG_PoolGradOp<string mnemonic, string fwd, string rule> :
    TG_InferOp<mnemonic> {
  let ampClass = TG_Follow;
  let kernels = ["ampc_" # fwd # "_bwd"];
  let summary = "Gradient of `tg." # fwd # "`";
  let description = [{
    `grad` is the gradient of `tg.}] # fwd # [{ %input` with the same
    `kernel`, `stride` and `padding` (its shape must be that op's output
    shape); the result has the input's type. }] # rule # [{ Runtime
    kernel: `ampc_}] # fwd # [{_bwd`.

    ```mlir
    %dx = tg.}] # mnemonic # [{ %dy, %x kernel [2, 2] stride [2, 2] padding [0, 0]
        : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `kernel` $kernel `stride` $stride `padding` $padding
    attr-dict `:` type($grad) `,`
    custom<StoreType>(type($input), type($result))
  }];
  let training = 1;
  let language = "";
}

def TG_MaxPool2dGradOp : TG_PoolGradOp<"max_pool2d_grad", "max_pool2d",
    "Each window's gradient goes to its first maximum (PyTorch).">;

def TG_AvgPool2dGradOp : TG_PoolGradOp<"avg_pool2d_grad", "avg_pool2d",
    "Each window's gradient is spread evenly over the kernel area, padding "
    "included (`count_include_pad=True`); only the input's shape is read.">;

#endif // AMPC_DIALECT_TG_TGPOOLOPS_TD
