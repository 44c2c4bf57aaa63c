//===- TGAccumulateOps.td - gradient accumulation -------------*- tablegen -*-===//
//
// The op of gradient accumulation (`accumulate = K`, docs/optimizer.md): the
// micro-batch's gradients added into f32 accumulators. Included from
// TGOps.td, after the training ops.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGACCUMULATEOPS_TD
#define AMPC_DIALECT_TG_TGACCUMULATEOPS_TD

let training = 1, language = "" in {

def TG_GradAccumulateOp : TG_StrictInferOp<"grad_accumulate",
                                           [AttrSizedOperandSegments]> {
  let summary = "Adds one micro-batch's gradients into f32 (or f64) accumulators";
  let description = [{
    Gradient accumulation over `k` micro-batches per update (`accumulate =
    K` of the optimizer call). `micro` (i32, state `accumulate.micro`) is the
    index of this micro-batch in its update, `0 <= micro < k`. For each pair
    `(accs[i], grads[i])` (same shape; `accs` f32 and `grads` f32, f16 or
    bf16, converted to f32 as loaded; or both f64, an f64 param's):

    - `micro == 0`: `new_accs[i] = grads[i]` (the first micro-batch writes);
    - otherwise: `new_accs[i] = accs[i] + grads[i]` (one addition in the
      accumulator's type).

    So after micro-batch `j` the accumulator holds
    `((g_0 + g_1) + g_2) + ... + g_j`, summed in micro-batch order.
    The last result is the new index `(micro + 1) % k`. Every result
    overwrites its operand in place. The gradients are the micro-batch's
    gradients of `loss * (1 / k)` (the optimizer expansion scales the loss
    before differentiating), so after `k` micro-batches the accumulators
    hold the gradient of the mean loss of the `k` micro-batches, and the
    update ops read them (after the loss scaler's one check and unscale).
    Runtime kernel: `ampc_grad_accumulate`.

    ```mlir
    %a1, %a2, %m1 = tg.grad_accumulate accs(%a, %b : tensor<4x4xf32>, tensor<4xf32>)
        grads(%ga, %gb : tensor<4x4xf32>, tensor<4xf32>) micro(%m : tensor<i32>)
        {k = 4 : i64}
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$accs,
                       Variadic<TG_FloatTensor>:$grads,
                       TG_I32Scalar:$micro,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$k);
  let results = (outs Variadic<TG_Tensor>:$updated);
  let assemblyFormat = [{
    `accs` `(` $accs `:` type($accs) `)`
    `grads` `(` $grads `:` type($grads) `)`
    `micro` `(` $micro `:` type($micro) `)`
    attr-dict
  }];
  let extraClassDeclaration = [{
    /// The new accumulators, in the order of `accs`.
    ::mlir::ResultRange getNewAccs() {
      return getUpdated().take_front(getAccs().size());
    }
    /// The new micro-batch index.
    ::mlir::Value getNewMicro() { return getUpdated().back(); }
  }];
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["accs", "micro"];
  let kernels = ["ampc_grad_accumulate"];
  let kernelArgs = [TG_List<0>, TG_List<1>, TG_Dtypes<1>, TG_Numels<0>, TG_Count<0>,
                    TG_Buf<2>, TG_AttrI64<"k">];
}

} // training = 1, language = ""

#endif // AMPC_DIALECT_TG_TGACCUMULATEOPS_TD
