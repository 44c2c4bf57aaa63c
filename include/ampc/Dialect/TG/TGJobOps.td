//===- TGJobOps.td - ops of the training-jobs work ----------*- tablegen -*-===//
//
// Ops added for training jobs (classifiers with eval graphs): the
// elementwise comparisons. Included from TGOps.td, after the v1 ops.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGJOBOPS_TD
#define AMPC_DIALECT_TG_TGJOBOPS_TD

//===----------------------------------------------------------------------===//
// Comparisons
//===----------------------------------------------------------------------===//

// An elementwise comparison: operands of any dtypes (float, integer, bool,
// mixed), NumPy broadcasting, a `bool` result. Not differentiable: its
// result is not a float, so no gradient flows through it.
class TG_CompareOp<string mnemonic, string torchName, string symbol> :
    TG_InferOp<mnemonic> {
  let summary = "Elementwise `" # torchName # "` (`a " # symbol # " b`), a bool result";
  let description = [{
    Operands broadcast by NumPy/PyTorch rules and may have any dtypes (float,
    integer, bool, mixed); the result is `i1` (`bool` in the language). The
    kernel reads both operands as f32 (integers beyond 2^24 in magnitude
    compare at f32 precision); NaN compares unequal to everything. Under AMP
    the op follows its inputs (mixed float inputs are read at the widest
    type, as the kernel converts them on load).

    ```mlir
    %m = tg.}] # mnemonic # [{ %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_StaticTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let elementwise = "binary";
  let torch = torchName;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferCompare("}] # mnemonic # [{", loc,
          adaptor.getLhs(), adaptor.getRhs(), types);
    }
  }];
}

def TG_EqualOp : TG_CompareOp<"equal", "torch.eq", "==">;
def TG_NotEqualOp : TG_CompareOp<"not_equal", "torch.ne", "!=">;
def TG_LessOp : TG_CompareOp<"less", "torch.lt", "<">;
def TG_LessEqualOp : TG_CompareOp<"less_equal", "torch.le", "<=">;
def TG_GreaterOp : TG_CompareOp<"greater", "torch.gt", ">">;
def TG_GreaterEqualOp : TG_CompareOp<"greater_equal", "torch.ge", ">=">;

#endif // AMPC_DIALECT_TG_TGJOBOPS_TD
