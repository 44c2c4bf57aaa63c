//===- TGMatmulOps.td - mm, bmm, mv and the addmm family ---*- tablegen -*-===//
//
// The matrix products of PyTorch's CUDA autocast fp16 list (torch_fp16 of
// torch/testing/_internal/autocast_test_lists.py) beyond `matmul` and
// `linear` (TGOps.td): the fixed-rank spellings `mm`, `bmm`, `mv` and the
// fused GEMM-plus-add family `addmm`, `baddbmm`, `addbmm`, `addmv`, `addr`.
// `a @ b` is `tg.matmul`; the frontend builds `chain_matmul` as a chain of
// `tg.mm` (lib/Frontend/MLIRGen.cpp). The transposes folded into GEMMs
// (`tg.permuted_matmul`) are in TGFoldOps.td. Included from TGOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGMATMULOPS_TD
#define AMPC_DIALECT_TG_TGMATMULOPS_TD

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
  // matmul's kernel: (y, a, b).
  let kernelArgs = TG_BinaryArgs;
}

def TG_MmOp : TG_FixedRankMatmulOp<"mm", "torch.mm", "a [m, k] @ b [k, n] -> [m, n]",
    "%y = tg.mm %a, %b : tensor<4x6xf32>, tensor<6x5xf32> -> tensor<4x5xf32>">;
def TG_BmmOp : TG_FixedRankMatmulOp<"bmm", "torch.bmm",
    "a [B, m, k] @ b [B, k, n] -> [B, m, n], equal batch sizes",
    "%y = tg.bmm %a, %b : tensor<3x4x6xf32>, tensor<3x6x2xf32> -> tensor<3x4x2xf32>">;
def TG_MvOp : TG_FixedRankMatmulOp<"mv", "torch.mv", "a [n, m] @ v [m] -> [n]",
    "%y = tg.mv %a, %v : tensor<4x6xf32>, tensor<6xf32> -> tensor<4xf32>">;

//===----------------------------------------------------------------------===//
// The GEMM-plus-add family: addmm, baddbmm, addbmm, addmv, addr
//===----------------------------------------------------------------------===//

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
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>, TG_AttrF64<"beta">,
                    TG_AttrF64<"alpha">];
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

#endif // AMPC_DIALECT_TG_TGMATMULOPS_TD
