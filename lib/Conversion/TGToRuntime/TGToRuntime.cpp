//===- TGToRuntime.cpp - lower a planned tg step to rt runtime calls -------===//
//
// What every tg op lowers to is one table (`kernelTable`): the runtime entry
// point and its argument list, spelled in terms of the op's ODS operand and
// result groups and attributes. One generic pattern turns a row into an
// `rt.call`; four ops whose lowering depends on more than their operands
// (constants, reshapes that are views, broadcasts, the gradient seed) have
// their own small patterns. Buffers come from ampc-buffer-planning's
// `tg.offsets`; results computed in place (BufferPlan.h) reuse their
// operand's buffer.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Conversion/BufferPlan.h"
#include "ampc/Dialect/RT/ProgramInfo.h"
#include "ampc/Dialect/RT/RTDialect.h"
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

namespace ampc {
#define GEN_PASS_DEF_CONVERTTGTORUNTIME
#include "ampc/Conversion/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
namespace rtd = ampc::rt;

ampc::RuntimeTypeConverter::RuntimeTypeConverter(MLIRContext *context) {
  addConversion([](Type t) { return t; });
  addConversion([context](RankedTensorType t) -> Type {
    return rtd::BufferType::get(context);
  });
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

namespace {
/// One C argument of a runtime call. "Group" is an ODS operand (or result)
/// group of the op: an operand, an optional operand or a variadic list.
struct ArgSpec {
  enum Kind {
    Result,      ///< ptr, dtype, dims, rank of result group G's first value
    Operand,     ///< the same of operand group G's first value (or NULL ...)
    NullTensor,  ///< NULL, AMPC_F32, NULL, 0
    Buffer,      ///< ptr of operand group G's first value
    ResultBuffer,///< ptr of result group G's first value
    List,        ///< the buffers of operand group G (NULL when empty)
    Dtypes,      ///< their dtypes
    Numels,      ///< their element counts
    Count,       ///< how many (int32_t)
    Shapes,      ///< their shapes (const int64_t *const *)
    Flag,        ///< ptr and dtype of optional operand group G, or NULL, F32
    I64,         ///< integer attribute NAME (int64_t)
    I32,         ///< integer attribute NAME (int32_t)
    Bool,        ///< unit or bool attribute NAME as 0/1 (int32_t)
    F64,         ///< float attribute NAME (double; 0 when absent)
    Dims,        ///< i64 array attribute NAME and its length (int32_t)
    Each,        ///< every element of i64 array attribute NAME (int64_t)
    Gelu,        ///< string attribute NAME ("none" | "tanh") as ampc_gelu
    Enum,        ///< the C enum constant NAME = VALUE
    ConstF64,    ///< the double VALUE
    ConstDtype,  ///< AMPC_F32
    MarkFoundInf ///< no argument: result group G is the step's overflow flag
  };
  Kind kind;
  unsigned group = 0;
  const char *name = nullptr;
  double value = 0.0;
};

using Group = std::pair<unsigned, unsigned>;

/// An integer operand whose valid values the op bounds: below dimension
/// `dim` of operand `bound` (class labels below the class count, token ids
/// below the vocabulary). Synthetic inputs of `ampc run` draw from it.
struct IndexBound {
  int operand = -1; ///< -1: none
  unsigned bound = 0, dim = 0;
};

struct KernelRule {
  StringRef callee;
  std::vector<ArgSpec> args;
  Group (*operandGroup)(Operation *, unsigned);
  Group (*resultGroup)(Operation *, unsigned);
  IndexBound indexBound = {};
};

template <typename OpTy> Group operandGroupOf(Operation *op, unsigned i) {
  return cast<OpTy>(op).getODSOperandIndexAndLength(i);
}
template <typename OpTy> Group resultGroupOf(Operation *op, unsigned i) {
  return cast<OpTy>(op).getODSResultIndexAndLength(i);
}

ArgSpec res(unsigned g) { return {ArgSpec::Result, g}; }
ArgSpec opd(unsigned g) { return {ArgSpec::Operand, g}; }
ArgSpec nullTensor() { return {ArgSpec::NullTensor}; }
ArgSpec buf(unsigned g) { return {ArgSpec::Buffer, g}; }
ArgSpec resBuf(unsigned g) { return {ArgSpec::ResultBuffer, g}; }
ArgSpec list(unsigned g) { return {ArgSpec::List, g}; }
ArgSpec dtypes(unsigned g) { return {ArgSpec::Dtypes, g}; }
ArgSpec numels(unsigned g) { return {ArgSpec::Numels, g}; }
ArgSpec count(unsigned g) { return {ArgSpec::Count, g}; }
ArgSpec shapes(unsigned g) { return {ArgSpec::Shapes, g}; }
ArgSpec flag(unsigned g) { return {ArgSpec::Flag, g}; }
ArgSpec i64(const char *n) { return {ArgSpec::I64, 0, n}; }
ArgSpec i32(const char *n) { return {ArgSpec::I32, 0, n}; }
ArgSpec boolean(const char *n) { return {ArgSpec::Bool, 0, n}; }
ArgSpec f64(const char *n) { return {ArgSpec::F64, 0, n}; }
ArgSpec dims(const char *n) { return {ArgSpec::Dims, 0, n}; }
ArgSpec each(const char *n) { return {ArgSpec::Each, 0, n}; }
ArgSpec gelu(const char *n) { return {ArgSpec::Gelu, 0, n}; }
ArgSpec cEnum(const char *n, int v) { return {ArgSpec::Enum, 0, n, double(v)}; }
ArgSpec constF64(double v) { return {ArgSpec::ConstF64, 0, nullptr, v}; }
ArgSpec f32Dtype() { return {ArgSpec::ConstDtype}; }
ArgSpec markFoundInf(unsigned g) { return {ArgSpec::MarkFoundInf, g}; }

struct Row {
  StringRef opName;
  KernelRule rule;
};

template <typename OpTy>
Row row(StringRef callee, std::vector<ArgSpec> args, IndexBound bound = {}) {
  return {OpTy::getOperationName(),
          {callee, std::move(args), &operandGroupOf<OpTy>,
           &resultGroupOf<OpTy>, bound}};
}

/// What every tg op with a plain kernel lowers to: its runtime entry point
/// and arguments, in order. The context is every call's first argument.
const std::vector<Row> &kernelTable() {
  using namespace tg;
  static const std::vector<Row> table = [] {
    std::vector<ArgSpec> unary = {res(0), opd(0)};
    std::vector<ArgSpec> binary = {res(0), opd(0), opd(1)};
    std::vector<ArgSpec> reduce = {res(0), opd(0), dims("dims"),
                                   boolean("keepdim")};
    std::vector<ArgSpec> pool = {res(0),        opd(0),         each("kernel"),
                                 each("stride"), each("padding")};
    std::vector<ArgSpec> poolGrad = {res(0),         opd(0),
                                     opd(1),         each("kernel"),
                                     each("stride"), each("padding")};
    std::vector<ArgSpec> binaryGrad = {res(0), res(1), opd(0), opd(1),
                                       opd(2)};
    std::vector<ArgSpec> unaryGrad = {res(0), opd(0), opd(1)};
    std::vector<ArgSpec> softmax = {res(0), opd(0), i64("dim")};
    std::vector<ArgSpec> softmaxGrad = {res(0), opd(0), opd(1), i64("dim")};
    return std::vector<Row>{
        // Forward ops.
        row<CastOp>("ampc_cast_fwd", unary),
        row<MatmulOp>("ampc_matmul_fwd", binary),
        row<LinearOp>("ampc_linear_fwd",
                      {res(0), opd(0), opd(1), opd(2),
                       cEnum("AMPC_EPILOGUE_NONE", 0)}),
        row<Conv2dOp>("ampc_conv2d_fwd",
                      {res(0), opd(0), opd(1), opd(2), each("stride"),
                       each("padding"), each("dilation"), i64("groups")}),
        row<AddOp>("ampc_add_fwd", binary),
        row<SubOp>("ampc_sub_fwd", binary),
        row<MulOp>("ampc_mul_fwd", binary),
        row<DivOp>("ampc_div_fwd", binary),
        row<MaximumOp>("ampc_maximum_fwd", binary),
        row<MinimumOp>("ampc_minimum_fwd", binary),
        row<PowOp>("ampc_pow_fwd", binary),
        row<NegOp>("ampc_neg_fwd", unary),
        row<AbsOp>("ampc_abs_fwd", unary),
        row<ExpOp>("ampc_exp_fwd", unary),
        row<LogOp>("ampc_log_fwd", unary),
        row<SqrtOp>("ampc_sqrt_fwd", unary),
        row<RsqrtOp>("ampc_rsqrt_fwd", unary),
        row<ReluOp>("ampc_relu_fwd", unary),
        row<SiluOp>("ampc_silu_fwd", unary),
        row<SigmoidOp>("ampc_sigmoid_fwd", unary),
        row<TanhOp>("ampc_tanh_fwd", unary),
        // Ops of PyTorch's autocast lists.
        row<Log1pOp>("ampc_log1p_fwd", unary),
        row<Expm1Op>("ampc_expm1_fwd", unary),
        row<ReciprocalOp>("ampc_reciprocal_fwd", unary),
        row<ConvTranspose2dOp>("ampc_conv_transpose2d_fwd",
                               {res(0), opd(0), opd(1), opd(2), each("stride"),
                                each("padding"), each("dilation"),
                                i64("groups")}),
        row<GeluOp>("ampc_gelu_fwd", {res(0), opd(0), gelu("approximate")}),
        row<SumOp>("ampc_sum_fwd", reduce),
        row<MeanOp>("ampc_mean_fwd", reduce),
        row<MaxOp>("ampc_max_fwd", reduce),
        row<SoftmaxOp>("ampc_softmax_fwd", softmax),
        row<LogSoftmaxOp>("ampc_log_softmax_fwd", softmax),
        row<LayerNormOp>("ampc_layer_norm_fwd",
                         {res(0), opd(0), opd(1), opd(2), f64("eps")}),
        row<RmsNormOp>("ampc_rms_norm_fwd",
                       {res(0), opd(0), opd(1), f64("eps")}),
        row<MaxPool2dOp>("ampc_max_pool2d_fwd", pool),
        row<AvgPool2dOp>("ampc_avg_pool2d_fwd", pool),
        row<TransposeOp>("ampc_transpose_fwd", {res(0), opd(0), dims("perm")}),
        row<ConcatOp>("ampc_concat_fwd", {res(0), list(0), dtypes(0),
                                          shapes(0), count(0), i64("dim")}),
        row<SliceOp>("ampc_slice_fwd",
                     {res(0), opd(0), i64("dim"), i64("start"), i64("end")}),
        // ids < the table's rows; labels < the logits' classes.
        row<EmbeddingOp>("ampc_embedding_fwd", binary, {1, 0, 0}),
        row<CrossEntropyOp>("ampc_cross_entropy_fwd", binary, {1, 0, 1}),
        row<MseLossOp>("ampc_mse_loss_fwd", binary),
        // Backward ops.
        row<ReluGradOp>("ampc_relu_bwd", unaryGrad),
        row<AbsGradOp>("ampc_abs_bwd", unaryGrad),
        row<SiluGradOp>("ampc_silu_bwd", unaryGrad),
        row<GeluGradOp>("ampc_gelu_bwd",
                        {res(0), opd(0), opd(1), gelu("approximate")}),
        row<MaximumGradOp>("ampc_maximum_bwd", binaryGrad),
        row<MinimumGradOp>("ampc_minimum_bwd", binaryGrad),
        row<PowGradOp>("ampc_pow_bwd", binaryGrad),
        row<MaxGradOp>("ampc_max_bwd", {res(0), opd(0), opd(1), opd(2),
                                        dims("dims"), boolean("keepdim")}),
        row<SoftmaxGradOp>("ampc_softmax_bwd", softmaxGrad),
        row<LogSoftmaxGradOp>("ampc_log_softmax_bwd", softmaxGrad),
        row<LayerNormGradOp>("ampc_layer_norm_bwd",
                             {res(0), res(1), res(2), opd(0), opd(1), opd(2),
                              f64("eps")}),
        row<RmsNormGradOp>("ampc_rms_norm_bwd", {res(0), res(1), opd(0),
                                                 opd(1), opd(2), f64("eps")}),
        row<Conv2dGradOp>("ampc_conv2d_bwd",
                          {res(0), res(1), nullTensor(), opd(0), opd(1),
                           opd(2), each("stride"), each("padding"),
                           each("dilation"), i64("groups")}),
        row<MaxPool2dGradOp>("ampc_max_pool2d_bwd", poolGrad),
        row<AvgPool2dGradOp>("ampc_avg_pool2d_bwd", poolGrad),
        row<EmbeddingGradOp>("ampc_embedding_bwd", unaryGrad),
        row<CrossEntropyGradOp>("ampc_cross_entropy_bwd",
                                {res(0), opd(0), opd(1), opd(2)}),
        row<MseLossGradOp>("ampc_mse_loss_bwd", binaryGrad),
        // Loss scaling and optimizers: in place on their operands.
        row<CheckFiniteAndUnscaleOp>(
            "ampc_check_finite_unscale",
            {resBuf(1), f32Dtype(), list(0), dtypes(0), numels(0), count(0),
             buf(1), markFoundInf(1)}),
        row<ClipGradNormOp>("ampc_clip_grad_norm",
                            {resBuf(1), list(0), dtypes(0), numels(0),
                             count(0), f64("max_norm"), flag(1)}),
        row<SgdUpdateOp>("ampc_sgd_update",
                         {list(0), dtypes(0), list(1), dtypes(1), list(2),
                          numels(0), count(0), f64("lr"), f64("momentum"),
                          f64("weight_decay"), boolean("nesterov"),
                          constF64(0.0), flag(3)}),
        row<AdamWUpdateOp>("ampc_adamw_update",
                           {list(0), dtypes(0), list(1), dtypes(1), list(2),
                            list(3), buf(4), numels(0), count(0), f64("lr"),
                            f64("beta1"), f64("beta2"), f64("eps"),
                            f64("weight_decay"), constF64(0.0), flag(5)}),
        row<UpdateScaleOp>("ampc_update_scale",
                           {buf(0), buf(1), buf(2), flag(3),
                            f64("growth_factor"), f64("backoff_factor"),
                            i32("growth_interval"), i32("hysteresis"),
                            f64("min_scale"), f64("max_scale")}),
    };
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Building calls
//===----------------------------------------------------------------------===//

/// A converted buffer, looking through the casts the conversion puts
/// between a step's slot arguments and their tensor uses.
Value stripCasts(Value v) {
  while (auto cast = v.getDefiningOp<UnrealizedConversionCastOp>()) {
    if (cast->getNumOperands() != 1)
      break;
    v = cast->getOperand(0);
  }
  return v;
}

/// Accumulates the arguments of one rt.call.
class CallBuilder {
public:
  explicit CallBuilder(MLIRContext *ctx) : ctx(ctx), b(ctx) {
    args.push_back(rtd::ContextAttr::get(ctx));
  }
  MLIRContext *ctx;
  Builder b;
  SmallVector<Attribute> args;
  SmallVector<Value> buffers;

  Attribute ref(Value buffer) {
    buffers.push_back(stripCasts(buffer));
    return b.getIndexAttr(buffers.size() - 1);
  }
  void buffer(Value v) { args.push_back(ref(v)); }
  void null() { args.push_back(rtd::NullAttr::get(ctx)); }
  void i32(int64_t v) { args.push_back(b.getI32IntegerAttr(v)); }
  void i64(int64_t v) { args.push_back(b.getI64IntegerAttr(v)); }
  void u64(uint64_t v) {
    args.push_back(
        IntegerAttr::get(IntegerType::get(ctx, 64, IntegerType::Unsigned), v));
  }
  void f64(double v) { args.push_back(b.getF64FloatAttr(v)); }
  void dtype(Type t) {
    args.push_back(rtd::DtypeAttr::get(ctx, getElementTypeOrSelf(t)));
  }
  void ints(ArrayRef<int64_t> v) { args.push_back(b.getDenseI64ArrayAttr(v)); }
  void cEnum(StringRef name, int32_t v) {
    args.push_back(rtd::EnumAttr::get(ctx, name, v));
  }
  /// ptr, dtype, dims, rank of a tensor whose buffer is `buffer`.
  void tensor(Value buffer, Type type) {
    if (!buffer) {
      null();
      dtype(Float32Type::get(ctx));
      null();
      i32(0);
      return;
    }
    auto shaped = cast<ShapedType>(type);
    this->buffer(buffer);
    dtype(type);
    ints(shaped.getShape());
    i32(shaped.getRank());
  }
  rtd::CallOp create(OpBuilder &builder, Location loc, StringRef callee) {
    return rtd::CallOp::create(builder, loc, builder.getStringAttr(callee),
                               builder.getArrayAttr(args), buffers);
  }
};

Value arenaOf(Operation *op) {
  auto step = op->getParentOfType<rtd::StepOp>();
  return step ? step.getArena() : Value();
}

/// The buffers of `op`'s results: in place on an operand's, or a view of
/// the arena at the planned offset.
FailureOr<SmallVector<Value>> resultBuffers(Operation *op,
                                            ValueRange operands,
                                            ConversionPatternRewriter &rw) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttrName);
  Value arena = arenaOf(op);
  if (!arena)
    return op->emitError("is not inside an 'rt.step'"), failure();
  SmallVector<Value> out;
  for (OpResult result : op->getResults()) {
    unsigned i = result.getResultNumber();
    if (auto operand = getInPlaceOperand(op, i)) {
      out.push_back(stripCasts(operands[*operand]));
      continue;
    }
    if (!offsets || static_cast<int64_t>(offsets.size()) <= i ||
        offsets[i] < 0)
      return op->emitError("not buffer-planned (run ampc-buffer-planning)"),
             failure();
    out.push_back(rtd::ViewOp::create(rw, op->getLoc(), arena.getType(), arena,
                                      offsets[i]));
  }
  return out;
}

class KernelCallPattern : public ConversionPattern {
public:
  KernelCallPattern(const TypeConverter &converter, MLIRContext *ctx,
                    StringRef opName, const KernelRule &rule)
      : ConversionPattern(converter, opName, /*benefit=*/1, ctx), rule(rule) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rw) const override {
    FailureOr<SmallVector<Value>> results = resultBuffers(op, operands, rw);
    if (failed(results))
      return failure();
    CallBuilder c(op->getContext());
    SmallVector<Value> foundInf;
    auto operandGroup = [&](unsigned g) {
      auto [start, len] = rule.operandGroup(op, g);
      return std::make_pair(start, len);
    };
    for (const ArgSpec &a : rule.args) {
      switch (a.kind) {
      case ArgSpec::Result: {
        auto [start, len] = rule.resultGroup(op, a.group);
        if (len == 0)
          c.tensor(Value(), Type());
        else
          c.tensor((*results)[start], op->getResult(start).getType());
        break;
      }
      case ArgSpec::Operand: {
        auto [start, len] = operandGroup(a.group);
        if (len == 0)
          c.tensor(Value(), Type());
        else
          c.tensor(operands[start], op->getOperand(start).getType());
        break;
      }
      case ArgSpec::NullTensor:
        c.tensor(Value(), Type());
        break;
      case ArgSpec::Buffer:
        c.buffer(operands[operandGroup(a.group).first]);
        break;
      case ArgSpec::ResultBuffer:
        c.buffer((*results)[rule.resultGroup(op, a.group).first]);
        break;
      case ArgSpec::List: {
        auto [start, len] = operandGroup(a.group);
        if (len == 0) {
          c.null();
          break;
        }
        SmallVector<Attribute> refs;
        for (unsigned k = start; k < start + len; ++k)
          refs.push_back(c.ref(operands[k]));
        c.args.push_back(c.b.getArrayAttr(refs));
        break;
      }
      case ArgSpec::Dtypes: {
        auto [start, len] = operandGroup(a.group);
        SmallVector<Attribute> ds;
        for (unsigned k = start; k < start + len; ++k)
          ds.push_back(rtd::DtypeAttr::get(
              c.ctx, getElementTypeOrSelf(op->getOperand(k).getType())));
        c.args.push_back(c.b.getArrayAttr(ds));
        break;
      }
      case ArgSpec::Numels: {
        auto [start, len] = operandGroup(a.group);
        SmallVector<int64_t> ns;
        for (unsigned k = start; k < start + len; ++k)
          ns.push_back(
              cast<ShapedType>(op->getOperand(k).getType()).getNumElements());
        c.ints(ns);
        break;
      }
      case ArgSpec::Count:
        c.i32(operandGroup(a.group).second);
        break;
      case ArgSpec::Shapes: {
        auto [start, len] = operandGroup(a.group);
        SmallVector<Attribute> ss;
        for (unsigned k = start; k < start + len; ++k)
          ss.push_back(c.b.getDenseI64ArrayAttr(
              cast<ShapedType>(op->getOperand(k).getType()).getShape()));
        c.args.push_back(c.b.getArrayAttr(ss));
        break;
      }
      case ArgSpec::Flag: {
        auto [start, len] = operandGroup(a.group);
        if (len == 0) {
          c.null();
          c.dtype(Float32Type::get(c.ctx));
        } else {
          c.buffer(operands[start]);
          c.dtype(op->getOperand(start).getType());
        }
        break;
      }
      case ArgSpec::I64:
      case ArgSpec::I32: {
        auto attr = op->getAttrOfType<IntegerAttr>(a.name);
        if (!attr)
          return op->emitError("has no integer attribute '") << a.name << "'";
        if (a.kind == ArgSpec::I64)
          c.i64(attr.getInt());
        else
          c.i32(attr.getInt());
        break;
      }
      case ArgSpec::Bool: {
        Attribute attr = op->getAttr(a.name);
        auto b = dyn_cast_or_null<BoolAttr>(attr);
        c.i32(b ? b.getValue() : attr != nullptr);
        break;
      }
      case ArgSpec::F64: {
        auto attr = op->getAttrOfType<FloatAttr>(a.name);
        c.f64(attr ? attr.getValueAsDouble() : 0.0);
        break;
      }
      case ArgSpec::Dims:
      case ArgSpec::Each: {
        auto attr = op->getAttrOfType<DenseI64ArrayAttr>(a.name);
        if (!attr)
          return op->emitError("has no i64 array attribute '") << a.name << "'";
        if (a.kind == ArgSpec::Dims) {
          c.ints(attr.asArrayRef());
          c.i32(attr.size());
        } else {
          for (int64_t v : attr.asArrayRef())
            c.i64(v);
        }
        break;
      }
      case ArgSpec::Gelu: {
        auto attr = op->getAttrOfType<StringAttr>(a.name);
        bool tanh = attr && attr.getValue() == "tanh";
        c.cEnum(tanh ? "AMPC_GELU_TANH" : "AMPC_GELU_NONE", tanh ? 1 : 0);
        break;
      }
      case ArgSpec::Enum:
        c.cEnum(a.name, static_cast<int32_t>(a.value));
        break;
      case ArgSpec::ConstF64:
        c.f64(a.value);
        break;
      case ArgSpec::ConstDtype:
        c.dtype(Float32Type::get(c.ctx));
        break;
      case ArgSpec::MarkFoundInf:
        foundInf.push_back((*results)[rule.resultGroup(op, a.group).first]);
        break;
      }
    }
    c.create(rw, op->getLoc(), rule.callee);
    for (Value f : foundInf)
      rtd::FoundInfOp::create(rw, op->getLoc(), f);
    rw.replaceOp(op, *results);
    return success();
  }

private:
  const KernelRule &rule;
};

//===----------------------------------------------------------------------===//
// Ops with more than a kernel row
//===----------------------------------------------------------------------===//

/// A constant: a buffer of its bytes, written when the program is created.
struct ConstantPattern : OpConversionPattern<tg::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tg::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rw) const override {
    auto value = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!value)
      return op.emitError("cannot lower a non-dense constant");
    rw.replaceOp(op, rtd::ConstantOp::create(
                         rw, op.getLoc(), rtd::BufferType::get(op.getContext()),
                         cast<ElementsAttr>(value)));
    return success();
  }
};

/// A reshape is a view of its operand when buffer planning made it one,
/// else a copy that converts the element type.
struct ReshapePattern : OpConversionPattern<tg::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tg::ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    FailureOr<SmallVector<Value>> results =
        resultBuffers(op, adaptor.getOperands(), rw);
    if (failed(results))
      return failure();
    Value out = (*results)[0];
    if (out != stripCasts(adaptor.getInput())) {
      CallBuilder c(op.getContext());
      c.tensor(out, op.getType());
      c.tensor(adaptor.getInput(), op.getInput().getType());
      c.create(rw, op.getLoc(), "ampc_reshape_fwd");
    }
    rw.replaceOp(op, out);
    return success();
  }
};

/// The runtime has no broadcast kernel: sum's backward broadcasts dy over
/// the reduced dims (kept as 1), and the input, seen with ones prepended to
/// the result's rank, is exactly such a dy.
struct BroadcastPattern : OpConversionPattern<tg::BroadcastToOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tg::BroadcastToOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    FailureOr<SmallVector<Value>> results =
        resultBuffers(op, adaptor.getOperands(), rw);
    if (failed(results))
      return failure();
    auto in = cast<ShapedType>(op.getInput().getType());
    auto outShape = cast<ShapedType>(op.getType()).getShape();
    SmallVector<int64_t> dy(outShape.size() - in.getRank(), 1);
    dy.append(in.getShape().begin(), in.getShape().end());
    SmallVector<int64_t> reduced;
    for (size_t i = 0; i < dy.size(); ++i)
      if (dy[i] == 1 && outShape[i] != 1)
        reduced.push_back(i);
    CallBuilder c(op.getContext());
    c.tensor((*results)[0], op.getType());
    if (reduced.empty()) {
      c.tensor(adaptor.getInput(), op.getInput().getType());
      c.create(rw, op.getLoc(), "ampc_reshape_fwd");
    } else {
      c.buffer(adaptor.getInput());
      c.dtype(op.getInput().getType());
      c.ints(dy);
      c.i32(dy.size());
      c.tensor(Value(), Type());
      c.tensor(Value(), Type());
      c.ints(reduced);
      c.i32(reduced.size());
      c.i32(1); // keepdim
      c.create(rw, op.getLoc(), "ampc_sum_bwd");
    }
    rw.replaceOp(op, *results);
    return success();
  }
};

/// The gradient seed: the loss scale cast to the loss's type, or a 1.
struct GradSeedPattern : OpConversionPattern<tg::GradSeedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tg::GradSeedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    FailureOr<SmallVector<Value>> results =
        resultBuffers(op, adaptor.getOperands(), rw);
    if (failed(results))
      return failure();
    CallBuilder c(op.getContext());
    if (op.getScale()) {
      c.tensor((*results)[0], op.getType());
      c.tensor(adaptor.getScale(), op.getScale().getType());
      c.create(rw, op.getLoc(), "ampc_cast_fwd");
    } else {
      c.buffer((*results)[0]);
      c.dtype(op.getType());
      c.i64(1);
      c.f64(1.0);
      c.create(rw, op.getLoc(), "ampc_fill");
    }
    rw.replaceOp(op, *results);
    return success();
  }
};

/// The step's return: outputs, and new parameter and state values copied
/// into their slots unless computed there. The pass marks each returned
/// value with `rt.targets`: an i64 output index, or an index-typed slot.
struct ReturnPattern : OpConversionPattern<func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto step = op->getParentOfType<rtd::StepOp>();
    auto targets = op->getAttrOfType<ArrayAttr>("rt.targets");
    if (!step || !targets || targets.size() != op.getNumOperands())
      return failure();
    Block &block = step.getBody().front();
    for (auto [i, target] : llvm::enumerate(targets)) {
      Value v = stripCasts(adaptor.getOperands()[i]);
      Type type = op.getOperand(i).getType();
      auto t = cast<IntegerAttr>(target);
      if (!t.getType().isIndex()) {
        rtd::OutputOp::create(rw, op.getLoc(), rw.getI64IntegerAttr(t.getInt()), v,
                              TypeAttr::get(type));
        continue;
      }
      Value slot = block.getArgument(t.getInt());
      if (v == slot)
        continue;
      CallBuilder c(op.getContext());
      c.buffer(slot);
      c.buffer(v);
      c.u64(rtd::tensorBytes(type));
      c.cEnum("AMPC_MEMCPY_DEVICE_TO_DEVICE", 2);
      c.create(rw, op.getLoc(), "ampc_memcpy");
    }
    rw.eraseOp(op);
    return success();
  }
};
} // namespace

void ampc::populateTGToRuntimeConversionPatterns(TypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  for (const Row &r : kernelTable())
    patterns.add<KernelCallPattern>(converter, ctx, r.opName, r.rule);
  patterns.add<ConstantPattern, ReshapePattern, BroadcastPattern,
               GradSeedPattern, ReturnPattern>(converter, ctx);
}

//===----------------------------------------------------------------------===//
// The pass: the program's structure around the patterns
//===----------------------------------------------------------------------===//

namespace {
struct Fingerprint {
  uint64_t h = 1469598103934665603ull;
  void mix(StringRef s) {
    for (char ch : s) {
      h ^= static_cast<uint8_t>(ch);
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  }
};

/// Follows in-place results back to the argument whose buffer they use.
std::optional<unsigned> argumentBehind(Value v) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getArgNumber();
    auto result = cast<OpResult>(v);
    auto operand =
        getInPlaceOperand(result.getOwner(), result.getResultNumber());
    if (!operand)
      return std::nullopt;
    v = result.getOwner()->getOperand(*operand);
  }
}

/// Builds the rt.program of `func` around its (moved) body; the patterns
/// then lower the body's ops.
FailureOr<rtd::ProgramOp> buildProgram(func::FuncOp func) {
  using tg::TGDialect;
  MLIRContext *ctx = func.getContext();
  OpBuilder b(func);
  Location loc = func.getLoc();
  auto arena = func->getAttrOfType<IntegerAttr>(kArenaSizeAttrName);
  if (!arena)
    return func.emitError("not buffer-planned (run ampc-buffer-planning)");
  auto intermediate =
      func->getAttrOfType<IntegerAttr>(kIntermediateBytesAttrName);
  if (func.getBody().empty())
    return func.emitError("has no body to lower");
  Block &body = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return func.emitError("does not end with 'func.return'");

  llvm::StringMap<const KernelRule *> rules;
  for (const Row &r : kernelTable())
    rules[r.opName] = &r.rule;
  Fingerprint fp;
  fp.mix(func.getSymName());
  // Slots: the arguments, in order, named as the graph names them.
  struct SlotInfo {
    rtd::SlotRole role;
    std::string name;
    int64_t intRange = 0;
  };
  std::vector<SlotInfo> slots;
  llvm::StringSet<> used;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    SlotInfo s{rtd::SlotRole::input, "arg" + std::to_string(i)};
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "tg.input"))
      s.name = n.str();
    else if (auto n = func.getArgAttrOfType<StringAttr>(i, "tg.param"))
      s = {rtd::SlotRole::param, n.str()};
    else if (auto n = func.getArgAttrOfType<StringAttr>(i, "tg.state"))
      s = {rtd::SlotRole::state, n.str()};
    if (s.role != rtd::SlotRole::input) {
      fp.mix(s.name);
      fp.mix(std::to_string(rtd::dtypeOf(arg.getType())));
      for (int64_t d : cast<ShapedType>(arg.getType()).getShape())
        fp.mix(std::to_string(d));
    }
    // Consumers bound integer inputs (the table's index bounds).
    for (OpOperand &use : arg.getUses()) {
      Operation *user = use.getOwner();
      auto it = rules.find(user->getName().getStringRef());
      if (it == rules.end() || it->second->indexBound.operand < 0)
        continue;
      const KernelRule &rule = *it->second;
      if (rule.operandGroup(user, rule.indexBound.operand).first !=
          use.getOperandNumber())
        continue;
      Value bound =
          user->getOperand(rule.operandGroup(user, rule.indexBound.bound).first);
      s.intRange =
          cast<ShapedType>(bound.getType()).getShape()[rule.indexBound.dim];
    }
    // Symbol names are unique; a clash (an input named like a parameter)
    // gets a suffix.
    std::string unique = s.name;
    for (int k = 1; !used.insert(unique).second; ++k)
      unique = s.name + "_" + std::to_string(k);
    s.name = unique;
    slots.push_back(s);
  }
  if (auto ls = func->getAttr(TGDialect::kLossScaleAttrName)) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << ls;
    fp.mix(text);
  }

  // What each result is: an output, or the new value of a slot (found by
  // the parameter's or state's name).
  Builder attrs(ctx);
  llvm::StringMap<unsigned> stateArgs;
  for (BlockArgument arg : body.getArguments()) {
    unsigned k = arg.getArgNumber();
    StringAttr n = func.getArgAttrOfType<StringAttr>(k, "tg.param");
    if (!n)
      n = func.getArgAttrOfType<StringAttr>(k, "tg.state");
    if (n)
      stateArgs[n.getValue()] = k;
  }
  SmallVector<Attribute> targets;
  bool training = false;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (auto index =
            func.getResultAttrOfType<IntegerAttr>(i, TGDialect::kOutputAttrName)) {
      targets.push_back(attrs.getI64IntegerAttr(index.getInt()));
      continue;
    }
    StringRef name;
    if (auto n = func.getResultAttrOfType<StringAttr>(
            i, TGDialect::kParamOutAttrName)) {
      name = n.getValue();
      training = true;
    } else if (auto n = func.getResultAttrOfType<StringAttr>(
                   i, TGDialect::kStateOutAttrName)) {
      name = n.getValue();
    } else {
      return ret.emitError("result #")
             << i << " has no tg.output, tg.param_out or tg.state_out";
    }
    std::optional<unsigned> target = argumentBehind(v);
    if (auto it = stateArgs.find(name); it != stateArgs.end())
      target = it->second;
    if (!target)
      return ret.emitError("result #")
             << i << " ('" << name << "') matches no argument";
    targets.push_back(attrs.getIndexAttr(*target));
  }

  auto program = rtd::ProgramOp::create(
      b, loc, attrs.getStringAttr(func.getSymName()),
      attrs.getI64IntegerAttr(arena.getInt()),
      attrs.getI64IntegerAttr(intermediate ? intermediate.getInt() : 0),
      attrs.getI64IntegerAttr(static_cast<int64_t>(fp.h)),
      training ? attrs.getUnitAttr() : UnitAttr(), FlatSymbolRefAttr(),
      FloatAttr());
  if (auto scaling =
          func->getAttrOfType<DictionaryAttr>(TGDialect::kLossScaleAttrName))
    if (auto mode = scaling.getAs<StringAttr>("mode");
        mode && mode.getValue() == "static")
      if (auto scale = scaling.getAs<FloatAttr>("scale"))
        program.setStaticLossScaleAttr(
            attrs.getF64FloatAttr(scale.getValueAsDouble()));
  for (Operation &op : body)
    if (auto u = dyn_cast<tg::UpdateScaleOp>(op))
      if (auto arg = dyn_cast<BlockArgument>(u.getScale()))
        program.setLossScaleAttr(
            FlatSymbolRefAttr::get(ctx, slots[arg.getArgNumber()].name));

  Block *programBlock = new Block();
  program.getBody().push_back(programBlock);
  OpBuilder pb = OpBuilder::atBlockEnd(programBlock);
  for (auto [i, s] : llvm::enumerate(slots)) {
    rtd::SlotOp::create(
        pb, body.getArgument(i).getLoc(), rtd::SlotRoleAttr::get(ctx, s.role),
        attrs.getStringAttr(s.name),
        TypeAttr::get(body.getArgument(i).getType()),
        s.intRange ? attrs.getI64IntegerAttr(s.intRange) : IntegerAttr());
  }
  Type bufferType = rtd::BufferType::get(ctx);
  auto codeBlock = [&](Region &region) {
    Block *block = new Block();
    region.push_back(block);
    for (size_t i = 0; i <= slots.size(); ++i)
      block->addArgument(bufferType, loc);
    return block;
  };

  // Initialisers of parameters and state.
  auto init = rtd::InitOp::create(pb, loc);
  Block *initBlock = codeBlock(init.getBody());
  OpBuilder ib = OpBuilder::atBlockEnd(initBlock);
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (slots[i].role == rtd::SlotRole::input)
      continue;
    auto initAttr =
        func.getArgAttrOfType<tg::InitAttr>(i, TGDialect::kInitAttrName);
    if (!initAttr)
      return func.emitError("argument '") << slots[i].name << "' has no tg.init";
    double lo = initAttr.getA().convertToDouble();
    double hi = initAttr.getB().convertToDouble();
    int64_t numel = cast<ShapedType>(arg.getType()).getNumElements();
    CallBuilder c(ctx);
    c.buffer(initBlock->getArgument(i));
    c.dtype(arg.getType());
    c.i64(numel);
    switch (initAttr.getKind()) {
    case tg::InitKind::zeros:
    case tg::InitKind::ones:
    case tg::InitKind::full:
      c.f64(initAttr.getKind() == tg::InitKind::zeros  ? 0.0
            : initAttr.getKind() == tg::InitKind::ones ? 1.0
                                                       : lo);
      c.create(ib, arg.getLoc(), "ampc_fill");
      break;
    case tg::InitKind::normal:
    case tg::InitKind::uniform:
      c.args.push_back(rtd::SeedAttr::get(ctx));
      // Each argument draws from its own Philox stream.
      c.u64(i);
      c.f64(lo);
      c.f64(hi);
      c.create(ib, arg.getLoc(),
               initAttr.getKind() == tg::InitKind::normal ? "ampc_init_normal"
                                                          : "ampc_init_uniform");
      break;
    }
  }

  // The step: the function's body, its arguments seen through casts of the
  // slots' buffers until the patterns have rewritten every use.
  auto step = rtd::StepOp::create(pb, loc);
  Block *stepBlock = codeBlock(step.getBody());
  OpBuilder sb = OpBuilder::atBlockEnd(stepBlock);
  for (BlockArgument arg : body.getArguments()) {
    auto cast = UnrealizedConversionCastOp::create(
        sb, arg.getLoc(), arg.getType(),
        stepBlock->getArgument(arg.getArgNumber()));
    arg.replaceAllUsesWith(cast.getResult(0));
  }
  stepBlock->getOperations().splice(stepBlock->end(), body.getOperations());
  ret->setAttr("rt.targets", attrs.getArrayAttr(targets));
  return program;
}

struct ConvertTGToRuntimePass
    : ampc::impl::ConvertTGToRuntimeBase<ConvertTGToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    SmallVector<rtd::ProgramOp> programs;
    for (func::FuncOp func : funcs) {
      FailureOr<rtd::ProgramOp> program = buildProgram(func);
      if (failed(program))
        return signalPassFailure();
      programs.push_back(*program);
      func.erase();
    }

    RuntimeTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    populateTGToRuntimeConversionPatterns(converter, patterns);
    ConversionTarget target(*ctx);
    target.addLegalDialect<rtd::RTDialect>();
    target.addIllegalDialect<tg::TGDialect>();
    target.addIllegalOp<func::ReturnOp>();
    target.addLegalOp<UnrealizedConversionCastOp>();
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (rtd::ProgramOp program : programs) {
      if (failed(applyPartialConversion(program.getStep(), target, frozen)))
        return signalPassFailure();
      // The casts of the slots' buffers are unused once every tg op is
      // lowered.
      SmallVector<UnrealizedConversionCastOp> casts;
      program.getStep().walk(
          [&](UnrealizedConversionCastOp c) { casts.push_back(c); });
      for (auto c : llvm::reverse(casts))
        if (c->use_empty())
          c->erase();
      bool left = false;
      program.getStep().walk([&](UnrealizedConversionCastOp c) {
        c.emitError("a value of the step is used by an op without a "
                    "runtime lowering");
        left = true;
      });
      if (left)
        return signalPassFailure();
    }
  }
};
} // namespace

LogicalResult ampc::lowerToRuntime(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(createConvertTGToRuntime());
  return pm.run(module);
}
