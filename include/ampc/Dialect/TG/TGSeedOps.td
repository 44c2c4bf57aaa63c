//===- TGSeedOps.td - ops of PyTorch's autocast lists ------*- tablegen -*-===//
//
// Ops of PyTorch's CUDA autocast lists (torch/testing/_internal/
// autocast_test_lists.py) that the first op set did not have. Included from
// TGOps.td after the elementwise classes.
//
// The GEMM spellings `a @ b`, `mm`, `bmm`, `mv` and `chain_matmul` have no
// record here: on the ranks PyTorch gives them they are `torch.matmul`, and
// the frontend builds them as `tg.matmul` (lib/Frontend/MLIRGen.cpp).
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

#endif // AMPC_DIALECT_TG_TGSEEDOPS_TD
