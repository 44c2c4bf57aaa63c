//===- EmitCpp.cpp - print a lowered step as C++ ----------------------------===//
//
// The second consumer of ampc::rt::Program (the executor is the first): the
// same calls, printed. Checkpoints use the executor's format, so `ampc run
// --save` files load into generated code and back.
//
//===----------------------------------------------------------------------===//

#include "ampc/Emit/EmitCpp.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace ampc;
using namespace ampc::rt;

namespace {
class Printer {
public:
  Printer(const Program &p, llvm::raw_ostream &globals)
      : p(p), globals(globals) {}

  /// Prints one call; tensor lists become local arrays before it.
  void call(const Call &c, llvm::raw_ostream &os, const char *indent) {
    std::string pre, args;
    llvm::raw_string_ostream preOs(pre), argOs(args);
    for (size_t i = 0; i < c.args.size(); ++i) {
      argOs << (i ? ", " : "");
      arg(c.args[i], preOs, argOs, indent);
    }
    if (!c.note.empty())
      os << indent << "// " << c.note << "\n";
    if (pre.empty()) {
      os << indent << "AMPC_TRY(" << c.callee << "(" << args << "));\n";
      return;
    }
    os << indent << "{\n" << pre;
    os << indent << "  AMPC_TRY(" << c.callee << "(" << args << "));\n";
    os << indent << "}\n";
  }

private:
  const Program &p;
  llvm::raw_ostream &globals;
  int counter = 0;

  std::string buffer(const BufferRef &r) {
    if (r.slot < 0)
      return "(void *)(s->arena + " + std::to_string(r.offset) + ")";
    return "(void *)((char *)s->slot[" + std::to_string(r.slot) + "] + " +
           std::to_string(r.offset) + ")";
  }
  std::string i64Array(const std::vector<int64_t> &v) {
    if (v.empty())
      return "NULL";
    std::string name = "k" + std::to_string(counter++);
    globals << "static const int64_t " << name << "[] = {";
    for (size_t i = 0; i < v.size(); ++i)
      globals << (i ? ", " : "") << v[i] << "LL";
    globals << "};\n";
    return name;
  }

  void arg(const Arg &a, llvm::raw_ostream &pre, llvm::raw_ostream &os,
           const char *indent) {
    using K = Arg::Kind;
    switch (a.kind) {
    case K::Context:
      os << "s->ctx";
      return;
    case K::Buffer:
      os << buffer(a.buffer);
      return;
    case K::Null:
      os << "NULL";
      return;
    case K::Seed:
      os << "s->seed";
      return;
    case K::Scalar:
      if (!a.symbol.empty()) {
        os << a.symbol;
        return;
      }
      switch (a.ctype) {
      case CType::I32:
        os << a.i;
        return;
      case CType::I64:
      case CType::Ptr:
        os << a.i << "LL";
        return;
      case CType::U64:
        os << static_cast<uint64_t>(a.i) << "ULL";
        return;
      case CType::F32:
      case CType::F64: {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.17g", a.f);
        std::string t = buf;
        if (t.find_first_of(".en") == std::string::npos)
          t += ".0";
        if (std::isinf(a.f))
          t = a.f > 0 ? "HUGE_VAL" : "-HUGE_VAL";
        os << t << (a.ctype == CType::F32 ? "f" : "");
        return;
      }
      }
      return;
    case K::I64Array:
      os << i64Array(a.ints);
      return;
    case K::I32Array: {
      std::string name = "k" + std::to_string(counter++);
      globals << "static const ampc_dtype " << name << "[] = {";
      for (size_t i = 0; i < a.ints.size(); ++i)
        globals << (i ? ", " : "") << dtypeSymbol(a.ints[i]);
      globals << "};\n";
      os << name;
      return;
    }
    case K::BufferArray: {
      std::string name = "ptrs" + std::to_string(counter++);
      pre << indent << "  void *const " << name << "[] = {";
      for (size_t i = 0; i < a.buffers.size(); ++i)
        pre << (i ? ", " : "") << buffer(a.buffers[i]);
      pre << "};\n";
      os << name;
      return;
    }
    case K::ShapeArray: {
      std::vector<std::string> names;
      for (const auto &s : a.shapes)
        names.push_back(i64Array(s));
      std::string name = "k" + std::to_string(counter++);
      globals << "static const int64_t *const " << name << "[] = {";
      for (size_t i = 0; i < names.size(); ++i)
        globals << (i ? ", " : "") << names[i];
      globals << "};\n";
      os << name;
      return;
    }
    case K::HostBytes: {
      std::string name = "k" + std::to_string(counter++);
      globals << "static const unsigned char " << name << "[] = {";
      for (size_t i = 0; i < a.bytes.size(); ++i)
        globals << (i ? ", " : "") << static_cast<unsigned>(a.bytes[i]);
      globals << "};\n";
      os << name;
      return;
    }
    }
  }
};

const char *kSupport = R"cpp(
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
} // namespace
)cpp";
} // namespace

void ampc::emit::emitCpp(const Program &p, bool cuda,
                         const std::string &header, std::string &headerText,
                         std::string &sourceText) {
  const std::string &n = p.name;
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
        h << " " << s.name;
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
      << "/// The device pointer of output `index` after a step.\n"
      << "const void *" << n << "_output(" << n
      << "_state *state, int32_t index);\n"
      << "/// Checkpoints (parameters, optimizer and scaler state); the format "
         "of\n/// `ampc run --save`. Written atomically; loading checks "
         "everything first.\n"
      << "ampc_status " << n << "_save(" << n
      << "_state *state, const char *path);\n"
      << "ampc_status " << n << "_load(" << n
      << "_state *state, const char *path);\n"
      << "void " << n << "_destroy(" << n << "_state *state);\n\n"
      << "#ifdef __cplusplus\n} // extern \"C\"\n#endif\n\n#endif // " << guard
      << "\n";
  }

  // The source.
  std::string globals, body;
  llvm::raw_string_ostream g(globals), b(body);
  Printer printer(p, g);
  size_t numSlots = p.slots.size();

  b << "struct " << n << "_state {\n  ampc_context ctx;\n  uint64_t seed;\n"
    << "  ampc_arena arena_handle;\n  char *arena;\n  void *slot["
    << std::max<size_t>(numSlots, 1) << "];\n};\n\n";
  // Slot tables.
  g << "static const int64_t kSlotBytes[] = {";
  for (size_t i = 0; i < numSlots; ++i)
    g << (i ? ", " : "") << p.slots[i].bytes << "LL";
  g << (numSlots ? "" : "0") << "};\n";
  g << "static const int kSlotRole[] = {";
  for (size_t i = 0; i < numSlots; ++i)
    g << (i ? ", " : "") << static_cast<int>(p.slots[i].role);
  g << (numSlots ? "" : "0") << "};\n";
  g << "static const int32_t kSlotDtype[] = {";
  for (size_t i = 0; i < numSlots; ++i)
    g << (i ? ", " : "") << p.slots[i].dtype;
  g << (numSlots ? "" : "0") << "};\n";
  g << "static const char *const kSlotName[] = {";
  for (size_t i = 0; i < numSlots; ++i)
    g << (i ? ", " : "") << "\"" << p.slots[i].name << "\"";
  g << (numSlots ? "" : "\"\"") << "};\n";
  g << "static const int32_t kInputSlot[] = {";
  {
    bool first = true;
    for (size_t i = 0; i < numSlots; ++i)
      if (p.slots[i].role == Slot::Role::Input) {
        g << (first ? "" : ", ") << i;
        first = false;
      }
    if (first)
      g << "0";
  }
  g << "};\n";

  b << "int32_t " << n << "_num_inputs(void) { return " << numInputs
    << "; }\n\n";
  b << "int64_t " << n << "_input_bytes(int32_t index) {\n"
    << "  return index >= 0 && index < " << numInputs
    << " ? kSlotBytes[kInputSlot[index]] : -1;\n}\n\n";

  b << "void " << n << "_destroy(" << n << "_state *s) {\n"
    << "  if (!s)\n    return;\n"
    << "  for (size_t i = 0; i < " << numSlots << "; ++i)\n"
    << "    if (kSlotRole[i] != 0)\n      ampc_free(s->ctx, s->slot[i]);\n"
    << "  ampc_arena_destroy(s->arena_handle);\n  delete s;\n}\n\n";

  b << "static ampc_status " << n << "_init(" << n << "_state *s) {\n";
  for (const Call &c : p.init)
    printer.call(c, b, "  ");
  b << "  return AMPC_OK;\n}\n\n";

  b << "ampc_status " << n << "_create(ampc_context ctx, uint64_t seed, " << n
    << "_state **out) {\n"
    << "  if (!ctx || !out)\n    return AMPC_ERROR_NULL_POINTER;\n"
    << "  ampc_backend backend;\n"
    << "  AMPC_TRY(ampc_context_backend(ctx, &backend));\n"
    << "  if (backend != " << (cuda ? "AMPC_BACKEND_CUDA" : "AMPC_BACKEND_CPU")
    << ")\n    return AMPC_ERROR_INVALID_ARGUMENT; // generated for --target="
    << (cuda ? "cuda" : "cpu") << "\n"
    << "  " << n << "_state *s = new " << n << "_state();\n"
    << "  s->ctx = ctx;\n  s->seed = seed;\n"
    << "  ampc_status st = ampc_arena_create(ctx, " << std::max<int64_t>(p.arenaSize, 256)
    << ", &s->arena_handle);\n"
    << "  void *base = NULL;\n"
    << "  if (st == AMPC_OK)\n    st = ampc_arena_base(s->arena_handle, &base);\n"
    << "  s->arena = static_cast<char *>(base);\n"
    << "  for (size_t i = 0; st == AMPC_OK && i < " << numSlots << "; ++i)\n"
    << "    if (kSlotRole[i] != 0)\n"
    << "      st = ampc_malloc(ctx, kSlotBytes[i] > 0 ? kSlotBytes[i] : 1, "
       "&s->slot[i]);\n"
    << "  if (st == AMPC_OK)\n    st = " << n << "_init(s);\n"
    << "  if (st != AMPC_OK) {\n    " << n << "_destroy(s);\n    return st;\n  }\n"
    << "  *out = s;\n  return AMPC_OK;\n}\n\n";

  b << "ampc_status " << n << "_step(" << n
    << "_state *s, const void *const *inputs) {\n"
    << "  if (!s || (" << numInputs << " > 0 && !inputs))\n"
    << "    return AMPC_ERROR_NULL_POINTER;\n"
    << "  for (int32_t i = 0; i < " << numInputs << "; ++i)\n"
    << "    s->slot[kInputSlot[i]] = const_cast<void *>(inputs[i]);\n";
  for (const Call &c : p.step)
    printer.call(c, b, "  ");
  b << "  return AMPC_OK;\n}\n\n";

  b << "const void *" << n << "_output(" << n << "_state *s, int32_t index) {\n"
    << "  switch (index) {\n";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const BufferRef &r = p.outputs[i].buffer;
    b << "  case " << i << ":\n    return "
      << (r.slot < 0 ? "s->arena + " + std::to_string(r.offset)
                     : "(const char *)s->slot[" + std::to_string(r.slot) +
                           "] + " + std::to_string(r.offset))
      << ";\n";
  }
  b << "  default:\n    return NULL;\n  }\n}\n\n";

  // Checkpoints, in the executor's format.
  b << "static const uint64_t kFingerprint = " << p.fingerprint << "ULL;\n\n"
    << "ampc_status " << n << "_save(" << n << "_state *s, const char *path) {\n"
    << "  std::string d(\"AMPCCKPT\", 8);\n"
    << "  ckptPut<uint32_t>(d, 1);\n  ckptPut<uint64_t>(d, kFingerprint);\n"
    << "  ckptPut<int64_t>(d, 0);\n  uint32_t count = 0;\n"
    << "  for (size_t i = 0; i < " << numSlots << "; ++i)\n"
    << "    count += kSlotRole[i] == 1 || kSlotRole[i] == 2;\n"
    << "  ckptPut<uint32_t>(d, count);\n"
    << "  for (size_t i = 0; i < " << numSlots << "; ++i) {\n"
    << "    if (kSlotRole[i] != 1 && kSlotRole[i] != 2)\n      continue;\n"
    << "    uint32_t len = static_cast<uint32_t>(std::strlen(kSlotName[i]));\n"
    << "    ckptPut<uint32_t>(d, len);\n    d.append(kSlotName[i], len);\n"
    << "    ckptPut<int32_t>(d, kSlotDtype[i]);\n"
    << "    ckptPut<int64_t>(d, kSlotBytes[i]);\n"
    << "    size_t at = d.size();\n"
    << "    d.resize(at + static_cast<size_t>(kSlotBytes[i]));\n"
    << "    AMPC_TRY(ampc_memcpy(s->ctx, &d[at], s->slot[i], "
       "static_cast<size_t>(kSlotBytes[i]), AMPC_MEMCPY_DEVICE_TO_HOST));\n"
    << "  }\n  ckptPut<uint64_t>(d, ckptHash(d));\n"
    << "  std::string tmp = std::string(path) + \".tmp\";\n"
    << "  FILE *f = std::fopen(tmp.c_str(), \"wb\");\n"
    << "  if (!f)\n    return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "  bool ok = std::fwrite(d.data(), 1, d.size(), f) == d.size();\n"
    << "  ok = std::fclose(f) == 0 && ok;\n"
    << "  if (!ok || std::rename(tmp.c_str(), path) != 0) {\n"
    << "    std::remove(tmp.c_str());\n    return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "  }\n  return AMPC_OK;\n}\n\n";
  b << "ampc_status " << n << "_load(" << n << "_state *s, const char *path) {\n"
    << "  FILE *f = std::fopen(path, \"rb\");\n"
    << "  if (!f)\n    return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "  std::string d;\n  char chunk[65536];\n  size_t got;\n"
    << "  while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0)\n"
    << "    d.append(chunk, got);\n  std::fclose(f);\n"
    << "  if (d.size() < 16 || d.compare(0, 8, \"AMPCCKPT\") != 0)\n"
    << "    return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "  uint64_t stored;\n  std::memcpy(&stored, d.data() + d.size() - 8, 8);\n"
    << "  d.resize(d.size() - 8);\n"
    << "  if (ckptHash(d) != stored)\n    return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "  size_t pos = 8;\n  uint32_t version = 0, count = 0;\n"
    << "  uint64_t fingerprint = 0;\n  int64_t steps = 0;\n"
    << "  if (!ckptGet(d, pos, version) || version != 1 ||\n"
    << "      !ckptGet(d, pos, fingerprint) || fingerprint != kFingerprint ||\n"
    << "      !ckptGet(d, pos, steps) || !ckptGet(d, pos, count))\n"
    << "    return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "  std::vector<std::pair<size_t, size_t>> copies;\n"
    << "  for (uint32_t k = 0; k < count; ++k) {\n"
    << "    uint32_t len;\n    int32_t dtype;\n    int64_t bytes;\n"
    << "    if (!ckptGet(d, pos, len) || pos + len > d.size())\n"
    << "      return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "    std::string name = d.substr(pos, len);\n    pos += len;\n"
    << "    if (!ckptGet(d, pos, dtype) || !ckptGet(d, pos, bytes) || bytes < 0 "
       "||\n        pos + static_cast<size_t>(bytes) > d.size())\n"
    << "      return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "    size_t slot = " << numSlots << ";\n"
    << "    for (size_t i = 0; i < " << numSlots << "; ++i)\n"
    << "      if ((kSlotRole[i] == 1 || kSlotRole[i] == 2) && name == "
       "kSlotName[i])\n        slot = i;\n"
    << "    if (slot == " << numSlots
    << " || kSlotDtype[slot] != dtype || kSlotBytes[slot] != bytes)\n"
    << "      return AMPC_ERROR_INVALID_ARGUMENT;\n"
    << "    copies.push_back({slot, pos});\n"
    << "    pos += static_cast<size_t>(bytes);\n  }\n"
    << "  for (const auto &c : copies)\n"
    << "    AMPC_TRY(ampc_memcpy(s->ctx, s->slot[c.first], d.data() + "
       "c.second,\n"
    << "                         static_cast<size_t>(kSlotBytes[c.first]),\n"
    << "                         AMPC_MEMCPY_HOST_TO_DEVICE));\n"
    << "  return AMPC_OK;\n}\n";

  llvm::raw_string_ostream src(sourceText);
  src << "// Generated by ampc (--emit=cpp --target=" << (cuda ? "cuda" : "cpu")
      << ") from graph '" << n << "'. Do not edit.\n"
      << "// Arena: " << p.arenaSize << " bytes (intermediates: "
      << p.intermediateBytes << " bytes).\n"
      << "#include \"" << header << "\"\n\n"
      << "#include <cmath>\n#include <cstdio>\n#include <cstring>\n"
      << "#include <string>\n#include <utility>\n#include <vector>\n"
      << kSupport << "\n"
      << globals << "\n"
      << body;
}
