//===- Passes.td - ampc conversions ------------------------*- tablegen -*-===//

#ifndef AMPC_CONVERSION_PASSES_TD
#define AMPC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTGToRuntime : Pass<"ampc-convert-tg-to-rt", "mlir::ModuleOp"> {
  let summary = "Lower buffer-planned tg steps to runtime calls (the rt dialect)";
  let description = [{
    Replaces every `func.func` that `ampc-buffer-planning` has planned by an
    `rt.program` of the same name: one `rt.slot` per argument (inputs,
    parameters, state, in signature order), an `rt.init` with the
    parameters' and state's initialisers (`tg.init`; random ones draw from
    the Philox stream `(seed, argument index)`), and an `rt.step` holding,
    in program order, the runtime calls of every `tg` op on the buffers the
    planner gave it:

    ```mlir
    func.func @f(%x: tensor<64xf32> {tg.input = "x"})
        -> (tensor<64xf32> {tg.output = 0 : i64})
        attributes {tg.arena_size = 256 : i64, tg.intermediate_bytes = 256 : i64} {
      %0 = tg.relu %x {tg.offsets = array<i64: 0>} : tensor<64xf32>
      return %0 : tensor<64xf32>
    }
    ```
    becomes
    ```mlir
    rt.program @f attributes {arena_size = 256 : i64, fingerprint = ... : i64,
                              intermediate_bytes = 256 : i64} {
      rt.slot input @x : tensor<64xf32>
      rt.init {
      ^bb0(%x: !rt.buffer, %arena: !rt.buffer):
      }
      rt.step {
      ^bb0(%x: !rt.buffer, %arena: !rt.buffer):
        %a0 = rt.view %arena[0]
        rt.call "ampc_relu_fwd"(#rt.context, %a0, #rt.dtype<f32>, array<i64: 64>, 1 : i32,
                                %x, #rt.dtype<f32>, array<i64: 64>, 1 : i32)
        rt.output 0, %a0 : tensor<64xf32>
      }
    }
    ```

    Results the runtime computes in place (optimizer and scaler updates,
    unscaling, clipping, element-type-preserving reshapes) are their
    operand's buffer; a new parameter or state value not already in its
    slot is copied there at the end of the step. What each op lowers to is
    one table in lib/Conversion/TGToRuntime (callee and argument list per op).
    An op without a rule, or a function that was not planned, is an error
    located at it.
  }];
  let dependentDialects = ["ampc::rt::RTDialect"];
}

def PlanPrimitives : Pass<"ampc-plan-primitives", "mlir::ModuleOp"> {
  let summary = "Make the step's GEMM and convolution primitives when the program is created";
  let description = [{
    Runs after `ampc-convert-tg-to-rt` (`ampc --emit=lowered` shows both).
    The CPU backend runs GEMMs and convolutions on oneDNN primitives, one
    per problem (shape, dtype, layout), made at a problem's first call and
    kept by the backend. This pass makes every one a step uses before the
    first step: it repeats, at the end of each `rt.init`, the step's calls
    of the entry points the runtime's kernel table marks
    `AMPC_PLANNED_ENTRY` (GEMMs, matmuls, `linear`, the `addmm` family,
    convolutions forward and backward, `cumsum`), once per distinct callee and
    argument list, between `ampc_plan_begin` and `ampc_plan_end`:

    ```mlir
    rt.init {
    ^bb0(%x: !rt.buffer, %w: !rt.buffer, %arena: !rt.buffer):
      rt.call "ampc_init_normal"(#rt.context, %w, ...)
      rt.call "ampc_plan_begin"(#rt.context)
      %a0 = rt.view %arena[0]
      rt.call "ampc_linear_fwd"(#rt.context, %a0, #rt.dtype<f32>, array<i64: 4, 2>, 2 : i32, %x, ...)
      rt.call "ampc_plan_end"(#rt.context)
    }
    ```

    Between the two the runtime's entry points make their primitives and
    read and write no tensor data (docs/runtime.md, "Primitives made
    before the first step"), so the step computes what it computed
    without them; the first step makes no primitive. Arena buffers are
    views of the init block's own arena at the step's offsets; an input,
    which the code of `--emit=cpp` receives only with each step, is passed
    as the arena's first bytes (`rt.view %arena[0]`: no data is read, and
    which primitives a call makes does not depend on its addresses). A
    call with an operand that is an `rt.constant` is not repeated (its
    primitives are made at the first step). A program whose step has none of these
    calls, or whose init calls `ampc_plan_begin` already, is left as it
    is.
  }];
  let dependentDialects = ["ampc::rt::RTDialect"];
}

#endif // AMPC_CONVERSION_PASSES_TD
