//===- TGCompareOps.td - comparisons, argmax and where -----*- tablegen -*-===//
//
// The elementwise comparisons (`equal`, `not_equal`, `less`, `less_equal`,
// `greater`, `greater_equal`, i1 results), `argmax` and `where`, which
// selects by such a mask. Included from TGOps.td; inference in
// lib/Dialect/TG/TGCompareOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGCOMPAREOPS_TD
#define AMPC_DIALECT_TG_TGCOMPAREOPS_TD

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

def TG_ArgmaxOp : TG_InferOp<"argmax"> {
  let summary = "Index of the maximum along `dim` (`torch.argmax`)";
  let description = [{
    The `i32` index of the first maximum along `dim` (a non-negative dim of
    the input; the frontend resolves negative ones such as the default -1);
    NaN counts as the maximum, as in PyTorch. The result drops `dim`, or
    keeps it as size 1 with `keepdim`. Not differentiable.

    ```mlir
    %i = tg.argmax %logits dim 1 : tensor<64x10xf32> -> tensor<64xi32>
    ```
  }];
  let arguments = (ins TG_NumTensor:$input, I64Attr:$dim, UnitAttr:$keepdim);
  let results = (outs TG_StaticTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $input `dim` $dim (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let torch = "torch.argmax";
  let keywords = [TG_Keyword<"dim", "dim", "-1">, TG_Keyword<"keepdim", "bool", "false">];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferArgmax(loc, adaptor.getInput(),
          adaptor.getDim(), adaptor.getKeepdim(), types);
    }
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrI64<"dim">, TG_AttrBool<"keepdim">];
}

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

def TG_WhereOp : TG_InferOp<"where", [TG_Differentiable]> {
  let summary = "Elementwise selection `c ? a : b` (`torch.where`)";
  let description = [{
    `condition`, `lhs` and `rhs` broadcast together (NumPy rules); the result
    takes `lhs` where the condition is true (nonzero), `rhs` elsewhere.
    `lhs` and `rhs` are both floats (the result has the promoted type) or of
    one integer or bool dtype. The gradient of each value side is `where`
    again with zeros on the other side, summed to its shape.

    ```mlir
    %y = tg.where %c, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$condition, TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)
    `,` type($rhs) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let torch = "torch.where";
  let gradients = [
    (TG_NoGradient),
    (TGOp<"where"> $condition, $dy, (TG_Scalar<"0.0"> $dy)),
    (TGOp<"where"> $condition, (TG_Scalar<"0.0"> $dy), $dy)];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferWhere(loc, adaptor.getCondition(),
          adaptor.getLhs(), adaptor.getRhs(), types);
    }
  }];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>];
}

#endif // AMPC_DIALECT_TG_TGCOMPAREOPS_TD
