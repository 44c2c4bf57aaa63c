//===- TGOps.td - the tensor-graph ops ---------------------*- tablegen -*-===//
//
// The core of the dialect: the classes every op derives from, the compiler's
// own `constant` and `cast`, `matmul` and `linear`, the elementwise ops and
// activations, softmax, the shape ops, and the training statements `grad`,
// `grad_seed` and `minimize`. The other op families have a file each,
// included at the end (TGConvOps.td, TGPoolOps.td, TGReductionOps.td,
// TGNormOps.td, TGLossOps.td, ...): an op family lives where its file name
// says, with its gradient ops. Every op that can infers its result type;
// the inference functions are also the verifiers and name both shapes and
// the offending dimension.
//
// Each record also declares what the rest of the compiler needs to know
// about the op (TGOpInfo.td): its AMP class, load conversion, in-place
// operands, loss-scaling role, runtime kernels, its `.tg` spelling, its
// PyTorch equivalent and (for most differentiable ops) its gradient rule.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGOPS_TD
#define AMPC_DIALECT_TG_TGOPS_TD

include "ampc/Dialect/TG/TGDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/CastInterfaces.td"
include "ampc/Dialect/TG/TGInterfaces.td"
include "ampc/Dialect/TG/TGOpInfo.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// PyTorch's ten tensor types: f64 (DoubleTensor), u8 (ByteTensor, `ui8`),
// i8 (CharTensor) and i16 (ShortTensor) join the six of the first release.
def TG_FloatElement : AnyTypeOf<[F32, F16, BF16, F64]>;
def TG_IntElement : AnyTypeOf<[I32, I64, I16, I8, UI8]>;

class TG_StaticTensorOf<list<Type> elts> :
    Type<And<[RankedTensorOf<elts>.predicate, HasStaticShapePred]>,
         "statically shaped tensor of " # AnyTypeOf<elts>.summary # " values",
         "::mlir::RankedTensorType">;

def TG_Tensor : TG_StaticTensorOf<[F32, F16, BF16, F64, I32, I64, I16, I8,
                                   UI8, I1]>;
def TG_FloatTensor : TG_StaticTensorOf<[F32, F16, BF16, F64]>;
def TG_IntTensor : TG_StaticTensorOf<[I32, I64, I16, I8, UI8]>;
def TG_NumTensor : TG_StaticTensorOf<[F32, F16, BF16, F64, I32, I64, I16, I8,
                                      UI8]>;

// Every op declares the facts of TGOpInfo.td. The defaults below fit a
// forward op of the language with one kernel; `ampClass` has none.
class TG_Op<string mnemonic, list<Trait> traits = []> :
    Op<TG_Dialect, mnemonic, traits> {
  TG_AmpClass ampClass = TG_NoAmpClass;
  list<string> loadConverts = ["*"];
  list<string> inPlace = [];
  TG_LossScaleRole lossScaleRole = TG_NoRole;
  list<string> kernels = ["ampc_" # mnemonic # "_fwd"];
  // The `.tg` callee ("" for ops the compiler makes).
  string language = mnemonic;
  // The keyword attributes of the call; unset: derived from the attribute
  // arguments (names, kinds, ODS defaults).
  list<TG_Keyword> keywords = ?;
  // "unary" or "binary" for elementwise ops (a binary one accepts bare
  // numbers on either side).
  string elementwise = "";
  // The PyTorch function with the op's meaning, called with the operands
  // and the keyword attributes ("" where the reference needs code).
  string torch = "";
  // The gradient rule (TGOpInfo.td); empty: written in C++
  // (TGGradients.cpp) or not differentiable.
  list<dag> gradients = [];
  // Whether a non-float result gets no gradient rule at all.
  bit gradientNeedsFloatResult = 1;
  // An op the compiler makes for training steps (autodiff, optimizers,
  // loss scaling), not one a forward graph computes.
  bit training = 0;
  // The frontend builds it with its own code (MLIRGen.cpp), not from
  // `keywords` alone.
  bit customFrontend = 0;
  // The fewest operands a call takes, when more than the ODS operands say
  // (a variadic operand that must not be empty); -1: as ODS says.
  int languageMinOperands = -1;
  // The arguments of its kernel call (TGOpInfo.td, "Kernel arguments");
  // empty: those of its kernel's family in the runtime's kernel table, or a
  // pattern of its own.
  list<TG_KernelArg> kernelArgs = [];
  // An integer operand whose valid values the op bounds, as [operand, bound,
  // dim]: below dim `dim` of operand `bound` (class labels below the class
  // count, token ids below the vocabulary; synthetic inputs of `ampc run`
  // draw from it); empty: none.
  list<int> kernelIndexBound = [];
  // Its runtime kernel computes on floats only although the IR allows
  // integer operands: the lowering rejects integer ones at their location.
  bit floatOnlyKernel = 0;
  // Opt level O2 keeps it in f32 (batch norm and the losses, as Apex does).
  bit o2KeptF32 = 0;
}

// Ops whose result type is inferred from operands and attributes. A float
// result may be stored in another float type than the inferred one (a cast
// fused into the store, see "Mixed precision" in the dialect description);
// shapes and integer types must match the inferred ones exactly.
def TG_InferTypeWithFusedStore : InferTypeOpAdaptorBase<[{
  static bool isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
    return ::ampc::tg::areCompatibleResultTypes(l, r);
  }
}]>;

class TG_InferOp<string mnemonic, list<Trait> traits = []> :
    TG_Op<mnemonic, !listconcat([Pure, TG_InferTypeWithFusedStore], traits)>;

// Ops whose result types must be exactly the inferred ones: constants and
// the training ops, whose results are values of other ops' types, not kernels
// that could store in another precision.
class TG_StrictInferOp<string mnemonic, list<Trait> traits = []> :
    TG_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)>;

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def TG_ConstantOp : TG_StrictInferOp<"constant", [ConstantLike]> {
  let summary = "A constant tensor";
  let description = [{
    A constant. The frontend makes one for every bare number in an
    expression: a rank-0 tensor of the other operand's dtype.

    ```mlir
    %two = tg.constant dense<2.000000e+00> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
  let ampClass = TG_Follow;
  let language = "";
  let kernels = [];
  let loadConverts = [];
  let keywords = [];
}

def TG_CastOp : TG_Op<"cast",
    [Pure, TG_Differentiable, SameOperandsAndResultShape,
     DeclareOpInterfaceMethods<CastOpInterface>]> {
  let summary = "Element type conversion (`cast(x, to=f16)`)";
  let description = [{
    Converts every element to the result's element type, float to float with
    IEEE round-to-nearest-even (overflow gives infinity, NaN stays NaN).

    Folding keeps numerics exact: `cast(x : T -> T)` folds to `x`, and
    `cast(cast(x : A -> B) : B -> C)` folds to `cast(x : A -> C)` only when
    `A -> B` is exact (B holds every value of A, as f32 holds every f16 and
    bf16). So the round trip f16 -> f32 -> f16 folds to the original value,
    while f32 -> f16 -> f32 (which rounds) is never folded.

    ```mlir
    %h = tg.cast %x : tensor<4x4xf32> to tensor<4x4xf16>
    ```
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  // Casts are what AMP inserts; they keep their declared types.
  let ampClass = TG_Follow;
  let loadConverts = [];
  let keywords = [TG_Keyword<"to", "dtype">];
  let customFrontend = 1;
  // The gradient of a cast is the cast back (`fit` casts to the operand).
  let gradients = [(TG_Identity $dy)];
  let gradientNeedsFloatResult = 0;
  let kernelArgs = [TG_Res<0>, TG_Opd<0>];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_InferOp<"matmul", [TG_Differentiable]> {
  let summary = "Matrix product with broadcast batch dims (`torch.matmul`)";
  let description = [{
    `torch.matmul` semantics: 1-D operands are promoted to a matrix (and the
    added dim removed from the result); batch dims broadcast. Mixed float
    dtypes compute in the wider one.

    ```mlir
    %y = tg.matmul %a, %b : tensor<8x64x32xf32>, tensor<32x16xf32> -> tensor<8x64x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let ampClass = TG_Lower;
  // GEMMs read their matrices in their compute precision.
  let loadConverts = [];
  let torch = "torch.matmul";
  let kernelArgs = TG_BinaryArgs;
}

def TG_LinearOp : TG_InferOp<"linear", [TG_Differentiable]> {
  let summary = "Affine map `x · wᵀ + b` (`torch.nn.functional.linear`)";
  let description = [{
    `x` is `[..., in]`, `w` is `[out, in]`, the optional `b` is `[out]`; the
    result is `[..., out]`.

    ```mlir
    %y = tg.linear %x, %w, %b : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$bias);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
  let ampClass = TG_Lower;
  // Only the bias, added in the GEMM epilogue, converts on load.
  let loadConverts = ["bias"];
  let torch = "F.linear";
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Opd<2>,
                    TG_EnumArg<"AMPC_EPILOGUE_NONE", "0">];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class TG_BinaryOp<string mnemonic, string torchName, TG_AmpClass cls,
                  list<dag> rule, list<Trait> traits = []> :
    TG_InferOp<mnemonic, !listconcat([TG_Differentiable], traits)> {
  let summary = "Elementwise `" # torchName # "` with NumPy broadcasting";
  let description = [{
    Operands broadcast by NumPy/PyTorch rules. Mixed dtypes promote as
    `torch.result_type`: f64 with any float gives f64, f16 with bf16 gives
    f32, an integer with a float gives the float, two integers the wider
    one (u8 with i8 gives i16), bool with anything the other type. Integer
    results are exact in their width, wrapping on overflow.
  }];
  let arguments = (ins TG_NumTensor:$lhs, TG_NumTensor:$rhs);
  let results = (outs TG_NumTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let ampClass = cls;
  let elementwise = "binary";
  let torch = torchName;
  let gradients = rule;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferBinary("}] # mnemonic # [{", loc,
          adaptor.getLhs(), adaptor.getRhs(), types);
    }
  }];
  // Integer operands are allowed; the kernel of div computes on floats
  // (the language divides integers after a cast to f32).
  let floatOnlyKernel = 1;
}

// add, sub, mul, maximum, minimum and pow also have exact integer kernels
// (computed in int64, wrapped to the result's width).
def TG_AddOp : TG_BinaryOp<"add", "torch.add", TG_Promote,
    [(TG_Identity $dy), (TG_Identity $dy)], [Commutative]> {
  let floatOnlyKernel = 0;
}
// The negation after the sum: fewer elements, same values.
def TG_SubOp : TG_BinaryOp<"sub", "torch.sub", TG_Promote,
    [(TG_Identity $dy), (TGOp<"neg"> (TG_SumTo $dy, $rhs))]> {
  let floatOnlyKernel = 0;
}
def TG_MulOp : TG_BinaryOp<"mul", "torch.mul", TG_Promote,
    [(TGOp<"mul"> $dy, $rhs), (TGOp<"mul"> $dy, $lhs)], [Commutative]> {
  let floatOnlyKernel = 0;
}
// PyTorch's div_tensor_other_backward: -dy * ((a / b) / b).
def TG_DivOp : TG_BinaryOp<"div", "torch.div", TG_Promote,
    [(TGOp<"div"> $dy, $rhs),
     (TGOp<"neg"> (TGOp<"mul"> $dy, (TGOp<"div"> (TGOp<"div"> $lhs, $rhs), $rhs)))]>;
def TG_MaximumOp : TG_BinaryOp<"maximum", "torch.maximum", TG_Promote,
    [(TG_Result<0> (TGOp<"maximum_grad"> $dy, $lhs, $rhs)),
     (TG_Result<1> (TGOp<"maximum_grad"> $dy, $lhs, $rhs))], [Commutative]> {
  let floatOnlyKernel = 0;
}
def TG_MinimumOp : TG_BinaryOp<"minimum", "torch.minimum", TG_Promote,
    [(TG_Result<0> (TGOp<"minimum_grad"> $dy, $lhs, $rhs)),
     (TG_Result<1> (TGOp<"minimum_grad"> $dy, $lhs, $rhs))], [Commutative]> {
  let floatOnlyKernel = 0;
}
// Of integers, as PyTorch's integer pow: exact with wrap-around, and a
// negative exponent gives 1 for a base of 1, +-1 for -1 and 0 otherwise.
def TG_PowOp : TG_BinaryOp<"pow", "torch.pow", TG_FP32,
    [(TG_Result<0> (TGOp<"pow_grad"> $dy, $lhs, $rhs)),
     (TG_Result<1> (TGOp<"pow_grad"> $dy, $lhs, $rhs))]> {
  let floatOnlyKernel = 0;
}

// An elementwise op of one tensor: its result has the operand's type. Its
// attributes (`attrs`, e.g. `(ins DefaultValuedAttr<F64Attr, "0.01">:$slope)`)
// are the call's keywords, with their ODS defaults; `rule` is its gradient.
class TG_UnaryOp<string mnemonic, string torchName, Type operandType,
                 TG_AmpClass cls, dag rule, dag attrs = (ins),
                 list<Trait> traits = []> :
    TG_InferOp<mnemonic, !listconcat([TG_Differentiable], traits)> {
  let summary = "Elementwise `" # torchName # "`";
  let description = [{
    Elementwise, as PyTorch's `}] # torchName # [{`; the result has the
    operand's shape and type (or another float type, a fused store).
  }];
  let arguments = !con((ins operandType:$input), attrs);
  let results = (outs operandType:$result);
  // `-> T` only when the result is stored in another float type (fused cast).
  let assemblyFormat = [{
    $input attr-dict `:` custom<StoreType>(type($input), type($result))
  }];
  let ampClass = cls;
  let elementwise = "unary";
  let torch = torchName;
  let gradients = [rule];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      types.push_back(adaptor.getInput().getType());
      return ::mlir::success();
    }
  }];
}

// The backward op of an elementwise op `fwd` with a kernel of its own; its
// attributes (`attrs`) are those of the forward op.
class TG_UnaryGradOp<string mnemonic, string fwd, TG_AmpClass cls = TG_Follow,
                     dag attrs = (ins)> : TG_InferOp<mnemonic> {
  let ampClass = cls;
  let training = 1;
  let language = "";
  let kernels = ["ampc_" # fwd # "_bwd"];
  let summary = "Gradient of `tg." # fwd # "`: `dx = dy * " # fwd # "'(x)`";
  let description = [{
    `grad` is the gradient of the forward op's result, `input` the forward
    op's input (same shape). The result has the input's shape and the
    promoted float type of both operands. Runtime kernel:
    `ampc_}] # fwd # [{_bwd`.

    ```mlir
    %dx = tg.}] # mnemonic # [{ %dy, %x : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = !con((ins TG_FloatTensor:$grad, TG_FloatTensor:$input), attrs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,`
    custom<StoreType>(type($input), type($result))
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ampc::tg::detail::inferUnaryGrad("}] # mnemonic # [{", loc,
          adaptor.getGrad(), adaptor.getInput(), types);
    }
  }];
}

// An elementwise op whose gradient is a kernel of its own: the op and its
// backward op `MNEMONIC_grad` (kernels `ampc_MNEMONIC_fwd` and
// `ampc_MNEMONIC_bwd`), both with the attributes `attrs`. One `defm` adds
// both, e.g.
//
//   defm TG_LeakyRelu : TG_UnaryKernelOp<"leaky_relu", "F.leaky_relu",
//       TG_Follow, (ins DefaultValuedAttr<F64Attr, "0.01">:$negative_slope)>;
//
// defines TG_LeakyReluOp (`leaky_relu(x, negative_slope=0.01)` in the
// language, F.leaky_relu in the reference, follow under AMP) and
// TG_LeakyReluGradOp, with the gradient rule `dx = leaky_relu_grad(dy, x)`.
multiclass TG_UnaryKernelOp<string mnemonic, string torchName,
                            TG_AmpClass cls, dag attrs = (ins)> {
  def Op : TG_UnaryOp<mnemonic, torchName, TG_FloatTensor, cls,
                      (TGOp<mnemonic # "_grad"> $dy, $input), attrs>;
  def GradOp : TG_UnaryGradOp<mnemonic # "_grad", mnemonic, cls, attrs>;
}

def TG_NegOp : TG_UnaryOp<"neg", "torch.neg", TG_NumTensor, TG_Follow,
    (TGOp<"neg"> $dy)> {
  let hasFolder = 1;
}
// dy * sign(x), 0 at 0.
def TG_AbsOp : TG_UnaryOp<"abs", "torch.abs", TG_NumTensor, TG_Follow,
    (TGOp<"abs_grad"> $dy, $input)>;
// dy * exp(x), reusing the result.
def TG_ExpOp : TG_UnaryOp<"exp", "torch.exp", TG_FloatTensor, TG_FP32,
    (TGOp<"mul"> $dy, $result)>;
def TG_LogOp : TG_UnaryOp<"log", "torch.log", TG_FloatTensor, TG_FP32,
    (TGOp<"div"> $dy, $input)>;
// PyTorch: dy / (2 * sqrt(x)).
def TG_SqrtOp : TG_UnaryOp<"sqrt", "torch.sqrt", TG_FloatTensor, TG_Follow,
    (TGOp<"div"> $dy, (TGOp<"mul"> $result, (TG_Scalar<"2.0"> $result)))>;
// PyTorch: -0.5 * dy * rsqrt(x)^3.
def TG_RsqrtOp : TG_UnaryOp<"rsqrt", "torch.rsqrt", TG_FloatTensor, TG_FP32,
    (TGOp<"mul"> (TGOp<"mul"> $dy, (TGOp<"mul"> (TGOp<"mul"> $result, $result), $result)),
              (TG_Scalar<"-0.5"> $result))>;
// log(1 + x); gradient dy / (1 + x).
def TG_Log1pOp : TG_UnaryOp<"log1p", "torch.log1p", TG_FloatTensor, TG_FP32,
    (TGOp<"div"> $dy, (TGOp<"add"> $input, (TG_Scalar<"1.0"> $input)))>;
// exp(x) - 1; gradient dy * (y + 1), reusing the result.
def TG_Expm1Op : TG_UnaryOp<"expm1", "torch.expm1", TG_FloatTensor, TG_FP32,
    (TGOp<"mul"> $dy, (TGOp<"add"> $result, (TG_Scalar<"1.0"> $result)))>;
// 1 / x; gradient -dy * y * y, reusing the result.
def TG_ReciprocalOp : TG_UnaryOp<"reciprocal", "torch.reciprocal",
    TG_FloatTensor, TG_FP32,
    (TGOp<"neg"> (TGOp<"mul"> $dy, (TGOp<"mul"> $result, $result)))>;
// dy where x > 0, else 0.
defm TG_Relu : TG_UnaryKernelOp<"relu", "torch.relu", TG_Follow>;
def TG_GeluOp : TG_InferOp<"gelu", [TG_Differentiable]> {
  let summary = "Elementwise `F.gelu`";
  let description = [{
    `approximate` is `"none"` (the erf form) or `"tanh"`, as in PyTorch.

    ```mlir
    %y = tg.gelu %x approximate "tanh" : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `approximate` $approximate attr-dict `:` custom<StoreType>(type($input), type($result))
  }];
  let ampClass = TG_Follow;
  let elementwise = "unary";
  let torch = "F.gelu";
  let keywords = [TG_Keyword<"approximate", "string", "none", ["none", "tanh"]>];
  let gradients = [(TGOp<"gelu_grad"> $dy, $input)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrGelu<"approximate">];
}

defm TG_Silu : TG_UnaryKernelOp<"silu", "F.silu", TG_Follow>;
// PyTorch's leaky_relu: x where x > 0, else negative_slope * x; the gradient
// at 0 is negative_slope.
defm TG_LeakyRelu : TG_UnaryKernelOp<"leaky_relu", "F.leaky_relu", TG_Follow,
    (ins DefaultValuedAttr<F64Attr, "0.01">:$negative_slope)>;
// PyTorch's softplus: log(1 + exp(beta * x)) / beta, and x itself where
// beta * x > threshold (for numerical stability).
defm TG_Softplus : TG_UnaryKernelOp<"softplus", "F.softplus", TG_FP32,
    (ins DefaultValuedAttr<F64Attr, "1.0">:$beta,
         DefaultValuedAttr<F64Attr, "20.0">:$threshold)>;
// F.prelu: leaky_relu with a learned slope, one per channel or one for all.
def TG_PreluOp : TG_InferOp<"prelu", [TG_Differentiable]> {
  let summary = "Parametric ReLU, `x > 0 ? x : w * x` (`F.prelu`)";
  let description = [{
    `weight` is `[1]` (one slope) or `[C]`, one slope per channel of dim 1
    of `input` (`input` must then have rank >= 2), as `F.prelu`. The result
    has `input`'s shape. In PyTorch's CUDA autocast fp16 list (nn_fp16).

    ```mlir
    %y = tg.prelu %x, %w : tensor<2x3x5xf32>, tensor<3xf32> -> tensor<2x3x5xf32>
    ```

    Runtime kernel: `ampc_prelu_fwd` (the broadcasting binary path, the
    weight viewed as `[C, 1, ...]`); gradient `tg.prelu_grad`.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->`
    type($result)
  }];
  let ampClass = TG_Lower;
  let torch = "F.prelu";
  let kernelArgs = TG_BinaryArgs;
}

def TG_PreluGradOp : TG_InferOp<"prelu_grad"> {
  let summary = "Gradients of `tg.prelu` with respect to input and weight";
  let description = [{
    `d input = input > 0 ? grad : w * grad` (the input's shape) and
    `d weight` = the sum of `input > 0 ? 0 : input * grad` over every dim but
    the channel dim (the weight's shape), both in the promoted type of the
    three operands. Runtime kernel: `ampc_prelu_bwd`.

    ```mlir
    %dx, %dw = tg.prelu_grad %dy, %x, %w
        : tensor<2x3x5xf32>, tensor<2x3x5xf32>, tensor<3xf32>
        -> tensor<2x3x5xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($grad) `,` type($input)
    `,` type($weight) `->` type($input_grad) `,` type($weight_grad)
  }];
  let ampClass = TG_Lower;
  let kernels = ["ampc_prelu_bwd"];
  let training = 1;
  let language = "";
  let kernelArgs = TG_BinaryGradArgs;
}
// PyTorch's sigmoid_backward: dy * (1 - y) * y.
def TG_SigmoidOp : TG_UnaryOp<"sigmoid", "torch.sigmoid", TG_FloatTensor,
    TG_Follow,
    (TGOp<"mul"> (TGOp<"mul"> $dy, (TGOp<"sub"> (TG_Scalar<"1.0"> $result), $result)),
              $result)>;
// PyTorch's tanh_backward: dy * (1 - y * y).
def TG_TanhOp : TG_UnaryOp<"tanh", "torch.tanh", TG_FloatTensor, TG_Follow,
    (TGOp<"mul"> $dy, (TGOp<"sub"> (TG_Scalar<"1.0"> $result),
                             (TGOp<"mul"> $result, $result)))>;

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

class TG_SoftmaxLikeOp<string mnemonic, string torchName, dag rule> :
    TG_InferOp<mnemonic, [TG_Differentiable]> {
  let ampClass = TG_FP32;
  let torch = torchName;
  let keywords = [TG_Keyword<"dim", "dim", "-1">];
  let gradients = [rule];
  let summary = "`" # torchName # "` along `dim`";
  let description = [{
    `dim` is a non-negative dim of the input (the frontend resolves negative
    dims such as the default -1).

    ```mlir
    %p = tg.softmax %x dim 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Attr:$dim);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` custom<StoreType>(type($input), type($result))
  }];
}

def TG_SoftmaxOp : TG_SoftmaxLikeOp<"softmax", "F.softmax",
    (TGOp<"softmax_grad"> $dy, $result)>;
def TG_LogSoftmaxOp : TG_SoftmaxLikeOp<"log_softmax", "F.log_softmax",
    (TGOp<"log_softmax_grad"> $dy, $result)>;

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def TG_ReshapeOp : TG_InferOp<"reshape", [TG_Differentiable]> {
  let summary = "Reshape to `shape` (`torch.reshape`)";
  let description = [{
    At most one entry of `shape` may be -1: it is inferred from the element
    count, which must be preserved.

    ```mlir
    %y = tg.reshape %x shape [2, -1] : tensor<2x3x4xf32> -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `shape` $shape attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let ampClass = TG_Follow;
  // A reshape that keeps the element type is a view of its input.
  let inPlace = ["input"];
  let gradients = [(TG_ReshapeTo $dy, $input)];
}

def TG_TransposeOp : TG_InferOp<"transpose", [TG_Differentiable]> {
  let summary = "Permute dims (`torch.permute`)";
  let description = [{
    Result dim `i` is input dim `perm[i]`. The language's `transpose(x)`
    without `perm` swaps the two dims of a 2-D tensor (`perm = [1, 0]`).

    ```mlir
    %y = tg.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `perm` $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let ampClass = TG_Follow;
  // No `perm` swaps the two dims of a 2-D tensor.
  let keywords = [TG_Keyword<"perm", "ints", "[1, 0]">];
  let customFrontend = 1;
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrDims<"perm">];
}

def TG_ConcatOp : TG_InferOp<"concat", [TG_Differentiable]> {
  let summary = "Concatenate along `dim` (`torch.cat`)";
  let description = [{
    All inputs have the same rank and equal sizes except along `dim`. Mixed
    float dtypes give the widest (like the other `promote` ops).

    ```mlir
    %y = tg.concat %a, %b dim 0 : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
  let ampClass = TG_Promote;
  let keywords = [TG_Keyword<"dim", "dim", "0">];
  let customFrontend = 1;
  let languageMinOperands = 1;
  let kernelArgs = [TG_Res<0>, TG_List<0>, TG_Dtypes<0>, TG_Shapes<0>, TG_Count<0>,
                    TG_AttrI64<"dim">];
}

// torch.flip: its own gradient.
def TG_FlipOp : TG_InferOp<"flip", [TG_Differentiable]> {
  let summary = "Reverse the order of elements along `dims` (`torch.flip`)";
  let description = [{
    Element `i_d` of every dim `d` in `dims` comes from element
    `size_d - 1 - i_d` of the input; the other dims are unchanged. `dims` are
    dims of the input, sorted and distinct (the frontend resolves negative
    dims, and a call without `dims` flips every dim, as `numpy.flip`). Any
    dtype; the result has the input's shape.

    ```mlir
    %y = tg.flip %x dims [0, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let torch = "torch.flip";
  let keywords = [TG_Keyword<"dims", "dims">];
  let gradients = [(TGOp<"flip"> $dy)];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrDims<"dims">];
}

// torch.roll: its gradient rolls back by -shifts (TGGradients.cpp).
def TG_RollOp : TG_InferOp<"roll", [TG_Differentiable]> {
  let summary = "Rotate elements along `dims` by `shifts` (`torch.roll`)";
  let description = [{
    Along each dim `dims[k]`, element `i` comes from element
    `(i - shifts[k]) mod size`, as in `torch.roll`: a dim may be negative
    (counting from the end) and may repeat (its shifts add up). With no
    `dims`, the input is rolled flattened by the one shift and reshaped
    back. Any dtype; the result has the input's shape.

    ```mlir
    %y = tg.roll %x shifts [1, -2] dims [0, -1] : tensor<3x4xf32> -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, DenseI64ArrayAttr:$shifts,
                       DenseI64ArrayAttr:$dims);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `shifts` $shifts `dims` $dims attr-dict `:` type($input) `->`
    type($result)
  }];
  let ampClass = TG_Follow;
  let torch = "torch.roll";
  let keywords = [TG_Keyword<"shifts", "ints">, TG_Keyword<"dims", "ints", "[]">];
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrDims<"shifts">, TG_AttrDims<"dims">];
}

def TG_SliceOp : TG_InferOp<"slice", [TG_Differentiable]> {
  let summary = "Contiguous range `[start, end)` of `dim` (`x[..., start:end]`)";
  let description = [{
    `0 <= start < end <= size(dim)`; the frontend resolves negative indices
    and clamps to the dim as Python slicing does.

    ```mlir
    %y = tg.slice %x dim 1 start 2 end 5 : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$dim, I64Attr:$start,
                       I64Attr:$end);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `start` $start `end` $end attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let ampClass = TG_Follow;
  // Python slicing: negative indices count from the end, then clamp.
  let keywords = [TG_Keyword<"dim", "dim">, TG_Keyword<"start", "int", "0">,
                  TG_Keyword<"end", "int", "=size">];
  let customFrontend = 1;
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_AttrI64<"dim">, TG_AttrI64<"start">,
                    TG_AttrI64<"end">];
}

def TG_EmbeddingOp : TG_InferOp<"embedding", [TG_Differentiable]> {
  let summary = "Row lookup `table[ids]` (`F.embedding`)";
  let description = [{
    `table` is `[V, D]`, `ids` an integer tensor of any shape; the result is
    `ids.shape + [D]`.

    ```mlir
    %e = tg.embedding %table, %ids : tensor<100x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$table, TG_IntTensor:$ids);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let ampClass = TG_Follow;
  let kernelArgs = [TG_Res<0>, TG_Opd<0>, TG_Opd<1>, TG_Site];
  // ids below dim 0 of the table (its rows).
  let kernelIndexBound = [1, 0, 0];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def TG_GradOp : TG_StrictInferOp<"grad"> {
  let summary = "Gradients of a scalar loss (`grad(loss, p1, p2, ...)`)";
  let description = [{
    The gradients of the scalar float `loss` with respect to each of `wrt`
    (parameters or inputs of the graph, float tensors), in order; each result
    has the type of its `wrt` value. The autodiff pass replaces it by an
    explicit backward graph that starts at a `tg.grad_seed` of `loss`.

    ```mlir
    %gw, %gb = tg.grad %loss wrt %w, %b : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$loss, Variadic<TG_FloatTensor>:$wrt);
  let results = (outs Variadic<TG_FloatTensor>:$grads);
  let assemblyFormat = [{
    $loss `wrt` $wrt attr-dict `:` type($loss) `,` type($wrt)
  }];
  let ampClass = TG_Follow;
  let training = 1;
  let kernels = [];
  let loadConverts = [];
  let customFrontend = 1;
  let keywords = [];
  // The loss and at least one value.
  let languageMinOperands = 2;
}

def TG_GradSeedOp : TG_StrictInferOp<"grad_seed"> {
  let summary = "The seed of a backward graph: d loss / d loss";
  let description = [{
    The gradient of `loss` with respect to itself, where a backward graph
    starts: 1, or the current loss scale when `scale` is given (the
    loss-scaling pass adds it). The result has the loss's type (a scalar).
    An exporter that hands ampc an already differentiated step starts its
    backward graph here, so the loss-scaling pass finds it.

    ```mlir
    %seed = tg.grad_seed %loss : tensor<f32>
    %seed2 = tg.grad_seed %loss scale %s : tensor<f32>, tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$loss, Optional<TG_FloatTensor>:$scale);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $loss (`scale` $scale^)? attr-dict `:` type($loss) (`,` type($scale)^)?
  }];
  let ampClass = TG_Follow;
  let training = 1;
  let language = "";
  let lossScaleRole = TG_SeedRole;
  // A fill with 1, or a cast of the scale.
  let kernels = ["ampc_fill", "ampc_cast_fwd"];
  let loadConverts = [];
}

def TG_MinimizeOp : TG_StrictInferOp<"minimize"> {
  let summary = "One optimizer step on `params` minimizing `loss`";
  let description = [{
    The `minimize LOSS with OPT(...)` statement: differentiates the scalar
    `loss` with respect to every parameter in `params` it depends on and
    applies the optimizer; each result is the updated value of its
    parameter (a parameter the loss does not reach comes back unchanged).
    The `ampc-optimizer-expansion` pass expands it into a backward graph and
    optimizer ops.

    `optimizer` is `"sgd"` or `"adamw"`; `hyperparams` holds every
    hyperparameter explicitly (the frontend fills PyTorch's defaults):
    - sgd: `lr`, `momentum`, `weight_decay` (f64) and `nesterov` (bool);
    - adamw: `lr`, `beta1`, `beta2`, `eps`, `weight_decay` (f64);
    - both: optional `max_grad_norm` (f64, global-norm clipping).

    `param_groups` (optional) are `torch.optim` parameter groups: each
    element is `{params = array<i64: ...>, hyperparams = {...}}`, the
    indices of the `params` operands in the group and the group's complete
    per-parameter hyperparameters (the keys above but `max_grad_norm`,
    which is global). A parameter is in at most one group; the parameters
    no group names use `hyperparams`.

    `schedule` (optional) is a learning-rate schedule, every field given:
    `{kind = "constant" | "linear" | "cosine" | "step", warmup_steps,
    total_steps, step_size (i64), min_lr, gamma (f64)}` (the fields a kind
    does not use are 0). Its semantics are `tg.lr_schedule`'s.

    `accumulate` (optional, >= 1, absent means 1) is gradient accumulation:
    the step is one micro-batch of an update of `accumulate` micro-batches
    (`tg.grad_accumulate`).

    ```mlir
    %w1, %b1 = tg.minimize %loss wrt %w, %b with "sgd"
        {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
        : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$loss, Variadic<TG_FloatTensor>:$params,
                       StrAttr:$optimizer, DictionaryAttr:$hyperparams,
                       OptionalAttr<ArrayAttr>:$param_groups,
                       OptionalAttr<DictionaryAttr>:$schedule,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$accumulate);
  let results = (outs Variadic<TG_FloatTensor>:$updated);
  let assemblyFormat = [{
    $loss `wrt` $params `with` $optimizer $hyperparams attr-dict
    `:` type($loss) `,` type($params)
  }];
  let hasVerifier = 1;
  let ampClass = TG_Follow;
  let training = 1;
  // The `minimize` statement, not a call.
  let language = "";
  let kernels = [];
  let loadConverts = [];
}

// The matrix products beyond matmul and linear: mm, bmm, mv and the
// GEMM-plus-add family (addmm, baddbmm, addbmm, addmv, addr).
include "ampc/Dialect/TG/TGMatmulOps.td"
// The convolutions (1-d, 2-d, 3-d, transposed) and their gradients.
include "ampc/Dialect/TG/TGConvOps.td"
// Pooling and its gradients.
include "ampc/Dialect/TG/TGPoolOps.td"
// The reductions (sum, mean, max, logsumexp, norm, cumsum,
// cosine_similarity) and their gradients.
include "ampc/Dialect/TG/TGReductionOps.td"
// The normalizations (layer, rms, group and batch norm) and their gradients.
include "ampc/Dialect/TG/TGNormOps.td"
// Every loss and its gradient.
include "ampc/Dialect/TG/TGLossOps.td"
// Comparisons, argmax and where.
include "ampc/Dialect/TG/TGCompareOps.td"

// The backward ops of the core ops, optimizer updates, clipping and the
// loss-scaler ops.
include "ampc/Dialect/TG/TGTrainingOps.td"
// Dropout and its step counter.
include "ampc/Dialect/TG/TGDropoutOps.td"
// Learning-rate schedules.
include "ampc/Dialect/TG/TGScheduleOps.td"
// Gradient accumulation (accumulate = K).
include "ampc/Dialect/TG/TGAccumulateOps.td"
// Data-parallel collectives: the bucketed gradient all-reduce
// (docs/distributed.md).
include "ampc/Dialect/TG/TGCollectiveOps.td"
// GEMMs on permuted views, made by ampc-fold-transposes (docs/codegen.md).
include "ampc/Dialect/TG/TGFoldOps.td"
// The marker of what a returned gradient is of (data-parallel `grad`).
include "ampc/Dialect/TG/TGGradMarkerOps.td"

#endif // AMPC_DIALECT_TG_TGOPS_TD
