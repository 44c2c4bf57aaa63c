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
