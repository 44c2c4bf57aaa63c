//===- TGDropoutOps.td - dropout ---------------------------*- tablegen -*-===//
//
// `dropout`, whose mask comes from the counter-based generator, and
// `counter_next`, the step counter that draws a new mask each step.
// `dropout` outside a training graph is the identity and builds no op.
// Included from TGOps.td; inference in lib/Dialect/TG/TGDropoutOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGDROPOUTOPS_TD
#define AMPC_DIALECT_TG_TGDROPOUTOPS_TD

def TG_DropoutOp : TG_InferOp<"dropout", [TG_Differentiable]> {
  let summary = "`F.dropout` in training mode, with a counter-based mask";
  let description = [{
    Element `i` is kept, and scaled by `1 / (1 - p)`, when
    `u >= p` for `u` the uniform draw (24 bits, in [0, 1)) of lane `i % 4`
    of `philox4x32_10(counter = (i / 4, 2^63 + key * 2^32 + step),
    key = seed)`; otherwise it is zero. `seed` is the run's seed, `step` the
    value of the i32 scalar operand (the graph's `dropout.step` state: the
    steps taken so far), `key` the op's number in its graph (0 for the first
    `dropout` call). The mask depends on nothing else, so a continued run
    draws what an uninterrupted one would, and every backend draws the same
    bits. The gradient is the same op applied to the result's gradient (the
    same mask). The frontend builds it only in training graphs (elsewhere
    `dropout` is the identity).

    ```mlir
    %y = tg.dropout %x, %step {key = 0 : i64, p = 5.000000e-01 : f64}
        : tensor<8x16xf32>, tensor<i32> -> tensor<8x16xf32>
    ```

    Runtime kernel: `ampc_dropout_fwd`.

    `sample_elems` (set by `ampc-dropout-sample-layout` in data-parallel
    compilations, on the forward op and on its gradient alike) says that the
    input holds each sample of the batch as one contiguous block of that
    many elements. The op then lowers to `ampc_dropout_ranked_fwd`: with a
    communicator of W > 1 ranks attached to the runtime context, element
    `i` of rank `r` draws the mask of element
    `((i / S) * W + r) * S + i % S` (S = `sample_elems`), which is where
    its sample sits in one process whose batch holds every rank's samples
    (rank `r`'s sample `j` is that batch's sample `j * W + r`). With no
    communicator, or one rank, the mask is the one above, bit for bit.

    ```mlir
    %y = tg.dropout %x, %step {key = 0 : i64, p = 5.000000e-01 : f64, sample_elems = 16 : i64}
        : tensor<8x16xf32>, tensor<i32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       TG_StaticTensorOf<[I32]>:$step,
                       F64Attr:$p,
                       I64Attr:$key,
                       OptionalAttr<I64Attr>:$sample_elems);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $step attr-dict `:` type($input) `,` type($step) `->`
    type($result)
  }];
  let ampClass = TG_Follow;
  let loadConverts = ["input"];
  let keywords = [TG_Keyword<"p", "float", "0.5">];
  // p is checked, the step counter and the key come from the graph
  // (MLIRGen.cpp).
  let customFrontend = 1;
  // A call names only the input (`dropout(x, p=0.5)`).
  let languageMinOperands = 1;
  let gradients = [(TGOp<"dropout"> $dy, $step), (TG_NoGradient)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Buf<1>, TG_Seed, TG_AttrF64<"p">,
                    TG_AttrI64<"key">];
}

def TG_CounterNextOp : TG_InferOp<"counter_next"> {
  let summary = "An i32 scalar plus one (the dropout step counter)";
  let description = [{
    `counter + 1`, computed on the device: the next value of the
    `dropout.step` state of a training graph that uses `dropout`. Runtime
    kernel: `ampc_counter_next`.

    ```mlir
    %next = tg.counter_next %step : tensor<i32>
    ```
  }];
  let arguments = (ins TG_StaticTensorOf<[I32]>:$counter);
  let results = (outs TG_StaticTensorOf<[I32]>:$result);
  let assemblyFormat = "$counter attr-dict `:` type($counter)";
  let ampClass = TG_Follow;
  let loadConverts = [];
  let training = 1;
  let language = "";
  let kernels = ["ampc_counter_next"];
  let keywords = [];
  let kernelArgs = [TG_ResBuf<0>, TG_Buf<0>];
}

#endif // AMPC_DIALECT_TG_TGDROPOUTOPS_TD
