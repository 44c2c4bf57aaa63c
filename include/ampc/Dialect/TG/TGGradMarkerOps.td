//===- TGGradMarkerOps.td - what a returned gradient is of --*- tablegen -*-===//
//
// The marker `ampc-autodiff` puts on every gradient a `grad` statement
// produces, naming the value it is the gradient of. The data-parallel pass
// reads it to average the gradients of parameters that a graph returns
// (DDP's averaged `p.grad`) while the gradients of inputs stay each rank's
// own. Included from TGOps.td, after the collectives.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGGRADMARKEROPS_TD
#define AMPC_DIALECT_TG_TGGRADMARKEROPS_TD

let training = 1, language = "", ampClass = TG_Follow, loadConverts = []<string>,
    kernels = []<string> in {

// Not Pure: an op without results that declares no memory effects is
// "trivially dead" to canonicalization, and the marker must stay in the IR
// (`--emit=mlir`) until buffer planning drops it.
def TG_GradOfOp : TG_Op<"grad_of", [AllTypesMatch<["grad", "wrt"]>]> {
  let summary = "Marks a value as the gradient of a parameter or an input";
  let description = [{
    Says that `grad` is the gradient, with respect to `wrt`, of the loss of
    a `grad(loss, ...)` statement (`tg.grad`). In a `.tg` program `wrt` is
    an argument of the graph, a parameter (`tg.param`) or an input
    (`tg.input`); `tg.grad` written as IR may name any value (the pass
    treats what is not a parameter like an input). `ampc-autodiff` puts one
    marker after every used gradient it
    produces for a `grad` statement (one per named value, so a value that is
    the gradient of two of them gets two markers). The op computes nothing
    and has no results: the graph returns `grad` itself.

    `ampc-data-parallel` reads the markers: under W > 1 ranks the returned
    gradient of a parameter is averaged over the ranks (the marker then names
    the averaged value, the result of its `tg.grad_allreduce_wait`), as
    PyTorch DDP's `p.grad` is; the gradient of an input is per-sample data
    and stays each rank's own. `ampc-loss-scaling` moves a marker to the
    unscaled value, like the returned use. Buffer planning
    (`ampc-buffer-planning`) erases the markers: the lowered step has no
    trace of them.

    ```mlir
    %gw = tg.matmul %xt, %dy : tensor<16x4xf32>, tensor<4x12xf32> -> tensor<16x12xf32>
    tg.grad_of %gw wrt %w1 : tensor<16x12xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$wrt);
  let assemblyFormat = [{ $grad `wrt` $wrt attr-dict `:` type($grad) }];
}

} // training = 1, language = "", ampClass = TG_Follow, loadConverts = [], kernels = []

#endif // AMPC_DIALECT_TG_TGGRADMARKEROPS_TD
