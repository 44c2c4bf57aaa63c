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

#endif // AMPC_DIALECT_TG_TGSEEDOPS2_TD
