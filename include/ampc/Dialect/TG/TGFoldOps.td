//===- TGFoldOps.td - GEMMs on permuted views ---------------*- tablegen -*-===//
//
// The op `ampc-fold-transposes` makes (docs/codegen.md): a matrix product whose
// operands and result are permutations of the tensors it reads and writes,
// lowered to strided GEMMs instead of materialised transposes. Included from
// TGOps.td, last.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGFOLDOPS_TD
#define AMPC_DIALECT_TG_TGFOLDOPS_TD

def TG_PermutedMatmulOp : TG_InferOp<"permuted_matmul"> {
  let summary = "Matrix product of permuted operands, stored permuted";
  let description = [{
    `transpose(matmul(transpose(lhs, lhs_perm), transpose(rhs, rhs_perm)),
    result_perm)`, computed without the transposes: the GEMM reads `lhs` and
    `rhs` and writes the result through strides (leading dimensions, batch
    strides, transposed-operand flags). Both permuted operands must have
    rank >= 2 (no vector promotion); their batch dims broadcast as in
    `tg.matmul`. Mixed float dtypes compute in the wider one, and the
    result may be stored in another float type (one rounding from the f32
    accumulator), as `tg.matmul`'s.

    The compiler makes it (`ampc-fold-transposes`, after autodiff, before
    buffer planning) only where the strided form exists: in each permuted
    operand one of the last two dims is the stored tensor's last dim, the
    result's last dim or the one before it is the stored result's last
    dim, and the batch dims, after merging the ones every operand walks
    contiguously, are at most two (an outer batch the runtime loops over
    and one strided batch). Runtime kernel: `ampc_matmul_strided`.

    ```mlir
    // q @ k^T per head, q and k stored [batch, seq, heads, head_dim]:
    %s = tg.permuted_matmul %q, %k lhs_perm [0, 2, 1, 3] rhs_perm [0, 2, 3, 1]
        result_perm [0, 1, 2, 3]
        : tensor<8x128x4x64xf32>, tensor<8x128x4x64xf32> -> tensor<8x4x128x128xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       DenseI64ArrayAttr:$lhs_perm,
                       DenseI64ArrayAttr:$rhs_perm,
                       DenseI64ArrayAttr:$result_perm);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `lhs_perm` $lhs_perm `rhs_perm` $rhs_perm
    `result_perm` $result_perm attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let ampClass = TG_Lower;
  // GEMMs read their matrices in their compute precision.
  let loadConverts = [];
  let kernels = ["ampc_matmul_strided"];
  // Made by a pass after autodiff: no `.tg` spelling, no gradient.
  let language = "";
  let keywords = [];
  let training = 1;
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_StridedGemm];
}

#endif // AMPC_DIALECT_TG_TGFOLDOPS_TD
