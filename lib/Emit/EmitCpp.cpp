//===- EmitCpp.cpp - print a lowered step as C++ ----------------------------===//
//
// The second consumer of an rt.program (the executor is the first): its
// calls become an EmitC module (emitc.func bodies of emitc.call_opaque, the
// arrays of dims, dtypes and constants as emitc.global, the fixed support
// code as emitc.verbatim) printed by mlir::emitc::translateToCpp.
// Checkpoints go through the runtime's writer and reader
// (ampc_checkpoint_save / _load), the ones `ampc run` uses, so its files
// load into generated code and back, step count included.
//
//===----------------------------------------------------------------------===//

#include "ampc/Emit/EmitCpp.h"

#include "ampc/Dialect/RT/RTDialect.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace ampc;
using namespace ampc::rt;

namespace {
using namespace mlir;
namespace ec = mlir::emitc;

/// Translates the calls of one rt block into an emitc.func body. The
/// function takes the context, the seed, the arena and the slot table; each
/// rt value becomes an EmitC value (a slot's pointer, an arena address), each
/// rt.call an emitc.call_opaque whose status AMPC_TRY checks.
class BlockTranslator {
public:
  BlockTranslator(OpBuilder &b, ec::FuncOp func, const rt::Program &p,
                  llvm::DenseMap<Attribute, std::string> &arrays,
                  ModuleOp module, OpBuilder &globals)
      : b(b), p(p), arrays(arrays), module(module), globals(globals) {
    Block &entry = func.getBody().front();
    ctx = entry.getArgument(0);
    seed = entry.getArgument(1);
    arena = entry.getArgument(2);
    slotTable = entry.getArgument(3);
    loc = func.getLoc();
    MLIRContext *c = b.getContext();
    voidPtr = ec::PointerType::get(ec::OpaqueType::get(c, "void"));
    status = ec::OpaqueType::get(c, "ampc_status");
  }

  /// The block's calls [begin, end) (gradient accumulation emits a step's
  /// micro-batch and its update as two functions).
  LogicalResult translate(Block &block, size_t begin = 0,
                          size_t end = SIZE_MAX) {
    for (BlockArgument arg : block.getArguments())
      if (arg.getArgNumber() + 1 < block.getNumArguments())
        slotOf[arg] = arg.getArgNumber();
      else
        values[arg] = arena;
    size_t index = 0;
    for (Operation &op : block) {
      if (auto view = dyn_cast<rt::ViewOp>(op)) {
        if (values.lookup(view.getBase()) != arena)
          return view.emitError("views of slots are not emitted");
        viewOffset[view.getResult()] = view.getOffset();
        continue;
      }
      if (auto call = dyn_cast<rt::CallOp>(op)) {
        size_t k = index++;
        if (k < begin || k >= end)
          continue;
        if (failed(translateCall(call)))
          return failure();
      }
    }
    return success();
  }

  /// Constant k's slot (constants follow the declared slots).
  void bindConstant(Value v, int64_t slot) { slotOf[v] = slot; }

  /// The step's calls up to the gradients' overflow check, each call of a
  /// source op followed by an ampc_check_nonfinite of its float results
  /// (site: the source's index in p.sources): the replay of
  /// NAME_overflow.
  LogicalResult translateProbed(Block &block) {
    for (BlockArgument arg : block.getArguments())
      if (arg.getArgNumber() + 1 < block.getNumArguments())
        slotOf[arg] = arg.getArgNumber();
      else
        values[arg] = arena;
    llvm::DenseMap<size_t, SmallVector<size_t>> sourcesOf;
    for (auto [k, src] : llvm::enumerate(p.sources))
      sourcesOf[src.call].push_back(k);
    Builder ab(b.getContext());
    size_t index = 0;
    for (Operation &op : block) {
      if (auto view = dyn_cast<rt::ViewOp>(op)) {
        if (values.lookup(view.getBase()) != arena)
          return view.emitError("views of slots are not emitted");
        viewOffset[view.getResult()] = view.getOffset();
        continue;
      }
      auto call = dyn_cast<rt::CallOp>(op);
      if (!call)
        continue;
      size_t k = index++;
      // Gradient accumulation: one micro-batch, not its accumulation.
      if (k >= p.checkCall || (p.accumulate > 1 && k + 1 >= p.updateCall))
        break;
      if (failed(translateCall(call)))
        return failure();
      for (size_t srcIndex : sourcesOf.lookup(k)) {
        ArrayAttr args = call.getArgs();
        for (int64_t pos : p.sources[srcIndex].results) {
          if (pos + 2 >= static_cast<int64_t>(args.size()))
            continue;
          auto dtype = dyn_cast<rt::DtypeAttr>(args[pos + 1]);
          auto shape = dyn_cast<DenseI64ArrayAttr>(args[pos + 2]);
          if (!dtype || !shape || dtype.getValue() > 2 /* AMPC_BF16 */)
            continue;
          int64_t numel = 1;
          for (int64_t d : shape.asArrayRef())
            numel *= d;
          SmallVector<Attribute> checkArgs = {
              rt::ContextAttr::get(b.getContext()), args[pos], dtype,
              ab.getI64IntegerAttr(numel),
              ab.getI32IntegerAttr(static_cast<int32_t>(srcIndex))};
          if (failed(translateCall(call, "ampc_check_nonfinite",
                                   ab.getArrayAttr(checkArgs),
                                   call.getBuffers())))
            return failure();
        }
      }
    }
    return success();
  }

private:
  OpBuilder &b;
  const rt::Program &p;
  llvm::DenseMap<Attribute, std::string> &arrays;
  ModuleOp module;
  OpBuilder &globals;
  Location loc = UnknownLoc::get(b.getContext());
  Value ctx, seed, arena, slotTable;
  Type voidPtr, status;
  llvm::DenseMap<Value, Value> values;
  llvm::DenseMap<Value, int64_t> slotOf;
  llvm::DenseMap<Value, int64_t> viewOffset;
  llvm::DenseMap<int64_t, Value> slotPtr, arenaPtr;
  llvm::StringMap<Value> literals;
  llvm::DenseMap<Attribute, Value> globalRefs;
  llvm::DenseMap<Attribute, Value> scalars;

  Value literal(StringRef text, Type type) {
    Value &v = literals[text];
    if (!v)
      v = ec::LiteralOp::create(b, loc, type, text);
    return v;
  }

  /// The address a buffer value stands for (one EmitC value per slot and
  /// per arena offset, made at its first use: the block is straight-line).
  FailureOr<Value> address(Value v) {
    if (auto it = slotOf.find(v); it != slotOf.end()) {
      Value &ptr = slotPtr[it->second];
      if (!ptr) {
        Value index = literal(std::to_string(it->second), b.getI64Type());
        auto lv = ec::SubscriptOp::create(
            b, loc, ec::LValueType::get(voidPtr),
            cast<TypedValue<ec::PointerType>>(slotTable), index);
        ptr = ec::LoadOp::create(b, loc, voidPtr, lv);
      }
      return ptr;
    }
    if (auto it = viewOffset.find(v); it != viewOffset.end()) {
      Value &ptr = arenaPtr[it->second];
      if (!ptr) {
        Value off = literal(std::to_string(it->second), b.getI64Type());
        Value sum = ec::AddOp::create(b, loc, arena.getType(), arena, off);
        ptr = ec::CastOp::create(b, loc, voidPtr, sum);
      }
      return ptr;
    }
    return failure();
  }

  /// The name of a static const array holding `attr`'s values.
  Value array(Attribute attr, Type type, Attribute init) {
    Value &ref = globalRefs[attr];
    if (ref)
      return ref;
    std::string &name = arrays[attr];
    if (name.empty()) {
      name = "k" + std::to_string(arrays.size());
      ec::GlobalOp::create(globals, loc, name, type, init,
                           /*extern=*/false, /*static=*/true, /*const=*/true);
    }
    ref = ec::GetGlobalOp::create(b, loc, type, name);
    return ref;
  }

public:
  /// Writes constant `constant` into its slot (its bytes as a static array).
  LogicalResult translateConstant(rt::ConstantOp constant) {
    Builder ab(b.getContext());
    std::vector<uint8_t> bytes = rt::constantBytes(constant.getValue());
    SmallVector<Attribute> args = {
        rt::ContextAttr::get(b.getContext()), ab.getIndexAttr(0),
        constant.getValue(),
        IntegerAttr::get(IntegerType::get(b.getContext(), 64,
                                          IntegerType::Unsigned),
                         bytes.size()),
        rt::EnumAttr::get(b.getContext(), "AMPC_MEMCPY_HOST_TO_DEVICE", 0)};
    return translateCall(constant, "ampc_memcpy", ab.getArrayAttr(args),
                         constant.getResult());
  }

private:
  LogicalResult translateCall(rt::CallOp call) {
    return translateCall(call, call.getCallee(), call.getArgs(),
                         call.getBuffers());
  }

  LogicalResult translateCall(Operation *call, StringRef callee,
                              ArrayAttr callArgs, ValueRange buffers) {
    MLIRContext *c = b.getContext();
    // Every argument is an operand: buffers and arrays are values of the
    // function, scalars literals (made once per function and printed in
    // place by translateToCpp).
    SmallVector<Value> operands;
    auto operand = [&](Value v) { operands.push_back(v); };
    Type scalarType = ec::OpaqueType::get(c, "int");
    auto opaque = [&](StringRef text) {
      operands.push_back(literal(text, scalarType));
    };
    auto bufferAt = [&](Attribute a) -> FailureOr<Value> {
      return address(buffers[cast<IntegerAttr>(a).getInt()]);
    };
    for (Attribute a : callArgs) {
      // Scalars print the same wherever they appear: converted once.
      if (Value known = scalars.lookup(a)) {
        operands.push_back(known);
        continue;
      }
      size_t before = operands.size();
      bool scalar = isa<rt::NullAttr, rt::DtypeAttr, rt::EnumAttr, FloatAttr,
                        IntegerAttr>(a) &&
                    !(isa<IntegerAttr>(a) &&
                      cast<IntegerAttr>(a).getType().isIndex());
      if (isa<rt::ContextAttr>(a)) {
        operand(ctx);
      } else if (isa<rt::SeedAttr>(a)) {
        operand(seed);
      } else if (isa<rt::NullAttr>(a)) {
        opaque("NULL");
      } else if (auto d = dyn_cast<rt::DtypeAttr>(a)) {
        opaque(d.getSymbol());
      } else if (auto e = dyn_cast<rt::EnumAttr>(a)) {
        opaque(e.getName());
      } else if (auto ia = dyn_cast<IntegerAttr>(a)) {
        if (ia.getType().isIndex()) {
          FailureOr<Value> v = bufferAt(a);
          if (failed(v))
            return call->emitError("a buffer the C++ emitter cannot address");
          operand(*v);
        } else {
          llvm::SmallString<24> text;
          ia.getValue().toString(text, 10,
                                 /*Signed=*/!ia.getType().isUnsignedInteger());
          if (ia.getType().isUnsignedInteger())
            text += "ULL";
          else if (ia.getType().getIntOrFloatBitWidth() == 64 &&
                   !ia.getValue().isSignedIntN(32))
            text += "LL";
          opaque(text);
        }
      } else if (auto fa = dyn_cast<FloatAttr>(a)) {
        // Printed with 17 significant digits: the same double or float.
        double v = fa.getValueAsDouble();
        char text[64];
        if (std::isinf(v))
          std::snprintf(text, sizeof(text), "%sHUGE_VAL", v < 0 ? "-" : "");
        else
          std::snprintf(text, sizeof(text), "%.17g", v);
        std::string t = text;
        if (std::isfinite(v) && t.find_first_of(".en") == std::string::npos)
          t += ".0";
        if (fa.getType().isF32())
          t = "(float)" + t;
        opaque(t);
      } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(a)) {
        if (ints.empty()) {
          opaque("NULL");
          continue;
        }
        auto type = ec::ArrayType::get({ints.size()}, b.getI64Type());
        operand(array(a, type,
                      DenseIntElementsAttr::get(
                          RankedTensorType::get({ints.size()}, b.getI64Type()),
                          ints.asArrayRef())));
      } else if (auto list = dyn_cast<ArrayAttr>(a)) {
        if (isa<IntegerAttr>(list[0])) {
          // A list of device pointers: a local array.
          auto type = ec::ArrayType::get({(int64_t)list.size()}, voidPtr);
          Value arr = ec::VariableOp::create(b, loc, type,
                                             ec::OpaqueAttr::get(c, ""));
          for (auto [k, e] : llvm::enumerate(list)) {
            FailureOr<Value> v = bufferAt(e);
            if (failed(v))
              return call->emitError("a buffer the C++ emitter cannot address");
            auto lv = ec::SubscriptOp::create(
                b, loc, cast<TypedValue<ec::ArrayType>>(arr),
                ValueRange{literal(std::to_string(k), b.getI64Type())});
            ec::AssignOp::create(b, loc, lv, *v);
          }
          operand(arr);
        } else if (isa<rt::DtypeAttr>(list[0])) {
          std::string init = "{";
          for (auto [k, e] : llvm::enumerate(list))
            init += (k ? ", " : "") + cast<rt::DtypeAttr>(e).getSymbol().str();
          init += "}";
          auto type = ec::ArrayType::get({(int64_t)list.size()},
                                         ec::OpaqueType::get(c, "ampc_dtype"));
          operand(array(a, type, ec::OpaqueAttr::get(c, init)));
        } else {
          // Shapes: an array of pointers to each shape's array.
          std::string init = "{";
          for (auto [k, e] : llvm::enumerate(list)) {
            auto shape = cast<DenseI64ArrayAttr>(e);
            auto type = ec::ArrayType::get({shape.size()}, b.getI64Type());
            Value g = array(e, type,
                            DenseIntElementsAttr::get(
                                RankedTensorType::get({shape.size()},
                                                      b.getI64Type()),
                                shape.asArrayRef()));
            init += (k ? ", " : "") +
                    g.getDefiningOp<ec::GetGlobalOp>().getName().str();
          }
          init += "}";
          auto type = ec::ArrayType::get(
              {(int64_t)list.size()},
              ec::PointerType::get(b.getI64Type()));
          operand(array(a, type, ec::OpaqueAttr::get(c, init)));
        }
      } else if (auto dense = dyn_cast<ElementsAttr>(a)) {
        std::vector<uint8_t> bytes = rt::constantBytes(dense);
        auto ui8 = IntegerType::get(c, 8, IntegerType::Unsigned);
        auto type = ec::ArrayType::get({(int64_t)bytes.size()}, ui8);
        operand(array(a, type,
                      DenseElementsAttr::get(
                          RankedTensorType::get({(int64_t)bytes.size()}, ui8),
                          ArrayRef<uint8_t>(bytes))));
      } else {
        return call->emitError("an argument the C++ emitter cannot print");
      }
      if (scalar && operands.size() == before + 1)
        scalars[a] = operands.back();
    }
    auto st = ec::CallOpaqueOp::create(b, loc, TypeRange{status}, callee,
                                       operands);
    ec::CallOpaqueOp::create(b, loc, TypeRange{}, "AMPC_TRY",
                             st.getResult(0));
    return success();
  }
};

/// `text` as a C string literal with the same bytes: quotes, backslashes and
/// control characters escaped (octal, three digits, so that no following
/// digit is taken into the escape).
std::string cStringLiteral(llvm::StringRef text) {
  std::string out = "\"";
  for (char ch : text) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// `text` for a `//` comment: control characters (a newline would end it)
/// and backslashes (one before a line end would continue it) as '?'.
std::string commentText(llvm::StringRef text) {
  std::string out = text.str();
  for (char &ch : out)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f || ch == '\\')
      ch = '?';
  return out;
}

const char *kSupport = R"cpp(
#define AMPC_UNUSED(x) (void)(x)
#define AMPC_TRY(x)                                                            \
  do {                                                                         \
    ampc_status st_ = (x);                                                     \
    if (st_ != AMPC_OK)                                                        \
      return st_;                                                              \
  } while (0)

namespace {
/// Fails with `text` as what ampc_last_error() says.
ampc_status ampcFail(ampc_status status, const std::string &text) {
  return ampc_set_last_error(status, text.c_str());
}
/// A failure of the runtime's checkpoint writer or reader, as `fn`'s: its
/// text after the function's name; host memory that cannot be had is said
/// as the generated functions say it.
ampc_status ampcCheckpointFail(ampc_status status, const std::string &fn) {
  if (status == AMPC_ERROR_OUT_OF_MEMORY)
    return ampcFail(status, fn + ": out of host memory");
  return ampcFail(status, fn + ": " + ampc_last_error());
}
std::string ampcDtypeName(int32_t dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "i32", "i64",
                                      "bool", "f64", "u8",   "i8",  "i16"};
  return dtype >= 0 && dtype <= 9 ? names[dtype]
                                  : "dtype " + std::to_string(dtype);
}
} // namespace
)cpp";

/// A message as a C string literal: quotes and backslashes escaped, control
/// characters dropped (the check and overflow reports' texts).
std::string messageLiteral(const std::string &text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20)
      continue;
    out += ch;
  }
  return out + "\"";
}

/// Writes NAME.h and NAME.cpp for one program: the phases of emit(), in the
/// order the source is written, share the EmitC module being built and the
/// text of the support code after it (`b2`).
class CppEmitter {
public:
  CppEmitter(const Program &p, bool cuda, const std::string &header)
      : p(p), cuda(cuda), header(header), n(p.name),
        numInputs(llvm::count_if(
            p.slots, [](const Slot &s) { return s.role == Slot::Role::Input; })),
        numSlots(p.slots.size()), accumulated(p.accumulate > 1),
        c(p.op->getContext()), loc(p.op.getLoc()), b(c), globals(c) {}

  LogicalResult emit(std::string &headerText, std::string &sourceText) {
    this->headerText = &headerText;
    this->sourceText = &sourceText;
    for (LogicalResult (CppEmitter::*phase)() :
         {&CppEmitter::checkName, &CppEmitter::writeHeader,
          &CppEmitter::beginSource, &CppEmitter::emitSlotTables,
          &CppEmitter::emitStateType, &CppEmitter::emitInitCalls,
          &CppEmitter::emitCreate, &CppEmitter::emitStepCalls,
          &CppEmitter::collectOutputLocations, &CppEmitter::emitStepEntries,
          &CppEmitter::emitChecks, &CppEmitter::emitOverflow,
          &CppEmitter::emitOutputs, &CppEmitter::emitCheckpoints,
          &CppEmitter::print})
      if (failed((this->*phase)()))
        return failure();
    return success();
  }

private:
  // The phases, in order; each one fails with a located error.
  LogicalResult checkName();
  LogicalResult writeHeader();
  LogicalResult beginSource();
  LogicalResult emitSlotTables();
  LogicalResult emitStateType();
  LogicalResult emitCallFunction(
      StringRef name, llvm::function_ref<LogicalResult(BlockTranslator &)> fill);
  LogicalResult emitCalls(StringRef name, Block &block, bool withConstants,
                          size_t begin = 0, size_t end = SIZE_MAX);
  LogicalResult emitInitCalls();
  LogicalResult emitCreate();
  LogicalResult emitStepCalls();
  LogicalResult collectOutputLocations();
  LogicalResult emitStepEntries();
  LogicalResult emitChecks();
  LogicalResult emitOverflow();
  LogicalResult emitOutputs();
  LogicalResult emitCheckpoints();
  LogicalResult print();

  void verbatim(const std::string &text) {
    ec::VerbatimOp::create(b, loc, b.getStringAttr(text));
  }
  std::string nullChecks(
      const std::string &fn,
      std::initializer_list<std::pair<const char *, const char *>> args) const;
  std::string guardedWrapper(const std::string &fn, const std::string &param,
                             const std::string &arg) const;

  /// Where NAME.h's and NAME.cpp's text go.
  std::string *headerText = nullptr, *sourceText = nullptr;
  const Program &p;
  const bool cuda;
  const std::string &header;
  /// The graph's name, the prefix of every generated function.
  const std::string &n;
  const int32_t numInputs;
  const size_t numSlots;
  /// Gradient accumulation: a micro-batch's calls and the update's instead
  /// of the step's.
  const bool accumulated;
  MLIRContext *c;
  Location loc;
  OwningOpRef<ModuleOp> module;
  OpBuilder b;
  /// Where the arrays of call arguments go: before the functions.
  OpBuilder globals;
  llvm::DenseMap<Attribute, std::string> arrays;
  /// Where each output lives (a C expression of the state `s`).
  llvm::DenseMap<Value, std::string> where;
  /// The functions after the calls', printed as one verbatim block.
  std::string tail;
  llvm::raw_string_ostream b2{tail};
};

/// An emitc.func NAME(context, seed, arena, slots) -> status, static, whose
/// body `fill` writes with a BlockTranslator that knows the program's
/// constants.
LogicalResult CppEmitter::emitCallFunction(
    StringRef name, llvm::function_ref<LogicalResult(BlockTranslator &)> fill) {
  Type ctxType = ec::OpaqueType::get(c, "ampc_context");
  Type seedType = IntegerType::get(c, 64, IntegerType::Unsigned);
  Type arenaType = ec::PointerType::get(ec::OpaqueType::get(c, "char"));
  Type slotsType = ec::PointerType::get(
      ec::PointerType::get(ec::OpaqueType::get(c, "void")));
  Type statusType = ec::OpaqueType::get(c, "ampc_status");
  auto type = b.getFunctionType({ctxType, seedType, arenaType, slotsType},
                                {statusType});
  auto func = ec::FuncOp::create(b, loc, name, type);
  func.setSpecifiersAttr(b.getStrArrayAttr({"static"}));
  Block *entry = func.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockEnd(entry);
  BlockTranslator t(fb, func, p, arrays, *module, globals);
  for (size_t k = 0; k < p.constants.size(); ++k)
    t.bindConstant(p.constants[k].getResult(), p.numArgs + k);
  if (failed(fill(t)))
    return failure();
  // Parameters this function does not use (-Wunused-parameter).
  fb.setInsertionPointToStart(entry);
  for (BlockArgument arg : entry->getArguments())
    if (arg.use_empty())
      ec::CallOpaqueOp::create(fb, loc, TypeRange{}, "AMPC_UNUSED", arg);
  fb.setInsertionPointToEnd(entry);
  auto ok = ec::LiteralOp::create(fb, loc, statusType, "AMPC_OK");
  ec::ReturnOp::create(fb, loc, ok);
  return success();
}

/// The calls [begin, end) of `block` as a call function (gradient
/// accumulation emits a step's micro-batch and its update as two).
LogicalResult CppEmitter::emitCalls(StringRef name, Block &block,
                                    bool withConstants, size_t begin,
                                    size_t end) {
  return emitCallFunction(name, [&](BlockTranslator &t) -> LogicalResult {
    if (withConstants) {
      // Constants are written once, before the initialisers (which may copy
      // a parameter's value from one).
      for (size_t k = 0; k < p.constants.size(); ++k) {
        rt::ConstantOp constant = p.constants[k];
        if (failed(t.translateConstant(constant)))
          return failure();
      }
    }
    return t.translate(block, begin, end);
  });
}

/// The init calls: the constants, then the initialisers.
LogicalResult CppEmitter::emitInitCalls() {
  return emitCalls(n + "_init_calls", p.op.getInit().getBody().front(), true);
}

LogicalResult CppEmitter::checkName() {
  // The functions are NAME_create, NAME_destroy, ...: under the runtime's
  // prefix they can be the runtime's own (a graph `ampc_comm` declared
  // ampc_comm_destroy again, and the code did not compile).
  auto identifier = [](llvm::StringRef name) {
    if (name.empty() || llvm::isDigit(name[0]))
      return false;
    return llvm::all_of(name,
                        [](char ch) { return llvm::isAlnum(ch) || ch == '_'; });
  };
  if (!identifier(n))
    return p.op.emitError("graph '")
           << n << "': --emit=cpp names its functions after the graph, which "
              "needs a C identifier (letters, digits, '_')";
  if (llvm::StringRef(n).starts_with("ampc_"))
    return p.op.emitError("graph '")
           << n << "': --emit=cpp names its functions " << n
           << "_create, " << n
           << "_step, ..., and the prefix 'ampc_' belongs to the runtime's "
              "C ABI; rename the graph";
  return success();
}

/// NAME.h: the generated C ABI, declared.
LogicalResult CppEmitter::writeHeader() {
  llvm::raw_string_ostream h(*headerText);
  std::string guard = "AMPC_GENERATED_" + n + "_H";
  h << "// Generated by ampc (--emit=cpp --target=" << (cuda ? "cuda" : "cpu")
    << ") from graph '" << n << "'. Do not edit.\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include <ampc/runtime.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n"
    << "#endif\n\n"
    << "/// Parameters, optimizer and scaler state, and the arena of one "
       "graph.\n"
    << "typedef struct " << n << "_state " << n << "_state;\n\n"
    << "/// Inputs, in graph order:";
  for (const Slot &s : p.slots)
    if (s.role == Slot::Role::Input)
      h << " " << commentText(s.name);
  h << ".\nint32_t " << n << "_num_inputs(void);\n"
    << "/// Bytes of input `index` (dense, row-major).\n"
    << "int64_t " << n << "_input_bytes(int32_t index);\n"
    << "/// Allocates the state on `ctx` and initialises parameters from "
       "`seed`\n/// (the same numbers as `ampc run --seed`).\n"
    << "ampc_status " << n << "_create(ampc_context ctx, uint64_t seed, "
    << n << "_state **state);\n"
    << "/// One step: `inputs` are device pointers, in graph order. "
       "Nothing\n/// synchronises with the host.\n"
    << "ampc_status " << n << "_step(" << n
    << "_state *state, const void *const *inputs);\n"
    << "/// Gradient accumulation (docs/codegen.md): micro-batches per "
       "update, K\n/// (1 without accumulation). With K > 1, " << n
    << "_step runs one\n/// micro-batch and, after every K-th, the update; "
    << n << "_micro_step and\n/// " << n << "_update run the two parts "
       "separately (K micro-steps, then one\n/// update). Outputs and "
    << n << "_check follow each micro-batch; " << n << "_skipped\n/// the "
       "update.\n"
    << "int32_t " << n << "_accumulate(void);\n";
  if (p.accumulate > 1)
    h << "ampc_status " << n << "_micro_step(" << n
      << "_state *state, const void *const *inputs);\n"
      << "ampc_status " << n << "_update(" << n << "_state *state);\n";
  h << "/// The device pointer of output `index` after a step.\n"
    << "const void *" << n << "_output(" << n
    << "_state *state, int32_t index);\n"
    << "/// Checkpoints (parameters, optimizer and scaler state); the format "
       "of\n/// `ampc run --save`. Written atomically; loading checks "
       "everything first.\n/// On failure ampc_last_error() names the "
       "function, the path and the reason.\n"
    << "ampc_status " << n << "_save(" << n
    << "_state *state, const char *path);\n"
    << "ampc_status " << n << "_load(" << n
    << "_state *state, const char *path);\n"
    << "/// Updates applied so far: counted by the steps of a training "
       "graph, written\n/// by " << n << "_save and restored by " << n
    << "_load (-1 for a NULL state).\n"
    << "int64_t " << n << "_steps(const " << n << "_state *state);\n"
    << "/// The data position a checkpoint records for `ampc run --data` "
       "(the epoch\n/// being consumed, from 1, and the batches of it "
       "taken): this code does not\n/// see the data, so a caller that "
       "feeds a dataset sets it before saving;\n/// otherwise it stays as "
       "created (1, 0) or loaded.\n"
    << "ampc_status " << n << "_set_data_position(" << n
    << "_state *state, int64_t epoch, int64_t batch);\n"
    << "/// After a step: NULL, or a message naming the op whose device-side "
       "check\n/// failed in it (a class label or an id out of range), "
       "\"FILE:LINE:COL: ...\".\n/// Reads the context's check word "
       "(after the step's work, like reading its loss).\n"
    << "ampc_status " << n << "_check(" << n
    << "_state *state, const char **message);\n"
    << "/// The op an overflow came from: its source op, the variable it is "
       "assigned\n/// to (or NULL), \"FILE:LINE:COL\" and \"forward\" or "
       "\"backward\".\n"
    << "/// After a step: *skipped = 1 when the loss scaler skipped its "
       "update (0\n/// without a scaler). Reads device memory.\n"
    << "ampc_status " << n << "_skipped(" << n
    << "_state *state, int32_t *skipped);\n"
    << "typedef struct " << n << "_overflow_site {\n"
    << "  const char *op, *name, *loc, *pass;\n} " << n
    << "_overflow_site;\n"
    << "/// After a step the loss scaler skipped, before the next step: "
       "replays it\n/// with a non-finite check after every op and fills "
       "`site` with the first op\n/// whose result held an inf or NaN (op "
       "NULL when none did); the state is\n/// restored. Costs a step and a "
       "copy of the state, only when called.\n"
    << "ampc_status " << n << "_overflow(" << n << "_state *state, " << n
    << "_overflow_site *site);\n"
    << "void " << n << "_destroy(" << n << "_state *state);\n\n"
    << "#ifdef __cplusplus\n} // extern \"C\"\n#endif\n\n#endif // " << guard
    << "\n";
  return success();
}

/// The source's module: the file comment, the includes, the fixed
/// support code and the slot roles.
LogicalResult CppEmitter::beginSource() {
  c->getOrLoadDialect<ec::EmitCDialect>();
  module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "// Generated by ampc (--emit=cpp --target=" << (cuda ? "cuda" : "cpu")
       << ") from graph '" << n << "'. Do not edit.\n"
       << "// Arena: " << p.arenaSize << " bytes (intermediates: "
       << p.intermediateBytes << " bytes).";
    verbatim(text);
  }
  ec::IncludeOp::create(b, loc, header, /*is_standard_include=*/false);
  for (const char *h : {"cmath", "cstdio", "cstring", "memory", "new",
                        "string", "type_traits", "utility", "vector"})
    ec::IncludeOp::create(b, loc, h, /*is_standard_include=*/true);
  verbatim(kSupport);
  {
    // The slot roles (rt::Slot::Role) the tables below use; params, state
    // and buffers are what a checkpoint holds.
    std::string text;
    llvm::raw_string_ostream os(text);
    auto role = [](Slot::Role r) { return static_cast<int>(r); };
    os << "enum : int32_t {\n  kRoleInput = " << role(Slot::Role::Input)
       << ",\n  kRoleParam = " << role(Slot::Role::Param)
       << ",\n  kRoleState = " << role(Slot::Role::State)
       << ",\n  kRoleConstant = " << role(Slot::Role::Constant)
       << ",\n  kRoleBuffer = " << role(Slot::Role::Buffer) << "\n};\n"
       << "static bool ampcCheckpointed(int32_t role) {\n"
       << "  return role == kRoleParam || role == kRoleState || "
          "role == kRoleBuffer;\n}";
    verbatim(text);
  }
  return success();
}

LogicalResult CppEmitter::emitSlotTables() {
  // Slot tables (one entry at least: C++ has no empty arrays).
  auto i64Table = [&](StringRef name, ArrayRef<int64_t> values, Type elt) {
    SmallVector<int64_t> v(values.begin(), values.end());
    if (v.empty())
      v.push_back(0);
    auto tensor = RankedTensorType::get({(int64_t)v.size()}, elt);
    Attribute init;
    if (elt.isInteger(64))
      init = DenseIntElementsAttr::get(tensor, ArrayRef<int64_t>(v));
    else
      init = DenseIntElementsAttr::get(
          tensor, llvm::to_vector(llvm::map_range(
                      v, [](int64_t x) { return static_cast<int32_t>(x); })));
    ec::GlobalOp::create(b, loc, name, ec::ArrayType::get({(int64_t)v.size()}, elt),
                         init, false, true, true);
  };
  SmallVector<int64_t> bytes, roles, dtypes, inputSlots;
  std::string names = "{";
  for (auto [i, slot] : llvm::enumerate(p.slots)) {
    bytes.push_back(slot.bytes);
    roles.push_back(static_cast<int>(slot.role));
    dtypes.push_back(slot.dtype);
    if (slot.role == rt::Slot::Role::Input)
      inputSlots.push_back(i);
    names += (i ? ", " : "") + cStringLiteral(slot.name);
  }
  names += numSlots ? "}" : "\"\"}";
  i64Table("kSlotBytes", bytes, b.getI64Type());
  i64Table("kSlotRole", roles, b.getI32Type());
  i64Table("kSlotDtype", dtypes, b.getI32Type());
  ec::GlobalOp::create(
      b, loc, "kSlotName",
      ec::ArrayType::get({std::max<int64_t>(numSlots, 1)},
                         ec::PointerType::get(ec::OpaqueType::get(c, "char"))),
      ec::OpaqueAttr::get(c, names), false, true, true);
  i64Table("kInputSlot", inputSlots, b.getI32Type());
  // The arrays of call arguments go here, before the functions.
  globals.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
  auto anchor = ec::VerbatimOp::create(b, loc, b.getStringAttr(""));
  globals.setInsertionPoint(anchor);
  return success();
}

/// The state struct, the input queries and NAME_destroy.
LogicalResult CppEmitter::emitStateType() {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "struct " << n << "_state {\n  ampc_context ctx;\n  uint64_t seed;\n"
     << "  ampc_arena arena_handle;\n  char *arena;\n  void *slot["
     << std::max<size_t>(numSlots, 1) << "];\n"
     << "  void *step_scale; // the loss scale the last step used\n"
     << "  int64_t micro; // micro-batches of the current update done\n"
     << "  int64_t steps; // updates applied (checkpointed)\n"
     << "  int64_t epoch, batch; // the caller's data position "
        "(checkpointed)\n};\n\n";
  os << "int32_t " << n << "_num_inputs(void) { return " << numInputs
     << "; }\n\n";
  os << "int64_t " << n << "_input_bytes(int32_t index) {\n"
     << "  return index >= 0 && index < " << numInputs
     << " ? kSlotBytes[kInputSlot[index]] : -1;\n}\n\n";
  os << "void " << n << "_destroy(" << n << "_state *s) {\n"
     << "  if (!s)\n    return;\n"
     << "  for (size_t i = 0; i < " << numSlots << "; ++i)\n"
     << "    if (kSlotRole[i] != kRoleInput)\n      ampc_free(s->ctx, s->slot[i]);\n"
     << "  ampc_free(s->ctx, s->step_scale);\n"
     << "  ampc_arena_destroy(s->arena_handle);\n  delete s;\n}";
  verbatim(text);
  return success();
}

/// NAME_create: the state allocated, the init calls run.
LogicalResult CppEmitter::emitCreate() {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "ampc_status " << n << "_create(ampc_context ctx, uint64_t seed, "
     << n << "_state **out) {\n"
     << "  if (out)\n    *out = NULL; // as ampc_context_create: NULL on failure\n"
     << "  if (!ctx || !out)\n    return ampcFail(AMPC_ERROR_NULL_POINTER, \""
     << n << "_create: \" +\n                    std::string(!ctx ? \"ctx\" : "
        "\"state\") + \" is NULL\");\n"
     << "  ampc_backend backend;\n"
     << "  AMPC_TRY(ampc_context_backend(ctx, &backend));\n"
     << "  if (backend != " << (cuda ? "AMPC_BACKEND_CUDA" : "AMPC_BACKEND_CPU")
     << ")\n    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, \"" << n
     << "_create: the context is a \"\n                    \"" << (cuda ? "cpu" : "cuda")
     << " context; this code was generated for \"\n                    "
        "\"--target=" << (cuda ? "cuda" : "cpu") << "\");\n"
     << "  " << n << "_state *s = new (std::nothrow) " << n << "_state();\n"
     << "  if (!s)\n    return ampc_set_last_error(AMPC_ERROR_OUT_OF_MEMORY, \""
     << n << "_create: out of host memory\");\n"
     << "  s->ctx = ctx;\n  s->seed = seed;\n  s->epoch = 1;\n"
     << "  ampc_status st = ampc_arena_create(ctx, "
     << std::max<int64_t>(p.arenaSize, 256) << ", &s->arena_handle);\n"
     << "  void *base = NULL;\n"
     << "  if (st == AMPC_OK)\n    st = ampc_arena_base(s->arena_handle, &base);\n"
     << "  s->arena = static_cast<char *>(base);\n"
     << "  for (size_t i = 0; st == AMPC_OK && i < " << numSlots << "; ++i)\n"
     << "    if (kSlotRole[i] != kRoleInput)\n"
     << "      st = ampc_malloc(ctx, kSlotBytes[i] > 0 ? kSlotBytes[i] : 1, "
        "&s->slot[i]);\n"
     << "  if (st == AMPC_OK)\n    st = ampc_malloc(ctx, 4, &s->step_scale);\n"
     << "  if (st == AMPC_OK)\n    st = " << n
     << "_init_calls(s->ctx, s->seed, s->arena, s->slot);\n"
     << "  if (st != AMPC_OK) {\n    " << n
     << "_destroy(s);\n    return st;\n  }\n"
     << "  *out = s;\n  return AMPC_OK;\n}";
  verbatim(text);
  return success();
}

/// The step's calls (with gradient accumulation a micro-batch's and the
/// update's), and the probed replay of them for NAME_overflow.
LogicalResult CppEmitter::emitStepCalls() {
  // Gradient accumulation: a micro-batch's calls and the update's instead
  // of the step's.
  if (!accumulated &&
      failed(emitCalls(n + "_step_calls", p.op.getStep().getBody().front(),
                      false)))
    return failure();
  if (accumulated &&
      (failed(emitCalls(n + "_micro_calls", p.op.getStep().getBody().front(),
                       false, 0, p.updateCall)) ||
       failed(emitCalls(n + "_update_calls", p.op.getStep().getBody().front(),
                       false, p.updateCall))))
    return failure();
  return emitCallFunction(n + "_probe_calls", [&](BlockTranslator &t) {
    return t.translateProbed(p.op.getStep().getBody().front());
  });
}

/// Where each output lives.
LogicalResult CppEmitter::collectOutputLocations() {
  Block &step = p.op.getStep().getBody().front();
  for (BlockArgument arg : step.getArguments())
    if (arg.getArgNumber() + 1 < step.getNumArguments())
      where[arg] = "(const char *)s->slot[" +
                   std::to_string(arg.getArgNumber()) + "]";
  for (size_t k = 0; k < p.constants.size(); ++k)
    where[p.constants[k].getResult()] =
        "(const char *)s->slot[" + std::to_string(p.numArgs + k) + "]";
  for (auto view : step.getOps<rt::ViewOp>())
    where[view.getResult()] = "s->arena + " + std::to_string(view.getOffset());
  return success();
}

// A NULL argument of a generated function: a status and a message that
// names the function and the argument.
std::string CppEmitter::nullChecks(
    const std::string &fn,
    std::initializer_list<std::pair<const char *, const char *>> args) const {
  std::string out;
  for (auto [test, name] : args)
    if (std::string(test) != "false")
      out += std::string("  if (") + test + ")\n    return ampcFail("
             "AMPC_ERROR_NULL_POINTER, \"" + n + "_" + fn + ": " + name +
             " is NULL\");\n";
  return out;
}

// NAME_FN, extern "C", around NAME_FN_impl: no C++ exception (a
// std::bad_alloc of the host buffers) leaves the generated C ABI.
std::string CppEmitter::guardedWrapper(const std::string &fn,
                                       const std::string &param,
                                       const std::string &arg) const {
  std::string f = n + "_" + fn;
  return "ampc_status " + f + "(" + n + "_state *s, " + param + ") {\n" +
         "  try {\n    return " + f + "_impl(s, " + arg + ");\n" +
         "  } catch (const std::bad_alloc &) {\n" +
         "    return ampc_set_last_error(AMPC_ERROR_OUT_OF_MEMORY, \"" + f +
         ": out of host memory\");\n" +
         "  } catch (...) {\n" +
         "    return ampc_set_last_error(AMPC_ERROR_INTERNAL, \"" + f +
         ": unexpected C++ exception\");\n  }\n}\n\n";
}

/// NAME_step (and NAME_micro_step, NAME_update), NAME_accumulate,
/// NAME_steps and NAME_set_data_position.
LogicalResult CppEmitter::emitStepEntries() {
  b2 << "ampc_status " << n << "_step(" << n
     << "_state *s, const void *const *inputs) {\n"
     << nullChecks("step", {{"!s", "state"},
                         {numInputs > 0 ? "!inputs" : "false", "inputs"}})
     << "  for (int32_t i = 0; i < " << numInputs << "; ++i)\n"
     << "    s->slot[kInputSlot[i]] = const_cast<void *>(inputs[i]);\n";
  if (p.scaleSlot >= 0)
    b2 << "  // The scale this step uses, for " << n << "_overflow.\n"
       << "  AMPC_TRY(ampc_memcpy(s->ctx, s->step_scale, s->slot["
       << p.scaleSlot << "], 4, AMPC_MEMCPY_DEVICE_TO_DEVICE));\n";
  // The calls of an update, then (a training graph) its count, as `ampc
  // run` counts steps.
  auto runUpdate = [&](const std::string &calls) {
    std::string call = n + calls + "(s->ctx, s->seed, s->arena, s->slot)";
    if (!p.training)
      return "  return " + call + ";\n}\n\n";
    return "  AMPC_TRY(" + call + ");\n  ++s->steps;\n  return AMPC_OK;\n}\n\n";
  };
  if (!accumulated) {
    b2 << runUpdate("_step_calls");
  } else {
    // One micro-batch; the update after every K-th.
    b2 << "  AMPC_TRY(" << n
       << "_micro_calls(s->ctx, s->seed, s->arena, s->slot));\n"
       << "  if (++s->micro < " << p.accumulate << ")\n    return AMPC_OK;\n"
       << "  s->micro = 0;\n" << runUpdate("_update_calls")
       << "ampc_status " << n << "_micro_step(" << n
       << "_state *s, const void *const *inputs) {\n"
       << nullChecks("micro_step", {{"!s", "state"},
                         {numInputs > 0 ? "!inputs" : "false", "inputs"}})
       << "  for (int32_t i = 0; i < " << numInputs << "; ++i)\n"
       << "    s->slot[kInputSlot[i]] = const_cast<void *>(inputs[i]);\n";
    if (p.scaleSlot >= 0)
      b2 << "  AMPC_TRY(ampc_memcpy(s->ctx, s->step_scale, s->slot["
         << p.scaleSlot << "], 4, AMPC_MEMCPY_DEVICE_TO_DEVICE));\n";
    b2 << "  ++s->micro;\n"
       << "  return " << n
       << "_micro_calls(s->ctx, s->seed, s->arena, s->slot);\n}\n\n"
       << "ampc_status " << n << "_update(" << n << "_state *s) {\n"
       << nullChecks("update", {{"!s", "state"}})
       << "  s->micro = 0;\n" << runUpdate("_update_calls");
  }
  b2 << "int32_t " << n << "_accumulate(void) { return " << p.accumulate
     << "; }\n\n";
  b2 << "int64_t " << n << "_steps(const " << n << "_state *s) {\n"
     << "  return s ? s->steps : -1;\n}\n\n"
     << "ampc_status " << n << "_set_data_position(" << n
     << "_state *s, int64_t epoch, int64_t batch) {\n"
     << nullChecks("set_data_position", {{"!s", "state"}})
     << "  if (epoch < 1 || batch < 0)\n"
     << "    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, \"" << n
     << "_set_data_position: epoch \" + std::to_string(epoch) + \", batch \" "
        "+\n                    std::to_string(batch) + \" (epochs count from "
        "1, batches from 0)\");\n"
     << "  s->epoch = epoch;\n  s->batch = batch;\n  return AMPC_OK;\n}\n\n";
  return success();
}

/// NAME_check and NAME_skipped.
LogicalResult CppEmitter::emitChecks() {
  b2 << "ampc_status " << n << "_check(" << n
     << "_state *s, const char **message) {\n"
     << nullChecks("check", {{"!s", "state"}, {"!message", "message"}})
     << "  *message = NULL;\n  int32_t site = -1;\n"
     << "  AMPC_TRY(ampc_check_read(s->ctx, AMPC_CHECK_INDEX, 0, &site));\n"
     << "  switch (site) {\n";
  for (const CallSource &src : p.sources) {
    if (src.site < 0)
      continue;
    std::string what = src.index.empty() ? "an index" : "'" + src.index + "'";
    std::string text = (src.loc.empty() ? std::string("<unknown>") : src.loc) +
                       ": " + src.op + ": " + what +
                       " holds a value outside [0, " +
                       std::to_string(src.range) + ")";
    if (src.op == "cross_entropy")
      text += " (a class label; -100 is ignored)";
    b2 << "  case " << src.site << ":\n    *message = " << messageLiteral(text)
       << ";\n    break;\n";
  }
  b2 << "  case -1:\n    break;\n"
     << "  default:\n    *message = \"an index was out of range\";\n  }\n"
     << "  return AMPC_OK;\n}\n\n";
  b2 << "ampc_status " << n << "_skipped(" << n
     << "_state *s, int32_t *skipped) {\n"
     << nullChecks("skipped", {{"!s", "state"}, {"!skipped", "skipped"}})
     << "  *skipped = 0;\n";
  if (p.foundInf) {
    std::string w = where.lookup(p.foundInf);
    if (w.empty())
      return p.op.emitError("the overflow flag has no buffer");
    b2 << "  float flag = 0.0f;\n"
       << "  AMPC_TRY(ampc_memcpy(s->ctx, &flag, " << w
       << ", 4, AMPC_MEMCPY_DEVICE_TO_HOST));\n"
       << "  *skipped = flag != 0.0f;\n";
  }
  b2 << "  return AMPC_OK;\n}\n\n";
  return success();
}

/// NAME_overflow: the sources' names and the probed replay.
LogicalResult CppEmitter::emitOverflow() {
  size_t numSources = p.sources.size();
  b2 << "static const char *const kSourceInfo[" << std::max<size_t>(numSources, 1)
     << "][4] = {";
  for (size_t k = 0; k < numSources; ++k) {
    const CallSource &src = p.sources[k];
    b2 << (k ? ",\n    " : "\n    ") << "{" << messageLiteral(src.op) << ", "
       << (src.name.empty() ? std::string("NULL") : messageLiteral(src.name)) << ", "
       << messageLiteral(src.loc) << ", " << (src.backward ? "\"backward\"" : "\"forward\"")
       << "}";
  }
  if (numSources == 0)
    b2 << "{NULL, NULL, NULL, NULL}";
  b2 << "};\n\n";
  b2 << "static ampc_status " << n << "_overflow_impl(" << n << "_state *s, " << n
     << "_overflow_site *site) {\n"
     << nullChecks("overflow", {{"!s", "state"}, {"!site", "site"}})
     << "  site->op = site->name = site->loc = site->pass = NULL;\n"
     << "  // The skipped step left params and optimizer state as they were; "
        "the\n  // replay may touch state (and uses the step's scale), so "
        "all of it is\n  // copied out and back.\n"
     << "  std::vector<std::vector<char>> saved(" << numSlots << ");\n"
     << "  for (size_t i = 0; i < " << numSlots << "; ++i) {\n"
     << "    if (!ampcCheckpointed(kSlotRole[i]))\n"
     << "      continue;\n"
     << "    saved[i].resize(static_cast<size_t>(kSlotBytes[i]));\n"
     << "    AMPC_TRY(ampc_memcpy(s->ctx, saved[i].data(), s->slot[i], "
        "saved[i].size(),\n                         "
        "AMPC_MEMCPY_DEVICE_TO_HOST));\n  }\n";
  if (p.scaleSlot >= 0)
    b2 << "  AMPC_TRY(ampc_memcpy(s->ctx, s->slot[" << p.scaleSlot
       << "], s->step_scale, 4, AMPC_MEMCPY_DEVICE_TO_DEVICE));\n";
  b2 << "  int32_t found = -1;\n"
     << "  ampc_status st = ampc_check_read(s->ctx, AMPC_CHECK_NONFINITE, 1, "
        "&found);\n"
     << "  if (st == AMPC_OK)\n    st = " << n
     << "_probe_calls(s->ctx, s->seed, s->arena, s->slot);\n"
     << "  if (st == AMPC_OK)\n    st = ampc_check_read(s->ctx, "
        "AMPC_CHECK_NONFINITE, 1, &found);\n"
     << "  for (size_t i = 0; i < " << numSlots << "; ++i)\n"
     << "    if (!saved[i].empty()) {\n"
     << "      ampc_status r = ampc_memcpy(s->ctx, s->slot[i], saved[i].data(),\n"
     << "                                  saved[i].size(), "
        "AMPC_MEMCPY_HOST_TO_DEVICE);\n"
     << "      if (st == AMPC_OK)\n        st = r;\n    }\n"
     << "  if (st != AMPC_OK)\n    return st;\n"
     << "  if (found >= 0 && found < " << numSources << ") {\n"
     << "    site->op = kSourceInfo[found][0];\n"
     << "    site->name = kSourceInfo[found][1];\n"
     << "    site->loc = kSourceInfo[found][2];\n"
     << "    site->pass = kSourceInfo[found][3];\n  }\n"
     << "  return AMPC_OK;\n}\n\n";
  b2 << guardedWrapper("overflow", n + "_overflow_site *site", "site");
  return success();
}

/// NAME_output.
LogicalResult CppEmitter::emitOutputs() {
  b2 << "const void *" << n << "_output(" << n << "_state *s, int32_t index) {\n"
     << "  if (!s)\n    return NULL;\n"
     << "  switch (index) {\n";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    std::string w = where.lookup(p.outputs[i].buffer);
    if (w.empty())
      return p.op.emitError("output ") << i << " has no buffer";
    b2 << "  case " << i << ":\n    return " << w << ";\n";
  }
  b2 << "  default:\n    return NULL;\n  }\n}\n\n";
  return success();
}

// Checkpoints, through the runtime's writer and reader (the format of
// `ampc run`). Every failure says, through ampc_set_last_error, which
// function failed, on what path and why.
LogicalResult CppEmitter::emitCheckpoints() {
  {
    std::string text = R"cpp(static const uint64_t kFingerprint = @FP@ULL;

static ampc_status @N@_save_impl(@N@_state *s, const char *path) {
@NULLS_SAVE@  std::vector<std::vector<char>> host(@SLOTS@);
  std::vector<ampc_checkpoint_entry> entries;
  for (size_t i = 0; i < @SLOTS@; ++i) {
    if (!ampcCheckpointed(kSlotRole[i]))
      continue;
    host[i].resize(static_cast<size_t>(kSlotBytes[i]));
    ampc_status st = ampc_memcpy(s->ctx, host[i].data(), s->slot[i], host[i].size(), AMPC_MEMCPY_DEVICE_TO_HOST);
    if (st != AMPC_OK)
      return ampcFail(st, "@N@_save: cannot read '" + std::string(kSlotName[i]) + "' for '" + path + "': " + ampc_last_error());
    entries.push_back({kSlotName[i], static_cast<ampc_dtype>(kSlotDtype[i]), kSlotBytes[i], host[i].data()});
  }
  ampc_checkpoint_header header = {};
  header.fingerprint = kFingerprint;
  header.steps = s->steps;
  header.epoch = s->epoch;
  header.batch = s->batch;
  // The runtime's writer: written atomically, an existing checkpoint is
  // replaced whole or kept.
  ampc_status st = ampc_checkpoint_save(path, &header, entries.data(), static_cast<int64_t>(entries.size()));
  if (st != AMPC_OK)
    return ampcCheckpointFail(st, "@N@_save");
  return AMPC_OK;
}

static ampc_status @N@_load_impl(@N@_state *s, const char *path) {
@NULLS_LOAD@  ampc_checkpoint file = NULL;
  ampc_status st = ampc_checkpoint_load(path, &file);
  if (st != AMPC_OK)
    return ampcCheckpointFail(st, "@N@_load");
  std::unique_ptr<std::remove_pointer<ampc_checkpoint>::type, ampc_status (*)(ampc_checkpoint)> owned(file, ampc_checkpoint_free);
  std::string bad = "@N@_load: checkpoint '" + std::string(path) + "' ";
  ampc_checkpoint_header header = {};
  int64_t count = 0;
  AMPC_TRY(ampc_checkpoint_get_header(file, &header));
  AMPC_TRY(ampc_checkpoint_count(file, &count));
  if (header.fingerprint != kFingerprint) {
    char fps[64];
    std::snprintf(fps, sizeof(fps), "%016llx, this code's %016llx", static_cast<unsigned long long>(header.fingerprint), static_cast<unsigned long long>(kFingerprint));
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is another program's (fingerprint " + fps + "): another graph, or graph '@N@' compiled with other options");
  }
  std::vector<std::pair<size_t, const void *>> copies;
  for (int64_t k = 0; k < count; ++k) {
    ampc_checkpoint_entry e;
    AMPC_TRY(ampc_checkpoint_get_entry(file, k, &e));
    size_t slot = @SLOTS@;
    for (size_t i = 0; i < @SLOTS@; ++i)
      if (ampcCheckpointed(kSlotRole[i]) && std::strcmp(e.name, kSlotName[i]) == 0)
        slot = i;
    // An entry of no slot of this graph (the state `ampc run` keeps for
    // the file's other graphs) is skipped; the fingerprint has matched.
    if (slot == @SLOTS@)
      continue;
    if (kSlotDtype[slot] != e.dtype || kSlotBytes[slot] != e.bytes)
      return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "holds '" + e.name + "' as " + ampcDtypeName(e.dtype) + ", " + std::to_string(e.bytes) + " bytes; graph '@N@' has " + ampcDtypeName(kSlotDtype[slot]) + ", " + std::to_string(kSlotBytes[slot]) + " bytes");
    copies.push_back({slot, e.data});
  }
  // Every param, state and buffer of the graph must be there.
  for (size_t i = 0; i < @SLOTS@; ++i) {
    if (!ampcCheckpointed(kSlotRole[i]))
      continue;
    bool found = false;
    for (const auto &c : copies)
      found = found || c.first == i;
    if (!found)
      return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "has no '" + kSlotName[i] + "', which graph '@N@' needs");
  }
  // Everything checked: only now is the state overwritten.
  for (const auto &c : copies) {
    st = ampc_memcpy(s->ctx, s->slot[c.first], c.second, static_cast<size_t>(kSlotBytes[c.first]), AMPC_MEMCPY_HOST_TO_DEVICE);
    if (st != AMPC_OK)
      return ampcFail(st, bad + "could not be copied into '" + kSlotName[c.first] + "': " + ampc_last_error());
  }
  s->steps = header.steps;
  s->epoch = header.epoch;
  s->batch = header.batch;
  return AMPC_OK;
})cpp";
    auto replaceAll = [&](StringRef from, const std::string &to) {
      for (size_t at = text.find(from.str()); at != std::string::npos;
           at = text.find(from.str(), at + to.size()))
        text.replace(at, from.size(), to);
    };
    replaceAll("@NULLS_SAVE@",
               nullChecks("save", {{"!s", "state"}, {"!path", "path"}}));
    replaceAll("@NULLS_LOAD@",
               nullChecks("load", {{"!s", "state"}, {"!path", "path"}}));
    replaceAll("@N@", n);
    replaceAll("@SLOTS@", std::to_string(numSlots));
    replaceAll("@FP@", std::to_string(p.fingerprint));
    b2 << text << "\n\n" << guardedWrapper("save", "const char *path", "path")
       << guardedWrapper("load", "const char *path", "path");
  }
  return success();
}

/// The support code printed with the module.
LogicalResult CppEmitter::print() {
  verbatim(tail);
  llvm::raw_string_ostream src(*sourceText);
  if (failed(ec::translateToCpp(*module, src)))
    return failure();
  return success();
}

} // namespace

LogicalResult ampc::emit::emitCpp(const Program &p, bool cuda,
                                  const std::string &header,
                                  std::string &headerText,
                                  std::string &sourceText) {
  return CppEmitter(p, cuda, header).emit(headerText, sourceText);
}
