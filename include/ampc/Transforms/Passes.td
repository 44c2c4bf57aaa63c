//===- Passes.td - ampc transformation passes ---------------*- tablegen -*-===//
//
// Every ampc pass is declared here and implemented in `passes/`, one per file.
// The automatic-mixed-precision, autodiff, loss-scaling, cast-optimization
// and buffer-planning passes land here as they are written.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_TRANSFORMS_PASSES_TD
#define AMPC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Autodiff
//===----------------------------------------------------------------------===//

def Autodiff : Pass<"ampc-autodiff", "::mlir::func::FuncOp"> {
  let summary = "Expand tg.grad into backward graphs";
  let description = [{
    Reverse-mode automatic differentiation of a graph. Every `tg.grad` of a
    function becomes an explicit backward graph that starts at a
    `tg.grad_seed` of the loss (`tg.minimize` is left alone: it is
    `ampc-optimizer-expansion`'s, which differentiates with the same engine):

    - Only ops between the loss and a value it is differentiated with
      respect to are differentiated: an op the loss does not depend on, or
      one that depends on none of those values, gets no backward op.
    - Each op's gradient rule comes from the op itself
      (`GradientOpInterface`, lib/Dialect/TG/TGGradients.cpp). A value used
      by several ops accumulates its gradients with `tg.add`, except the
      gradients of slices of it that do not overlap: a slice's gradient is
      its `dy` padded with zeros (a `tg.concat`), and two such along the
      same dim become one concat of their gradients, with zeros where no
      slice reads (the three slices of a fused QKV projection: one concat
      instead of three padded copies and two adds). Each element is then
      the one slice's gradient itself where the add gave it plus zero: the
      same value, except that a -0 stays -0 where the add made it +0 (as
      PyTorch's autograd does when it adds the zero-padded gradients of
      indexing; the backward of its `split` and `chunk` concatenates and
      keeps -0, as this does).
    - Gradients have the type of their value and are computed at the forward
      types. In the `ampc` pipeline automatic mixed precision has run
      before, so the backward graph takes the forward's mixed types, as
      autograd's does under `torch.autocast`. Broadcast operands get their
      gradient summed over the broadcast dims; the gradient of `tg.cast` is
      cast back to the source type.
    - `tg.grad` results are replaced by the gradients; a value the loss does
      not reach gets a zero gradient (PyTorch's `materialize_grads`).
    - Every used result gets a marker after the backward graph,
      `tg.grad_of %g wrt %v`, which says what the gradient is of (the
      parameter or input `%v`); `ampc-data-parallel` averages the returned
      gradients of parameters from it. Buffer planning erases the markers.

    Ops it creates carry `tg.role = "grad"` (backward ops; the cast back
    that is the gradient of a cast automatic mixed precision inserted gets
    `tg.role = "amp"`, like that cast). Later passes and the AMP report
    decide from these, never from locations. For diagnostics they carry the
    location of the op they come from, fused with the same tag
    (`loc(fused<"grad">[...])`).

    Errors: a loss that is not a float scalar, a value to differentiate
    that is not a float tensor, and an op on the path from the loss that
    has no gradient rule (e.g. differentiating a gradient).

    Before:
    ```mlir
    %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
    %gw = tg.grad %l wrt %w : tensor<f32>, tensor<3xf32>
    ```
    After: `%gw`'s uses read the last op of
    ```mlir
    %seed = tg.grad_seed %l : tensor<f32>
    %r = tg.reshape %seed shape [1, 1] : tensor<f32> -> tensor<1x1xf32>
    ...
    %gw = tg.reshape %s shape [3] : tensor<1x3xf32> -> tensor<3xf32>
    tg.grad_of %gw wrt %w : tensor<3xf32>
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

//===----------------------------------------------------------------------===//
// Optimizer expansion
//===----------------------------------------------------------------------===//

def OptimizerExpansion : Pass<"ampc-optimizer-expansion",
                              "::mlir::func::FuncOp"> {
  let summary = "Expand tg.minimize into its backward graph and optimizer ops";
  let description = [{
    Expands the (at most one) `tg.minimize` of a function into one training
    step:

    1. its backward graph, built by the reverse-mode engine of
       `ampc-autodiff` (the same rules, roles and locations as for
       `tg.grad`) with respect to every parameter operand;
    2. optional `tg.clip_grad_norm` over every gradient (`max_grad_norm`);
    3. one `tg.sgd_update` or `tg.adamw_update` per parameter group that
       has parameters (the default group first, then `param_groups` in
       order), each with its group's hyperparameters. A parameter the loss
       does not reach is returned unchanged; when the loss reaches none, a
       warning says the step updates nothing.

    The optimizer state becomes function arguments `{tg.state = "NAME",
    tg.init = #tg.init<zeros>}` and results `{tg.state_out = "NAME"}`:
    `P.momentum_buffer` (SGD with momentum), `P.exp_avg`, `P.exp_avg_sq`
    and one i32 step count per group for AdamW (`adamw.step` for the first
    group with parameters, `adamw.group<N>.step` for group N after it).

    Ops it creates carry `tg.role = "grad"` (the backward graph) or
    `tg.role = "optimizer"` (clipping, updates); the optimizer ops carry
    the `tg.minimize`'s location fused with `"optimizer"`.

    Errors: a second `tg.minimize` in a function, an operand that is not a
    `tg.param` argument or is listed twice, a function that does not end
    with `func.return`, and the errors of the backward graph (see
    `ampc-autodiff`).

    Gradient accumulation (`accumulate = K > 1` on the `tg.minimize`, or the
    pass option `accumulate`, which overrides it when > 0): the function
    becomes one micro-batch of an update of K micro-batches. The loss is
    multiplied by `1/K` (a constant of the loss's type, 1/K rounded once to
    it) before it is differentiated, so the
    seed of the backward graph is `1/K` (times the loss scale, added later);
    the gradients go into f32 state `P.grad_acc` (f64 for an f64 param; one
    per parameter the loss
    reaches, zeros) through one `tg.grad_accumulate` with the micro-batch
    index, state `accumulate.micro` (i32, zeros); clipping and the updates
    read the accumulators. The function gets `tg.accumulate = K`; everything
    after the `tg.grad_accumulate` is the update, which a runner executes
    only after the K-th micro-batch (the lowering marks it: `rt.program`'s
    `update_call`). With K = 1 nothing changes.

    Updates of 16-bit params (options `low-update`, `state-dtype`): with
    `state-dtype=bf16` the momentum buffers and Adam moments are bf16
    state. Every update gets `low_update` (the option) and `param_base`
    (how many params earlier groups update, so the stochastic rounding's
    Philox key numbers each param of the step once). `stochastic` gives an
    SGD update that writes 16-bit values an i32 update counter, state
    `sgd.counter` (`sgd.group<N>.counter` for group N after the first);
    AdamW keys with its step count. `kahan` gives every 16-bit param a
    compensation buffer of its type, state `P.kahan_comp` (zeros). Nothing
    is added for f32 params with f32 state. The option values are checked:
    anything else is an error.

    Before:
    ```mlir
    func.func @step(%x: tensor<4x3xf32> {tg.input = "x"},
                    %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>})
        -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
      %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
      %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
      %w1 = tg.minimize %l wrt %w with "sgd" {lr = 1.0e-01 : f64,
          momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
          : tensor<f32>, tensor<3xf32>
      return %l, %w1 : tensor<f32>, tensor<3xf32>
    }
    ```
    After:
    ```mlir
    func.func @step(%x: ..., %w: ...,
                    %m: tensor<3xf32> {tg.state = "w.momentum_buffer", tg.init = #tg.init<zeros>})
        -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"},
            tensor<3xf32> {tg.state_out = "w.momentum_buffer"}) {
      %y = tg.mul %x, %w : ...
      %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
      %seed = tg.grad_seed %l : tensor<f32>
      ...
      %gw = tg.reshape %s shape [3] : tensor<1x3xf32> -> tensor<3xf32>
      %new:2 = tg.sgd_update params(%w : tensor<3xf32>) grads(%gw : tensor<3xf32>)
          momentum_buffers(%m : tensor<3xf32>) {lr = 1.0e-01 : f64, ...}
      return %l, %new#0, %new#1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
    }
    ```
  }];
  let options = [
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"0",
           "Micro-batches per update; > 0 overrides the tg.minimize's "
           "`accumulate` (0 keeps it)">,
    Option<"lowUpdate", "low-update", "std::string", /*default=*/"\"nearest\"",
           "How the updates write 16-bit params: nearest, stochastic or "
           "kahan">,
    Option<"stateDtype", "state-dtype", "std::string", /*default=*/"\"f32\"",
           "The dtype of momentum buffers and Adam moments: f32 or bf16">
  ];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

def LossScaling : Pass<"ampc-loss-scaling", "::mlir::func::FuncOp"> {
  let summary = "Loss scaling of training steps (PyTorch GradScaler semantics)";
  let description = [{
    Rewrites every function with a `tg.grad_seed` (made by `ampc-autodiff`
    or written by hand) into a loss-scaled step:

    1. The seed becomes the current scale (`tg.grad_seed %loss scale %s`);
       the loss value itself, which the step returns, is untouched.
    2. One `tg.check_finite_and_unscale` over all gradients of the step
       multiplies them by `1/scale` and produces `found_inf`.
    3. `tg.clip_grad_norm`, `tg.sgd_update` and `tg.adamw_update` read the
       unscaled gradients and take `found_inf`: with it set they leave
       parameters and optimizer state bit-identical. No host branch.
    4. `mode=dynamic`: one `tg.update_scale` with the options below, and the
       scaler state as function arguments and results (like parameters):
       `loss_scale.scale` (f32, `#tg.init<full(INIT)>`),
       `loss_scale.growth_tracker` (i32, zeros) and
       `loss_scale.hysteresis_left` (i32, `full(HYSTERESIS)`).
       `mode=static`: the scale is the constant `init`, no update, no state.
       `mode=none`: nothing changes.

    The ops it creates carry `tg.role = "loss_scale"`.

    The gradients of a step are the `grads` operands of `tg.clip_grad_norm`
    and of the optimizer updates (the clip's inputs where clipping is on),
    plus every value the function returns that depends on a seed without
    passing through an optimizer or clipping op (the gradients of
    `tg.grad`). Exactly these uses (and the `tg.grad_of` markers) are
    rewired to the unscaled values. The
    backward graph between the seed and these values is linear in the seed
    (true of every gradient rule), which is what makes scaling exact up to
    rounding.

    After `ampc-data-parallel` (the function has `tg.data_parallel`): when
    the check also reads a returned gradient that is no
    `tg.grad_allreduce_wait` result (an input's gradient, each rank's own),
    `found_inf` is summed over the ranks by one more bucket
    (`tg.grad_allreduce_start` / `_wait` of bucket N, N the number of
    gradient buckets) right after the check, and every reader of
    `found_inf` reads the sum: nonzero on every rank when any rank found a
    non-finite value, so the ranks skip together.

    The configuration is recorded on the function as
    `tg.loss_scale = {mode = "dynamic", init = 65536.0 : f64,
    growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64,
    growth_interval = 2000 : i64, hysteresis = 1 : i64}` (plus `min_scale`
    / `max_scale` when set; `{mode = "static", scale = N : f64}` for a
    static scale); the AMP report prints its `loss_scale` block from it. A
    function that already has the attribute is left alone.

    Numerics: with an f16 loss the seed (the scale, stored at the loss's
    type) overflows for scales above 65504; the dynamic scaler then backs
    off on the first step. Losses are f32 under `--amp=fp16` (they are fp32
    ops), so this only concerns hand-written f16 losses.

    Before (made by `ampc-autodiff`):
    ```mlir
    %seed = tg.grad_seed %l : tensor<f32>
    ...
    %new:2 = tg.sgd_update params(%w : tensor<3xf32>) grads(%gw : tensor<3xf32>) ...
    ```
    After (`mode=dynamic`):
    ```mlir
    func.func @step(..., %s: tensor<f32> {tg.state = "loss_scale.scale", tg.init = #tg.init<full(65536.0)>},
                    %t: tensor<i32> {tg.state = "loss_scale.growth_tracker", tg.init = #tg.init<zeros>},
                    %h: tensor<i32> {tg.state = "loss_scale.hysteresis_left", tg.init = #tg.init<full(1.0)>})
        -> (..., tensor<f32> {tg.state_out = "loss_scale.scale"}, ...)
        attributes {tg.loss_scale = {mode = "dynamic", ...}} {
      %seed = tg.grad_seed %l scale %s : tensor<f32>, tensor<f32>
      ...
      %u, %found_inf = tg.check_finite_and_unscale %gw scale %s : tensor<3xf32>
      %new:2 = tg.sgd_update params(%w : tensor<3xf32>) grads(%u : tensor<3xf32>) ...
          found_inf(%found_inf : tensor<f32>) {...}
      %s2, %t2, %h2 = tg.update_scale %s, %t, %h found_inf %found_inf {...} : tensor<f32>
      return ..., %s2, %t2, %h2 : ...
    }
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"dynamic\"",
           "dynamic | static | none">,
    Option<"init", "init", "double", /*default=*/"65536.0",
           "initial scale (dynamic) or the scale (static)">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "scale multiplier after growth-interval finite steps (> 1)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "scale multiplier on overflow, in (0, 1)">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "consecutive finite steps before the scale grows (>= 1)">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"1",
           "overflowing steps tolerated before backing off (>= 1)">,
    Option<"minScale", "min-scale", "double", /*default=*/"0.0",
           "lower bound of the scale (0: none)">,
    Option<"maxScale", "max-scale", "double", /*default=*/"0.0",
           "upper bound of the scale (0: none)">,
    Option<"onlyFP16Regions", "only-fp16-regions", "bool", /*default=*/"false",
           "Scale only a step with an op in an `autocast(fp16)` region "
           "(`tg.region = \"fp16\"`): what `ampc` adds when --amp is not "
           "fp16 and no --loss-scale is given">,
  ];
}

//===----------------------------------------------------------------------===//
// Data-parallel training
//===----------------------------------------------------------------------===//

def DataParallel : Pass<"ampc-data-parallel", "::mlir::func::FuncOp"> {
  let summary = "Bucketed gradient all-reduce of a data-parallel training "
                "step (PyTorch DistributedDataParallel)";
  let description = [{
    Makes a training step average its gradients over the ranks of a
    data-parallel job, as ops of the IR. Runs after autodiff and the
    optimizer expansion, before loss scaling (so `found_inf`, the skip and
    the scale update are computed from the same reduced gradients on every
    rank). `ampc` runs it under `--data-parallel` and in `ampc run` started
    by an MPI launcher with more than one rank.

    1. The gradients are the `grads` operands of the step's gradient
       consumers (`tg.clip_grad_norm`, `tg.sgd_update`, `tg.adamw_update`,
       or `tg.check_finite_and_unscale` when loss scaling already ran),
       except what another consumer produced (a clip's outputs), and the
       gradients of parameters that `tg.grad` produced (marked by
       `tg.grad_of %g wrt %p` with `%p` a `tg.param` argument), as DDP
       averages every parameter's `.grad` in the backward, with an
       optimizer or without one:
       - a marked gradient that is the same computation as the one the
         optimizer update reads for `%p` (the same ops on the same values,
         as when `grad` and `minimize` differentiate the same loss) is not
         reduced again: its uses, the marker and the function's results
         read that gradient's reduced value, exactly what the optimizer
         consumed (before clipping), and its own backward becomes dead;
       - any other marked gradient joins the buckets itself; all its uses
         read the reduced value (ops that read it earlier move after the
         wait);
       - a gradient of an input (or of any value that is not a parameter)
         stays the rank's own: per-sample data, like `x.grad` under DDP;
       - a marked gradient no seed reaches (a zero constant) is left alone.
       Each marker moves after its bucket's wait and names the reduced
       value. A step with marked parameter gradients but no consumer waits
       just before its `return`.
    2. They are cut into buckets in the order the backward produces them
       (their defining ops' order in the block): the first bucket holds at
       most `first-bucket-mb` MiB (a small bucket that starts early, as
       DDP's first bucket), the others at most `bucket-cap-mb` MiB (DDP's
       `bucket_cap_mb`, 25 by default); a gradient larger than the cap
       gets a bucket of its own.
    3. Each bucket's `tg.grad_allreduce_start` is placed right after the op
       that produces its last gradient, so its communication overlaps the
       rest of the backward; every `tg.grad_allreduce_wait` is placed just
       before the first gradient consumer, whose uses (and every later use,
       including the function's results) are rewired to the waited values.
       With `delay-allreduce` every start is placed there too, after the
       whole backward (DDP's `delay_allreduce=True`).
    4. Pre-division (`predivide`): `auto` (the default) pre-divides when the
       step has any f16 or bf16 value (automatic mixed precision), `always`
       and `never` force it. Pre-dividing puts one `tg.divide_by_world`
       after a `tg.grad_seed`, so the backward computes the gradient
       of `loss / W` (W, the world size, is read at run time): every
       gradient, 16-bit or f32, leaves the backward already divided by W
       and the reductions sum. Each rank's backward then works at the
       magnitudes of one process with the whole batch, so a 16-bit value
       overflows on the ranks exactly when it would there. Without
       pre-division the buckets carry `mean`: the sum over the ranks, then
       divided by W. Under `auto` a seed whose backward yields a marked
       gradient of an input is not divided (that gradient is the rank's
       own, not a share of a sum); gradients of divided and of undivided
       seeds go in separate buckets, summed and `mean` respectively (a
       gradient that depends on both makes the step divide none);
       `always` divides every seed, input gradients included.
    5. `allreduce-fp32`: 16-bit gradients are widened to f32 for the
       reduction and rounded back once (Apex's `allreduce_always_fp32`);
       otherwise a bucket travels as one message per element type.

    The compiled step does not depend on the number of ranks: with no
    communicator attached to the runtime context (one process) the starts
    and waits do nothing and `tg.divide_by_world` divides by 1. The function
    gets `tg.data_parallel = {buckets = N, bucket_cap_mb = ..., predivide =
    "seed" | "some_seeds" | "none", ...}` (`some_seeds`: some seeds were
    divided, not all); a function that has it is left alone.
    `ampc-loss-scaling`, after it, sums `found_inf` over the ranks (bucket
    N, right after the check) when its check also reads a returned gradient
    that is no all-reduce's result (an input's), so the skip is the same on
    every rank.

    ```mlir
    // after, for gradients %gb (produced first) and %gw of a step with
    // bucket-cap-mb small enough to split them:
    %gb1 = tg.grad_allreduce_start %gb {bucket = 0 : i64, mean} : tensor<4xf32>
    ...
    %gw1 = tg.grad_allreduce_start %gw {bucket = 1 : i64, mean} : tensor<4x4xf32>
    %rb = tg.grad_allreduce_wait %gb1 {bucket = 0 : i64} : tensor<4xf32>
    %rw = tg.grad_allreduce_wait %gw1 {bucket = 1 : i64} : tensor<4x4xf32>
    %new:2 = tg.sgd_update params(%w, %b : ...) grads(%rw, %rb : ...) ...
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
  let options = [
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "the most MiB of gradients in a bucket (after the first)">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "the most MiB of gradients in the first bucket">,
    Option<"allreduceFp32", "allreduce-fp32", "bool", /*default=*/"false",
           "reduce 16-bit gradients in f32">,
    Option<"delayAllreduce", "delay-allreduce", "bool", /*default=*/"false",
           "start every bucket after the backward, before the first "
           "consumer">,
    Option<"predivide", "predivide", "std::string", /*default=*/"\"auto\"",
           "divide the seed by the world size: auto (with 16-bit values) | "
           "always | never">,
  ];
}

def DataParallelNarrow : Pass<"ampc-data-parallel-narrow", "::mlir::func::FuncOp"> {
  let summary = "Reduces a widened 16-bit gradient of a data-parallel step "
                "as its 16-bit value";
  let description = [{
    Runs after `ampc-data-parallel`, loss scaling and cast optimisation,
    when the step has 16-bit values. A bucket member that is only the
    exact widening of a 16-bit value (a `tg.cast` or a `tg.reshape` from
    f16/bf16 to f32, read by nothing but the bucket's
    `tg.grad_allreduce_start`, of a value read by nothing else) is replaced
    by that 16-bit value, and the widening is repeated on the reduced value
    right after the bucket's `tg.grad_allreduce_wait`; the wait's readers
    read the widened result.

    Why: one process with the whole batch computes such a gradient in 16
    bits (a bias gradient `tg.sum` over the batch stores f16, and the
    widening only hands it to the f32 check), so it overflows there when
    the whole batch's sum passes the 16-bit range. Reducing the f32
    widening would add the ranks' 16-bit parts in f32, past that limit, and
    the ranks would not skip the step one process skips. Reduced as a
    16-bit message (added in f32, rounded once to 16 bits, as every 16-bit
    reduction is), the sum overflows where one process's does. Gradients
    whose kernel stores f32 itself (a GEMM with a fused f32 store) are not
    widenings and are reduced in f32, as before.

    ```mlir
    // before
    %s = tg.sum %d dims [0] keepdim : tensor<4x32xf16> -> tensor<1x32xf16>
    %g = tg.reshape %s shape [32] {tg.compute = f16} : tensor<1x32xf16> -> tensor<32xf32>
    %b = tg.grad_allreduce_start %g {bucket = 0 : i64} : tensor<32xf32>
    %r = tg.grad_allreduce_wait %b {bucket = 0 : i64} : tensor<32xf32>
    // after
    %s = tg.sum %d dims [0] keepdim : tensor<4x32xf16> -> tensor<1x32xf16>
    %b = tg.grad_allreduce_start %s {bucket = 0 : i64} : tensor<1x32xf16>
    %w = tg.grad_allreduce_wait %b {bucket = 0 : i64} : tensor<1x32xf16>
    %r = tg.reshape %w shape [32] {tg.compute = f16} : tensor<1x32xf16> -> tensor<32xf32>
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

//===----------------------------------------------------------------------===//
// Dropout under data-parallel ranks
//===----------------------------------------------------------------------===//

def DropoutSampleLayout : Pass<"ampc-dropout-sample-layout", "::mlir::func::FuncOp"> {
  let summary = "Proves where each sample of a dropout's input lies, so "
                "data-parallel ranks draw one process's dropout masks";
  let description = [{
    Under W data-parallel ranks of per-rank batch B, rank r's sample j is
    sample `j * W + r` of the batch of one process with batch W * B (the
    ranks' data interleave). A dropout mask is keyed by the element's
    row-major index, so for the ranks to draw that process's masks, each
    rank's element must be mapped to the index it has there; that is
    possible when the dropout's input holds each sample of the batch as
    one contiguous block of S elements (the batch is its outermost index).
    This pass proves it and records S as `sample_elems` on the `tg.dropout`
    (and on its gradient, the `tg.dropout` of the same `key`), which then
    lowers to `ampc_dropout_ranked_fwd`. `ampc` runs it with the
    data-parallel pass (`--data-parallel`, and `ampc run` under an MPI
    launcher with more than one rank).

    The analysis runs forward over the step. The batch is dim 0 of the
    graph's data inputs (`tg.input`; what `ampc run` shards), the size B
    most of them share (on a tie, the earliest input's): an input of shape
    `[B, d1, ...]` has S = d1 * ...; an input with another dim 0 (an
    attention mask, a table given whole to every rank) holds no batch.
    Then, for the first result of each op:

    - a reshape keeps S (the elements keep their order: `[B, T, D]` to
      `[B*T, D]` or `[B, T*D]`);
    - an elementwise op (unary, binary, `where`, `cast`, `dropout`,
      `broadcast_to`, `prelu`) takes S from its operands of the result's
      shape, or, for an operand broadcast within rows (same rank, same dim
      0), S scaled to the result's rows;
    - a row-wise op keeps dim 0 and computes row k from row k of its input:
      `matmul` / `mm` / `linear` (the lhs; the rhs too in batched
      products), `bmm`, convolutions, pooling, `layer_norm`, `rms_norm`,
      `group_norm`, `batch_norm`, `embedding` (the ids), and the ops along
      dims that leave dim 0 alone (`softmax`, `log_softmax`, reductions,
      `cumsum`, `argmax`, `slice`, `concat`, `cosine_similarity`), a
      transpose whose `perm` starts with 0. Its result has S when every
      sample of its input is whole rows of dim 0: S_out = (S / row_in) *
      row_out;
    - anything else (a transpose that moves dim 0, a reduction over it, an
      op the pass does not know) proves nothing.

    Operands that disagree prove nothing. A forward dropout whose input is
    not proven gets no attribute and keeps its one-process mask; with
    `notes` (the default) the pass says so with a note at its location.

    ```mlir
    // before
    %h = tg.matmul %x, %w : tensor<4x3x8xf32>, tensor<8x8xf32> -> tensor<4x3x8xf32>
    %r = tg.reshape %h shape [12, 8] : tensor<4x3x8xf32> -> tensor<12x8xf32>
    %y = tg.dropout %r, %step {key = 0 : i64, p = 5.000000e-01 : f64} : tensor<12x8xf32>, tensor<i32> -> tensor<12x8xf32>
    // after (x: [4, 3, 8], a data input)
    %y = tg.dropout %r, %step {key = 0 : i64, p = 5.000000e-01 : f64, sample_elems = 24 : i64} : ...
    ```

    The attribute changes nothing on one process (no communicator, or one
    rank: the same bits as without it).
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
  let options = [
    Option<"notes", "notes", "bool", /*default=*/"true",
           "note each dropout whose input layout is not proven">,
  ];
}

//===----------------------------------------------------------------------===//
// Automatic mixed precision
//===----------------------------------------------------------------------===//

def AutoMixedPrecision : Pass<"ampc-auto-mixed-precision", "::mlir::func::FuncOp"> {
  let summary = "Automatic mixed precision: op classes, casts, fused casts";
  let description = [{
    Rewrites a graph for automatic mixed precision, following the numeric
    contract in `docs/amp.md`. In the `ampc` pipeline it runs on the
    program as written, before `ampc-autodiff`, which then builds the
    backward graph at the mixed types exactly as autograd does under
    `torch.autocast` (the gradient of an f16 value is f16, the gradient of a
    cast the cast back); on a step that already has backward ops (a
    hand-written one) it recasts those by class as well. Each op gets a class from the policy table
    (`ampc/Transforms/AMPPolicy.h`: op name to class, defaults of amp.md,
    extensible for other dialects' ops), unless `tg.pin` pins it:

    - `lower` (`matmul linear conv2d`, their backward GEMMs): every float
      input is cast to low (`low-type`), the op computes in low with f32
      accumulation, the result is low.
    - `fp32` (`exp log pow rsqrt softmax log_softmax layer_norm rms_norm sum
      mean cross_entropy mse_loss`): inputs cast to f32, result f32.
    - `promote` (`add sub mul div maximum minimum concat`): narrower float
      inputs are cast to the widest, with PyTorch's category rule: bare
      numbers (`tg.constant`) never widen anything and are rematerialised in
      the compute type (no cast op), rank-0 tensors only widen other rank-0
      operands.
    - `follow` (everything else, `tg.grad`/`tg.minimize` before autodiff, and
      ops not in the table, with a remark or, with `unknown-ops=error`, an
      error): computes in the type of its inputs; no cast is ever inserted
      for it.
    - `tg.pin = T` (`@f32`, `@f16`, `@bf16` in the source): inputs cast to T,
      computed and stored in T, whatever the class.

    Autocast regions (`autocast(MODE) { ... }` in the source, `tg.region =
    "MODE"` on each op inside, the innermost block's): an op in an `off`
    region computes as if pinned f32; one in an `fp16` or `bf16` region
    follows the classes above with that low type, whatever `low-type` is. A
    pin on the op wins over its region. With `outside-regions=false` (what
    `ampc` runs under `--amp=off`) ops outside every region, and the pins on
    them, are left as written, and a function without regions is not
    touched. A `tg.grad` in a region follows its operands.

    Parameters and inputs (function arguments) are never changed: a `lower`
    op reading an f32 parameter reads a cast of it, the master weight stays
    f32. Integer tensors are never touched. A result whose type changed is
    cast back to the function's declared result type at `return`. Source
    casts (`tg.cast` written by the user) and ops that already carry
    `tg.compute` are kept as they are, which makes the pass idempotent.
    Casts it inserts carry `tg.role = "amp"` (cast optimization rewrites
    only those) and, for diagnostics, the location `fused<"amp">[consumer
    location]`; no decision reads locations.

    Ops of other dialects, registered or not, get their class from the same
    table (`registerOpClass`, `--ampc-amp-register=` in `ampc-opt`, the
    `*-ops` options) and are rewritten so that the result verifies, or the
    pass fails with an error at the op that says why:

    - Ops inside regions (`scf.if`, `scf.for`, ...) are handled like
      top-level ones; what a region yields is cast back to the type it was
      written with, and so is every operand of an op whose types are tied to
      a region or a callee (ops with regions, calls).
    - A foreign op is retyped as its class says (float operands cast,
      float results retyped) and then checked with its own verifier. A
      `follow` op follows only when its float operands and results had one
      element type, reading mixed inputs at their widest type (an `arith.addf`
      of a lowered GEMM result and an f32 value adds in f32); otherwise, or
      when it would not verify, it is kept in the types it was written with
      (its operands are cast back: `arith.truncf` of a lowered value).
    - A linalg named op (`linalg.matmul`, `linalg.exp`, ...) classified
      `lower`, `fp32` or `promote` is rebuilt: its inputs are cast and it
      gets the body its region builder makes for the new types. A `lower`
      one keeps its outputs (the accumulator) as written, so it reads low
      inputs and accumulates in f32, and its results are cast to low after
      it (autocast's rounding of a GEMM result); the others compute and
      store in the class's type. The rebuilt op carries `tg.compute` (what
      it computes in), so a second run keeps it. Bodies of linalg ops are
      not graph ops and are left alone.
    - Any other `lower`, `fp32` or `promote` op that has regions
      (`linalg.generic`, whose hand-written body ties its element types),
      is a call, or does not verify once retyped is refused: "'OP' must
      compute in f16 (its AMP class), but automatic mixed precision cannot
      retype it: ...". Classify it `follow` to keep it as written.
    - Scalars and dynamically shaped tensors are cast with `arith.extf` /
      `arith.truncf`, static tensors with `tg.cast`.

    `policy=reference` stops there: each op's compute type and each value's
    type are exactly those `torch.autocast("cuda", dtype=low)` gives (with
    `mean` in f32), every cast is an explicit `tg.cast`, and each value is
    cast at most once to each type (autocast's weight-cast cache, extended to
    every value).

    `policy=fast` (default) then runs `ampc-cast-optimization` on the result,
    which fuses casts into producers and consumers (see that pass). The
    guarantee, checked op by op against `reference` in the tests: every op
    reads each input with at least the precision it has under `reference`
    (the same values, or values that skip a rounding), every op computes in
    the same type as under `reference` (so every `lower` op computes in
    low), and no rounding is ever added; a lossy round trip (f32 -> f16 ->
    f32) is never folded, an exact one (f16 -> f32 -> f16) is.

    Before (`low-type=f16 policy=reference`):
    ```mlir
    %0 = tg.matmul %x, %w : tensor<64x784xf32>, tensor<784x256xf32> -> tensor<64x256xf32>
    %1 = tg.softmax %0 dim 1 : tensor<64x256xf32>
    ```
    After:
    ```mlir
    %c0 = tg.cast %x : tensor<64x784xf32> to tensor<64x784xf16>
    %c1 = tg.cast %w : tensor<784x256xf32> to tensor<784x256xf16>
    %0 = tg.matmul %c0, %c1 : tensor<64x784xf16>, tensor<784x256xf16> -> tensor<64x256xf16>
    %c2 = tg.cast %0 : tensor<64x256xf16> to tensor<64x256xf32>
    %1 = tg.softmax %c2 dim 1 : tensor<64x256xf32>
    ```
    With `policy=fast` the GEMM writes f32 directly (its only reader wants
    f32) and `%c2` disappears:
    `tg.matmul %c0, %c1 : tensor<64x784xf16>, tensor<784x256xf16> -> tensor<64x256xf32>`.

    Numerics caveats: `lower` ops round their result to low (as autocast
    does), so values above 65504 overflow to inf in f16 (use bf16, loss
    scaling, or `fp32-ops`/pins for such ops); bf16 keeps f32's range with 8
    bits of mantissa. Casts use IEEE round-to-nearest-even.
  }];
  let dependentDialects = ["::ampc::tg::TGDialect", "::mlir::arith::ArithDialect"];
  let options = [
    Option<"lowType", "low-type", "::ampc::amp::LowType",
           /*default=*/"::ampc::amp::LowType::F16",
           "The 16-bit type `lower` ops compute in",
           [{::llvm::cl::values(
               clEnumValN(::ampc::amp::LowType::F16, "f16", "IEEE half precision"),
               clEnumValN(::ampc::amp::LowType::BF16, "bf16", "bfloat16"))}]>,
    Option<"policy", "policy", "::ampc::amp::Policy",
           /*default=*/"::ampc::amp::Policy::Fast",
           "How casts are placed",
           [{::llvm::cl::values(
               clEnumValN(::ampc::amp::Policy::Reference, "reference",
                          "exactly torch.autocast, explicit casts"),
               clEnumValN(::ampc::amp::Policy::Fast, "fast",
                          "the same contract or stricter, casts fused"))}]>,
    ListOption<"fp32Ops", "fp32-ops", "std::string",
               "Ops moved to the fp32 class (`gelu`, `tg.gelu`, `arith.mulf`)">,
    ListOption<"lowerOps", "lower-ops", "std::string",
               "Ops moved to the lower class">,
    ListOption<"followOps", "follow-ops", "std::string",
               "Ops moved to the follow class">,
    Option<"outsideRegions", "outside-regions", "bool", /*default=*/"true",
           "Rewrite the ops outside autocast regions (false: only the ops "
           "in `tg.region`s, what --amp=off runs)">,
    Option<"unknownOps", "unknown-ops", "::ampc::amp::UnknownOpMode",
           /*default=*/"::ampc::amp::UnknownOpMode::Follow",
           "What to do with an op that is not in the policy table",
           [{::llvm::cl::values(
               clEnumValN(::ampc::amp::UnknownOpMode::Follow, "follow",
                          "treat it as follow, with a remark"),
               clEnumValN(::ampc::amp::UnknownOpMode::Error, "error",
                          "fail with an error at the op"))}]>,
  ];
}

def CastOptimization : Pass<"ampc-cast-optimization", "::mlir::func::FuncOp"> {
  let summary = "Fuse the casts of automatic mixed precision into kernels";
  let description = [{
    The `fast` policy of automatic mixed precision, as a pass of its own so
    that it also sees the casts later passes (loss scaling) add. It rewrites
    only casts that automatic mixed precision is responsible for
    (`tg.role = "amp"`: inserted by it, or the cast back autodiff built as
    the gradient of one); a `cast()` written in the source stays. It decides
    from attributes and op kinds only, so stripping locations changes
    nothing; blocks nested in regions are rewritten too. Two rewrites,
    using the dialect's fused stores and `tg.compute` (see the dialect's
    "Mixed precision"):

    1. *Producer fusion* — a value whose every reader reads the same cast of
       it is stored in the cast's type by its producer, which keeps computing
       in its own type (`tg.compute`). Narrowing: the producer rounds on
       store, exactly as the cast did. Widening (a GEMM whose readers all want
       f32): the GEMM writes its f32 accumulator directly, skipping the
       rounding to low. Function arguments (parameters, inputs) are never
       restored, so their casts are never fused this way.
    2. *Consumer fusion* — a reader that is not GEMM-like and computes in the
       cast's type reads the uncast value and converts it on load (it gets
       `tg.compute`). A widening cast is always fused (the reader loads
       fewer bytes); a narrowing cast only when every reader can load-convert
       and the readers together load no more bytes than the cast kernel
       moves (k readers of an f32 -> f16 cast: k <= 3). GEMMs read their
       inputs in low precision, so a cast into a GEMM stays unless producer
       fusion removes it.

    Every value each op reads is the one it reads under `reference` or a
    more precise one (a GEMM's unrounded f32 result), every op computes in
    the same type, and no rounding is added, so the pass is numerically
    exact or stricter. It is idempotent and never folds a lossy round trip.

    Before:
    ```mlir
    %h = tg.layer_norm %x, %w, %b eps 1.0e-05 : ... -> tensor<4x64xf32>
    %c = tg.cast %h {tg.role = "amp"} : tensor<4x64xf32> to tensor<4x64xf16>
    %q = tg.linear %c, %wq : tensor<4x64xf16>, tensor<64x64xf16> -> tensor<4x64xf16>
    %k = tg.linear %c, %wk : tensor<4x64xf16>, tensor<64x64xf16> -> tensor<4x64xf16>
    ```
    After (layer_norm computes in f32 and stores f16):
    ```mlir
    %h = tg.layer_norm %x, %w, %b eps 1.0e-05 {tg.compute = f32} : ... -> tensor<4x64xf16>
    %q = tg.linear %h, %wq : tensor<4x64xf16>, tensor<64x64xf16> -> tensor<4x64xf16>
    %k = tg.linear %h, %wk : tensor<4x64xf16>, tensor<64x64xf16> -> tensor<4x64xf16>
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

//===----------------------------------------------------------------------===//
// Opt level O2: model copies
//===----------------------------------------------------------------------===//

def ModelCopies : Pass<"ampc-model-copies", "::mlir::func::FuncOp"> {
  let summary = "Give each parameter read in low precision a low model copy "
                "the optimizer writes (opt level O2)";
  let description = [{
    Apex's O2: the optimizer updates f32 master weights and the forward
    reads fp16 model weights. Runs after autodiff and loss scaling (so the
    updates are already predicated on `found_inf`), before cast
    optimization. For every f32 parameter read through `tg.cast`s to a
    16-bit type:

    - a state argument `NAME.model` of that type is added (`tg.state`,
      `tg.model_of = "NAME"`: the lowering initialises it as the master
      rounded, after the masters are initialised), and every such cast is
      replaced by it, so the forward and backward read the model copy with
      no cast kernel;
    - when an optimizer update (`tg.sgd_update`, `tg.adamw_update`) updates
      the parameter, the update op gets the copy in its `models` operand
      (`model_params` gives the parameter of each model copy), so the update
      kernel stores the rounded new master into it in the same pass over the
      elements, and its new value is returned as state (`tg.state_out`),
      updated in place. A graph that does not update the parameter (an
      evaluation graph) only reads the copy; graphs of one file share it by
      name like the master.

    The values are exactly those of the casts it replaces: the model copy is
    always the master rounded to its type (a skipped step changes neither).
    The gradients keep their types (the backward of the removed cast, the
    cast of the low gradient to f32, stays).

    ```mlir
    // before
    %w16 = tg.cast %w {tg.role = "amp"} : tensor<4x4xf32> -> tensor<4x4xf16>
    %y = tg.matmul %x, %w16 ...
    %new = tg.sgd_update params(%w : tensor<4x4xf32>) grads(%gw : tensor<4x4xf32>) found_inf(%f : tensor<f32>) {...}
    // after: %wm is the argument {tg.state = "w.model", tg.model_of = "w"}
    %y = tg.matmul %x, %wm ...
    %new:2 = tg.sgd_update params(%w : tensor<4x4xf32>) grads(%gw : tensor<4x4xf32>) found_inf(%f : tensor<f32>)
        models(%wm : tensor<4x4xf16>) {model_params = array<i64: 0>, ...}
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

def LowParams : Pass<"ampc-low-params", "::mlir::func::FuncOp"> {
  let summary = "Store parameters read only in low precision in that type "
                "(opt level O3)";
  let description = [{
    Apex's O3 ("pure fp16": `model.half()`, no master weights). Runs after
    the mixed-precision rewriting (with every float op in the lower class)
    and before autodiff. A parameter (`tg.param`, f32) whose every read is a
    `tg.cast` to one 16-bit type (`tg.minimize`'s and `tg.grad`'s parameter
    lists do not read it) becomes an argument of that type, and the casts
    are removed; `tg.minimize`'s updated values and the function's results
    follow. Autodiff then gives it gradients of its type, and the optimizer
    updates it in place in that type (computing in f32, its state f32, as
    for any parameter). A parameter that an f32 op reads (`batch_norm`
    under `--keep-batchnorm-fp32=true`) stays f32.

    Numerics: the initial values are the f32 initialisers' rounded to the
    low type; updates smaller than half an ulp of the parameter are lost,
    as in PyTorch with a half model.

    ```mlir
    // before
    func.func @step(%w: tensor<4x4xf32> {tg.param = "w", ...}, ...) {
      %w16 = tg.cast %w : tensor<4x4xf32> -> tensor<4x4xf16>
      ...
    // after
    func.func @step(%w: tensor<4x4xf16> {tg.param = "w", ...}, ...) {
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

//===----------------------------------------------------------------------===//
// Transposes folded into GEMMs (docs/codegen.md)
//===----------------------------------------------------------------------===//

def FoldTransposes : Pass<"ampc-fold-transposes", "::mlir::func::FuncOp"> {
  let summary = "Fold transposes and permutes into the GEMMs that read or "
                "write them";
  let description = [{
    Runs after autodiff, loss scaling and cast optimization, just before
    buffer planning (the pipeline runs it before it plans buffers: `ampc
    run`, `--emit=lowered|cpp`, and `--emit=report` with
    `--fold-transposes=true`; `--fold-transposes=false` turns it off). A `tg.transpose` that feeds a matrix product (`tg.matmul`, `mm`,
    `bmm` on operands of rank >= 2), or that is the only user of one's
    result, becomes part of a `tg.permuted_matmul`: the GEMM then reads the
    transpose's input, and writes the transpose's result, through leading
    dimensions, transposed-operand flags and batch strides, and the copy
    is gone. Chains of transposes compose. What the pass folds:

    - `x^T` of the last two dims: the operand's trans flag (`k^T` in
      `q @ k^T`, every `dy^T @ x` and `x^T @ dy` of autodiff's matmul and
      linear gradients).
    - Permutes that move batch dims or split heads (`[B, T, H, D] ->
      [B, H, T, D]`): batch strides. Where the batch dims of the three
      matrices cannot be merged into one strided batch (the `[B, H]`
      batches of a `[B, T, H, D]` tensor) they form an outer batch the
      runtime loops over and an inner strided one; more levels than two
      are not folded.
    - The result side: a product whose only user is a permute (attention's
      head merge `[B, H, T, D] -> [B, T, H, D]`) writes that layout
      directly, when the result's last dim stays its unit-stride dim.

    A fold happens only where such a strided GEMM exists (in each permuted
    operand one of its two matrix dims is the stored tensor's last dim, and
    so for the result), and only for transposes that keep the element type
    (one that also converts stays). A transpose whose other users are not
    products stays for them; the folded products no longer read it.

    Numerics: each result element is the same dot product, accumulated in
    f32 over k in the same order by the CPU backend (OpenBLAS packs the
    strided or transposed operand into the same panels as the contiguous
    copy) and rounded once into the result's type; the parameters after
    training steps of the benchmark programs and the examples are
    bit-identical with and without the fold (see docs/codegen.md). cuBLASLt
    may pick another algorithm for another layout, so on CUDA results can
    differ in the last bits, as between any two GEMM layouts there.

    ```mlir
    // before
    %kt = tg.transpose %k perm [0, 2, 3, 1] : tensor<8x128x4x64xf32> -> tensor<8x4x64x128xf32>
    %qt = tg.transpose %q perm [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
    %s = tg.matmul %qt, %kt : tensor<8x4x128x64xf32>, tensor<8x4x64x128xf32> -> tensor<8x4x128x128xf32>
    // after
    %s = tg.permuted_matmul %q, %k lhs_perm [0, 2, 1, 3] rhs_perm [0, 2, 3, 1]
        result_perm [0, 1, 2, 3]
        : tensor<8x128x4x64xf32>, tensor<8x128x4x64xf32> -> tensor<8x4x128x128xf32>
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

//===----------------------------------------------------------------------===//
// Buffer planning
//===----------------------------------------------------------------------===//

def BufferPlanning : Pass<"ampc-buffer-planning", "::mlir::func::FuncOp"> {
  let summary = "Place every intermediate tensor of a step in one arena";
  let description = [{
    Runs last, after mixed precision, autodiff, loss scaling and cast
    optimization. Every op result gets a byte offset in one arena
    (`tg.offsets`, one entry per result; -1: not in the arena); values whose
    live ranges (definition to last use, the `return` counting as the end of
    the step) do not overlap share bytes. Offsets are 256-byte aligned.

    Placement is greedy by size: largest buffer first, each at the lowest
    offset where it overlaps no placed buffer whose live range meets its
    own. The placed buffers a live range meets are found with a segment
    tree over op indices (those live at its start) and a map by start
    (those starting inside it), so a placement costs O(log n + k) for its k
    conflicts. When the conflicts exceed 64 per buffer in total (many
    long-lived values), it falls back to a linear scan in program order
    with best-fit holes, O(n log n); the linear scan's plan is also kept
    when its arena is smaller. Planning is O(n log n) either way. The plan
    depends only on the program (ties are broken by program order).
    A result that is not a statically shaped tensor is an error at its op.
    So is a tensor (argument or result) of more than 2^62 bytes, or one past
    which the step's tensors together exceed 2^62 bytes: every size, offset
    and bound computed from them then stays clear of int64 overflow.

    Results computed in place share their operand's buffer: the new
    parameters and optimizer state of `tg.sgd_update` / `tg.adamw_update`,
    the scaler state of `tg.update_scale`, the gradients of
    `tg.check_finite_and_unscale` and `tg.clip_grad_norm`, and a `tg.reshape`
    that keeps the element type (a view). So each parameter, optimizer and
    scaler state has one persistent buffer (its argument's) that the step
    updates in place. `found_inf` stays live to the end of the step so the
    host can read whether the step was skipped.

    The `tg.grad_of` markers (what a returned gradient is of) compute
    nothing and are erased first: the lowered step has none.

    The function gets `tg.arena_size` (bytes) and `tg.intermediate_bytes`
    (the sum of all planned buffers: what one allocation per value takes).

    ```mlir
    %0 = tg.relu %x {tg.offsets = array<i64: 0>} : tensor<64x256xf32>
    func.func @step(...) attributes {tg.arena_size = 131072 : i64, tg.intermediate_bytes = 262144 : i64}
    ```
  }];
  let dependentDialects = ["::ampc::tg::TGDialect"];
}

#endif // AMPC_TRANSFORMS_PASSES_TD
