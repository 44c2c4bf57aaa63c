//===- Executor.cpp - run a lowered step in-process -------------------------===//
//
// Every call of the lowered program is prepared once (function pointer from
// the runtime library, libffi call interface, argument storage with device
// pointers resolved), so a step is a loop of ffi_call's with no
// interpretation of ops: the emitted C++ makes exactly the same calls.
//
//===----------------------------------------------------------------------===//

#include "ampc/Executor/Executor.h"
#include "ampc/Executor/Npy.h"
#include "ampc/Executor/Profile.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include "ampc/runtime.h"

#include <ffi.h>

#include <cmath>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <dlfcn.h>

using namespace ampc;
using namespace ampc::exec;

namespace {
struct PreparedCall {
  std::string callee;
  void *fn = nullptr;
  ffi_cif cif;
  std::vector<ffi_type *> types;
  std::vector<uint64_t> storage; // one 8-byte cell per argument
  std::vector<void *> values;
  std::vector<std::vector<int64_t>> i64s;
  std::vector<std::vector<int32_t>> i32s;
  std::vector<std::vector<void *>> ptrs;
  std::vector<std::vector<const int64_t *>> shapePtrs;
  std::vector<std::vector<uint8_t>> bytes;
  /// A call of the gradient all-reduce (timed for the run's summary).
  bool collective = false;
};

double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(mant | 0x400, exp - 25);
  return sign ? -v : v;
}

std::string lastError(const char *what, ampc_status st) {
  std::string e = ampc_last_error();
  return std::string(what) + " failed: " + ampc_status_string(st) +
         (e.empty() ? "" : " (" + e + ")");
}
} // namespace

struct Executor::Impl {
  ampc_context ctx = nullptr;
  ampc_arena arena = nullptr;
  char *arenaBase = nullptr;
  std::vector<void *> slots;
  std::vector<PreparedCall> init, step;
  uint64_t seed = 0;
  /// The device address of every buffer value of the program.
  llvm::DenseMap<mlir::Value, void *> addr;

  void *resolve(mlir::Value v) { return addr.lookup(v); }

  /// Gives the block's arguments their slots' addresses and the arena's.
  void bindBlock(mlir::Block &block) {
    for (mlir::BlockArgument arg : block.getArguments())
      addr[arg] = arg.getArgNumber() + 1 == block.getNumArguments()
                      ? static_cast<void *>(arenaBase)
                      : slots[arg.getArgNumber()];
  }

  bool prepare(rt::CallOp call, PreparedCall &p, std::string &error) {
    p.callee = call.getCallee().str();
    p.collective = llvm::StringRef(p.callee).starts_with("ampc_grad_allreduce_");
    p.fn = dlsym(RTLD_DEFAULT, p.callee.c_str());
    if (!p.fn) {
      error = "runtime entry point '" + p.callee + "' not found";
      return false;
    }
    mlir::ArrayAttr args = call.getArgs();
    mlir::OperandRange buffers = call.getBuffers();
    size_t n = args.size();
    p.storage.assign(n, 0);
    p.values.resize(n);
    p.types.resize(n);
    auto bufferAt = [&](mlir::Attribute a) {
      return resolve(buffers[llvm::cast<mlir::IntegerAttr>(a).getInt()]);
    };
    for (size_t i = 0; i < n; ++i) {
      mlir::Attribute a = args[i];
      void *cell = &p.storage[i];
      p.values[i] = cell;
      auto setPtr = [&](const void *ptr) {
        std::memcpy(cell, &ptr, sizeof(ptr));
        p.types[i] = &ffi_type_pointer;
      };
      auto setI32 = [&](int32_t v) {
        std::memcpy(cell, &v, 4);
        p.types[i] = &ffi_type_sint32;
      };
      if (llvm::isa<rt::ContextAttr>(a)) {
        setPtr(ctx);
      } else if (llvm::isa<rt::NullAttr>(a)) {
        setPtr(nullptr);
      } else if (llvm::isa<rt::SeedAttr>(a)) {
        std::memcpy(cell, &seed, 8);
        p.types[i] = &ffi_type_uint64;
      } else if (auto d = llvm::dyn_cast<rt::DtypeAttr>(a)) {
        setI32(d.getValue());
      } else if (auto e = llvm::dyn_cast<rt::EnumAttr>(a)) {
        setI32(e.getValue());
      } else if (auto ia = llvm::dyn_cast<mlir::IntegerAttr>(a)) {
        if (ia.getType().isIndex()) {
          setPtr(bufferAt(a));
        } else if (ia.getType().getIntOrFloatBitWidth() == 32) {
          setI32(static_cast<int32_t>(ia.getInt()));
        } else {
          int64_t v = ia.getValue().getZExtValue();
          std::memcpy(cell, &v, 8);
          p.types[i] = ia.getType().isUnsignedInteger() ? &ffi_type_uint64
                                                        : &ffi_type_sint64;
        }
      } else if (auto fa = llvm::dyn_cast<mlir::FloatAttr>(a)) {
        if (fa.getType().isF32()) {
          float v = static_cast<float>(fa.getValueAsDouble());
          std::memcpy(cell, &v, 4);
          p.types[i] = &ffi_type_float;
        } else {
          double v = fa.getValueAsDouble();
          std::memcpy(cell, &v, 8);
          p.types[i] = &ffi_type_double;
        }
      } else if (auto ints = llvm::dyn_cast<mlir::DenseI64ArrayAttr>(a)) {
        p.i64s.emplace_back(ints.asArrayRef().begin(), ints.asArrayRef().end());
        setPtr(p.i64s.back().empty() ? nullptr : p.i64s.back().data());
      } else if (auto list = llvm::dyn_cast<mlir::ArrayAttr>(a)) {
        if (list.empty() || llvm::isa<mlir::IntegerAttr>(list[0])) {
          std::vector<void *> v;
          for (mlir::Attribute e : list)
            v.push_back(bufferAt(e));
          p.ptrs.push_back(std::move(v));
          setPtr(p.ptrs.back().data());
        } else if (llvm::isa<rt::DtypeAttr>(list[0])) {
          std::vector<int32_t> v;
          for (mlir::Attribute e : list)
            v.push_back(llvm::cast<rt::DtypeAttr>(e).getValue());
          p.i32s.push_back(std::move(v));
          setPtr(p.i32s.back().data());
        } else {
          size_t first = p.i64s.size();
          for (mlir::Attribute e : list) {
            auto shape = llvm::cast<mlir::DenseI64ArrayAttr>(e).asArrayRef();
            p.i64s.emplace_back(shape.begin(), shape.end());
          }
          std::vector<const int64_t *> v;
          for (size_t k = first; k < p.i64s.size(); ++k)
            v.push_back(p.i64s[k].data());
          p.shapePtrs.push_back(std::move(v));
          setPtr(p.shapePtrs.back().data());
        }
      } else if (auto dense = llvm::dyn_cast<mlir::ElementsAttr>(a)) {
        p.bytes.push_back(rt::constantBytes(dense));
        setPtr(p.bytes.back().data());
      } else {
        error = "cannot pass argument #" + std::to_string(i) + " of '" +
                p.callee + "'";
        return false;
      }
    }
    if (ffi_prep_cif(&p.cif, FFI_DEFAULT_ABI, n, &ffi_type_sint32,
                     p.types.data()) != FFI_OK) {
      error = "cannot prepare the call to '" + p.callee + "'";
      return false;
    }
    return true;
  }

  /// Prepares the calls of a block (binding views as it goes).
  bool prepareBlock(mlir::Block &block, std::vector<PreparedCall> &out,
                    std::string &error) {
    bindBlock(block);
    size_t calls = 0;
    for (mlir::Operation &op : block)
      calls += llvm::isa<rt::CallOp>(op);
    // Inner vectors are reserved up front: prepared pointers point into them.
    out.resize(calls);
    size_t k = 0;
    for (mlir::Operation &op : block) {
      if (auto view = llvm::dyn_cast<rt::ViewOp>(op)) {
        addr[view.getResult()] =
            static_cast<char *>(resolve(view.getBase())) + view.getOffset();
        continue;
      }
      auto call = llvm::dyn_cast<rt::CallOp>(op);
      if (!call)
        continue;
      PreparedCall &p = out[k++];
      p.i64s.reserve(64);
      p.i32s.reserve(8);
      p.ptrs.reserve(8);
      p.shapePtrs.reserve(2);
      p.bytes.reserve(2);
      if (!prepare(call, p, error))
        return false;
    }
    return true;
  }

  double collectiveSeconds = 0;
  int64_t collectiveRounds = 0;

  /// The overflow report's snapshot (Executor::enableSnapshot).
  struct Snapshot {
    bool enabled = false;
    size_t call = 0;      ///< the overflow check; the copy is queued after it
    void *flag = nullptr; ///< found_inf
    std::vector<const void *> srcs;
    std::vector<void *> dsts[2]; ///< by the step's parity
    std::vector<int64_t> bytes;
    std::vector<void *> areas;
    int64_t areaBytes = 0;
    /// The step's calls reading and writing the areas of each parity.
    std::vector<PreparedCall> calls[2];
  } snap;
  uint64_t stepsRun = 0;
  /// The calls replaySnapshot is running (callPointer reads them).
  std::vector<PreparedCall> *replaying = nullptr;
  /// keepReplayOutputs: the last replay's outputs.
  bool keepReplayOutputs = false;
  std::vector<std::vector<char>> replayOutputs;

  /// Executor::enableProfile's sums, by call of the step.
  bool profiling = false, syncEachCall = false;
  std::vector<CallProfile> profile;

  /// Adds call `i`'s time since `t0` and its engines to the profile.
  void profileCall(size_t i, std::chrono::steady_clock::time_point t0) {
    if (syncEachCall)
      ampc_synchronize(ctx);
    CallProfile &c = profile[i];
    c.seconds += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
    ++c.runs;
    char text[512];
    if (ampc_context_take_engines(ctx, text, sizeof text) == AMPC_OK)
      addNames(c.engines, text);
  }

  bool run(std::vector<PreparedCall> &calls, std::string &error,
           size_t begin = 0, size_t end = SIZE_MAX) {
    bool snapshot = snap.enabled && &calls == &step;
    bool profiled = profiling && &calls == &step;
    bool counted = false;
    for (size_t i = begin; i < end && i < calls.size(); ++i) {
      PreparedCall &p = calls[i];
      ffi_arg ret = 0;
      std::chrono::steady_clock::time_point callStart;
      if (profiled)
        callStart = std::chrono::steady_clock::now();
      if (p.collective) {
        // One round of the gradient all-reduce per run that has any.
        if (!counted)
          ++collectiveRounds;
        counted = true;
        auto t0 = std::chrono::steady_clock::now();
        ffi_call(&p.cif, FFI_FN(p.fn), &ret, p.values.data());
        collectiveSeconds += std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - t0)
                                 .count();
      } else {
        ffi_call(&p.cif, FFI_FN(p.fn), &ret, p.values.data());
      }
      auto st = static_cast<ampc_status>(static_cast<int32_t>(ret));
      if (st != AMPC_OK) {
        error = lastError(p.callee.c_str(), st);
        return false;
      }
      if (profiled)
        profileCall(i, callStart);
      if (snapshot && i == snap.call) {
        // What this step started from, kept only if it was skipped.
        st = ampc_copy_if_flag(ctx, snap.flag,
                               static_cast<int32_t>(snap.srcs.size()),
                               snap.dsts[stepsRun % 2].data(),
                               snap.srcs.data(), snap.bytes.data());
        if (st != AMPC_OK) {
          error = lastError("ampc_copy_if_flag", st);
          return false;
        }
      }
    }
    return true;
  }

  ~Impl() {
    for (void *p : snap.areas)
      ampc_free(ctx, p);
    for (void *p : slots)
      ampc_free(ctx, p);
    ampc_arena_destroy(arena);
    ampc_context_destroy(ctx);
  }
};

Executor::Executor(const rt::Program &program) : program(program) {}

static int gCudaDevice = 0;
void Executor::setCudaDevice(int device) { gCudaDevice = device; }

std::unique_ptr<Executor> Executor::create(const rt::Program &program,
                                           bool cuda, uint64_t seed,
                                           std::string &error) {
  std::unique_ptr<Executor> ex(new Executor(program));
  ex->impl = std::make_unique<Impl>();
  Impl &im = *ex->impl;
  im.seed = seed;
  ampc_status st =
      ampc_context_create(cuda ? AMPC_BACKEND_CUDA : AMPC_BACKEND_CPU,
                          cuda ? gCudaDevice : 0, &im.ctx);
  if (st != AMPC_OK) {
    error = std::string("cannot create a ") + (cuda ? "cuda" : "cpu") +
            " context: " + ampc_last_error();
    return nullptr;
  }
  st = ampc_arena_create(im.ctx, std::max<int64_t>(program.arenaSize, 256),
                         &im.arena);
  if (st == AMPC_OK)
    st = ampc_arena_base(im.arena, reinterpret_cast<void **>(&im.arenaBase));
  if (st != AMPC_OK) {
    error = lastError("allocating the arena", st);
    return nullptr;
  }
  for (const rt::Slot &s : program.slots) {
    void *p = nullptr;
    st = ampc_malloc(im.ctx, std::max<int64_t>(s.bytes, 1), &p);
    if (st != AMPC_OK) {
      error = lastError(("allocating '" + s.name + "'").c_str(), st);
      return nullptr;
    }
    im.slots.push_back(p);
  }
  // Constants are written once, at creation.
  rt::ProgramOp op = program.op;
  for (size_t k = 0; k < program.constants.size(); ++k) {
    rt::ConstantOp constant = program.constants[k];
    size_t slot = program.numArgs + k;
    im.addr[constant.getResult()] = im.slots[slot];
    std::vector<uint8_t> bytes =
        rt::constantBytes(constant.getValue());
    st = ampc_memcpy(im.ctx, im.slots[slot], bytes.data(), bytes.size(),
                     AMPC_MEMCPY_HOST_TO_DEVICE);
    if (st != AMPC_OK) {
      error = lastError("writing a constant", st);
      return nullptr;
    }
  }
  if (!im.prepareBlock(op.getInit().getBody().front(), im.init,
                       error) ||
      !im.run(im.init, error) ||
      !im.prepareBlock(op.getStep().getBody().front(), im.step, error))
    return nullptr;
  return ex;
}

bool Executor::writeSlot(size_t slot, const void *data, size_t bytes,
                         std::string &error) {
  const rt::Slot &s = program.slots[slot];
  if (static_cast<int64_t>(bytes) != s.bytes) {
    error = "'" + s.name + "': size mismatch";
    return false;
  }
  ampc_status st = ampc_memcpy(impl->ctx, impl->slots[slot], data, bytes,
                               AMPC_MEMCPY_HOST_TO_DEVICE);
  if (st != AMPC_OK) {
    error = lastError(("writing '" + s.name + "'").c_str(), st);
    return false;
  }
  return true;
}

static bool copyToHost(ampc_context ctx, const void *src, int64_t bytes,
                       std::vector<char> &host, std::string &error) {
  host.resize(bytes);
  ampc_status st =
      ampc_memcpy(ctx, host.data(), src, bytes, AMPC_MEMCPY_DEVICE_TO_HOST);
  if (st != AMPC_OK) {
    error = lastError("reading a result", st);
    return false;
  }
  return true;
}

bool Executor::readSlot(size_t slot, std::vector<char> &bytes,
                        std::string &error) {
  return copyToHost(impl->ctx, impl->slots[slot], program.slots[slot].bytes,
                    bytes, error);
}

bool Executor::synthesizeInputs(const std::vector<bool> &given, uint64_t seed,
                                std::string &error) {
  for (size_t i = 0; i < program.slots.size(); ++i) {
    const rt::Slot &s = program.slots[i];
    if (s.role != rt::Slot::Role::Input || given[i])
      continue;
    int64_t numel = 1;
    for (int64_t d : s.shape)
      numel *= d;
    // Inputs draw from streams far from the parameters' (offset = slot).
    uint64_t offset = 1000003 + i;
    ampc_status st;
    if (s.dtype <= AMPC_BF16 || s.dtype == AMPC_F64) {
      st = ampc_init_normal(impl->ctx, impl->slots[i],
                            static_cast<ampc_dtype>(s.dtype), numel, seed,
                            offset, 0.0, 1.0);
    } else {
      int64_t range = s.intRange > 0 ? s.intRange : 2;
      void *tmp = nullptr;
      st = ampc_malloc(impl->ctx, numel * 4, &tmp);
      if (st == AMPC_OK)
        st = ampc_init_uniform(impl->ctx, tmp, AMPC_F32, numel, seed, offset,
                               0.0, static_cast<double>(range) - 1e-3);
      if (st == AMPC_OK)
        st = ampc_cast_fwd(impl->ctx, impl->slots[i],
                           static_cast<ampc_dtype>(s.dtype), s.shape.data(),
                           s.shape.size(), tmp, AMPC_F32, s.shape.data(),
                           s.shape.size());
      ampc_free(impl->ctx, tmp);
    }
    if (st != AMPC_OK) {
      error = lastError(("synthesizing input '" + s.name + "'").c_str(), st);
      return false;
    }
  }
  return true;
}

bool Executor::step(std::string &error) {
  bool ok = impl->run(impl->step, error);
  ++impl->stepsRun;
  return ok;
}

bool Executor::microStep(std::string &error) {
  return impl->run(impl->step, error, 0, program.updateCall);
}

bool Executor::update(std::string &error) {
  bool ok = impl->run(impl->step, error, program.updateCall);
  ++impl->stepsRun;
  return ok;
}

size_t Executor::collectiveCalls() const {
  return llvm::count_if(impl->step,
                        [](const PreparedCall &p) { return p.collective; });
}

double Executor::collectiveSeconds() const { return impl->collectiveSeconds; }
int64_t Executor::collectiveRounds() const { return impl->collectiveRounds; }

void *Executor::context() { return impl->ctx; }

bool Executor::enableProfile(std::string &error) {
  ampc_backend backend;
  ampc_status st = ampc_context_backend(impl->ctx, &backend);
  if (st == AMPC_OK) // what the set-up ran is not the step's
    st = ampc_context_take_engines(impl->ctx, nullptr, 0);
  if (st != AMPC_OK) {
    error = lastError("profiling", st);
    return false;
  }
  impl->syncEachCall = backend == AMPC_BACKEND_CUDA;
  impl->profiling = true;
  resetProfile();
  return true;
}

void Executor::resetProfile() {
  impl->profile.assign(impl->step.size(), CallProfile());
}

const std::vector<Executor::CallProfile> &Executor::profile() const {
  return impl->profile;
}

bool Executor::replay(size_t end,
                      const std::function<bool(size_t call)> &after,
                      std::string &error) {
  for (size_t i = 0; i < end && i < impl->step.size(); ++i) {
    PreparedCall &p = impl->step[i];
    ffi_arg ret = 0;
    ffi_call(&p.cif, FFI_FN(p.fn), &ret, p.values.data());
    auto st = static_cast<ampc_status>(static_cast<int32_t>(ret));
    if (st != AMPC_OK) {
      error = lastError(p.callee.c_str(), st);
      return false;
    }
    if (!after(i))
      return false;
  }
  return true;
}

void *Executor::callPointer(size_t call, size_t arg) {
  std::vector<PreparedCall> &calls =
      impl->replaying ? *impl->replaying : impl->step;
  return *static_cast<void **>(calls[call].values[arg]);
}

//===----------------------------------------------------------------------===//
// The overflow report's snapshot.
//===----------------------------------------------------------------------===//

namespace {
/// The optimizer updates: on a skipped step they leave every slot they are
/// given as it was (they read found_inf).
bool isSkippingUpdate(llvm::StringRef callee) {
  return callee == "ampc_sgd_update" || callee == "ampc_adamw_update" ||
         callee == "ampc_sgd_update_model" ||
         callee == "ampc_adamw_update_model" ||
         callee == "ampc_sgd_update_low" || callee == "ampc_adamw_update_low";
}
} // namespace

bool Executor::enableSnapshot(std::string &error) {
  Impl &im = *impl;
  if (im.snap.enabled)
    return true;
  if (!program.foundInf || program.checkCall >= im.step.size()) {
    error = "internal error: a snapshot needs the gradients' overflow check";
    return false;
  }
  // The slots calls [0, check] read (through views too), and those a call
  // after the check other than an optimizer update references: a skipped
  // step may change those (buffers, counters, the scaler's state).
  auto slotOf = [&](mlir::Value v) -> int32_t {
    while (auto view = v.getDefiningOp<rt::ViewOp>())
      v = view.getBase();
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
    return arg ? program.slotOf(arg) : -1;
  };
  std::vector<bool> read(program.numArgs, false), changes(program.numArgs);
  size_t k = 0;
  for (rt::CallOp call :
       program.op.getStep().getBody().front().getOps<rt::CallOp>()) {
    bool before = k++ <= program.checkCall;
    bool update = isSkippingUpdate(call.getCallee());
    for (mlir::Value v : call.getBuffers()) {
      int32_t slot = slotOf(v);
      if (slot < 0)
        continue;
      if (before)
        read[slot] = true;
      else if (!update)
        changes[slot] = true;
    }
  }
  std::vector<void *> replaySlots[2] = {im.slots, im.slots};
  auto area = [&](int64_t bytes, void *&p) {
    ampc_status st = ampc_malloc(im.ctx, std::max<int64_t>(bytes, 1), &p);
    if (st != AMPC_OK) {
      error = lastError("allocating the overflow report's snapshot", st);
      return false;
    }
    im.snap.areas.push_back(p);
    im.snap.areaBytes += bytes;
    return true;
  };
  for (size_t i = 0; i < program.numArgs; ++i) {
    const rt::Slot &slot = program.slots[i];
    if (!read[i] || slot.bytes <= 0)
      continue;
    // Inputs change between steps (--data); so do slots a skipped step
    // writes.
    bool twice = changes[i] || slot.role == rt::Slot::Role::Input;
    void *a = nullptr, *b = nullptr;
    if (!area(slot.bytes, a) || (twice && !area(slot.bytes, b)))
      return false;
    im.snap.srcs.push_back(im.slots[i]);
    im.snap.dsts[0].push_back(a);
    im.snap.dsts[1].push_back(twice ? b : a);
    im.snap.bytes.push_back(slot.bytes);
    replaySlots[0][i] = a;
    replaySlots[1][i] = twice ? b : a;
  }
  // The step's calls again, with the areas in place of the slots.
  std::vector<void *> live = im.slots;
  auto liveAddr = im.addr;
  bool ok = true;
  for (int parity = 0; parity < 2 && ok; ++parity) {
    im.slots = replaySlots[parity];
    ok = im.prepareBlock(program.op.getStep().getBody().front(),
                         im.snap.calls[parity], error);
  }
  im.slots = live;
  im.addr = std::move(liveAddr);
  if (!ok)
    return false;
  im.snap.call = program.checkCall;
  im.snap.flag = im.resolve(program.foundInf);
  im.snap.enabled = true;
  return true;
}

bool Executor::hasSnapshot() const { return impl->snap.enabled; }

void Executor::keepReplayOutputs(bool keep) { impl->keepReplayOutputs = keep; }

int64_t Executor::snapshotBytes() const { return impl->snap.areaBytes; }

uint64_t Executor::stepsTaken() const { return impl->stepsRun; }

bool Executor::replaySnapshot(uint64_t serial, size_t end,
                              const std::function<bool(size_t call)> &after,
                              std::string &error) {
  Impl &im = *impl;
  if (!im.snap.enabled || serial >= im.stepsRun || serial + 2 < im.stepsRun) {
    error = "internal error: no snapshot of step " + std::to_string(serial + 1);
    return false;
  }
  // The replay shares the arena with the latest step: its outputs are kept.
  std::vector<std::vector<char>> outputs(program.outputs.size());
  for (size_t i = 0; i < program.outputs.size(); ++i)
    if (!readOutputBytes(i, outputs[i], error))
      return false;
  std::vector<PreparedCall> &calls = im.snap.calls[serial % 2];
  im.replaying = &calls;
  bool ok = true;
  for (size_t i = 0; ok && i < end && i < calls.size(); ++i) {
    PreparedCall &p = calls[i];
    ffi_arg ret = 0;
    ffi_call(&p.cif, FFI_FN(p.fn), &ret, p.values.data());
    auto st = static_cast<ampc_status>(static_cast<int32_t>(ret));
    if (st != AMPC_OK) {
      error = lastError(p.callee.c_str(), st);
      ok = false;
    } else {
      ok = after(i);
    }
  }
  im.replaying = nullptr;
  im.replayOutputs.assign(im.keepReplayOutputs ? program.outputs.size() : 0,
                          {});
  for (size_t i = 0; ok && i < im.replayOutputs.size(); ++i)
    ok = readOutputBytes(i, im.replayOutputs[i], error);
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const rt::Output &o = program.outputs[i];
    ampc_status st = ampc_memcpy(im.ctx, im.resolve(o.buffer),
                                 outputs[i].data(), outputs[i].size(),
                                 AMPC_MEMCPY_HOST_TO_DEVICE);
    if (st != AMPC_OK && ok) {
      error = lastError("restoring the step's outputs", st);
      ok = false;
    }
  }
  return ok;
}

/// Appends the host values of type T in `bytes` bytes at p as f64.
template <typename T>
static void appendValues(const uint8_t *p, int64_t bytes,
                         std::vector<double> &values) {
  for (int64_t i = 0; i < bytes / int64_t(sizeof(T)); ++i) {
    T v;
    std::memcpy(&v, p + sizeof(T) * i, sizeof(T));
    values.push_back(static_cast<double>(v));
  }
}

/// Host bytes of `dtype` as f64 values.
static void decodeValues(const uint8_t *p, int32_t dtype, int64_t bytes,
                         std::vector<double> &values) {
  values.clear();
  switch (dtype) {
  case AMPC_F32:
    return appendValues<float>(p, bytes, values);
  case AMPC_F16:
  case AMPC_BF16:
    for (int64_t i = 0; i < bytes / 2; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      if (dtype == AMPC_F16) {
        values.push_back(halfToDouble(h));
      } else {
        uint32_t w = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &w, 4);
        values.push_back(f);
      }
    }
    break;
  case AMPC_I32:
    return appendValues<int32_t>(p, bytes, values);
  case AMPC_I64:
    return appendValues<int64_t>(p, bytes, values);
  case AMPC_F64:
    return appendValues<double>(p, bytes, values);
  case AMPC_I16:
    return appendValues<int16_t>(p, bytes, values);
  case AMPC_I8:
    return appendValues<int8_t>(p, bytes, values);
  default: // bool, u8
    return appendValues<uint8_t>(p, bytes, values);
  }
}

static bool readDevice(ampc_context ctx, const void *src, int32_t dtype,
                       int64_t bytes, std::vector<double> &values,
                       std::string &error) {
  std::vector<char> host;
  if (!copyToHost(ctx, src, bytes, host, error))
    return false;
  decodeValues(reinterpret_cast<const uint8_t *>(host.data()), dtype, bytes,
               values);
  return true;
}

bool Executor::readOutput(size_t i, std::vector<double> &values,
                          std::string &error) {
  const rt::Output &o = program.outputs[i];
  return readDevice(impl->ctx, impl->resolve(o.buffer), o.dtype, o.bytes,
                    values, error);
}

bool Executor::readOutputBytes(size_t i, std::vector<char> &bytes,
                               std::string &error) {
  const rt::Output &o = program.outputs[i];
  return copyToHost(impl->ctx, impl->resolve(o.buffer), o.bytes, bytes, error);
}

bool Executor::readScale(double &scale, std::string &error) {
  std::vector<double> v;
  if (program.scaleSlot < 0 ||
      !readDevice(impl->ctx, impl->slots[program.scaleSlot], AMPC_F32, 4, v,
                  error))
    return false;
  scale = v[0];
  return true;
}

bool Executor::readSkipped(bool &skipped, std::string &error) {
  std::vector<double> v;
  if (!program.foundInf ||
      !readDevice(impl->ctx, impl->resolve(program.foundInf), AMPC_F32, 4, v,
                  error))
    return false;
  skipped = v[0] != 0.0;
  return true;
}

//===----------------------------------------------------------------------===//
// Step scalars read one step late (ampc_read_async into page-locked memory).
//===----------------------------------------------------------------------===//

struct Executor::StepReads {
  ampc_context ctx = nullptr;
  void *host[2] = {nullptr, nullptr};
  uint64_t ticket[2] = {0, 0};
  int next = 0, pending = 0;
  // The packed layout: [loss (its dtype) | found_inf f32 | scale f32 |
  // index check word u32].
  const void *src[4] = {};
  size_t bytes[4] = {};
  int count = 0, lossAt = -1, skipAt = -1, scaleAt = -1, checkAt = -1;
  int32_t lossDtype = AMPC_F32;
  ~StepReads() {
    for (void *h : host)
      ampc_host_free(ctx, h);
  }
};

Executor::~Executor() {
  reads.reset(); // before impl destroys the context
}

bool Executor::queueStepScalars(std::string &error) {
  if (!reads) {
    auto r = std::make_unique<StepReads>();
    r->ctx = impl->ctx;
    size_t at = 0;
    auto piece = [&](const void *src, size_t n, int &offset) {
      offset = static_cast<int>(at);
      r->src[r->count] = src;
      r->bytes[r->count] = n;
      ++r->count;
      at += n;
    };
    if (!program.outputs.empty()) {
      const rt::Output &o = program.outputs[0];
      size_t elt = 0;
      if (ampc_dtype_size(static_cast<ampc_dtype>(o.dtype), &elt) == AMPC_OK &&
          o.bytes > 0 && static_cast<size_t>(o.bytes) == elt) {
        r->lossDtype = o.dtype;
        piece(impl->resolve(o.buffer), elt, r->lossAt);
      }
    }
    if (program.foundInf)
      piece(impl->resolve(program.foundInf), 4, r->skipAt);
    if (program.scaleSlot >= 0)
      piece(impl->slots[program.scaleSlot], 4, r->scaleAt);
    const void *word = nullptr;
    if (ampc_check_word(impl->ctx, AMPC_CHECK_INDEX, &word) == AMPC_OK)
      piece(word, 4, r->checkAt);
    for (void *&h : r->host) {
      ampc_status st = ampc_host_alloc(impl->ctx, at ? at : 1, &h);
      if (st != AMPC_OK) {
        error = lastError("allocating page-locked memory for step reads", st);
        return false;
      }
    }
    reads = std::move(r);
  }
  StepReads &r = *reads;
  if (r.pending == 2) {
    error = "internal error: more than two step reads in flight";
    return false;
  }
  int slot = r.next;
  if (r.count > 0) {
    ampc_status st = ampc_read_async(impl->ctx, r.host[slot], r.src, r.bytes,
                                     r.count, &r.ticket[slot]);
    if (st != AMPC_OK) {
      error = lastError("queueing the read of a step's scalars", st);
      return false;
    }
  }
  r.next ^= 1;
  ++r.pending;
  return true;
}

bool Executor::takeStepScalars(StepScalars &out, std::string &error) {
  out = StepScalars();
  if (!reads || reads->pending == 0) {
    error = "internal error: no step read queued";
    return false;
  }
  StepReads &r = *reads;
  int slot = r.next ^ (r.pending == 2 ? 0 : 1);
  --r.pending;
  if (r.count == 0)
    return true;
  ampc_status st = ampc_read_wait(impl->ctx, r.ticket[slot]);
  if (st != AMPC_OK) {
    error = lastError("reading a step's scalars", st);
    return false;
  }
  const uint8_t *p = static_cast<const uint8_t *>(r.host[slot]);
  auto f32At = [&](int at) {
    float f;
    std::memcpy(&f, p + at, 4);
    return static_cast<double>(f);
  };
  if (r.lossAt >= 0) {
    std::vector<double> v;
    decodeValues(p + r.lossAt, r.lossDtype, r.bytes[0], v);
    out.loss = v.empty() ? NAN : v[0];
  }
  if (r.skipAt >= 0)
    out.skipped = f32At(r.skipAt) != 0.0;
  if (r.scaleAt >= 0)
    out.nextScale = f32At(r.scaleAt);
  if (r.checkAt >= 0) {
    uint32_t w;
    std::memcpy(&w, p + r.checkAt, 4);
    out.checkSite = w == 0xFFFFFFFFu ? -1 : static_cast<int32_t>(w);
  }
  return true;
}

uint64_t Executor::hostSyncs() {
  uint64_t n = 0;
  ampc_host_syncs(impl->ctx, &n);
  return n;
}

//===----------------------------------------------------------------------===//
// Checkpoints: the runtime's format (ampc_checkpoint_save / _load,
// docs/runtime.md "Checkpoints"), written and read by the runtime.
// Entries are matched by name, so a checkpoint loads into the same graph
// compiled with other AMP or loss-scaling settings.
//===----------------------------------------------------------------------===//

namespace {
bool isSaved(const rt::Slot &slot) {
  return slot.role == rt::Slot::Role::Param ||
         slot.role == rt::Slot::Role::State ||
         slot.role == rt::Slot::Role::Buffer;
}

/// State of the loss scaler (it exists only with some --amp/--loss-scale
/// settings, so a checkpoint may lack it or hold it in excess).
/// Gradient accumulation's state (`P.grad_acc`, `accumulate.micro`) is
/// treated alike: between updates (where checkpoints are written) nothing
/// of it is needed, so checkpoints load across `accumulate` settings.
bool isScalerState(llvm::StringRef name) {
  return name.starts_with("loss_scale.") || name.ends_with(".grad_acc") ||
         name == "accumulate.micro";
}

/// Opt level O2's low model copy of param NAME is state `NAME.model`: a
/// checkpoint of another level may lack it (it is derived from the loaded
/// master) or hold it in excess (ignored).
bool isModelCopy(llvm::StringRef name) { return name.ends_with(".model"); }

const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case AMPC_F32:
    return "f32";
  case AMPC_F16:
    return "f16";
  case AMPC_BF16:
    return "bf16";
  case AMPC_I32:
    return "i32";
  case AMPC_I64:
    return "i64";
  case AMPC_F64:
    return "f64";
  case AMPC_U8:
    return "u8";
  case AMPC_I8:
    return "i8";
  case AMPC_I16:
    return "i16";
  default:
    return "bool";
  }
}
std::string describeSlot(const rt::Slot &slot) {
  std::string out = dtypeName(slot.dtype);
  out += "[";
  for (size_t i = 0; i < slot.shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(slot.shape[i]);
  return out + "]";
}
} // namespace

bool Executor::save(const std::string &path, const Position &position,
                    std::string &error,
                    const std::vector<StateEntry> &extra) {
  ampc_checkpoint_header header{};
  header.fingerprint = program.fingerprint;
  header.steps = position.steps;
  header.epoch = position.epoch;
  header.batch = position.batch;
  std::vector<ampc_checkpoint_entry> entries;
  // The slots' bytes, read to the host (each vector's buffer stays put).
  std::vector<std::vector<char>> host;
  for (size_t i = 0; i < program.slots.size(); ++i) {
    const rt::Slot &slot = program.slots[i];
    if (!isSaved(slot))
      continue;
    host.emplace_back();
    if (!readSlot(i, host.back(), error))
      return false;
    entries.push_back({slot.name.c_str(), static_cast<ampc_dtype>(slot.dtype),
                       slot.bytes, host.back().data()});
  }
  for (const StateEntry &e : extra)
    entries.push_back({e.name.c_str(), static_cast<ampc_dtype>(e.dtype),
                       static_cast<int64_t>(e.bytes.size()), e.bytes.data()});
  // An existing checkpoint is replaced whole or kept.
  if (ampc_checkpoint_save(path.c_str(), &header, entries.data(),
                           static_cast<int64_t>(entries.size())) != AMPC_OK) {
    error = ampc_last_error();
    return false;
  }
  return true;
}

bool Executor::load(const std::string &path, Position &position,
                    std::string &note, std::string &error,
                    const std::set<std::string> &alsoKnown) {
  ampc_checkpoint file = nullptr;
  if (ampc_checkpoint_load(path.c_str(), &file) != AMPC_OK) {
    error = ampc_last_error();
    return false;
  }
  std::unique_ptr<ampc_checkpoint_impl, ampc_status (*)(ampc_checkpoint)>
      owned(file, ampc_checkpoint_free);
  auto bad = [&](const std::string &why) {
    error = "checkpoint '" + path + "' " + why;
    return false;
  };
  ampc_checkpoint_header header{};
  int64_t count = 0;
  ampc_checkpoint_get_header(file, &header);
  ampc_checkpoint_count(file, &count);
  Position pos;
  pos.steps = header.steps;
  pos.epoch = header.epoch;
  pos.batch = header.batch;
  std::vector<ampc_checkpoint_entry> entries(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k)
    ampc_checkpoint_get_entry(file, k, &entries[static_cast<size_t>(k)]);
  auto describe = [](int32_t dtype, int64_t bytes) {
    return std::string(dtypeName(dtype)) + ", " + std::to_string(bytes) +
           " bytes";
  };
  // In the program's order, so the first difference named is the first
  // param or state of the graph.
  std::vector<std::pair<size_t, const void *>> copies;
  std::vector<std::string> fresh, ignored;
  // Model copies the checkpoint lacks (or holds with another type): the
  // slot and its master's, recomputed after the copy.
  std::vector<std::pair<size_t, size_t>> derived;
  auto masterOf = [&](const rt::Slot &slot) -> std::optional<size_t> {
    if (!isModelCopy(slot.name))
      return std::nullopt;
    llvm::StringRef master = llvm::StringRef(slot.name).drop_back(6);
    for (size_t j = 0; j < program.slots.size(); ++j)
      if (program.slots[j].role == rt::Slot::Role::Param &&
          program.slots[j].name == master)
        return j;
    return std::nullopt;
  };
  for (size_t i = 0; i < program.slots.size(); ++i) {
    const rt::Slot &slot = program.slots[i];
    if (!isSaved(slot))
      continue;
    auto it = llvm::find_if(entries,
                            [&](const ampc_checkpoint_entry &e) {
                              return slot.name == e.name;
                            });
    std::optional<size_t> master = masterOf(slot);
    if (master && (it == entries.end() || it->dtype != slot.dtype ||
                   it->bytes != slot.bytes)) {
      derived.push_back({i, *master});
      continue;
    }
    if (it == entries.end()) {
      if (isScalerState(slot.name)) {
        fresh.push_back(slot.name);
        continue;
      }
      return bad("has no '" + slot.name + "', which graph '" + program.name +
                 "' needs (" +
                 (slot.role == rt::Slot::Role::Param    ? "a parameter"
                  : slot.role == rt::Slot::Role::Buffer ? "a buffer"
                                                        : "optimizer state") +
                 ")");
    }
    if (it->dtype != slot.dtype || it->bytes != slot.bytes) {
      if (isScalerState(slot.name)) {
        fresh.push_back(slot.name);
        continue;
      }
      return bad("holds '" + slot.name + "' as " +
                 describe(it->dtype, it->bytes) + ", graph '" + program.name +
                 "' has " + describe(slot.dtype, slot.bytes));
    }
    copies.push_back({i, it->data});
  }
  for (const ampc_checkpoint_entry &e : entries) {
    bool known = llvm::any_of(program.slots, [&](const rt::Slot &slot) {
      return isSaved(slot) && slot.name == e.name;
    });
    if (known || alsoKnown.count(e.name))
      continue;
    if (isModelCopy(e.name)) {
      ignored.push_back(e.name);
      continue;
    }
    // A graph that does not train has no optimizer state to restore.
    if (!isScalerState(e.name) && program.training)
      return bad("holds '" + std::string(e.name) + "', which graph '" + program.name +
                 "' does not have");
    if (isScalerState(e.name))
      ignored.push_back(e.name);
  }
  // Everything checked: only now is the state overwritten.
  for (auto [i, data] : copies) {
    ampc_status st =
        ampc_memcpy(impl->ctx, impl->slots[i], data, program.slots[i].bytes,
                    AMPC_MEMCPY_HOST_TO_DEVICE);
    if (st != AMPC_OK) {
      error = lastError("writing the state", st);
      return false;
    }
  }
  for (auto [i, m] : derived) {
    const rt::Slot &to = program.slots[i], &from = program.slots[m];
    ampc_status st = ampc_cast_fwd(
        impl->ctx, impl->slots[i], static_cast<ampc_dtype>(to.dtype),
        to.shape.data(), to.shape.size(), impl->slots[m],
        static_cast<ampc_dtype>(from.dtype), from.shape.data(),
        from.shape.size());
    if (st != AMPC_OK) {
      error = lastError("deriving the model copies", st);
      return false;
    }
  }
  auto join = [](const std::vector<std::string> &names) {
    std::string out;
    for (const std::string &n : names)
      out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  note.clear();
  if (!derived.empty()) {
    std::vector<std::string> names;
    for (auto [i, m] : derived)
      names.push_back(program.slots[i].name);
    note = "model copies derived from the loaded f32 masters (not in the "
           "checkpoint with this type): " +
           join(names);
  }
  if (!fresh.empty())
    note += (note.empty() ? "" : "; ") +
            std::string("initialised fresh (not in the checkpoint with this "
                        "type): ") +
            join(fresh);
  if (!ignored.empty())
    note += (note.empty() ? "" : "; ") +
            std::string("ignored (this compilation has no such state): ") +
            join(ignored);
  position = pos;
  return true;
}

bool Executor::refreshModelCopies(std::string &error) {
  for (size_t i = 0; i < program.slots.size(); ++i) {
    const rt::Slot &to = program.slots[i];
    if (to.role != rt::Slot::Role::State || !isModelCopy(to.name))
      continue;
    llvm::StringRef master = llvm::StringRef(to.name).drop_back(6);
    for (size_t m = 0; m < program.slots.size(); ++m) {
      const rt::Slot &from = program.slots[m];
      if (from.role != rt::Slot::Role::Param || from.name != master)
        continue;
      ampc_status st = ampc_cast_fwd(
          impl->ctx, impl->slots[i], static_cast<ampc_dtype>(to.dtype),
          to.shape.data(), to.shape.size(), impl->slots[m],
          static_cast<ampc_dtype>(from.dtype), from.shape.data(),
          from.shape.size());
      if (st != AMPC_OK) {
        error = lastError("deriving the model copies", st);
        return false;
      }
    }
  }
  return true;
}

bool Executor::copySharedFrom(Executor &from, std::string &error) {
  for (size_t i = 0; i < program.slots.size(); ++i) {
    const rt::Slot &slot = program.slots[i];
    if (!isSaved(slot))
      continue;
    for (size_t j = 0; j < from.program.slots.size(); ++j) {
      const rt::Slot &other = from.program.slots[j];
      if (!isSaved(other) || other.name != slot.name)
        continue;
      if (other.dtype != slot.dtype || other.bytes != slot.bytes) {
        error = "'" + slot.name + "' is " + describeSlot(other) +
                " in graph '" + from.program.name + "' but " +
                describeSlot(slot) + " in graph '" + program.name + "'";
        return false;
      }
      std::vector<char> bytes;
      if (!from.readSlot(j, bytes, error) ||
          !writeSlot(i, bytes.data(), bytes.size(), error))
        return false;
    }
  }
  return true;
}

std::vector<double> Executor::replayedOutput(size_t i) const {
  std::vector<double> values;
  if (i < impl->replayOutputs.size())
    decodeValues(reinterpret_cast<const uint8_t *>(impl->replayOutputs[i].data()),
                 program.outputs[i].dtype,
                 static_cast<int64_t>(impl->replayOutputs[i].size()), values);
  return values;
}
