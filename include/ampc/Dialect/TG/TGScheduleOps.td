//===- TGScheduleOps.td - learning-rate schedules -----------*- tablegen -*-===//
//
// The op of learning-rate schedules (docs/optimizer.md): the factor of the
// current update and the update counter. Included from TGOps.td, after the
// training ops.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGSCHEDULEOPS_TD
#define AMPC_DIALECT_TG_TGSCHEDULEOPS_TD

let training = 1, language = "" in {

def TG_LrScheduleOp : TG_Op<"lr_schedule", [Pure]> {
  let summary = "A learning-rate schedule's factor and update counter";
  let description = [{
    `step` (i32) counts the updates applied so far (`t`, state
    `lr_schedule.step`). The results are the new count, `t + 1`, or `t`
    when `found_inf` is set (an update skipped by loss scaling does not
    advance the schedule), written in place, and `factor`, what every
    parameter group's `lr` is multiplied by for this update (the `lr_scale`
    operand of `tg.sgd_update` / `tg.adamw_update`).

    With `W = warmup_steps`, `T = total_steps`, `m = min_lr / lr`: for
    `t < W` the factor is `(t + 1) / W`; after that, by `kind`,
    - `"constant"`: 1;
    - `"linear"`: `m + (1 - m) * max(0, (T - t) / (T - W))`;
    - `"cosine"`: `m + (1 - m) * (1 + cos(pi * min(1, (t - W) / (T - W)))) / 2`;
    - `"step"`: `gamma ^ floor((t - W) / step_size)`.

    This is `torch.optim.lr_scheduler.LambdaLR` with that factor: a group
    with its own rate gets `group lr * factor` (its minimum scaled by
    `group lr / lr`). `lr` is the default group's rate (> 0). `total_steps`
    must exceed `warmup_steps` for linear and cosine; `step` needs
    `step_size >= 1` and `gamma > 0`. The factor is computed in f64 on the
    device and stored as f32. Runtime kernel: `ampc_lr_schedule`.

    ```mlir
    %t1, %f = tg.lr_schedule %t found_inf(%fi : tensor<f32>)
        {kind = "cosine", lr = 1.0e-01 : f64, warmup_steps = 2 : i64,
         total_steps = 20 : i64, min_lr = 0.0 : f64, step_size = 0 : i64,
         gamma = 0.0 : f64} : tensor<i32>, tensor<f32>
    ```
  }];
  let arguments = (ins TG_I32Scalar:$step, Optional<TG_FlagTensor>:$found_inf,
                       StrAttr:$kind, F64Attr:$lr, I64Attr:$warmup_steps,
                       I64Attr:$total_steps, F64Attr:$min_lr,
                       I64Attr:$step_size, F64Attr:$gamma);
  // The new count first: it overwrites `step` in place (records match
  // results to `inPlace` operands from the first).
  let results = (outs TG_I32Scalar:$new_step, TG_F32Scalar:$factor);
  let assemblyFormat = [{
    $step (`found_inf` `(` $found_inf^ `:` type($found_inf) `)`)?
    attr-dict `:` type($new_step) `,` type($factor)
  }];
  let hasVerifier = 1;
  let ampClass = TG_FP32;
  let loadConverts = [];
  let inPlace = ["step"];
  let lossScaleRole = TG_GradientConsumerRole;
  let kernels = ["ampc_lr_schedule"];
  let kernelArgs = [TG_ResBuf<1>, TG_Buf<0>, TG_AttrLrKind<"kind">, TG_AttrF64<"lr">,
                    TG_AttrI64<"warmup_steps">, TG_AttrI64<"total_steps">,
                    TG_AttrF64<"min_lr">, TG_AttrI64<"step_size">, TG_AttrF64<"gamma">,
                    TG_FlagArg<1>];
}

} // training = 1, language = ""

#endif // AMPC_DIALECT_TG_TGSCHEDULEOPS_TD
