//===- TGToRuntime.cpp - lower a planned tg step to rt runtime calls -------===//
//
// What every tg op lowers to is one table (`kernelTable`): the runtime entry
// point and its argument list, spelled in terms of the op's ODS operand and
// result groups and attributes. The entry point is the op record's
// (`kernels` in TGOpInfo.td). Ops whose kernel belongs to a family of the
// runtime's kernel table (ampc/runtime_kernels.inc: elementwise, reductions,
// softmax, pooling) get their argument list from the family's signature and
// their float attributes in the order the table's row declares them; the
// table lists only kernels with prototypes of their own. The kernel table is
// compiled in, so every name the lowering writes itself is checked when it
// compiles (RT_KERNEL) and every record's kernel when the table is built.
// One generic pattern turns a row into an `rt.call`; four ops whose lowering
// depends on more than their operands (constants, reshapes that are views,
// broadcasts, the gradient seed) have their own small patterns. Buffers come
// from ampc-buffer-planning's `tg.offsets`; results computed in place
// (BufferPlan.h) reuse their operand's buffer.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Conversion/BufferPlan.h"
#include "ampc/Conversion/CommProgress.h"
#include "ampc/Dialect/RT/ProgramInfo.h"
#include "ampc/Dialect/RT/RTDialect.h"
#include "ampc/Dialect/TG/StridedGemm.h"
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Roles.h"
#include "ampc/runtime.h"

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
// The runtime's kernel table
//===----------------------------------------------------------------------===//

namespace {
/// The families of ampc/runtime_kernels.inc: each fixes the signature of its
/// entry points.
enum class KernelFamily { Unary, Binary, Reduction, Softmax, Pool, Custom, Entry };

/// One entry point of the runtime's kernel table.
struct RuntimeKernel {
  const char *name;
  KernelFamily family;
  /// The `_bwd` entry point of a fwd/bwd pair.
  bool backward;
  unsigned numAttrs;
  /// The row's float attributes as written there: "()", "(beta, threshold)".
  const char *attrs;

  /// The names of the float attributes, in the row's order.
  SmallVector<StringRef> attrNames() const {
    SmallVector<StringRef> names;
    StringRef list = StringRef(attrs).trim().drop_front().drop_back();
    SmallVector<StringRef> parts;
    list.split(parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef p : parts)
      if (!p.trim().empty())
        names.push_back(p.trim());
    return names;
  }
};

#define AMPC_LOWERING_PAIR(NAME, FAMILY, N, ATTRS)                             \
  {"ampc_" #NAME "_fwd", KernelFamily::FAMILY, false, N, #ATTRS},              \
      {"ampc_" #NAME "_bwd", KernelFamily::FAMILY, true, N, #ATTRS},
/// Every entry point of the runtime's kernel table, from the table itself.
constexpr RuntimeKernel kRuntimeKernels[] = {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  AMPC_LOWERING_PAIR(NAME, Unary, N, ATTRS)
#define AMPC_BINARY_KERNEL(NAME, OP) AMPC_LOWERING_PAIR(NAME, Binary, 0, ())
#define AMPC_REDUCTION_KERNEL(NAME, OP)                                        \
  AMPC_LOWERING_PAIR(NAME, Reduction, 0, ())
#define AMPC_SOFTMAX_KERNEL(NAME, LOG) AMPC_LOWERING_PAIR(NAME, Softmax, 0, ())
#define AMPC_POOL_KERNEL(NAME, IS_MAX) AMPC_LOWERING_PAIR(NAME, Pool, 0, ())
#define AMPC_CUSTOM_KERNEL(NAME) AMPC_LOWERING_PAIR(NAME, Custom, 0, ())
#define AMPC_ENTRY(NAME) {"ampc_" #NAME, KernelFamily::Entry, false, 0, "()"},
#include "ampc/runtime_kernels.inc"
};
#undef AMPC_LOWERING_PAIR

constexpr bool sameName(const char *a, const char *b) {
  while (*a && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

constexpr bool isKernelName(const char *name) {
  for (const RuntimeKernel &k : kRuntimeKernels)
    if (sameName(k.name, name))
      return true;
  return false;
}

template <bool Known> constexpr const char *checkedKernel(const char *name) {
  static_assert(Known, "not an entry point of ampc/runtime_kernels.inc");
  return name;
}

/// A runtime entry point the lowering names itself: a name the kernel table
/// lacks does not compile.
#define RT_KERNEL(NAME) checkedKernel<isKernelName(NAME)>(NAME)

const RuntimeKernel *lookupRuntimeKernel(StringRef name) {
  for (const RuntimeKernel &k : kRuntimeKernels)
    if (name == k.name)
      return &k;
  return nullptr;
}

/// Ops lowered by patterns of their own (below), not by a table row.
ArrayRef<StringRef> opsWithOwnPatterns() {
  static const StringRef names[] = {
      tg::ConstantOp::getOperationName(), tg::ReshapeOp::getOperationName(),
      tg::BroadcastToOp::getOperationName(),
      tg::GradSeedOp::getOperationName()};
  return names;
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

/// One C argument of a runtime call. "Group" is an ODS operand (or result)
/// group of the op: an operand, an optional operand or a variadic list.
struct ArgSpec {
  enum Kind {
    Result,      ///< ptr, dtype, dims, rank of result group G's first value
    ResultOrNull,///< the same, or as NullTensor when nothing reads it
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
    OptBuffer,   ///< ptr of optional operand group G, or NULL
    LrKind,      ///< string attribute NAME as ampc_lr_schedule_kind
    I64,         ///< integer attribute NAME (int64_t)
    I32,         ///< integer attribute NAME (int32_t)
    Bool,        ///< unit or bool attribute NAME as 0/1 (int32_t)
    F64,         ///< float attribute NAME (double; the record's default,
                 ///< else 0, when absent)
    F32,         ///< float attribute NAME (float; the record's default when
                 ///< absent)
    Dims,        ///< i64 array attribute NAME and its length (int32_t)
    Each,        ///< every element of i64 array attribute NAME (int64_t)
    Gelu,        ///< string attribute NAME ("none" | "tanh") as ampc_gelu
    Reduction,   ///< string attribute NAME ("none" | "mean" | "sum" |
                 ///< "batchmean") as ampc_reduction
    Enum,        ///< the C enum constant NAME = VALUE
    ConstF64,    ///< the double VALUE
    ConstDtype,  ///< AMPC_F32
    MarkFoundInf, ///< no argument: result group G is the step's overflow flag
    Site,         ///< the op's check site (int32_t; rt.source "site")
    Seed,         ///< the run's seed (uint64_t)
    OptDims,      ///< as Dims; NULL and 0 when the attribute is absent
    OptI64,       ///< integer attribute NAME (int64_t), 0 when absent
    LowUpdate,    ///< string attribute NAME ("nearest" | "stochastic" |
                  ///< "kahan", absent: nearest) as ampc_low_update
    StridedGemm   ///< a tg.permuted_matmul's strided GEMM (StridedGemm.h):
                  ///< outer, its strides, batch, m, n, k, trans flags, lds,
                  ///< batch strides
  };
  Kind kind;
  unsigned group = 0;
  StringRef name;
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
ArgSpec resOrNull(unsigned g) { return {ArgSpec::ResultOrNull, g}; }
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
ArgSpec optBuf(unsigned g) { return {ArgSpec::OptBuffer, g}; }
ArgSpec lrKind(StringRef n) { return {ArgSpec::LrKind, 0, n}; }
ArgSpec i64(StringRef n) { return {ArgSpec::I64, 0, n}; }
ArgSpec i32(StringRef n) { return {ArgSpec::I32, 0, n}; }
ArgSpec boolean(StringRef n) { return {ArgSpec::Bool, 0, n}; }
ArgSpec f64(StringRef n) { return {ArgSpec::F64, 0, n}; }
ArgSpec f32(StringRef n) { return {ArgSpec::F32, 0, n}; }
ArgSpec dims(StringRef n) { return {ArgSpec::Dims, 0, n}; }
ArgSpec each(StringRef n) { return {ArgSpec::Each, 0, n}; }
ArgSpec gelu(StringRef n) { return {ArgSpec::Gelu, 0, n}; }
ArgSpec reduction(StringRef n) { return {ArgSpec::Reduction, 0, n}; }
ArgSpec cEnum(StringRef n, int v) { return {ArgSpec::Enum, 0, n, double(v)}; }
ArgSpec constF64(double v) { return {ArgSpec::ConstF64, 0, StringRef(), v}; }
ArgSpec f32Dtype() { return {ArgSpec::ConstDtype}; }
ArgSpec markFoundInf(unsigned g) { return {ArgSpec::MarkFoundInf, g}; }
ArgSpec site() { return {ArgSpec::Site}; }
ArgSpec stridedGemm() { return {ArgSpec::StridedGemm}; }

/// Checks and provenance (docs/runtime.md "Check words"): before the
/// patterns run, every op of the step that lowers to a call gets
/// `rt.source` = {op, pass}, and every op whose kernel takes a check site
/// gets `site` in it (numbered in execution order); the pattern moves the
/// dictionary onto the call, adding `results` (the argument positions of the
/// result tensors).
ArgSpec seed() { return {ArgSpec::Seed}; }
ArgSpec optDims(StringRef n) { return {ArgSpec::OptDims, 0, n}; }
ArgSpec optI64(StringRef n) { return {ArgSpec::OptI64, 0, n}; }
ArgSpec lowUpdate(StringRef n) { return {ArgSpec::LowUpdate, 0, n}; }

struct Row {
  StringRef opName;
  KernelRule rule;
};

/// An op whose row the lowering writes itself: the arguments of a kernel
/// with a prototype of its own, in order. The callee is the record's
/// (TGOpInfo.td `kernels`).
template <typename OpTy>
Row row(std::vector<ArgSpec> args, IndexBound bound = {}) {
  StringRef name = OpTy::getOperationName();
  const tg::OpInfo *info = tg::lookupOpInfo(name);
  if (!info || info->kernels.size() != 1 ||
      !lookupRuntimeKernel(info->kernels.front()))
    llvm::report_fatal_error(llvm::Twine("the record of '") + name +
                             "' does not name one kernel of the runtime's "
                             "table");
  return {name,
          {info->kernels.front(), std::move(args), &operandGroupOf<OpTy>,
           &resultGroupOf<OpTy>, bound}};
}

/// The groups of an op whose operands and results are single values (every
/// op of a table family): group i is value i.
Group singleGroup(Operation *, unsigned i) { return {i, 1}; }

/// The arguments of a call to a kernel of a table family (FWD or BWD entry
/// point of its row in ampc/runtime_kernels.inc) for `info`'s op: the
/// family's signature, written once here, and the float attributes the row
/// names, in the row's order. std::nullopt for kernels of no family.
std::optional<std::vector<ArgSpec>> familyArgs(const RuntimeKernel &kernel,
                                               const tg::OpInfo &info) {
  size_t operands = info.operands.size();
  std::vector<ArgSpec> args = {res(0)};
  auto allOperands = [&] {
    for (unsigned i = 0; i < operands; ++i)
      args.push_back(opd(i));
  };
  switch (kernel.family) {
  case KernelFamily::Unary:
    // fwd (y, x, attrs...), bwd (dx, dy, x, attrs...).
    allOperands();
    for (StringRef attr : kernel.attrNames())
      args.push_back(f32(attr));
    return args;
  case KernelFamily::Binary:
    // fwd (y, a, b); bwd (da, db, dy, a, b).
    if (kernel.backward)
      args.push_back(res(1));
    allOperands();
    return args;
  case KernelFamily::Reduction:
    // fwd (y, x, dims, keepdim); bwd (dx, dy, x, y, dims, keepdim).
    allOperands();
    args.push_back(dims("dims"));
    args.push_back(boolean("keepdim"));
    return args;
  case KernelFamily::Softmax:
    // fwd (y, x, dim); bwd (dx, dy, y, dim).
    allOperands();
    args.push_back(i64("dim"));
    return args;
  case KernelFamily::Pool:
    // fwd (y, x, kernel, stride, padding); bwd (dx, dy, x, ...).
    allOperands();
    args.push_back(each("kernel"));
    args.push_back(each("stride"));
    args.push_back(each("padding"));
    return args;
  case KernelFamily::Custom:
  case KernelFamily::Entry:
    return std::nullopt;
  }
  return std::nullopt;
}

/// What every tg op with a plain kernel lowers to: its runtime entry point
/// and arguments, in order. The context is every call's first argument.
/// Kernels with prototypes of their own get their rows from the records'
/// `kernelArgs` (TGKernelArgs.inc); ops whose record names one kernel of a
/// table family (elementwise, reductions, softmax, pooling) from the record
/// and the kernel table.
const std::vector<Row> &kernelTable() {
  using namespace tg;
  static const std::vector<Row> table = [] {
    // The rows the records write out (`kernelArgs`, TGOpInfo.td).
    std::vector<Row> rows{
#define TG_KERNEL_ROW(OP, BOUND_OPERAND, BOUND, DIM, ...)                     \
  row<OP>({__VA_ARGS__}, {BOUND_OPERAND, BOUND, DIM}),
#include "ampc/Dialect/TG/TGKernelArgs.inc"
#undef TG_KERNEL_ROW
    };
    // The rows the records and the kernel table give.
    llvm::StringSet<> written;
    for (const Row &r : rows)
      written.insert(r.opName);
    for (StringRef special : opsWithOwnPatterns())
      written.insert(special);
    for (const OpInfo &info : getOpInfos()) {
      if (written.contains(info.name) || info.kernels.size() != 1)
        continue;
      const RuntimeKernel *kernel = lookupRuntimeKernel(info.kernels.front());
      if (!kernel)
        llvm::report_fatal_error(llvm::Twine("op '") + info.name +
                                 "' lowers to '" + info.kernels.front() +
                                 "', which the runtime's kernel table lacks");
      if (info.minOperands != info.maxOperands ||
          info.maxOperands != info.operands.size())
        continue;
      std::optional<std::vector<ArgSpec>> args = familyArgs(*kernel, info);
      if (!args)
        continue;
      rows.push_back({info.name,
                      {info.kernels.front(), std::move(*args), &singleGroup,
                       &singleGroup}});
    }
    return rows;
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
  void f32(double v) { args.push_back(b.getF32FloatAttr(v)); }
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
  auto offsets =
      op->getAttrOfType<DenseI64ArrayAttr>(tg::TGDialect::kOffsetsAttrName);
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

/// The default of float attribute `name` of `op` as its record (or, for a
/// backward op, its forward op's record) spells it.
bool defaultFloat(Operation *op, StringRef name, double &value) {
  StringRef opName = op->getName().getStringRef();
  const tg::OpInfo *info = tg::lookupOpInfo(opName);
  if (info && info->training && opName.ends_with("_grad"))
    info = tg::lookupOpInfo(opName.drop_back(5));
  const tg::KeywordInfo *k = info ? info->findKeyword(name) : nullptr;
  if (!k || k->kind != tg::KeywordKind::Float || k->defaultValue.empty())
    return false;
  return !k->defaultValue.getAsDouble(value);
}

class KernelCallPattern : public ConversionPattern {
public:
  KernelCallPattern(const TypeConverter &converter, MLIRContext *ctx,
                    StringRef opName, const KernelRule &rule,
                    PatternBenefit benefit = 1)
      : ConversionPattern(converter, opName, benefit, ctx), rule(rule) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rw) const override {
    FailureOr<SmallVector<Value>> results = resultBuffers(op, operands, rw);
    if (failed(results))
      return failure();
    CallBuilder c(op->getContext());
    SmallVector<Value> foundInf;
    SmallVector<int64_t> resultArgs;
    auto source =
        op->getAttrOfType<DictionaryAttr>(rtd::RTDialect::kSourceAttrName);
    auto operandGroup = [&](unsigned g) {
      auto [start, len] = rule.operandGroup(op, g);
      return std::make_pair(start, len);
    };
    for (const ArgSpec &a : rule.args) {
      switch (a.kind) {
      case ArgSpec::Result:
      case ArgSpec::ResultOrNull: {
        auto [start, len] = rule.resultGroup(op, a.group);
        // A result no op reads, of a kernel that skips a null one.
        bool skipped = a.kind == ArgSpec::ResultOrNull && len != 0 &&
                       op->getResult(start).use_empty();
        if (len == 0 || skipped) {
          c.tensor(Value(), Type());
        } else {
          resultArgs.push_back(c.args.size());
          c.tensor((*results)[start], op->getResult(start).getType());
        }
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
        if (len == 0) { // an empty group (no model copies, no momentum)
          c.null();
          break;
        }
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
      case ArgSpec::OptBuffer: {
        auto [start, len] = operandGroup(a.group);
        if (len == 0)
          c.null();
        else
          c.buffer(operands[start]);
        break;
      }
      case ArgSpec::LrKind: {
        auto attr = op->getAttrOfType<StringAttr>(a.name);
        StringRef kind = attr ? attr.getValue() : "constant";
        if (kind == "linear")
          c.cEnum("AMPC_LR_LINEAR", AMPC_LR_LINEAR);
        else if (kind == "cosine")
          c.cEnum("AMPC_LR_COSINE", AMPC_LR_COSINE);
        else if (kind == "step")
          c.cEnum("AMPC_LR_STEP", AMPC_LR_STEP);
        else
          c.cEnum("AMPC_LR_CONSTANT", AMPC_LR_CONSTANT);
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
        // Absent: the record's default where it has one (addmm's beta), 0.
        double v = 0.0;
        if (attr)
          v = attr.getValueAsDouble();
        else if (!defaultFloat(op, a.name, v))
          v = 0.0;
        c.f64(v);
        break;
      }
      case ArgSpec::F32: {
        // Absent only in IR written without it: the record's default.
        auto attr = op->getAttrOfType<FloatAttr>(a.name);
        double v;
        if (attr) {
          v = attr.getValueAsDouble();
        } else if (!defaultFloat(op, a.name, v)) {
          return op->emitError("has no float attribute '") << a.name << "'";
        }
        c.f32(v);
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
      case ArgSpec::Reduction: {
        auto attr = op->getAttrOfType<StringAttr>(a.name);
        StringRef r = attr ? attr.getValue() : "mean";
        if (r == "none")
          c.cEnum("AMPC_REDUCTION_NONE", 0);
        else if (r == "sum")
          c.cEnum("AMPC_REDUCTION_SUM", 2);
        else if (r == "batchmean")
          c.cEnum("AMPC_REDUCTION_BATCHMEAN", 3);
        else
          c.cEnum("AMPC_REDUCTION_MEAN", 1);
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
      case ArgSpec::Site: {
        IntegerAttr siteAttr =
            source ? source.getAs<IntegerAttr>("site") : IntegerAttr();
        c.i32(siteAttr ? siteAttr.getInt() : -1);
        break;
      }
      case ArgSpec::Seed:
        c.args.push_back(rtd::SeedAttr::get(c.ctx));
        break;
      case ArgSpec::OptDims: {
        auto attr = op->getAttrOfType<DenseI64ArrayAttr>(a.name);
        if (!attr || attr.empty()) {
          c.null();
          c.i32(0);
        } else {
          c.ints(attr.asArrayRef());
          c.i32(attr.size());
        }
        break;
      }
      case ArgSpec::OptI64: {
        auto attr = op->getAttrOfType<IntegerAttr>(a.name);
        c.i64(attr ? attr.getInt() : 0);
        break;
      }
      case ArgSpec::LowUpdate: {
        auto attr = op->getAttrOfType<StringAttr>(a.name);
        StringRef m = attr ? attr.getValue() : "nearest";
        if (m == "stochastic")
          c.cEnum("AMPC_LOW_STOCHASTIC", AMPC_LOW_STOCHASTIC);
        else if (m == "kahan")
          c.cEnum("AMPC_LOW_KAHAN", AMPC_LOW_KAHAN);
        else
          c.cEnum("AMPC_LOW_NEAREST", AMPC_LOW_NEAREST);
        break;
      }
      case ArgSpec::StridedGemm: {
        auto pm = cast<tg::PermutedMatmulOp>(op);
        std::optional<tg::StridedGemm> g = tg::planStridedGemm(
            pm.getLhs().getType().getShape(), pm.getLhsPerm(),
            pm.getRhs().getType().getShape(), pm.getRhsPerm(),
            pm.getType().getShape(), pm.getResultPerm());
        if (!g)
          return op->emitError("has no strided GEMM for its permutations");
        for (int64_t v : {g->outer, g->outerA, g->outerB, g->outerC,
                          g->batch, g->m, g->n, g->k})
          c.i64(v);
        c.i32(g->transA);
        c.i32(g->transB);
        for (int64_t v :
             {g->lda, g->ldb, g->ldc, g->strideA, g->strideB, g->strideC})
          c.i64(v);
        break;
      }
      }
    }
    rtd::CallOp call = c.create(rw, op->getLoc(), rule.callee);
    if (source) {
      NamedAttrList entries(source);
      entries.set("results", c.b.getDenseI64ArrayAttr(resultArgs));
      call->setAttr(rtd::RTDialect::kSourceAttrName,
                    entries.getDictionary(op->getContext()));
    }
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
      c.create(rw, op.getLoc(), RT_KERNEL("ampc_reshape_fwd"));
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
      c.create(rw, op.getLoc(), RT_KERNEL("ampc_reshape_fwd"));
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
      c.create(rw, op.getLoc(), RT_KERNEL("ampc_sum_bwd"));
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
      c.create(rw, op.getLoc(), RT_KERNEL("ampc_cast_fwd"));
    } else {
      c.buffer((*results)[0]);
      c.dtype(op.getType());
      c.i64(1);
      c.f64(1.0);
      c.create(rw, op.getLoc(), RT_KERNEL("ampc_fill"));
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
    auto targets =
        op->getAttrOfType<ArrayAttr>(rtd::RTDialect::kTargetsAttrName);
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
      c.create(rw, op.getLoc(), RT_KERNEL("ampc_memcpy"));
    }
    rw.eraseOp(op);
    return success();
  }
};
} // namespace

bool ampc::isRuntimeKernel(StringRef name) {
  return lookupRuntimeKernel(name) != nullptr;
}

std::vector<std::pair<StringRef, StringRef>> ampc::getKernelCallees() {
  std::vector<std::pair<StringRef, StringRef>> callees;
  for (const Row &r : kernelTable())
    callees.push_back({r.opName, r.rule.callee});
  return callees;
}

//===----------------------------------------------------------------------===//
// Opt level O2: optimizer updates that also write the low model copies
//===----------------------------------------------------------------------===//

namespace {
/// An update op with `models` calls the `_model` entry point: the record's
/// kernel's arguments, then the model copies, their dtypes and the indices
/// of their parameters (`model_params`).
class ModelCopyUpdatePattern : public KernelCallPattern {
public:
  ModelCopyUpdatePattern(const TypeConverter &converter, MLIRContext *ctx,
                         StringRef opName, const KernelRule &rule)
      : KernelCallPattern(converter, ctx, opName, rule, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rw) const override {
    if (!op->getAttr("model_params"))
      return failure();
    return KernelCallPattern::matchAndRewrite(op, operands, rw);
  }
};

/// The rules of the `_model` entry points, from the update ops' rows.
const std::vector<Row> &modelCopyRows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> out;
    auto extend = [&](StringRef opName, const char *callee, unsigned models) {
      for (const Row &r : kernelTable()) {
        if (r.opName != opName)
          continue;
        Row row = r;
        row.rule.callee = callee;
        row.rule.args.push_back(list(models));
        row.rule.args.push_back(dtypes(models));
        row.rule.args.push_back(dims("model_params"));
        out.push_back(std::move(row));
      }
    };
    extend(tg::SgdUpdateOp::getOperationName(),
           RT_KERNEL("ampc_sgd_update_model"), 4);
    extend(tg::AdamWUpdateOp::getOperationName(),
           RT_KERNEL("ampc_adamw_update_model"), 6);
    return out;
  }();
  return rows;
}
} // namespace

//===----------------------------------------------------------------------===//
// Updates of 16-bit params (docs/optimizer.md): bf16 state, stochastic
// rounding, Kahan compensation
//===----------------------------------------------------------------------===//

namespace {
/// An update op with a `low_update` mode, compensation buffers or 16-bit
/// optimizer state calls the `_low` entry point: the record's kernel's
/// arguments, the model copies (as `_model` takes them, possibly none),
/// then the state dtypes, the mode, the seed, `param_base`, (SGD) the
/// counter, and the compensation buffers with their params' indices.
class LowUpdatePattern : public KernelCallPattern {
public:
  LowUpdatePattern(const TypeConverter &converter, MLIRContext *ctx,
                   StringRef opName, const KernelRule &rule)
      : KernelCallPattern(converter, ctx, opName, rule, /*benefit=*/3) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rw) const override {
    // 16-bit state (an f64 param's f64 state is the plain kernel's).
    auto lowState = [](ValueRange state) {
      return llvm::any_of(state, [](Value v) {
        Type e = getElementTypeOrSelf(v.getType());
        return !e.isF32() && !e.isF64();
      });
    };
    bool special = op->hasAttr("low_update");
    if (auto sgd = dyn_cast<tg::SgdUpdateOp>(op))
      special |= lowState(sgd.getMomentumBuffers()) || !sgd.getComps().empty();
    else if (auto adamw = dyn_cast<tg::AdamWUpdateOp>(op))
      special |= lowState(adamw.getExpAvgs()) || !adamw.getComps().empty();
    if (!special)
      return failure();
    return KernelCallPattern::matchAndRewrite(op, operands, rw);
  }
};

const std::vector<Row> &lowUpdateRows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> out;
    auto extend = [&](StringRef opName, const char *callee, unsigned models,
                      unsigned comps, int counter) {
      for (const Row &r : kernelTable()) {
        if (r.opName != opName)
          continue;
        Row row = r;
        row.rule.callee = callee;
        auto &args = row.rule.args;
        args.push_back(list(models));
        args.push_back(dtypes(models));
        args.push_back(optDims("model_params"));
        args.push_back(dtypes(2)); // momentum buffers / exp_avgs
        args.push_back(lowUpdate("low_update"));
        args.push_back(seed());
        args.push_back(optI64("param_base"));
        if (counter >= 0)
          args.push_back(optBuf(counter));
        args.push_back(list(comps));
        args.push_back(optDims("comp_params"));
        out.push_back(std::move(row));
      }
    };
    extend(tg::SgdUpdateOp::getOperationName(),
           RT_KERNEL("ampc_sgd_update_low"), 4, 6, 7);
    extend(tg::AdamWUpdateOp::getOperationName(),
           RT_KERNEL("ampc_adamw_update_low"), 6, 8, -1);
    return out;
  }();
  return rows;
}
} // namespace

//===----------------------------------------------------------------------===//
// Synchronised batch norm (--sync-batchnorm, docs/distributed.md)
//===----------------------------------------------------------------------===//

namespace {
/// A batch-norm op with `sync` calls the `ampc_sync_batch_norm_*` entry
/// point: the same arguments as its row, another callee.
class SyncBatchNormPattern : public KernelCallPattern {
public:
  SyncBatchNormPattern(const TypeConverter &converter, MLIRContext *ctx,
                       StringRef opName, const KernelRule &rule)
      : KernelCallPattern(converter, ctx, opName, rule, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rw) const override {
    if (!op->hasAttr("sync"))
      return failure();
    return KernelCallPattern::matchAndRewrite(op, operands, rw);
  }
};

/// The rules of the synchronised entry points, from the batch-norm rows.
const std::vector<Row> &syncBatchNormRows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> out;
    auto extend = [&](StringRef opName, const char *callee) {
      for (const Row &r : kernelTable()) {
        if (r.opName != opName)
          continue;
        Row row = r;
        row.rule.callee = callee;
        out.push_back(std::move(row));
      }
    };
    extend(tg::BatchNormOp::getOperationName(),
           RT_KERNEL("ampc_sync_batch_norm_fwd"));
    extend(tg::BatchNormGradOp::getOperationName(),
           RT_KERNEL("ampc_sync_batch_norm_bwd"));
    extend(tg::BatchNormUpdateOp::getOperationName(),
           RT_KERNEL("ampc_sync_batch_norm_update"));
    return out;
  }();
  return rows;
}
} // namespace

//===----------------------------------------------------------------------===//
// Dropout under data-parallel ranks (docs/distributed.md)
//===----------------------------------------------------------------------===//

namespace {
/// A dropout whose input layout ampc-dropout-sample-layout proved
/// (`sample_elems` > 0) calls `ampc_dropout_ranked_fwd`: its row's
/// arguments, then the sample size.
class RankedDropoutPattern : public KernelCallPattern {
public:
  RankedDropoutPattern(const TypeConverter &converter, MLIRContext *ctx,
                       StringRef opName, const KernelRule &rule)
      : KernelCallPattern(converter, ctx, opName, rule, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rw) const override {
    auto sample = op->getAttrOfType<IntegerAttr>("sample_elems");
    if (!sample || sample.getInt() <= 0)
      return failure();
    return KernelCallPattern::matchAndRewrite(op, operands, rw);
  }
};

const std::vector<Row> &rankedDropoutRows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> out;
    for (const Row &r : kernelTable()) {
      if (r.opName != tg::DropoutOp::getOperationName())
        continue;
      Row row = r;
      row.rule.callee = RT_KERNEL("ampc_dropout_ranked_fwd");
      row.rule.args.push_back(i64("sample_elems"));
      out.push_back(std::move(row));
    }
    return out;
  }();
  return rows;
}
} // namespace

void ampc::populateTGToRuntimeConversionPatterns(TypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  for (const Row &r : kernelTable())
    patterns.add<KernelCallPattern>(converter, ctx, r.opName, r.rule);
  for (const Row &r : modelCopyRows())
    patterns.add<ModelCopyUpdatePattern>(converter, ctx, r.opName, r.rule);
  for (const Row &r : lowUpdateRows())
    patterns.add<LowUpdatePattern>(converter, ctx, r.opName, r.rule);
  for (const Row &r : syncBatchNormRows())
    patterns.add<SyncBatchNormPattern>(converter, ctx, r.opName, r.rule);
  for (const Row &r : rankedDropoutRows())
    patterns.add<RankedDropoutPattern>(converter, ctx, r.opName, r.rule);
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

/// Gives the ops of the step their `rt.source` (RTDialect::kSourceAttrName):
/// what source op and pass each call comes from, and check sites in execution
/// order. Ops of the optimizer and the loss scaler run after the gradients
/// are checked and get none. Backward ops (tg.role "grad") are the
/// backward pass; an AMP cast (tg.role "amp") is in the pass of the kernel
/// before it.
void markSources(Block &step, const llvm::StringMap<const KernelRule *> &rules) {
  Builder b(step.getParentOp()->getContext());
  bool backward = false;
  int32_t sites = 0;
  for (Operation &op : step) {
    std::optional<Role> role = getRole(&op);
    if (role == Role::Optimizer || role == Role::LossScale)
      continue;
    auto it = rules.find(op.getName().getStringRef());
    if (it == rules.end())
      continue;
    // AMP casts belong to the pass of the kernels around them: the backward
    // starts at its first kernel (the seed's fill may come earlier).
    if (role == Role::Grad)
      backward = true;
    StringRef name = op.getName().stripDialect();
    // A product with its transposes folded (ampc-fold-transposes) is the
    // matmul the program wrote.
    if (isa<tg::PermutedMatmulOp>(op))
      name = "matmul";
    NamedAttrList entries;
    entries.set("op", b.getStringAttr(name));
    entries.set("pass", b.getStringAttr(role == Role::Grad || backward
                                            ? "backward"
                                            : "forward"));
    const KernelRule &rule = *it->second;
    if (llvm::any_of(rule.args,
                     [](const ArgSpec &a) { return a.kind == ArgSpec::Site; })) {
      entries.set("site", b.getI32IntegerAttr(sites++));
      // What the check is about, for its message: the index operand and
      // its valid range.
      const tg::OpInfo *info = tg::lookupOpInfo(op.getName().getStringRef());
      const IndexBound &bound = rule.indexBound;
      if (info && bound.operand >= 0 &&
          unsigned(bound.operand) < info->operands.size()) {
        entries.set("index", b.getStringAttr(info->operands[bound.operand]));
        Value limit =
            op.getOperand(rule.operandGroup(&op, bound.bound).first);
        entries.set("range", b.getI64IntegerAttr(cast<ShapedType>(
                                 limit.getType()).getShape()[bound.dim]));
      }
    }
    op.setAttr(rtd::RTDialect::kSourceAttrName,
               entries.getDictionary(b.getContext()));
  }
}

/// Builds the rt.program of `func` around its (moved) body; the patterns
/// then lower the body's ops.
FailureOr<rtd::ProgramOp> buildProgram(func::FuncOp func) {
  using tg::TGDialect;
  MLIRContext *ctx = func.getContext();
  OpBuilder b(func);
  Location loc = func.getLoc();
  auto arena =
      func->getAttrOfType<IntegerAttr>(tg::TGDialect::kArenaSizeAttrName);
  if (!arena)
    return func.emitError("not buffer-planned (run ampc-buffer-planning)");
  auto intermediate = func->getAttrOfType<IntegerAttr>(
      tg::TGDialect::kIntermediateBytesAttrName);
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
    if (auto n =
            func.getArgAttrOfType<StringAttr>(i, TGDialect::kInputAttrName))
      s.name = n.str();
    else if (auto n = func.getArgAttrOfType<StringAttr>(
                 i, TGDialect::kParamAttrName))
      s = {rtd::SlotRole::param, n.str()};
    else if (auto n = func.getArgAttrOfType<StringAttr>(
                 i, TGDialect::kStateAttrName))
      s = {rtd::SlotRole::state, n.str()};
    else if (auto n = func.getArgAttrOfType<StringAttr>(
                 i, TGDialect::kBufferAttrName))
      s = {rtd::SlotRole::buffer, n.str()};
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
    StringAttr n =
        func.getArgAttrOfType<StringAttr>(k, TGDialect::kParamAttrName);
    if (!n)
      n = func.getArgAttrOfType<StringAttr>(k, TGDialect::kStateAttrName);
    if (!n)
      n = func.getArgAttrOfType<StringAttr>(k, TGDialect::kBufferAttrName);
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
    } else if (auto n = func.getResultAttrOfType<StringAttr>(
                   i, TGDialect::kBufferOutAttrName)) {
      name = n.getValue();
    } else {
      return ret.emitError("result #")
             << i
             << " has no tg.output, tg.param_out, tg.state_out or "
                "tg.buffer_out";
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
  // Gradient accumulation: K micro-batches per update (ProgramInfo's
  // `accumulate`; the update starts after the ampc_grad_accumulate call).
  if (auto k = func->getAttrOfType<IntegerAttr>(TGDialect::kAccumulateAttrName))
    program->setAttr(rtd::RTDialect::kAccumulateAttrName, k);
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
    // Opt level O2: a model copy starts as its master, rounded (the
    // masters are initialised first: they are arguments before it).
    if (auto master =
            func.getArgAttrOfType<StringAttr>(i, TGDialect::kModelOfAttrName)) {
      auto it = stateArgs.find(master.getValue());
      if (it == stateArgs.end())
        return func.emitError("model copy '")
               << slots[i].name << "' names no parameter '"
               << master.getValue() << "'";
      BlockArgument from = body.getArgument(it->second);
      CallBuilder c(ctx);
      c.tensor(initBlock->getArgument(i), arg.getType());
      c.tensor(initBlock->getArgument(it->second), from.getType());
      c.create(ib, arg.getLoc(), RT_KERNEL("ampc_cast_fwd"));
      continue;
    }
    auto initAttr =
        func.getArgAttrOfType<tg::InitAttr>(i, TGDialect::kInitAttrName);
    if (!initAttr)
      return func.emitError("argument '") << slots[i].name << "' has no tg.init";
    double lo = initAttr.getA().convertToDouble();
    double hi = initAttr.getB().convertToDouble();
    // A value from the file (an imported initializer): its bytes as a
    // constant, converted into the slot.
    if (auto data = func.getArgAttrOfType<DenseElementsAttr>(
            i, TGDialect::kInitValueAttrName)) {
      Value bytes = rtd::ConstantOp::create(ib, arg.getLoc(),
                                            rtd::BufferType::get(ctx),
                                            cast<ElementsAttr>(data));
      CallBuilder c(ctx);
      c.tensor(initBlock->getArgument(i), arg.getType());
      c.tensor(bytes, data.getType());
      c.create(ib, arg.getLoc(), RT_KERNEL("ampc_cast_fwd"));
      continue;
    }
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
      c.create(ib, arg.getLoc(), RT_KERNEL("ampc_fill"));
      break;
    case tg::InitKind::normal:
    case tg::InitKind::uniform:
      c.args.push_back(rtd::SeedAttr::get(ctx));
      // Each argument draws from its own Philox stream.
      c.u64(i);
      c.f64(lo);
      c.f64(hi);
      c.create(ib, arg.getLoc(),
               initAttr.getKind() == tg::InitKind::normal ? RT_KERNEL("ampc_init_normal")
                                                          : RT_KERNEL("ampc_init_uniform"));
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
  ret->setAttr(rtd::RTDialect::kTargetsAttrName, attrs.getArrayAttr(targets));
  markSources(*stepBlock, rules);
  return program;
}

/// The IR allows integer operands for the ops whose record says
/// `floatOnlyKernel` (the language's integer scalars, `2 - i`), but their
/// runtime kernels compute on f32, f16 and bf16 only: such an op is an error
/// at its source location here, not a failed call at run time.
LogicalResult checkFloatOnlyKernels(func::FuncOp func) {
  WalkResult result = func.walk([&](Operation *op) {
    const tg::OpInfo *info = tg::lookupOpInfo(op->getName().getStringRef());
    if (!info || !info->floatOnlyKernel)
      return WalkResult::advance();
    for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                     op->getResultTypes())) {
      auto shaped = dyn_cast<ShapedType>(t);
      if (!shaped || !shaped.getElementType().isInteger())
        continue;
      op->emitError("'") << op->getName().stripDialect() << "' on "
                         << tg::elementTypeName(shaped.getElementType())
          << " tensors has no runtime kernel (its kernel computes on "
             "floats); cast to a float first, e.g. cast(x, to=f32)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct ConvertTGToRuntimePass
    : ampc::impl::ConvertTGToRuntimeBase<ConvertTGToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    SmallVector<rtd::ProgramOp> programs;
    for (func::FuncOp func : funcs)
      if (failed(checkFloatOnlyKernels(func)))
        return signalPassFailure();
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
      // MPI progress while a gradient bucket is in flight (CommProgress.h).
      insertCommProgress(program.getStep().getBody().front(),
                         RT_KERNEL("ampc_grad_allreduce_progress"));
    }
  }
};
} // namespace

LogicalResult ampc::lowerToRuntime(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(createConvertTGToRuntime());
  // A module lowered already (`ampc FILE.mlir` of --emit=lowered's output)
  // is taken as it is, planned or not.
  if (!module.getOps<func::FuncOp>().empty())
    pm.addPass(createPlanPrimitives());
  return pm.run(module);
}
