//===- TGOpInfo.td - what every tg op record declares ------*- tablegen -*-===//
//
// The facts about an op that passes, the frontend, the lowering and the
// Python reference need, declared once in the op's record (TGOps.td and the
// family files it includes) next to its types, verifier and description:
//
//  - `ampClass`: its default class for automatic mixed precision (lower,
//    fp32, promote, follow). There is no default: a record without one is a
//    build error (the generator, gen-op-tables.py, refuses it).
//  - `loadConverts`: the operands its kernel converts from another float type
//    as it loads them ("*" for every float operand, operand names otherwise).
//  - `inPlace`: operand groups whose elements the results overwrite in order
//    (result i reuses the buffer of the i-th operand of these groups, when
//    both have the same element type).
//  - `lossScaleRole`: what loss scaling sees in it.
//  - `kernels`: the runtime functions it lowers to.
//  - `language`, `keywords`, `elementwise`: how a `.tg` program calls it.
//  - `torch`: the PyTorch function the reference computes it with.
//  - `gradients`: its gradient rule as data (one DAG per operand).
//
// gen-op-tables.py turns the records (llvm-tblgen --dump-json) into C++
// tables (TGOpInfo.h), the AMP defaults, the frontend's op table, the
// gradient rules and the JSON of `ampc --list-ops`.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGOPINFO_TD
#define AMPC_DIALECT_TG_TGOPINFO_TD

//===----------------------------------------------------------------------===//
// AMP classes
//===----------------------------------------------------------------------===//

class TG_AmpClass<string n> { string name = n; }
/// Inputs cast to low, computed with f32 accumulation, result low.
def TG_Lower : TG_AmpClass<"lower">;
/// Inputs cast to f32, computed and returned in f32.
def TG_FP32 : TG_AmpClass<"fp32">;
/// Mixed float inputs computed in the widest input type.
def TG_Promote : TG_AmpClass<"promote">;
/// Computed in the type of its float input(s); never forces a cast.
def TG_Follow : TG_AmpClass<"follow">;
/// The default of TG_Op: not a class. Every record must choose one.
def TG_NoAmpClass : TG_AmpClass<"">;

//===----------------------------------------------------------------------===//
// Roles for loss scaling
//===----------------------------------------------------------------------===//

class TG_LossScaleRole<string n> { string name = n; }
def TG_NoRole : TG_LossScaleRole<"none">;
/// Where a backward graph starts (its value becomes the scale).
def TG_SeedRole : TG_LossScaleRole<"seed">;
/// Reads the step's gradients and ends the backward graph (optimizers,
/// clipping): loss scaling unscales what reaches it.
def TG_GradientConsumerRole : TG_LossScaleRole<"gradient_consumer">;
/// The fused inf/NaN check and unscale.
def TG_UnscaleRole : TG_LossScaleRole<"unscale">;
/// The dynamic scale update.
def TG_ScaleUpdateRole : TG_LossScaleRole<"scale_update">;

//===----------------------------------------------------------------------===//
// Keyword attributes of the language
//===----------------------------------------------------------------------===//

/// A keyword attribute of a `.tg` call, the attribute of the same name of the
/// op. `kind`:
///  - "float", "int", "bool", "string" (one of `allowed` when not empty),
///    "ints" (a list of integers; one integer is a list of one);
///  - "pair": one integer or a list of two (spatial dims);
///  - "single", "triple": one integer or a list of one / of three (the
///    spatial dims of 1-D and 3-D convolutions);
///  - "dim": an integer dim of operand 1, negative counting from the end;
///  - "dims": a list of such dims, sorted, no repeats; absent means all dims.
/// `dflt` is the default in the language's spelling; "" means required and
/// "=NAME" the value of keyword NAME.
class TG_Keyword<string n, string k, string d = "", list<string> a = []> {
  string name = n;
  string kind = k;
  string dflt = d;
  list<string> allowed = a;
}

//===----------------------------------------------------------------------===//
// Kernel arguments
//===----------------------------------------------------------------------===//
//
// `kernelArgs` lists the C arguments of the op's kernel call after the
// context, in order, as the lowering (lib/Conversion/TGToRuntime) builds
// them. A "group" is an ODS operand or result group of the op (an operand, an
// optional operand or a variadic list), by index. Ops whose kernel is a row
// of a family of the runtime's kernel table (elementwise, reductions,
// softmax, pooling) leave it empty: the family gives the arguments.

class TG_KernelArg<string k, int g = 0, string n = "", string v = ""> {
  string kind = k;
  int group = g;
  string name = n;
  string value = v;
}
/// ptr, dtype, dims, rank of the first value of result group `g`.
class TG_Res<int g> : TG_KernelArg<"res", g>;
/// The same, or NULL, AMPC_F32, NULL, 0 when no op reads that value: for a
/// kernel that then skips computing it (a convolution's input gradient
/// where the input is the step's own input).
class TG_ResOrNull<int g> : TG_KernelArg<"resOrNull", g>;
/// The same of operand group `g` (NULL, AMPC_F32, NULL, 0 when absent).
class TG_Opd<int g> : TG_KernelArg<"opd", g>;
/// NULL, AMPC_F32, NULL, 0: a tensor the kernel may skip.
def TG_NullTensor : TG_KernelArg<"nullTensor">;
/// ptr of operand group `g`'s first value.
class TG_Buf<int g> : TG_KernelArg<"buf", g>;
/// ptr of result group `g`'s first value.
class TG_ResBuf<int g> : TG_KernelArg<"resBuf", g>;
/// The buffers, dtypes, element counts, count (int32_t) and shapes of the
/// values of operand group `g`.
class TG_List<int g> : TG_KernelArg<"list", g>;
class TG_Dtypes<int g> : TG_KernelArg<"dtypes", g>;
class TG_Numels<int g> : TG_KernelArg<"numels", g>;
class TG_Count<int g> : TG_KernelArg<"count", g>;
class TG_Shapes<int g> : TG_KernelArg<"shapes", g>;
/// ptr and dtype of optional operand group `g`, or NULL, AMPC_F32.
class TG_FlagArg<int g> : TG_KernelArg<"flag", g>;
/// ptr of optional operand group `g`, or NULL.
class TG_OptBuf<int g> : TG_KernelArg<"optBuf", g>;
/// No argument: result group `g` is the step's overflow flag.
class TG_MarkFoundInf<int g> : TG_KernelArg<"markFoundInf", g>;
/// Attribute `n` as int64_t, int32_t, 0/1 (int32_t, unit or bool), double
/// (the record's default, else 0, when absent), float (the record's default
/// when absent); an i64 array and its length (int32_t); every element of an
/// i64 array (int64_t each); "none" | "tanh" as ampc_gelu; "none" | "mean" |
/// "sum" | "batchmean" as ampc_reduction; a schedule kind as
/// ampc_lr_schedule_kind.
class TG_AttrI64<string n> : TG_KernelArg<"i64", 0, n>;
class TG_AttrI32<string n> : TG_KernelArg<"i32", 0, n>;
class TG_AttrBool<string n> : TG_KernelArg<"boolean", 0, n>;
class TG_AttrF64<string n> : TG_KernelArg<"f64", 0, n>;
class TG_AttrF32<string n> : TG_KernelArg<"f32", 0, n>;
class TG_AttrDims<string n> : TG_KernelArg<"dims", 0, n>;
class TG_AttrEach<string n> : TG_KernelArg<"each", 0, n>;
class TG_AttrGelu<string n> : TG_KernelArg<"gelu", 0, n>;
class TG_AttrReduction<string n> : TG_KernelArg<"reduction", 0, n>;
class TG_AttrLrKind<string n> : TG_KernelArg<"lrKind", 0, n>;
/// The C enum constant `n` = `v`.
class TG_EnumArg<string n, string v> : TG_KernelArg<"cEnum", 0, n, v>;
/// The double `v`.
class TG_ConstF64<string v> : TG_KernelArg<"constF64", 0, "", v>;
/// AMPC_F32.
def TG_F32Dtype : TG_KernelArg<"f32Dtype">;
/// The op's check site (int32_t; docs/runtime.md "Check words").
def TG_Site : TG_KernelArg<"site">;
/// The run's seed (uint64_t).
def TG_Seed : TG_KernelArg<"seed">;
/// A tg.permuted_matmul's strided GEMM (StridedGemm.h): outer, its strides,
/// batch, m, n, k, trans flags, lds, batch strides.
def TG_StridedGemm : TG_KernelArg<"stridedGemm">;

/// The argument lists many kernels share: (y, a, b), (da, db, dy, a, b) and
/// (dx, dy, x).
defvar TG_BinaryArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>];
defvar TG_BinaryGradArgs = [TG_Res<0>, TG_Res<1>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>];
defvar TG_UnaryGradArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>];

//===----------------------------------------------------------------------===//
// Gradient rules as data
//===----------------------------------------------------------------------===//
//
// `gradients` holds one DAG per operand: the gradient of that operand before
// it is fitted to it (summed over the dims it was broadcast along, reshaped
// and cast back to its element type). Leaves: `$dy` (the gradient of the
// result), `$result`, and the op's operands by their ODS names. A node
// `(TGOp<"x"> a, b, ...)` creates `tg.x` from the values; the attributes it
// needs that the node does not give are the forward op's attributes of the
// same name. The other operators:

/// `(TGOp<"mul"> a, b)`: the tg op of that mnemonic (by name, so a rule may
/// use ops defined after it, its own op included).
class TGOp<string m> { string mnemonic = m; }
/// `(TG_Identity v)`: v itself.
def TG_Identity;
/// `(TG_SumTo v, $operand)`: v summed over the dims `$operand` was broadcast
/// along, reshaped to its shape (not cast).
def TG_SumTo;
/// `(TG_ReshapeTo v, $operand)`: v reshaped to `$operand`'s shape.
def TG_ReshapeTo;
/// `(TG_Scalar<"2.0"> $like)`: a scalar constant of `$like`'s element type.
/// Nodes are built left to right, their scalar constants last.
class TG_Scalar<string v> { string value = v; }
/// `(TG_Result<1> node)`: result 1 of a multi-result node.
class TG_Result<int i> { int index = i; }
/// An empty DAG: this operand gets no gradient.
def TG_NoGradient;

#endif // AMPC_DIALECT_TG_TGOPINFO_TD
