//===- EmitCpp.cpp - print a lowered step as C++ ----------------------------===//
//
// The second consumer of an rt.program (the executor is the first): its
// calls become an EmitC module (emitc.func bodies of emitc.call_opaque, the
// arrays of dims, dtypes and constants as emitc.global, the fixed support
// code as emitc.verbatim) printed by mlir::emitc::translateToCpp.
// Checkpoints use the executor's format, so `ampc run --save` files load
// into generated code and back.
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
uint64_t ckptHash(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
template <typename T> void ckptPut(std::string &s, T v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(T));
}
template <typename T> bool ckptGet(const std::string &s, size_t &pos, T &v) {
  if (pos + sizeof(T) > s.size())
    return false;
  std::memcpy(&v, s.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}
/// Fails with `text` as what ampc_last_error() says.
ampc_status ampcFail(ampc_status status, const std::string &text) {
  return ampc_set_last_error(status, text.c_str());
}
std::string ampcDtypeName(int32_t dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "i32", "i64",
                                      "bool", "f64", "u8",   "i8",  "i16"};
  return dtype >= 0 && dtype <= 9 ? names[dtype]
                                  : "dtype " + std::to_string(dtype);
}
} // namespace
)cpp";
} // namespace

LogicalResult ampc::emit::emitCpp(const Program &p, bool cuda,
                         const std::string &header, std::string &headerText,
                         std::string &sourceText) {
  const std::string &n = p.name;
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
  int32_t numInputs = 0;
  for (const Slot &s : p.slots)
    numInputs += s.role == Slot::Role::Input;

  // The header.
  {
    llvm::raw_string_ostream h(headerText);
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
  }

  // The source: one EmitC module, printed by translateToCpp.
  MLIRContext *c = p.op->getContext();
  c->getOrLoadDialect<ec::EmitCDialect>();
  Location loc = p.op.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  size_t numSlots = p.slots.size();
  auto verbatim = [&](const std::string &text) {
    ec::VerbatimOp::create(b, loc, b.getStringAttr(text));
  };
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
  for (const char *h : {"cerrno", "cmath", "cstdio", "cstring", "new",
                        "string", "utility", "vector", "sys/stat.h",
                        "unistd.h"})
    ec::IncludeOp::create(b, loc, h, /*is_standard_include=*/true);
  verbatim(kSupport);

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
    // 0 input, 1 param, 2 state, 3 constant, 4 buffer (rt::Slot::Role);
    // params, state and buffers are checkpointed.
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
  OpBuilder globals(c);
  globals.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
  auto anchor = ec::VerbatimOp::create(b, loc, b.getStringAttr(""));
  globals.setInsertionPoint(anchor);

  {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "struct " << n << "_state {\n  ampc_context ctx;\n  uint64_t seed;\n"
       << "  ampc_arena arena_handle;\n  char *arena;\n  void *slot["
       << std::max<size_t>(numSlots, 1) << "];\n"
       << "  void *step_scale; // the loss scale the last step used\n"
       << "  int64_t micro; // micro-batches of the current update done\n};\n\n";
    os << "int32_t " << n << "_num_inputs(void) { return " << numInputs
       << "; }\n\n";
    os << "int64_t " << n << "_input_bytes(int32_t index) {\n"
       << "  return index >= 0 && index < " << numInputs
       << " ? kSlotBytes[kInputSlot[index]] : -1;\n}\n\n";
    os << "void " << n << "_destroy(" << n << "_state *s) {\n"
       << "  if (!s)\n    return;\n"
       << "  for (size_t i = 0; i < " << numSlots << "; ++i)\n"
       << "    if (kSlotRole[i] != 0)\n      ampc_free(s->ctx, s->slot[i]);\n"
       << "  ampc_free(s->ctx, s->step_scale);\n"
       << "  ampc_arena_destroy(s->arena_handle);\n  delete s;\n}";
    verbatim(text);
  }

  // The init and step calls: (context, seed, arena, slots) -> status.
  Type ctxType = ec::OpaqueType::get(c, "ampc_context");
  Type seedType = IntegerType::get(c, 64, IntegerType::Unsigned);
  Type arenaType = ec::PointerType::get(ec::OpaqueType::get(c, "char"));
  Type slotsType = ec::PointerType::get(
      ec::PointerType::get(ec::OpaqueType::get(c, "void")));
  Type statusType = ec::OpaqueType::get(c, "ampc_status");
  llvm::DenseMap<Attribute, std::string> arrays;
  auto function = [&](StringRef name, Block &block, bool withConstants,
                      size_t begin = 0,
                      size_t end = SIZE_MAX) -> LogicalResult {
    auto type = b.getFunctionType({ctxType, seedType, arenaType, slotsType},
                                  {statusType});
    auto func = ec::FuncOp::create(b, loc, name, type);
    func.setSpecifiersAttr(b.getStrArrayAttr({"static"}));
    Block *entry = func.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    BlockTranslator t(fb, func, p, arrays, *module, globals);
    for (size_t k = 0; k < p.constants.size(); ++k)
      t.bindConstant(p.constants[k].getResult(), p.numArgs + k);
    if (withConstants) {
      // Constants are written once, before the initialisers (which may copy
      // a parameter's value from one).
      for (size_t k = 0; k < p.constants.size(); ++k) {
        rt::ConstantOp constant = p.constants[k];
        if (failed(t.translateConstant(constant)))
          return failure();
      }
    }
    if (failed(t.translate(block, begin, end)))
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
  };
  if (failed(function(n + "_init_calls", p.op.getInit().getBody().front(),
                      true)))
    return failure();

  {
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
       << "  s->ctx = ctx;\n  s->seed = seed;\n"
       << "  ampc_status st = ampc_arena_create(ctx, "
       << std::max<int64_t>(p.arenaSize, 256) << ", &s->arena_handle);\n"
       << "  void *base = NULL;\n"
       << "  if (st == AMPC_OK)\n    st = ampc_arena_base(s->arena_handle, &base);\n"
       << "  s->arena = static_cast<char *>(base);\n"
       << "  for (size_t i = 0; st == AMPC_OK && i < " << numSlots << "; ++i)\n"
       << "    if (kSlotRole[i] != 0)\n"
       << "      st = ampc_malloc(ctx, kSlotBytes[i] > 0 ? kSlotBytes[i] : 1, "
          "&s->slot[i]);\n"
       << "  if (st == AMPC_OK)\n    st = ampc_malloc(ctx, 4, &s->step_scale);\n"
       << "  if (st == AMPC_OK)\n    st = " << n
       << "_init_calls(s->ctx, s->seed, s->arena, s->slot);\n"
       << "  if (st != AMPC_OK) {\n    " << n
       << "_destroy(s);\n    return st;\n  }\n"
       << "  *out = s;\n  return AMPC_OK;\n}";
    verbatim(text);
  }
  // Gradient accumulation: a micro-batch's calls and the update's instead
  // of the step's.
  bool accumulated = p.accumulate > 1;
  if (!accumulated &&
      failed(function(n + "_step_calls", p.op.getStep().getBody().front(),
                      false)))
    return failure();
  if (accumulated &&
      (failed(function(n + "_micro_calls", p.op.getStep().getBody().front(),
                       false, 0, p.updateCall)) ||
       failed(function(n + "_update_calls", p.op.getStep().getBody().front(),
                       false, p.updateCall))))
    return failure();
  {
    auto type = b.getFunctionType({ctxType, seedType, arenaType, slotsType},
                                  {statusType});
    auto func = ec::FuncOp::create(b, loc, n + "_probe_calls", type);
    func.setSpecifiersAttr(b.getStrArrayAttr({"static"}));
    Block *entry = func.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    BlockTranslator t(fb, func, p, arrays, *module, globals);
    for (size_t k = 0; k < p.constants.size(); ++k)
      t.bindConstant(p.constants[k].getResult(), p.numArgs + k);
    if (failed(t.translateProbed(p.op.getStep().getBody().front())))
      return failure();
    fb.setInsertionPointToStart(entry);
    for (BlockArgument arg : entry->getArguments())
      if (arg.use_empty())
        ec::CallOpaqueOp::create(fb, loc, TypeRange{}, "AMPC_UNUSED", arg);
    fb.setInsertionPointToEnd(entry);
    auto ok = ec::LiteralOp::create(fb, loc, statusType, "AMPC_OK");
    ec::ReturnOp::create(fb, loc, ok);
  }

  // Where each output lives.
  llvm::DenseMap<Value, std::string> where;
  {
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
  }
  // A NULL argument of a generated function: a status and a message that
  // names the function and the argument.
  auto nullChecks = [&](const std::string &fn,
                        std::initializer_list<std::pair<const char *,
                                                        const char *>> args) {
    std::string out;
    for (auto [test, name] : args)
      if (std::string(test) != "false")
        out += std::string("  if (") + test + ")\n    return ampcFail("
               "AMPC_ERROR_NULL_POINTER, \"" + n + "_" + fn + ": " + name +
               " is NULL\");\n";
    return out;
  };
  // NAME_FN, extern "C", around NAME_FN_impl: no C++ exception (a
  // std::bad_alloc of the host buffers) leaves the generated C ABI.
  auto guardedWrapper = [&](const std::string &fn, const std::string &param,
                            const std::string &arg) {
    std::string f = n + "_" + fn;
    return "ampc_status " + f + "(" + n + "_state *s, " + param + ") {\n" +
           "  try {\n    return " + f + "_impl(s, " + arg + ");\n" +
           "  } catch (const std::bad_alloc &) {\n" +
           "    return ampc_set_last_error(AMPC_ERROR_OUT_OF_MEMORY, \"" + f +
           ": out of host memory\");\n" +
           "  } catch (...) {\n" +
           "    return ampc_set_last_error(AMPC_ERROR_INTERNAL, \"" + f +
           ": unexpected C++ exception\");\n  }\n}\n\n";
  };
  std::string tail;
  llvm::raw_string_ostream b2(tail);
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
  if (!accumulated) {
    b2 << "  return " << n
       << "_step_calls(s->ctx, s->seed, s->arena, s->slot);\n"
       << "}\n\n";
  } else {
    // One micro-batch; the update after every K-th.
    b2 << "  AMPC_TRY(" << n
       << "_micro_calls(s->ctx, s->seed, s->arena, s->slot));\n"
       << "  if (++s->micro < " << p.accumulate << ")\n    return AMPC_OK;\n"
       << "  s->micro = 0;\n"
       << "  return " << n
       << "_update_calls(s->ctx, s->seed, s->arena, s->slot);\n}\n\n"
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
       << "  s->micro = 0;\n"
       << "  return " << n
       << "_update_calls(s->ctx, s->seed, s->arena, s->slot);\n}\n\n";
  }
  b2 << "int32_t " << n << "_accumulate(void) { return " << p.accumulate
     << "; }\n\n";
  // Check and overflow reports (docs/codegen.md): the sources' names.
  auto cstr = [](const std::string &text) {
    std::string out = "\"";
    for (char ch : text) {
      if (ch == '"' || ch == '\\')
        out += '\\';
      if (static_cast<unsigned char>(ch) < 0x20)
        continue;
      out += ch;
    }
    return out + "\"";
  };
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
    b2 << "  case " << src.site << ":\n    *message = " << cstr(text)
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
  size_t numSources = p.sources.size();
  b2 << "static const char *const kSourceInfo[" << std::max<size_t>(numSources, 1)
     << "][4] = {";
  for (size_t k = 0; k < numSources; ++k) {
    const CallSource &src = p.sources[k];
    b2 << (k ? ",\n    " : "\n    ") << "{" << cstr(src.op) << ", "
       << (src.name.empty() ? std::string("NULL") : cstr(src.name)) << ", "
       << cstr(src.loc) << ", " << (src.backward ? "\"backward\"" : "\"forward\"")
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
     << "    // Params, state and buffers (roles 1, 2, 4).\n"
     << "    if (kSlotRole[i] != 1 && kSlotRole[i] != 2 && kSlotRole[i] != 4)\n"
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
  // Checkpoints, in the executor's format. Every failure says, through
  // ampc_set_last_error, which function failed, on what path and why.
  {
    std::string text = R"cpp(static const uint64_t kFingerprint = @FP@ULL;

static ampc_status @N@_save_impl(@N@_state *s, const char *path) {
@NULLS_SAVE@  std::string d("AMPCCKPT", 8);
  ckptPut<uint32_t>(d, 1);
  ckptPut<uint64_t>(d, kFingerprint);
  ckptPut<int64_t>(d, 0);
  uint32_t count = 0;
  for (size_t i = 0; i < @SLOTS@; ++i)
    count += kSlotRole[i] == 1 || kSlotRole[i] == 2 || kSlotRole[i] == 4;
  ckptPut<uint32_t>(d, count);
  for (size_t i = 0; i < @SLOTS@; ++i) {
    if (kSlotRole[i] != 1 && kSlotRole[i] != 2 && kSlotRole[i] != 4)
      continue;
    uint32_t len = static_cast<uint32_t>(std::strlen(kSlotName[i]));
    ckptPut<uint32_t>(d, len);
    d.append(kSlotName[i], len);
    ckptPut<int32_t>(d, kSlotDtype[i]);
    ckptPut<int64_t>(d, kSlotBytes[i]);
    size_t at = d.size();
    d.resize(at + static_cast<size_t>(kSlotBytes[i]));
    ampc_status st = ampc_memcpy(s->ctx, &d[at], s->slot[i], static_cast<size_t>(kSlotBytes[i]), AMPC_MEMCPY_DEVICE_TO_HOST);
    if (st != AMPC_OK)
      return ampcFail(st, "@N@_save: cannot read '" + std::string(kSlotName[i]) + "' for '" + path + "': " + ampc_last_error());
  }
  ckptPut<uint64_t>(d, ckptHash(d));
  // Written to PATH.tmp (and fsync'ed), then renamed: an existing checkpoint
  // is replaced whole or kept. What exists and is not a regular file
  // (/dev/null, a FIFO) is written in place: a rename would replace it.
  struct stat st;
  bool inPlace = stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  std::string tmp = inPlace ? std::string(path) : std::string(path) + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, "@N@_save: cannot open '" + tmp + "' for writing checkpoint '" + path + "' (" + std::strerror(errno) + ")");
  errno = 0;
  bool ok = std::fwrite(d.data(), 1, d.size(), f) == d.size() && std::fflush(f) == 0 &&
            (inPlace || fsync(fileno(f)) == 0);
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    if (!inPlace)
      std::remove(tmp.c_str());
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, "@N@_save: cannot write checkpoint '" + std::string(path) + "' (" + (err ? std::strerror(err) : "short write") + ")");
  }
  if (!inPlace && std::rename(tmp.c_str(), path) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, "@N@_save: cannot rename '" + tmp + "' to '" + path + "' (" + std::strerror(err) + ")");
  }
  return AMPC_OK;
}

static ampc_status @N@_load_impl(@N@_state *s, const char *path) {
@NULLS_LOAD@  FILE *f = std::fopen(path, "rb");
  if (!f)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, "@N@_load: cannot open checkpoint '" + std::string(path) + "' (" + std::strerror(errno) + ")");
  std::string d;
  char chunk[65536];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    d.append(chunk, got);
  int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (err)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, "@N@_load: cannot read checkpoint '" + std::string(path) + "' (" + std::strerror(err) + ")");
  std::string bad = "@N@_load: checkpoint '" + std::string(path) + "' ";
  if (d.size() < 8 || d.compare(0, 8, "AMPCCKPT") != 0)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is not an ampc checkpoint");
  if (d.size() < 16)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is truncated");
  uint64_t stored;
  std::memcpy(&stored, d.data() + d.size() - 8, 8);
  d.resize(d.size() - 8);
  if (ckptHash(d) != stored)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is corrupt or truncated (checksum mismatch)");
  size_t pos = 8;
  uint32_t version = 0, count = 0;
  uint64_t fingerprint = 0;
  int64_t steps = 0;
  // Version 2 (ampc run's) adds the data position (epoch, batch), which
  // the emitted step does not keep.
  int64_t epoch = 0, batch = 0;
  if (!ckptGet(d, pos, version))
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is truncated");
  if (version != 1 && version != 2)
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "has an unsupported version " + std::to_string(version) + " (1 and 2 are read)");
  if (!ckptGet(d, pos, fingerprint))
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is truncated");
  if (fingerprint != kFingerprint) {
    char fps[64];
    std::snprintf(fps, sizeof(fps), "%016llx, this code's %016llx", static_cast<unsigned long long>(fingerprint), static_cast<unsigned long long>(kFingerprint));
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is another program's (fingerprint " + fps + "): another graph, or graph '@N@' compiled with other options");
  }
  if (!ckptGet(d, pos, steps) || (version == 2 && (!ckptGet(d, pos, epoch) || !ckptGet(d, pos, batch))) || !ckptGet(d, pos, count))
    return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is truncated");
  std::vector<std::pair<size_t, size_t>> copies;
  for (uint32_t k = 0; k < count; ++k) {
    uint32_t len;
    int32_t dtype;
    int64_t bytes;
    if (!ckptGet(d, pos, len) || pos + len > d.size())
      return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is truncated (in entry " + std::to_string(k) + ")");
    std::string name = d.substr(pos, len);
    pos += len;
    if (!ckptGet(d, pos, dtype) || !ckptGet(d, pos, bytes) || bytes < 0 || static_cast<uint64_t>(bytes) > d.size() - pos)
      return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "is truncated (in entry '" + name + "')");
    size_t slot = @SLOTS@;
    for (size_t i = 0; i < @SLOTS@; ++i)
      if ((kSlotRole[i] == 1 || kSlotRole[i] == 2 || kSlotRole[i] == 4) && name == kSlotName[i])
        slot = i;
    // An entry of no slot of this graph (the state `ampc run` keeps for
    // the file's other graphs) is skipped; the fingerprint has matched.
    if (slot != @SLOTS@ && (kSlotDtype[slot] != dtype || kSlotBytes[slot] != bytes))
      return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "holds '" + name + "' as " + ampcDtypeName(dtype) + ", " + std::to_string(bytes) + " bytes; graph '@N@' has " + ampcDtypeName(kSlotDtype[slot]) + ", " + std::to_string(kSlotBytes[slot]) + " bytes");
    if (slot != @SLOTS@)
      copies.push_back({slot, pos});
    pos += static_cast<size_t>(bytes);
  }
  // Every param, state and buffer of the graph must be there.
  for (size_t i = 0; i < @SLOTS@; ++i) {
    if (kSlotRole[i] != 1 && kSlotRole[i] != 2 && kSlotRole[i] != 4)
      continue;
    bool found = false;
    for (const auto &c : copies)
      found = found || c.first == i;
    if (!found)
      return ampcFail(AMPC_ERROR_INVALID_ARGUMENT, bad + "has no '" + kSlotName[i] + "', which graph '@N@' needs");
  }
  // Everything checked: only now is the state overwritten.
  for (const auto &c : copies) {
    ampc_status st = ampc_memcpy(s->ctx, s->slot[c.first], d.data() + c.second, static_cast<size_t>(kSlotBytes[c.first]), AMPC_MEMCPY_HOST_TO_DEVICE);
    if (st != AMPC_OK)
      return ampcFail(st, bad + "could not be copied into '" + kSlotName[c.first] + "': " + ampc_last_error());
  }
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

  verbatim(tail);
  llvm::raw_string_ostream src(sourceText);
  if (failed(ec::translateToCpp(*module, src)))
    return failure();
  return success();
}
