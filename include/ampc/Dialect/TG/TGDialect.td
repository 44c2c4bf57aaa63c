//===- TGDialect.td - the tensor-graph dialect -------------*- tablegen -*-===//
//
// The `tg` dialect: the tensor-graph IR that ampc's frontend produces and its
// passes (autodiff, automatic mixed precision, loss scaling) rewrite.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGDIALECT_TD
#define AMPC_DIALECT_TG_TGDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::ampc::tg";
  let summary = "Tensor graphs for training and inference steps";
  let description = [{
    The `tg` dialect holds the ops of the `.tg` language (one op per language
    op, same name, same meaning as the PyTorch function of that name) plus the
    ops the compiler needs around them: `tg.constant`, `tg.cast`, `tg.grad`,
    `tg.grad_seed` and `tg.minimize`.

    Values are builtin ranked tensors with static shapes and `f32`, `f16`,
    `bf16`, `i32`, `i64` or `i1` elements. Every op has value semantics and
    infers its result type; a verifier names both shapes and the offending
    dimension when they do not fit.

    ## Graphs as functions

    A `.tg` graph becomes a `func.func` whose arguments are, in order, the
    graph's inputs and then its parameters (explicit state):

    ```mlir
    func.func @mlp(%x: tensor<64x784xf32> {tg.input = "x"},
                   %w: tensor<784x10xf32> {tg.param = "w", tg.init = #tg.init<normal(0.0, 0.05)>})
        -> (tensor<f32> {tg.output = 0 : i64}, tensor<784x10xf32> {tg.param_out = "w"})
    ```

    - `tg.input = "NAME"` marks an input argument.
    - `tg.param = "NAME"` marks a parameter (master weight, always stored at
      its declared type) and `tg.init` is its initialiser.
    - Results carry `tg.output = I` (the I-th value of the graph's `return`)
      or, for a training step, `tg.param_out = "NAME"`: the updated value of
      parameter NAME. An inference graph does not return its parameters.
    - `tg.state = "NAME"` marks compiler-made training state (optimizer
      moments, step count, loss-scaler state; docs/training.md), with its
      `tg.init`; `tg.state_out = "NAME"` marks the result that holds its
      new value.
    - A training step holds exactly one `tg.minimize`.

    ## Discardable attributes

    - `tg.loss_scale = {mode = ..., ...}` on a function: the loss-scaling
      configuration the `ampc-loss-scaling` pass applied to it.
    - `tg.pin = f32|f16|bf16` on any op pins its compute precision (the `@f32`
      suffix of the language); automatic mixed precision honours it.
    - `tg.region = "off"|"fp16"|"bf16"` on an op of the source: the
      innermost `autocast(MODE) { ... }` block it was written in. Automatic
      mixed precision applies that mode to it instead of the graph's
      (`off`: as if pinned f32; `fp16`/`bf16`: the op classes with that low
      type), even under `--amp=off`; a `tg.pin` on it wins.
    - `tg.compute = f32|f16|bf16` on an op with a float result: the precision
      the op computes in, when it is not its natural one (see below). The
      automatic-mixed-precision pass sets it and leaves ops that carry it as
      they are.
    - `tg.role = "amp"|"grad"|"optimizer"|"loss_scale"` on an op a pass
      made: a cast automatic mixed precision is responsible for (one it
      inserted, or the cast back autodiff built as its gradient), a backward
      op of autodiff, an optimizer op of the `tg.minimize` expansion, a
      loss-scaling op. Passes and the AMP report decide from it, never from
      locations, so stripping locations changes nothing.

    ## Mixed precision: operand, compute and result types

    Each op has a *natural* element type: the one its type inference gives
    for its operands (the widest float operand, f32 for f16 with bf16). An op
    computes in its *compute type* C: `tg.compute` when present, else the
    natural type. It then means, exactly:

    1. every float operand of another type than C is converted to C as it is
       loaded: exactly when C is wider (f16 or bf16 to f32), with IEEE
       round-to-nearest-even when C is narrower (f32 to f16 overflows to
       infinity, as `tg.cast` does);
    2. the op computes as its PyTorch namesake does on C tensors; GEMM-like
       ops (`matmul`, `linear`, `conv2d` and their backward ops) computing in
       f16 or bf16 accumulate in f32;
    3. a float result whose type R differs from C is rounded from the f32
       accumulator (GEMMs) or from C (everything else) to R on store, with
       round-to-nearest-even; storing a wider R than C keeps the value
       exactly, and a GEMM computing in f16 that stores f32 skips the
       rounding to f16 altogether.

    So a float result may be stored in any float type (same shape): the
    verifier checks shapes and integer types exactly and lets float results
    differ in element type from the inferred one. Integer operands and
    results (ids, labels) are never converted. In the custom assembly the
    result type of a unary op is printed (` -> T`) only when it differs from
    its operand type:

    ```mlir
    // A GEMM reading f16, accumulating in f32 and storing f32 directly.
    %y = tg.matmul %a, %b : tensor<4x8xf16>, tensor<8x2xf16> -> tensor<4x2xf32>
    // layer_norm reading f32, computing in f32, storing f16 (fused cast).
    %h = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf16>
    // add loading an f32 operand, converting it to f16 on load.
    %s = tg.add %p, %q {tg.compute = f16} : tensor<4xf32>, tensor<4xf16> -> tensor<4xf16>
    // softmax reading f16, computing and storing f32.
    %p = tg.softmax %s dim 0 {tg.compute = f32} : tensor<4xf16> -> tensor<4xf32>
    ```

    ## What each op declares

    Everything the compiler knows about an op is in its ODS record
    (TGOpInfo.td), once: its default AMP class (`lower`, `fp32`, `promote`
    or `follow`; a record without one does not build), the operands its
    kernel converts from another float type on load, the operands whose
    buffers its results reuse, its role for loss scaling, the runtime kernels
    it lowers to, how a `.tg` call spells it (operand counts, keyword
    attributes with their defaults), the PyTorch function with its meaning,
    and, for most differentiable ops, its gradient rule as a DAG:

    ```tablegen
    // dx = dy * (1 - y * y)
    def TG_TanhOp : TG_UnaryOp<"tanh", "torch.tanh", TG_FloatTensor, TG_Follow,
        (TGOp<"mul"> $dy, (TGOp<"sub"> (TG_Scalar<"1.0"> $result),
                                      (TGOp<"mul"> $result, $result)))>;
    ```

    At build time `llvm-tblgen --dump-json` prints the records and
    `lib/Dialect/TG/gen-op-tables.py` generates from them the AMP defaults,
    the table of `ampc/Dialect/TG/TGOpInfo.h` (read by the frontend, the
    passes and the lowering), the gradient rules and the JSON that
    `ampc --list-ops` prints (read by the PyTorch reference and the program
    generator in `tools/ampc-torch`).

    An elementwise op with a kernel of its own for its gradient is one
    `defm`: the op, its backward op and the rule that links them, with the
    op's keyword attributes as ODS attributes with defaults:

    ```tablegen
    defm TG_LeakyRelu : TG_UnaryKernelOp<"leaky_relu", "F.leaky_relu", TG_Follow,
        (ins DefaultValuedAttr<F64Attr, "0.01">:$negative_slope)>;
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Discardable attribute names used across the compiler.
    static constexpr ::llvm::StringLiteral kPinAttrName = "tg.pin";
    static constexpr ::llvm::StringLiteral kComputeAttrName = "tg.compute";
    /// The `autocast(MODE) { ... }` block an op of the source is in:
    /// "off", "fp16" or "bf16" (the innermost block).
    static constexpr ::llvm::StringLiteral kRegionAttrName = "tg.region";
    static constexpr ::llvm::StringLiteral kInputAttrName = "tg.input";
    static constexpr ::llvm::StringLiteral kParamAttrName = "tg.param";
    static constexpr ::llvm::StringLiteral kInitAttrName = "tg.init";
    /// A parameter's initial value as data (imported ONNX initializers);
    /// it takes the place of `tg.init`'s generator when both are present.
    static constexpr ::llvm::StringLiteral kInitValueAttrName = "tg.init_value";
    static constexpr ::llvm::StringLiteral kOutputAttrName = "tg.output";
    static constexpr ::llvm::StringLiteral kParamOutAttrName = "tg.param_out";
    static constexpr ::llvm::StringLiteral kStateAttrName = "tg.state";
    static constexpr ::llvm::StringLiteral kStateOutAttrName = "tg.state_out";
    static constexpr ::llvm::StringLiteral kLossScaleAttrName = "tg.loss_scale";
    /// What ampc-data-parallel did (buckets, pre-division): a dictionary.
    static constexpr ::llvm::StringLiteral kDataParallelAttrName = "tg.data_parallel";
    static constexpr ::llvm::StringLiteral kRoleAttrName = "tg.role";
    /// Non-trainable state of the language's `buffer` declarations.
    static constexpr ::llvm::StringLiteral kBufferAttrName = "tg.buffer";
    static constexpr ::llvm::StringLiteral kBufferOutAttrName = "tg.buffer_out";
    /// On a function: the micro-batches per update of gradient accumulation
    /// (ampc-optimizer-expansion), an integer >= 2.
    static constexpr ::llvm::StringLiteral kAccumulateAttrName = "tg.accumulate";
    /// On a low model copy (a state argument, O2): the f32 master param it
    /// copies (ampc-model-copies).
    static constexpr ::llvm::StringLiteral kModelOfAttrName = "tg.model_of";
    /// What ampc-buffer-planning writes: each op's result offsets in the
    /// arena, and on the function the arena's size and the bytes the
    /// intermediates would take unplanned.
    static constexpr ::llvm::StringLiteral kOffsetsAttrName = "tg.offsets";
    static constexpr ::llvm::StringLiteral kArenaSizeAttrName = "tg.arena_size";
    static constexpr ::llvm::StringLiteral kIntermediateBytesAttrName =
        "tg.intermediate_bytes";

    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def TG_InitKind : I32EnumAttr<"InitKind", "parameter initialiser", [
    I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"normal", 2>, I32EnumAttrCase<"uniform", 3>,
    I32EnumAttrCase<"full", 4>]> {
  let cppNamespace = "::ampc::tg";
  let genSpecializedAttr = 0;
}

def TG_InitAttr : AttrDef<TG_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "How a parameter is initialised";
  let description = [{
    `#tg.init<zeros>`, `#tg.init<ones>`, `#tg.init<normal(MEAN, STD)>`,
    `#tg.init<uniform(LOW, HIGH)>` or `#tg.init<full(VALUE)>` (every element
    VALUE, converted to the tensor's element type: the loss scaler's initial
    scale and hysteresis count). Random initialisers draw from the
    counter-based generator seeded by the user (`ampc run --seed`).
  }];
  let parameters = (ins "InitKind":$kind,
                        APFloatParameter<"mean, low bound or full value">:$a,
                        APFloatParameter<"std or high bound">:$b);
  let builders = [
    AttrBuilder<(ins "InitKind":$kind, "double":$a, "double":$b), [{
      return $_get($_ctxt, kind, ::llvm::APFloat(a), ::llvm::APFloat(b));
    }]>
  ];
  let extraClassDeclaration = [{
    double getFirst() const { return getA().convertToDouble(); }
    double getSecond() const { return getB().convertToDouble(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // AMPC_DIALECT_TG_TGDIALECT_TD
