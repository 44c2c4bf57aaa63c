//===- TGCollectiveOps.td - data-parallel collectives -------*- tablegen -*-===//
//
// The ops of data-parallel training (docs/distributed.md): the
// bucketed gradient all-reduce, started as soon as a bucket's last gradient
// exists and waited before the first gradient consumer, and the division of
// the backward seed by the world size. `ampc-data-parallel` makes them.
// Included from TGOps.td, after the training ops.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGCOLLECTIVEOPS_TD
#define AMPC_DIALECT_TG_TGCOLLECTIVEOPS_TD

let training = 1, language = "", ampClass = TG_Follow, loadConverts = []<string> in {

def TG_GradAllreduceStartOp : TG_StrictInferOp<"grad_allreduce_start"> {
  let summary = "Starts the all-reduce of one bucket of gradients";
  let description = [{
    Starts summing `grads` (one bucket) over the ranks of the data-parallel
    job, with the communicator attached to the runtime context the step
    runs on (`ampc_context_set_comm`). It returns at once: the results are
    the same buffers (in place), whose contents are undefined until the
    `tg.grad_allreduce_wait` of the same `bucket` has run; the only use of
    a result must be that wait.

    The bucket travels as one message per element type: the gradients are
    copied one after the other into a staging buffer of that type (a
    bucket of one gradient of that type is reduced in place). With
    `reduce_f32` every gradient is widened to f32 for the reduction and
    rounded back once (Apex's `allreduce_always_fp32`); otherwise f16 and
    bf16 gradients are reduced as f16 and bf16 messages (the CPU
    collectives add them in f32 and round once as well). With `mean` the
    wait divides the sum by the world size W; without it the result is the
    sum (the gradients are then already divided by W, see
    `tg.divide_by_world`).

    With no communicator attached (one process) start and wait do nothing.
    Runtime kernel: `ampc_grad_allreduce_start`.

    ```mlir
    %g:2 = tg.grad_allreduce_start %gw, %gb {bucket = 0 : i64, mean}
        : tensor<4x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$grads, I64Attr:$bucket,
                       UnitAttr:$mean, UnitAttr:$reduce_f32);
  let results = (outs Variadic<TG_FloatTensor>:$started);
  let assemblyFormat = [{ $grads attr-dict `:` type($grads) }];
  let hasVerifier = 1;
  let inPlace = ["grads"];
  let kernels = ["ampc_grad_allreduce_start"];
  let kernelArgs = [TG_List<0>, TG_Dtypes<0>, TG_Numels<0>, TG_Count<0>,
                    TG_AttrI64<"bucket">, TG_AttrBool<"mean">, TG_AttrBool<"reduce_f32">];
}

def TG_GradAllreduceWaitOp : TG_StrictInferOp<"grad_allreduce_wait"> {
  let summary = "Waits for the all-reduce of one bucket of gradients";
  let description = [{
    Completes the all-reduce that `tg.grad_allreduce_start` with the same
    `bucket` started: waits for it, copies the reduced values back from the
    staging buffers (rounding 16-bit gradients once) and, when the start had
    `mean`, divides by the world size. `grads` are the start's results, in
    the same order; the results are the reduced gradients, in place. The
    data-parallel pass puts every wait just before the step's first gradient
    consumer (the loss-scaling check, else clipping, else the update).
    Nothing happens without a communicator. Runtime kernel:
    `ampc_grad_allreduce_wait`.

    ```mlir
    %r:2 = tg.grad_allreduce_wait %g#0, %g#1 {bucket = 0 : i64}
        : tensor<4x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$grads, I64Attr:$bucket);
  let results = (outs Variadic<TG_FloatTensor>:$reduced);
  let assemblyFormat = [{ $grads attr-dict `:` type($grads) }];
  let hasVerifier = 1;
  let inPlace = ["grads"];
  let kernels = ["ampc_grad_allreduce_wait"];
  let kernelArgs = [TG_List<0>, TG_Dtypes<0>, TG_Numels<0>, TG_Count<0>,
                    TG_AttrI64<"bucket">];
}

def TG_DivideByWorldOp : TG_StrictInferOp<"divide_by_world"> {
  let summary = "Divides a value by the data-parallel world size";
  let description = [{
    `x / W`, where W is the size of the communicator attached to the
    runtime context (1 without one): `x` times `1 / W` (the reciprocal
    rounded to f32, the product computed in f32), stored in `x`'s type. The data-parallel pass applies it to the backward seed, so every
    gradient of the step comes out of the backward already divided by W
    (the pre-division of DDP's `gradient_predivide_factor = W`): each
    rank's backward then works at the magnitudes of one process with the
    whole batch, and the all-reduce only sums. Because W is read at run
    time, the compiled step is the same for every world size. Runtime
    kernel: `ampc_divide_by_world`.

    ```mlir
    %s = tg.divide_by_world %seed : tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$x);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{ $x attr-dict `:` type($x) }];
  let inPlace = ["x"];
  let kernels = ["ampc_divide_by_world"];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>];
}

} // training = 1, language = "", ampClass = TG_Follow, loadConverts = []

#endif // AMPC_DIALECT_TG_TGCOLLECTIVEOPS_TD
