//===- TGInterfaces.td - tg op interfaces --------------------*- tablegen -*-===//
//
// The gradient rule of an op lives with the op ("Knowledge lives
// with the op"): every differentiable `tg` op implements
// `TG_GradientOpInterface`, and the autodiff pass only walks the graph and
// accumulates.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGINTERFACES_TD
#define AMPC_DIALECT_TG_TGINTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::ampc::tg";
  let description = [{
    An op that knows its own reverse-mode gradient rule (its vector-Jacobian
    product). The autodiff pass calls `buildGradient` once per op of the
    forward graph that lies between the loss and a value it differentiates
    with respect to, in reverse program order.

    Contract:
    - `resultGrads[i]` is the gradient of result `i`, with exactly the type
      of that result; a null value means "zero" (the result does not reach
      the loss). At least one entry is non-null.
    - `wanted[j]` says whether the gradient of operand `j` is needed; the
      rule may skip work for the others.
    - `operandGrads` receives one value per operand: the gradient of that
      operand with exactly the operand's type (broadcast dims summed away,
      cast back to the operand's element type), or null when the operand
      gets no gradient (not wanted, an integer tensor, or a result gradient
      that does not reach it).
    - New ops are created at the builder's insertion point, at the location
      `getGradientLoc(op)` (the forward op's location tagged "grad").
    - Backward values are computed at the forward types; automatic mixed
      precision runs afterwards and recasts them by class.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the gradients of the operands from those of the results.",
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::ArrayRef<bool>":$wanted,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

/// The trait list entry of a differentiable op: its `buildGradient` is
/// generated from the `gradients` DAGs of its record (TGOpInfo.td), or
/// written in lib/Dialect/TG/TGGradients.cpp when the rule needs code.
def TG_Differentiable : DeclareOpInterfaceMethods<TG_GradientOpInterface>;

#endif // AMPC_DIALECT_TG_TGINTERFACES_TD
