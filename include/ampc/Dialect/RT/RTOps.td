//===- RTOps.td - runtime calls on planned buffers ----------*- tablegen -*-===//
//
// The `rt` dialect: what a planned `tg` step means at run time, as calls into
// the runtime C ABI (ampc/runtime.h) whose arguments are typed. It is the one
// lowering that both `ampc run` (through libffi) and the C++ emitter (through
// EmitC) consume.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_RT_RTOPS_TD
#define AMPC_DIALECT_RT_RTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def RT_Dialect : Dialect {
  let name = "rt";
  let cppNamespace = "::ampc::rt";
  let summary = "A training or inference step as runtime calls on planned buffers";
  let description = [{
    The `rt` dialect is the lowered form of a `tg` step after buffer
    planning (`ampc --emit=lowered` prints it). Nothing in it is a tensor
    operation any more: a program is a table of persistent buffers (slots),
    one arena of planned bytes, and two straight-line lists of calls into the
    runtime C ABI, one run once when the program is created (`rt.init`) and
    one run every step (`rt.step`).

    ```mlir
    rt.program @mlp attributes {arena_size = 512 : i64, fingerprint = 42 : i64,
                                intermediate_bytes = 1024 : i64, training} {
      rt.slot input @x : tensor<4x8xf32>
      rt.slot param @w : tensor<8x2xf32>
      rt.init {
      ^bb0(%x: !rt.buffer, %w: !rt.buffer, %arena: !rt.buffer):
        rt.call "ampc_init_normal"(#rt.context, %w, #rt.dtype<f32>, 16 : i64, #rt.seed, 1 : ui64, 0.000000e+00 : f64, 1.000000e-01 : f64)
      }
      rt.step {
      ^bb0(%x: !rt.buffer, %w: !rt.buffer, %arena: !rt.buffer):
        %a0 = rt.view %arena[0]
        rt.call "ampc_matmul_fwd"(#rt.context, %a0, #rt.dtype<f32>, array<i64: 4, 2>, 2 : i32, %x, ...)
        rt.output 0, %a0 : tensor<4x2xf32>
      }
    }
    ```

    Both consumers execute exactly these calls, in order: the in-process
    executor of `ampc run` calls each entry point through libffi, and the C++
    emitter prints each as a call in the generated code (through the EmitC
    dialect and `mlir::emitc::translateToCpp`). A call that returns a status other than `AMPC_OK` ends
    the step with that status.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Discardable attribute names the lowering writes.
    /// On a call: the source op it comes from ({op, pass}, and the check
    /// site of a kernel that takes one).
    static constexpr ::llvm::StringLiteral kSourceAttrName = "rt.source";
    /// On a program: the micro-batches per update (the step function's
    /// `tg.accumulate`).
    static constexpr ::llvm::StringLiteral kAccumulateAttrName = "rt.accumulate";
    /// While lowering, on the step's return: where each returned value goes
    /// (an i64 output index, or an index-typed slot).
    static constexpr ::llvm::StringLiteral kTargetsAttrName = "rt.targets";
  }];
}

class RT_Op<string mnemonic, list<Trait> traits = []>
    : Op<RT_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types and attributes
//===----------------------------------------------------------------------===//

def RT_BufferType : TypeDef<RT_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "A device pointer (`void *`)";
  let description = [{
    The address of a planned buffer in device memory: a slot, a view into
    the arena at an offset, or a constant's buffer.
  }];
}

def RT_SlotRole : I32EnumAttr<"SlotRole", "what a persistent buffer holds", [
    I32EnumAttrCase<"input", 0>, I32EnumAttrCase<"param", 1>,
    I32EnumAttrCase<"state", 2>, I32EnumAttrCase<"buffer", 3>]> {
  let cppNamespace = "::ampc::rt";
}

def RT_ContextAttr : AttrDef<RT_Dialect, "Context"> {
  let mnemonic = "context";
  let summary = "The program's `ampc_context` (a call argument)";
}
def RT_SeedAttr : AttrDef<RT_Dialect, "Seed"> {
  let mnemonic = "seed";
  let summary = "The user's seed (`uint64_t`, a call argument)";
  let description = [{
    The seed given to `ampc run --seed` or to the generated `NAME_create`.
  }];
}
def RT_NullAttr : AttrDef<RT_Dialect, "Null"> {
  let mnemonic = "null";
  let summary = "A null pointer (an absent optional tensor or list)";
}
def RT_DtypeAttr : AttrDef<RT_Dialect, "Dtype"> {
  let mnemonic = "dtype";
  let summary = "An `ampc_dtype` value (a call argument of C type `ampc_dtype`)";
  let description = [{
    Written with the element type it stands for: `#rt.dtype<f16>` is
    `AMPC_F16`. The element types are `f32`, `f16`, `bf16`, `i32`, `i64` and
    `i1` (`AMPC_BOOL`).
  }];
  let parameters = (ins "mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The numeric value of the C enum.
    int32_t getValue() const;
    /// Its C spelling, e.g. "AMPC_F16".
    llvm::StringRef getSymbol() const;
  }];
}
def RT_EnumAttr : AttrDef<RT_Dialect, "Enum"> {
  let mnemonic = "enum";
  let summary = "A constant of a C enum of the runtime (an `int32_t` argument)";
  let description = [{
    Its C spelling and its value: `#rt.enum<"AMPC_GELU_TANH", 1>`.
  }];
  let parameters = (ins StringRefParameter<>:$name, "int32_t":$value);
  let assemblyFormat = "`<` $name `,` $value `>`";
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def RT_ProgramOp : RT_Op<"program", [Symbol, SymbolTable, IsolatedFromAbove,
    SingleBlock, NoTerminator]> {
  let summary = "A lowered step: its slots, its initialisation and its step";
  let description = [{
    Holds, in order, the `rt.slot` declarations (the graph's arguments, in
    signature order), one `rt.init` and one `rt.step`.

    Attributes: `arena_size` (bytes of the step's arena), `intermediate_bytes`
    (the sum of all planned buffers, for reports), `fingerprint` (identifies
    the layout of parameters and state; checkpoints of another program are
    refused), `training` (the step updates parameters), `loss_scale` (the
    slot of a dynamic loss scale) and `static_loss_scale` (a static scale).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$arena_size,
                       I64Attr:$intermediate_bytes, I64Attr:$fingerprint,
                       UnitAttr:$training,
                       OptionalAttr<FlatSymbolRefAttr>:$loss_scale,
                       OptionalAttr<F64Attr>:$static_loss_scale);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The slot declarations, in order.
    llvm::SmallVector<SlotOp, 8> getSlots();
    InitOp getInit();
    StepOp getStep();
  }];
}

def RT_SlotOp : RT_Op<"slot", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "A persistent buffer: an input, a parameter or training state";
  let description = [{
    `rt.slot param @w1 : tensor<784x128xf32>` declares a buffer that lives as
    long as the program, of the tensor's bytes. Inputs are written by the
    caller before each step; parameters and state (optimizer moments, the
    loss scaler) are initialised by `rt.init` and updated in place by the
    step. `int_range` bounds an integer input's valid values (class labels,
    token ids), for synthetic inputs.
  }];
  let arguments = (ins RT_SlotRole:$role, SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyStaticShapeTensor>:$type,
                       OptionalAttr<I64Attr>:$int_range);
  let assemblyFormat = "$role $sym_name `:` $type attr-dict";
}

class RT_CodeOp<string mnemonic> : RT_Op<mnemonic, [HasParent<"ProgramOp">,
    SingleBlock, NoTerminator, DeclareOpInterfaceMethods<OpAsmOpInterface,
    ["getAsmBlockArgumentNames"]>]> {
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The arena's base address (the block's last argument).
    mlir::Value getArena() { return getBody().front().getArguments().back(); }
  }];
}

def RT_InitOp : RT_CodeOp<"init"> {
  let summary = "The calls run once, when the program is created";
  let description = [{
    One block whose arguments are the slots' buffers, in declaration order,
    then the arena's. Initialisers of parameters and state (`ampc_fill`,
    `ampc_init_normal`, `ampc_init_uniform`, each drawing from its own Philox
    stream of the seed).
  }];
}

def RT_StepOp : RT_CodeOp<"step"> {
  let summary = "The calls of one step";
  let description = [{
    One block whose arguments are the slots' buffers, in declaration order,
    then the arena's. Runtime calls, views, constants and the step's
    `rt.output`s; new parameter and state values are in their slots when the
    block ends.
  }];
}

//===----------------------------------------------------------------------===//
// Buffers and calls
//===----------------------------------------------------------------------===//

def RT_ViewOp : RT_Op<"view", [Pure, DeclareOpInterfaceMethods<OpAsmOpInterface,
    ["getAsmResultNames"]>]> {
  let summary = "The address `offset` bytes into a buffer";
  let description = [{
    `%a256 = rt.view %arena[256]`: a planned buffer of the arena (offsets
    come from buffer planning and are 256-byte aligned). Printed names say
    the offset (`%a256`, `%a256_0` for a later value at the same bytes).
    A view of the arena (the code block's last argument) starts inside it:
    `0 <= offset < arena_size`.
  }];
  let arguments = (ins RT_BufferType:$base, I64Attr:$offset);
  let results = (outs RT_BufferType:$result);
  let assemblyFormat = "$base `[` $offset `]` attr-dict";
  let hasVerifier = 1;
}

def RT_ConstantOp : RT_Op<"constant", [Pure, DeclareOpInterfaceMethods<OpAsmOpInterface,
    ["getAsmResultNames"]>]> {
  let summary = "A buffer holding constant data";
  let description = [{
    `%c = rt.constant dense<1.0> : tensor<4xf32>`: a buffer of the value's
    bytes (little-endian, `i1` as one byte), allocated and written once when
    the program is created.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs RT_BufferType:$result);
  let assemblyFormat = "$value attr-dict";
}

def RT_CallOp : RT_Op<"call"> {
  let summary = "A call of a runtime C ABI entry point";
  let description = [{
    `rt.call "ampc_relu_fwd"(#rt.context, %y, #rt.dtype<f16>, array<i64: 4, 8>, 2 : i32, %x, ...)`
    calls `ampc_relu_fwd` and ends the step if it returns an error status.
    Each argument says its C type:

    | argument | C type |
    | --- | --- |
    | `%buffer` | `void *` (a device pointer) |
    | `[%a, %b]` | `void *const *` (a list of device pointers) |
    | `#rt.context` | `ampc_context` |
    | `#rt.seed` | `uint64_t`, the user's seed |
    | `#rt.null` | a null pointer |
    | `#rt.dtype<T>`, `#rt.enum<"NAME", V>` | `ampc_dtype`, an `int32_t` enum |
    | `N : i32`, `N : i64`, `N : ui64` | `int32_t`, `int64_t`, `uint64_t` (or `size_t`) |
    | `X : f64`, `X : f32` | `double`, `float` |
    | `array<i64: ...>` | `const int64_t *` (null when empty) |
    | `[#rt.dtype<..>, ...]` | `const ampc_dtype *` |
    | `[array<i64: ...>, ...]` | `const int64_t *const *` |
    | `dense<...> : tensor<...>` | `const void *` to the value's bytes on the host |

    The callee is a runtime entry point by its C name; `ampc run` resolves it
    in the runtime library when the program is prepared.

    The lowering gives each call of a source op, a backward op or an AMP
    cast the discardable attribute `rt.source`, which changes nothing the
    call does and is read for reports: `op` (the op's name), `pass`
    (`"forward"` or `"backward"`), `results` (the argument positions of its
    result tensors) and, for a kernel that checks indices, `site` (the check
    site it passes as its last argument, numbered in execution order),
    `index` (the checked operand) and `range` (its valid values are
    `[0, range)`):

    ```mlir
    rt.call "ampc_cross_entropy_fwd"(#rt.context, %a0, ..., 0 : i32) {rt.source = {index = "labels", op = "cross_entropy", pass = "forward", range = 10 : i64, results = array<i64: 1>, site = 0 : i32}}
    ```
  }];
  let arguments = (ins StrAttr:$callee, ArrayAttr:$args,
                       Variadic<RT_BufferType>:$buffers);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def RT_OutputOp : RT_Op<"output", [HasParent<"StepOp">]> {
  let summary = "A value the step returns to its caller";
  let description = [{
    `rt.output 0, %a768 : tensor<f32>`: after a step, the buffer holds output 0
    of the graph, a tensor of that type.
  }];
  let arguments = (ins I64Attr:$index, RT_BufferType:$buffer,
                       TypeAttrOf<AnyStaticShapeTensor>:$type);
  let assemblyFormat = "$index `,` $buffer `:` $type attr-dict";
}

def RT_FoundInfOp : RT_Op<"found_inf", [HasParent<"StepOp">]> {
  let summary = "The buffer of the step's overflow flag";
  let description = [{
    `rt.found_inf %f`: after a step, the f32 in this buffer is non-zero when
    the loss scaler found a non-finite gradient (the step's update was
    skipped). Consumers read it for the log.
  }];
  let arguments = (ins RT_BufferType:$flag);
  let assemblyFormat = "$flag attr-dict";
}

#endif // AMPC_DIALECT_RT_RTOPS_TD
