//===- TGToRuntime.cpp - lower a planned tg step to runtime calls ----------===//
//
// One rewrite per op kind, each appending the runtime call(s) the op means.
// Buffers come from ampc-buffer-planning's `tg.offsets`; results computed in
// place (BufferPlan.h) reuse their operand's buffer.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Conversion/BufferPlan.h"
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ampc;
using namespace ampc::rt;

const char *ampc::rt::dtypeSymbol(int32_t dtype) {
  static const char *names[] = {"AMPC_F32", "AMPC_F16", "AMPC_BF16",
                                "AMPC_I32", "AMPC_I64", "AMPC_BOOL"};
  return dtype >= 0 && dtype < 6 ? names[dtype] : "AMPC_F32";
}

static int32_t dtypeOf(Type type) {
  Type elt = getElementTypeOrSelf(type);
  if (elt.isF32())
    return 0;
  if (elt.isF16())
    return 1;
  if (elt.isBF16())
    return 2;
  if (elt.isInteger(32))
    return 3;
  if (elt.isInteger(64))
    return 4;
  return 5;
}

static std::vector<int64_t> shapeOf(Type type) {
  auto shape = cast<ShapedType>(type).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

namespace {
class Lowering {
public:
  explicit Lowering(func::FuncOp func) : func(func) {}

  FailureOr<Program> run();

private:
  func::FuncOp func;
  Program prog;
  llvm::DenseMap<Value, BufferRef> refs;
  std::vector<Call> *out = nullptr;

  // Argument builders.
  static Arg ctx() {
    Arg a;
    a.kind = Arg::Kind::Context;
    return a;
  }
  static Arg buf(BufferRef r) {
    Arg a;
    a.kind = Arg::Kind::Buffer;
    a.buffer = r;
    return a;
  }
  static Arg null() { return Arg(); }
  static Arg i32(int64_t v, std::string symbol = "") {
    Arg a;
    a.kind = Arg::Kind::Scalar;
    a.ctype = CType::I32;
    a.i = v;
    a.symbol = std::move(symbol);
    return a;
  }
  static Arg i64(int64_t v) {
    Arg a;
    a.kind = Arg::Kind::Scalar;
    a.ctype = CType::I64;
    a.i = v;
    return a;
  }
  static Arg u64(int64_t v) {
    Arg a = i64(v);
    a.ctype = CType::U64;
    return a;
  }
  static Arg f64(double v) {
    Arg a;
    a.kind = Arg::Kind::Scalar;
    a.ctype = CType::F64;
    a.f = v;
    return a;
  }
  static Arg seed() {
    Arg a;
    a.kind = Arg::Kind::Seed;
    a.ctype = CType::U64;
    return a;
  }
  static Arg i64s(ArrayRef<int64_t> v) {
    Arg a;
    a.kind = Arg::Kind::I64Array;
    a.ints.assign(v.begin(), v.end());
    return a;
  }
  static Arg dtype(int32_t d) { return i32(d, dtypeSymbol(d)); }

  BufferRef ref(Value v) { return refs.lookup(v); }

  /// ptr, dtype, dims, rank of a value (or of NULL).
  void tensor(Call &c, Value v) {
    if (!v) {
      c.args.push_back(null());
      c.args.push_back(dtype(0));
      c.args.push_back(null());
      c.args.push_back(i32(0));
      return;
    }
    c.args.push_back(buf(ref(v)));
    c.args.push_back(dtype(dtypeOf(v.getType())));
    c.args.push_back(i64s(shapeOf(v.getType())));
    c.args.push_back(i32(cast<ShapedType>(v.getType()).getRank()));
  }
  Call &call(StringRef callee, Operation *op) {
    out->push_back(Call());
    Call &c = out->back();
    c.callee = callee.str();
    c.args.push_back(ctx());
    if (op)
      c.note = op->getName().getStringRef().str();
    return c;
  }
  /// Lists for the multi-tensor calls.
  static Arg bufs(std::vector<BufferRef> v) {
    Arg a;
    a.kind = Arg::Kind::BufferArray;
    a.buffers = std::move(v);
    return a;
  }
  Arg bufList(ValueRange vs) {
    std::vector<BufferRef> v;
    for (Value x : vs)
      v.push_back(ref(x));
    return bufs(v);
  }
  static Arg dtypeList(ValueRange vs) {
    Arg a;
    a.kind = Arg::Kind::I32Array;
    for (Value x : vs)
      a.ints.push_back(dtypeOf(x.getType()));
    return a;
  }
  static Arg numels(ValueRange vs) {
    Arg a;
    a.kind = Arg::Kind::I64Array;
    for (Value x : vs)
      a.ints.push_back(cast<ShapedType>(x.getType()).getNumElements());
    return a;
  }
  void flag(Call &c, Value foundInf) {
    if (foundInf) {
      c.args.push_back(buf(ref(foundInf)));
      c.args.push_back(dtype(dtypeOf(foundInf.getType())));
    } else {
      c.args.push_back(null());
      c.args.push_back(dtype(0));
    }
  }

  int32_t addConstSlot(Type type, std::vector<uint8_t> bytes, bool splat);
  LogicalResult lowerOp(Operation *op);
  LogicalResult assignResults(Operation *op);
};
} // namespace

int32_t Lowering::addConstSlot(Type type, std::vector<uint8_t> bytes,
                               bool splat) {
  Slot s;
  s.role = Slot::Role::Constant;
  s.name = "const" + std::to_string(prog.slots.size());
  s.dtype = dtypeOf(type);
  s.shape = shapeOf(type);
  s.bytes = getTensorBytes(type);
  int32_t index = prog.slots.size();
  prog.slots.push_back(s);
  // Constants are written once at creation (a byte image of the value).
  std::vector<Call> *saved = out;
  out = &prog.init;
  Call &c = call("ampc_memcpy", nullptr);
  c.note = "constant";
  c.args.push_back(buf({index, 0}));
  Arg data;
  data.kind = Arg::Kind::HostBytes;
  if (splat) {
    std::vector<uint8_t> full;
    for (int64_t i = 0, e = s.bytes / std::max<size_t>(bytes.size(), 1); i < e;
         ++i)
      full.insert(full.end(), bytes.begin(), bytes.end());
    bytes = std::move(full);
  }
  data.bytes = std::move(bytes);
  c.args.push_back(data);
  Arg n = i64(s.bytes);
  n.ctype = CType::U64; // size_t
  c.args.push_back(n);
  c.args.push_back(i32(0, "AMPC_MEMCPY_HOST_TO_DEVICE"));
  out = saved;
  return index;
}

LogicalResult Lowering::assignResults(Operation *op) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttrName);
  for (OpResult result : op->getResults()) {
    if (auto operand = getInPlaceOperand(op, result.getResultNumber())) {
      refs[result] = ref(op->getOperand(*operand));
      continue;
    }
    if (isa<tg::ConstantOp>(op))
      continue;
    if (!offsets || offsets[result.getResultNumber()] < 0)
      return op->emitError("not buffer-planned (run ampc-buffer-planning)");
    refs[result] = BufferRef{-1, offsets[result.getResultNumber()]};
  }
  return success();
}

/// Raw little-endian bytes of a dense constant's elements.
static std::vector<uint8_t> constantBytes(DenseElementsAttr attr,
                                          bool &splat) {
  splat = attr.isSplat();
  std::vector<uint8_t> bytes;
  auto push = [&](const APInt &bits, unsigned width) {
    uint64_t v = bits.getZExtValue();
    for (unsigned b = 0; b < width / 8; ++b)
      bytes.push_back(static_cast<uint8_t>(v >> (8 * b)));
  };
  Type elt = attr.getElementType();
  auto values = splat ? 1 : attr.getNumElements();
  if (auto ft = dyn_cast<FloatType>(elt)) {
    auto it = attr.value_begin<APFloat>();
    for (int64_t i = 0; i < values; ++i, ++it)
      push((*it).bitcastToAPInt(), ft.getWidth());
  } else {
    unsigned width = elt.isInteger(1) ? 8 : elt.getIntOrFloatBitWidth();
    auto it = attr.value_begin<APInt>();
    for (int64_t i = 0; i < values; ++i, ++it)
      push((*it).zextOrTrunc(width), width);
  }
  return bytes;
}

static int64_t epilogueNone() { return 0; }

LogicalResult Lowering::lowerOp(Operation *op) {
  using namespace tg;
  auto unary = [&](StringRef name, Value x) -> LogicalResult {
    Call &c = call(("ampc_" + name + "_fwd").str(), op);
    tensor(c, op->getResult(0));
    tensor(c, x);
    return success();
  };
  auto binary = [&](StringRef name) -> LogicalResult {
    Call &c = call(("ampc_" + name + "_fwd").str(), op);
    tensor(c, op->getResult(0));
    tensor(c, op->getOperand(0));
    tensor(c, op->getOperand(1));
    return success();
  };
  auto pool = [&](Call &c, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                  ArrayRef<int64_t> p) {
    for (int64_t v : {k[0], k[1], s[0], s[1], p[0], p[1]})
      c.args.push_back(i64(v));
  };
  auto conv = [&](Call &c, ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                  ArrayRef<int64_t> d, int64_t groups) {
    for (int64_t v : {s[0], s[1], p[0], p[1], d[0], d[1], groups})
      c.args.push_back(i64(v));
  };
  auto reduce = [&](Call &c, ArrayRef<int64_t> dims, bool keepdim) {
    c.args.push_back(i64s(dims));
    c.args.push_back(i32(dims.size()));
    c.args.push_back(i32(keepdim));
  };
  auto gelu = [&](StringRef approx) {
    return i32(approx == "tanh" ? 1 : 0,
               approx == "tanh" ? "AMPC_GELU_TANH" : "AMPC_GELU_NONE");
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ConstantOp c) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense)
          return c.emitError("cannot lower a non-dense constant");
        bool splat;
        auto bytes = constantBytes(dense, splat);
        refs[c.getResult()] =
            BufferRef{addConstSlot(c.getType(), std::move(bytes), splat), 0};
        return success();
      })
      .Case([&](CastOp c) { return unary("cast", c.getInput()); })
      .Case([&](MatmulOp) { return binary("matmul"); })
      .Case([&](LinearOp l) -> LogicalResult {
        Call &c = call("ampc_linear_fwd", op);
        tensor(c, l.getResult());
        tensor(c, l.getInput());
        tensor(c, l.getWeight());
        tensor(c, l.getBias());
        c.args.push_back(i32(epilogueNone(), "AMPC_EPILOGUE_NONE"));
        return success();
      })
      .Case([&](Conv2dOp v) -> LogicalResult {
        Call &c = call("ampc_conv2d_fwd", op);
        tensor(c, v.getResult());
        tensor(c, v.getInput());
        tensor(c, v.getWeight());
        tensor(c, v.getBias());
        conv(c, v.getStride(), v.getPadding(), v.getDilation(), v.getGroups());
        return success();
      })
      .Case([&](AddOp) { return binary("add"); })
      .Case([&](SubOp) { return binary("sub"); })
      .Case([&](MulOp) { return binary("mul"); })
      .Case([&](DivOp) { return binary("div"); })
      .Case([&](MaximumOp) { return binary("maximum"); })
      .Case([&](MinimumOp) { return binary("minimum"); })
      .Case([&](PowOp) { return binary("pow"); })
      .Case<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReluOp, SiluOp,
            SigmoidOp, TanhOp>([&](Operation *u) {
        return unary(u->getName().stripDialect(), u->getOperand(0));
      })
      .Case([&](GeluOp g) -> LogicalResult {
        Call &c = call("ampc_gelu_fwd", op);
        tensor(c, g.getResult());
        tensor(c, g.getInput());
        c.args.push_back(gelu(g.getApproximate()));
        return success();
      })
      .Case<SumOp, MeanOp, MaxOp>([&](Operation *r) -> LogicalResult {
        Call &c = call(("ampc_" + r->getName().stripDialect() + "_fwd").str(),
                       op);
        tensor(c, r->getResult(0));
        tensor(c, r->getOperand(0));
        reduce(c, r->getAttrOfType<DenseI64ArrayAttr>("dims").asArrayRef(),
               r->hasAttr("keepdim"));
        return success();
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *s) -> LogicalResult {
        Call &c = call(("ampc_" + s->getName().stripDialect() + "_fwd").str(),
                       op);
        tensor(c, s->getResult(0));
        tensor(c, s->getOperand(0));
        c.args.push_back(
            i64(s->getAttrOfType<IntegerAttr>("dim").getInt()));
        return success();
      })
      .Case([&](LayerNormOp l) -> LogicalResult {
        Call &c = call("ampc_layer_norm_fwd", op);
        tensor(c, l.getResult());
        tensor(c, l.getInput());
        tensor(c, l.getWeight());
        tensor(c, l.getBias());
        c.args.push_back(f64(l.getEps().convertToDouble()));
        return success();
      })
      .Case([&](RmsNormOp l) -> LogicalResult {
        Call &c = call("ampc_rms_norm_fwd", op);
        tensor(c, l.getResult());
        tensor(c, l.getInput());
        tensor(c, l.getWeight());
        c.args.push_back(f64(l.getEps().convertToDouble()));
        return success();
      })
      .Case<MaxPool2dOp, AvgPool2dOp>([&](Operation *p) -> LogicalResult {
        Call &c = call(("ampc_" + p->getName().stripDialect() + "_fwd").str(),
                       op);
        tensor(c, p->getResult(0));
        tensor(c, p->getOperand(0));
        pool(c, p->getAttrOfType<DenseI64ArrayAttr>("kernel").asArrayRef(),
             p->getAttrOfType<DenseI64ArrayAttr>("stride").asArrayRef(),
             p->getAttrOfType<DenseI64ArrayAttr>("padding").asArrayRef());
        return success();
      })
      .Case([&](ReshapeOp r) -> LogicalResult {
        if (ref(r.getResult()) == ref(r.getInput()))
          return success(); // a view
        return unary("reshape", r.getInput());
      })
      .Case([&](TransposeOp t) -> LogicalResult {
        Call &c = call("ampc_transpose_fwd", op);
        tensor(c, t.getResult());
        tensor(c, t.getInput());
        c.args.push_back(i64s(t.getPerm()));
        c.args.push_back(i32(t.getPerm().size()));
        return success();
      })
      .Case([&](ConcatOp cc) -> LogicalResult {
        Call &c = call("ampc_concat_fwd", op);
        tensor(c, cc.getResult());
        c.args.push_back(bufList(cc.getInputs()));
        c.args.push_back(dtypeList(cc.getInputs()));
        Arg shapes;
        shapes.kind = Arg::Kind::ShapeArray;
        for (Value v : cc.getInputs())
          shapes.shapes.push_back(shapeOf(v.getType()));
        c.args.push_back(shapes);
        c.args.push_back(i32(cc.getInputs().size()));
        c.args.push_back(i64(cc.getDim()));
        return success();
      })
      .Case([&](SliceOp s) -> LogicalResult {
        Call &c = call("ampc_slice_fwd", op);
        tensor(c, s.getResult());
        tensor(c, s.getInput());
        c.args.push_back(i64(s.getDim()));
        c.args.push_back(i64(s.getStart()));
        c.args.push_back(i64(s.getEnd()));
        return success();
      })
      .Case([&](EmbeddingOp e) -> LogicalResult {
        Call &c = call("ampc_embedding_fwd", op);
        tensor(c, e.getResult());
        tensor(c, e.getTable());
        tensor(c, e.getIds());
        return success();
      })
      .Case([&](CrossEntropyOp e) -> LogicalResult {
        Call &c = call("ampc_cross_entropy_fwd", op);
        tensor(c, e.getResult());
        tensor(c, e.getLogits());
        tensor(c, e.getLabels());
        return success();
      })
      .Case([&](MseLossOp e) { return binary("mse_loss"); })
      .Case([&](BroadcastToOp b) -> LogicalResult {
        // The runtime has no broadcast kernel: sum's backward broadcasts dy
        // over the reduced dims (kept as 1). The input, seen with ones
        // prepended to the result's rank, is exactly such a dy.
        auto in = cast<ShapedType>(b.getInput().getType());
        auto outShape = shapeOf(b.getType());
        std::vector<int64_t> dy(outShape.size() - in.getRank(), 1);
        dy.insert(dy.end(), in.getShape().begin(), in.getShape().end());
        std::vector<int64_t> dims;
        for (size_t i = 0; i < dy.size(); ++i)
          if (dy[i] == 1 && outShape[i] != 1)
            dims.push_back(i);
        if (dims.empty())
          return unary("reshape", b.getInput());
        Call &c = call("ampc_sum_bwd", op);
        tensor(c, b.getResult());
        c.args.push_back(buf(ref(b.getInput())));
        c.args.push_back(dtype(dtypeOf(b.getInput().getType())));
        c.args.push_back(i64s(dy));
        c.args.push_back(i32(dy.size()));
        tensor(c, Value());
        tensor(c, Value());
        reduce(c, dims, /*keepdim=*/true);
        return success();
      })
      .Case([&](GradSeedOp s) -> LogicalResult {
        if (s.getScale())
          return unary("cast", s.getScale());
        Call &c = call("ampc_fill", op);
        c.args.push_back(buf(ref(s.getResult())));
        c.args.push_back(dtype(dtypeOf(s.getType())));
        c.args.push_back(i64(1));
        c.args.push_back(f64(1.0));
        return success();
      })
      // Backward ops.
      .Case<ReluGradOp, AbsGradOp, SiluGradOp>([&](Operation *g) -> LogicalResult {
        StringRef name = g->getName().stripDialect();
        name.consume_back("_grad");
        Call &c = call(("ampc_" + name + "_bwd").str(), op);
        tensor(c, g->getResult(0));
        tensor(c, g->getOperand(0));
        tensor(c, g->getOperand(1));
        return success();
      })
      .Case([&](GeluGradOp g) -> LogicalResult {
        Call &c = call("ampc_gelu_bwd", op);
        tensor(c, g.getResult());
        tensor(c, g.getGrad());
        tensor(c, g.getInput());
        c.args.push_back(gelu(g.getApproximate()));
        return success();
      })
      .Case<MaximumGradOp, MinimumGradOp, PowGradOp>([&](Operation *g) -> LogicalResult {
        StringRef name = g->getName().stripDialect();
        name.consume_back("_grad");
        Call &c = call(("ampc_" + name + "_bwd").str(), op);
        tensor(c, g->getResult(0));
        tensor(c, g->getResult(1));
        tensor(c, g->getOperand(0));
        tensor(c, g->getOperand(1));
        tensor(c, g->getOperand(2));
        return success();
      })
      .Case([&](MaxGradOp g) -> LogicalResult {
        Call &c = call("ampc_max_bwd", op);
        tensor(c, g.getResult());
        tensor(c, g.getGrad());
        tensor(c, g.getInput());
        tensor(c, g.getResultValue());
        reduce(c, g.getDims(), g.getKeepdim());
        return success();
      })
      .Case<SoftmaxGradOp, LogSoftmaxGradOp>([&](Operation *g) -> LogicalResult {
        StringRef name = g->getName().stripDialect();
        name.consume_back("_grad");
        Call &c = call(("ampc_" + name + "_bwd").str(), op);
        tensor(c, g->getResult(0));
        tensor(c, g->getOperand(0));
        tensor(c, g->getOperand(1));
        c.args.push_back(
            i64(g->getAttrOfType<IntegerAttr>("dim").getInt()));
        return success();
      })
      .Case([&](LayerNormGradOp g) -> LogicalResult {
        Call &c = call("ampc_layer_norm_bwd", op);
        tensor(c, g.getInputGrad());
        tensor(c, g.getWeightGrad());
        tensor(c, g.getBiasGrad());
        tensor(c, g.getGrad());
        tensor(c, g.getInput());
        tensor(c, g.getWeight());
        c.args.push_back(f64(g.getEps().convertToDouble()));
        return success();
      })
      .Case([&](RmsNormGradOp g) -> LogicalResult {
        Call &c = call("ampc_rms_norm_bwd", op);
        tensor(c, g.getInputGrad());
        tensor(c, g.getWeightGrad());
        tensor(c, g.getGrad());
        tensor(c, g.getInput());
        tensor(c, g.getWeight());
        c.args.push_back(f64(g.getEps().convertToDouble()));
        return success();
      })
      .Case([&](Conv2dGradOp g) -> LogicalResult {
        Call &c = call("ampc_conv2d_bwd", op);
        tensor(c, g.getInputGrad());
        tensor(c, g.getWeightGrad());
        tensor(c, Value());
        tensor(c, g.getGrad());
        tensor(c, g.getInput());
        tensor(c, g.getWeight());
        conv(c, g.getStride(), g.getPadding(), g.getDilation(), g.getGroups());
        return success();
      })
      .Case<MaxPool2dGradOp, AvgPool2dGradOp>([&](Operation *g) -> LogicalResult {
        StringRef name = g->getName().stripDialect();
        name.consume_back("_grad");
        Call &c = call(("ampc_" + name + "_bwd").str(), op);
        tensor(c, g->getResult(0));
        tensor(c, g->getOperand(0));
        tensor(c, g->getOperand(1));
        pool(c, g->getAttrOfType<DenseI64ArrayAttr>("kernel").asArrayRef(),
             g->getAttrOfType<DenseI64ArrayAttr>("stride").asArrayRef(),
             g->getAttrOfType<DenseI64ArrayAttr>("padding").asArrayRef());
        return success();
      })
      .Case([&](EmbeddingGradOp g) -> LogicalResult {
        Call &c = call("ampc_embedding_bwd", op);
        tensor(c, g.getResult());
        tensor(c, g.getGrad());
        tensor(c, g.getIds());
        return success();
      })
      .Case([&](CrossEntropyGradOp g) -> LogicalResult {
        Call &c = call("ampc_cross_entropy_bwd", op);
        tensor(c, g.getResult());
        tensor(c, g.getGrad());
        tensor(c, g.getLogits());
        tensor(c, g.getLabels());
        return success();
      })
      .Case([&](MseLossGradOp g) -> LogicalResult {
        Call &c = call("ampc_mse_loss_bwd", op);
        tensor(c, g.getLhsGrad());
        tensor(c, g.getRhsGrad());
        tensor(c, g.getGrad());
        tensor(c, g.getLhs());
        tensor(c, g.getRhs());
        return success();
      })
      // Loss scaling and optimizers: in place on their operands.
      .Case([&](CheckFiniteAndUnscaleOp u) -> LogicalResult {
        Call &c = call("ampc_check_finite_unscale", op);
        c.args.push_back(buf(ref(u.getFoundInf())));
        c.args.push_back(dtype(0));
        c.args.push_back(bufList(u.getGrads()));
        c.args.push_back(dtypeList(u.getGrads()));
        c.args.push_back(numels(u.getGrads()));
        c.args.push_back(i32(u.getGrads().size()));
        c.args.push_back(buf(ref(u.getScale())));
        prog.hasFoundInf = true;
        prog.foundInf = ref(u.getFoundInf());
        return success();
      })
      .Case([&](ClipGradNormOp g) -> LogicalResult {
        Call &c = call("ampc_clip_grad_norm", op);
        c.args.push_back(buf(ref(g.getTotalNorm())));
        c.args.push_back(bufList(g.getGrads()));
        c.args.push_back(dtypeList(g.getGrads()));
        c.args.push_back(numels(g.getGrads()));
        c.args.push_back(i32(g.getGrads().size()));
        c.args.push_back(f64(g.getMaxNorm().convertToDouble()));
        flag(c, g.getFoundInf());
        return success();
      })
      .Case([&](SgdUpdateOp s) -> LogicalResult {
        Call &c = call("ampc_sgd_update", op);
        c.args.push_back(bufList(s.getParams()));
        c.args.push_back(dtypeList(s.getParams()));
        c.args.push_back(bufList(s.getGrads()));
        c.args.push_back(dtypeList(s.getGrads()));
        if (s.getMomentumBuffers().empty())
          c.args.push_back(null());
        else
          c.args.push_back(bufList(s.getMomentumBuffers()));
        c.args.push_back(numels(s.getParams()));
        c.args.push_back(i32(s.getParams().size()));
        c.args.push_back(f64(s.getLr().convertToDouble()));
        c.args.push_back(f64(s.getMomentum().convertToDouble()));
        c.args.push_back(f64(s.getWeightDecay().convertToDouble()));
        c.args.push_back(i32(s.getNesterov()));
        c.args.push_back(f64(0.0));
        flag(c, s.getFoundInf());
        return success();
      })
      .Case([&](AdamWUpdateOp a) -> LogicalResult {
        Call &c = call("ampc_adamw_update", op);
        c.args.push_back(bufList(a.getParams()));
        c.args.push_back(dtypeList(a.getParams()));
        c.args.push_back(bufList(a.getGrads()));
        c.args.push_back(dtypeList(a.getGrads()));
        c.args.push_back(bufList(a.getExpAvgs()));
        c.args.push_back(bufList(a.getExpAvgSqs()));
        c.args.push_back(buf(ref(a.getStep())));
        c.args.push_back(numels(a.getParams()));
        c.args.push_back(i32(a.getParams().size()));
        c.args.push_back(f64(a.getLr().convertToDouble()));
        c.args.push_back(f64(a.getBeta1().convertToDouble()));
        c.args.push_back(f64(a.getBeta2().convertToDouble()));
        c.args.push_back(f64(a.getEps().convertToDouble()));
        c.args.push_back(f64(a.getWeightDecay().convertToDouble()));
        c.args.push_back(f64(0.0));
        flag(c, a.getFoundInf());
        return success();
      })
      .Case([&](UpdateScaleOp u) -> LogicalResult {
        Call &c = call("ampc_update_scale", op);
        c.args.push_back(buf(ref(u.getScale())));
        c.args.push_back(buf(ref(u.getGrowthTracker())));
        c.args.push_back(buf(ref(u.getHysteresisLeft())));
        flag(c, u.getFoundInf());
        c.args.push_back(f64(u.getGrowthFactor().convertToDouble()));
        c.args.push_back(f64(u.getBackoffFactor().convertToDouble()));
        c.args.push_back(i32(u.getGrowthInterval()));
        c.args.push_back(i32(u.getHysteresis()));
        c.args.push_back(
            f64(u.getMinScale() ? u.getMinScale()->convertToDouble() : 0.0));
        c.args.push_back(
            f64(u.getMaxScale() ? u.getMaxScale()->convertToDouble() : 0.0));
        if (auto arg = dyn_cast<BlockArgument>(u.getScale()))
          prog.scaleSlot = arg.getArgNumber();
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError("cannot lower '")
               << other->getName() << "' to runtime calls";
      });
}

/// Follows in-place results back to the argument whose buffer they use.
static std::optional<unsigned> argumentBehind(Value v) {
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

FailureOr<Program> Lowering::run() {
  using tg::TGDialect;
  prog.name = func.getSymName().str();
  if (auto scaling =
          func->getAttrOfType<DictionaryAttr>(TGDialect::kLossScaleAttrName))
    if (auto mode = scaling.getAs<StringAttr>("mode");
        mode && mode.getValue() == "static")
      if (auto scale = scaling.getAs<FloatAttr>("scale"))
        prog.staticScale = scale.getValueAsDouble();
  if (auto a = func->getAttrOfType<IntegerAttr>(kArenaSizeAttrName))
    prog.arenaSize = a.getInt();
  else
    return func.emitError("not buffer-planned (run ampc-buffer-planning)");
  if (auto a = func->getAttrOfType<IntegerAttr>(kIntermediateBytesAttrName))
    prog.intermediateBytes = a.getInt();

  Block &body = func.getBody().front();
  uint64_t fp = 1469598103934665603ull;
  auto mix = [&](StringRef s) {
    for (char ch : s) {
      fp ^= static_cast<uint8_t>(ch);
      fp *= 1099511628211ull;
    }
    fp ^= 0xff;
    fp *= 1099511628211ull;
  };
  mix(prog.name);
  // Slots 0..N-1 are the function's arguments, in order.
  out = &prog.init;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    Slot s;
    s.argIndex = i;
    s.dtype = dtypeOf(arg.getType());
    s.shape = shapeOf(arg.getType());
    s.bytes = getTensorBytes(arg.getType());
    if (auto name = func.getArgAttrOfType<StringAttr>(i, "tg.input")) {
      s.role = Slot::Role::Input;
      s.name = name.str();
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, "tg.param")) {
      s.role = Slot::Role::Param;
      s.name = name.str();
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, "tg.state")) {
      s.role = Slot::Role::State;
      s.name = name.str();
    } else {
      s.role = Slot::Role::Input;
      s.name = "arg" + std::to_string(i);
    }
    refs[arg] = BufferRef{static_cast<int32_t>(i), 0};
    if (s.role != Slot::Role::Input) {
      mix(s.name);
      mix(std::to_string(s.dtype));
      for (int64_t d : s.shape)
        mix(std::to_string(d));
    }
    // Consumers bound integer inputs: labels < C, ids < V.
    for (Operation *user : arg.getUsers()) {
      if (auto ce = dyn_cast<tg::CrossEntropyOp>(user))
        if (ce.getLabels() == arg)
          s.intRange = cast<ShapedType>(ce.getLogits().getType()).getShape()[1];
      if (auto e = dyn_cast<tg::EmbeddingOp>(user))
        if (e.getIds() == arg)
          s.intRange = cast<ShapedType>(e.getTable().getType()).getShape()[0];
    }
    prog.slots.push_back(s);
    if (s.role == Slot::Role::Input)
      continue;
    auto init = func.getArgAttrOfType<tg::InitAttr>(i, TGDialect::kInitAttrName);
    if (!init)
      return func.emitError("argument '") << s.name << "' has no tg.init";
    double a = init.getA().convertToDouble(), b = init.getB().convertToDouble();
    int64_t numel = cast<ShapedType>(arg.getType()).getNumElements();
    switch (init.getKind()) {
    case tg::InitKind::zeros:
    case tg::InitKind::ones:
    case tg::InitKind::full: {
      Call &c = call("ampc_fill", nullptr);
      c.note = "init " + s.name;
      c.args.push_back(buf({static_cast<int32_t>(i), 0}));
      c.args.push_back(dtype(s.dtype));
      c.args.push_back(i64(numel));
      c.args.push_back(f64(init.getKind() == tg::InitKind::zeros  ? 0.0
                           : init.getKind() == tg::InitKind::ones ? 1.0
                                                                  : a));
      break;
    }
    case tg::InitKind::normal:
    case tg::InitKind::uniform: {
      bool normal = init.getKind() == tg::InitKind::normal;
      Call &c = call(normal ? "ampc_init_normal" : "ampc_init_uniform", nullptr);
      c.note = "init " + s.name;
      c.args.push_back(buf({static_cast<int32_t>(i), 0}));
      c.args.push_back(dtype(s.dtype));
      c.args.push_back(i64(numel));
      c.args.push_back(seed());
      // Each argument draws from its own Philox stream.
      c.args.push_back(u64(i));
      c.args.push_back(f64(a));
      c.args.push_back(f64(b));
      break;
    }
    }
  }

  out = &prog.step;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        if (auto index = func.getResultAttrOfType<IntegerAttr>(
                i, TGDialect::kOutputAttrName)) {
          Output o;
          o.index = index.getInt();
          o.buffer = ref(v);
          o.dtype = dtypeOf(v.getType());
          o.shape = shapeOf(v.getType());
          o.bytes = getTensorBytes(v.getType());
          prog.outputs.push_back(o);
          continue;
        }
        // A new parameter or state value: its argument's buffer holds it.
        std::optional<unsigned> target = argumentBehind(v);
        StringRef name;
        // A step that updates parameters trains (`--steps` of them); one
        // that only carries state (a scaler of `grad` results) runs once.
        if (auto n = func.getResultAttrOfType<StringAttr>(
                i, TGDialect::kParamOutAttrName)) {
          name = n.getValue();
          prog.training = true;
        } else if (auto n = func.getResultAttrOfType<StringAttr>(
                       i, TGDialect::kStateOutAttrName))
          name = n.getValue();
        else
          return ret.emitError("result #") << i << " has no tg.output, "
                                           << "tg.param_out or tg.state_out";
        if (!name.empty())
          for (const Slot &s : prog.slots)
            if (s.role != Slot::Role::Input && s.name == name)
              target = s.argIndex;
        if (!target)
          return ret.emitError("result #") << i << " ('" << name
                                           << "') matches no argument";
        BufferRef dst{static_cast<int32_t>(*target), 0};
        if (ref(v) == dst)
          continue;
        Call &c = call("ampc_memcpy", nullptr);
        c.note = "new " + name.str();
        c.args.push_back(buf(dst));
        c.args.push_back(buf(ref(v)));
        Arg n = i64(getTensorBytes(v.getType()));
        n.ctype = CType::U64;
        c.args.push_back(n);
        c.args.push_back(i32(2, "AMPC_MEMCPY_DEVICE_TO_DEVICE"));
      }
      continue;
    }
    if (failed(assignResults(&op)) || failed(lowerOp(&op)))
      return failure();
  }
  // The fingerprint also covers the optimizer and scaler configuration.
  if (auto ls = func->getAttr(TGDialect::kLossScaleAttrName)) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << ls;
    mix(s);
  }
  prog.fingerprint = fp;
  std::sort(prog.outputs.begin(), prog.outputs.end(),
            [](const Output &a, const Output &b) { return a.index < b.index; });
  return prog;
}

FailureOr<Program> ampc::rt::lowerToRuntime(func::FuncOp func) {
  return Lowering(func).run();
}
