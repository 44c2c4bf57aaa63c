//===- cpu_onednn.cpp - oneDNN as the CPU backend's GEMM engine -----------===//
//
// See cpu_onednn.h. oneDNN's C API is called through pointers resolved with
// dlsym() from libdnnl.so.2: its header gives the prototypes, nothing of it
// is linked, so the runtime (and the compiler that links the runtime) starts
// without mapping oneDNN's 40 MB and its OpenMP runtime.
//
//===----------------------------------------------------------------------===//
#include "cpu_onednn.h"
#include "cpu_isa.h"
#include "cpu_onednn_lib.h"

#include "../src/common.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tuple>

namespace ampc {
namespace onednn {
namespace {

#if defined(AMPC_RUNTIME_WITH_ONEDNN)

const char *dnnlIsaName(int isa) {
  switch (isa) {
  case 0x1:
    return "sse41";
  case 0x3:
    return "avx";
  case 0x7:
    return "avx2";
  case 0x407:
    return "avx2_vnni";
  case 0x27:
    return "avx512_core";
  case 0x67:
    return "avx512_core_vnni";
  case 0xe7:
    return "avx512_core_bf16";
  case 0x3e7:
    return "avx512_core_amx";
  }
  return "unknown";
}

/// oneDNN's data type for an operand dtype.
dnnl_data_type_t dnnlType(ampc_dtype dt) {
  return dt == AMPC_BF16 ? dnnl_bf16 : dnnl_f32;
}

/// The memory descriptors of one problem, kept next to its primitive.
struct Descs {
  dnnl_memory_desc_t a, b, c, scratchpad;
};

/// The calling thread's stream and scratchpad.
struct ThreadState {
  dnnl_stream_t stream = nullptr;
  void *scratch = nullptr;
  size_t scratchBytes = 0;
  ~ThreadState() {
    if (stream)
      library().api.dnnl_stream_destroy(stream);
    free(scratch);
  }
};

#endif // AMPC_RUNTIME_WITH_ONEDNN

} // namespace

#if defined(AMPC_RUNTIME_WITH_ONEDNN)

const Library &library() {
  static const Library lib = [] {
    Library l;
    const char *engine = getenv("AMPC_CPU_GEMM");
    if (engine && !strcasecmp(engine, "openblas")) {
      // Not even loaded (other values are policy()'s to read and report).
      l.summary = "openblas (AMPC_CPU_GEMM=openblas)";
      return l;
    }
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      l.summary = std::string("openblas (oneDNN not loaded: ") +
                  (e ? e : "libdnnl.so.2 not found") + ")";
      return l;
    }
    Api &a = l.api;
#define AMPC_DNNL_RESOLVE(f)                                                   \
  a.f = reinterpret_cast<decltype(&::f)>(dlsym(h, #f));                        \
  if (!a.f) {                                                                  \
    l.summary = "openblas (libdnnl.so.2 lacks " #f ")";                        \
    return l;                                                                  \
  }
    AMPC_DNNL_FUNCTIONS(AMPC_DNNL_RESOLVE)
#undef AMPC_DNNL_RESOLVE
    // oneDNN's OpenMP runtime is loaded with it; its per-thread team size
    // is set to one around every call (run()).
    if (void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      a.ompSetNumThreads =
          reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads"));
      a.ompGetMaxThreads =
          reinterpret_cast<int (*)()>(dlsym(gomp, "omp_get_max_threads"));
    }
    if (!a.ompSetNumThreads || !a.ompGetMaxThreads) {
      l.summary = "openblas (oneDNN's OpenMP runtime libgomp.so.1 not found)";
      return l;
    }
    int capped = cpuisa::dnnlCap();
    if (capped >= 0 &&
        a.dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(capped)) !=
            dnnl_success)
      fprintf(stderr,
              "ampc runtime: oneDNN refused AMPC_CPU_ISA=%s (set too late, "
              "or not built in)\n",
              getenv("AMPC_CPU_ISA"));
    if (a.dnnl_engine_create(&a.engine, dnnl_cpu, 0) != dnnl_success) {
      l.summary = "openblas (oneDNN could not create a CPU engine)";
      return l;
    }
    const dnnl_version_t *v = a.dnnl_version();
    char text[160];
    snprintf(text, sizeof text, "%s (oneDNN %d.%d.%d)",
             dnnlIsaName(static_cast<int>(a.dnnl_get_effective_cpu_isa())),
             v->major, v->minor, v->patch);
    l.summary = text;
    int isa = static_cast<int>(a.dnnl_get_effective_cpu_isa());
    l.nativeBf16 = isa == 0xe7 || isa == 0x3e7;
    l.ok = true;
    return l;
  }();
  return lib;
}

bool threadStream(dnnl_stream_t &stream, size_t bytes, void *&scratchpad) {
  const Api &api = library().api;
  thread_local ThreadState ts;
  if (!ts.stream &&
      api.dnnl_stream_create(&ts.stream, api.engine, dnnl_stream_default_flags))
    return setError(AMPC_ERROR_INTERNAL,
                    "cpu backend: oneDNN could not create a stream"),
           false;
  if (ts.scratchBytes < bytes) {
    free(ts.scratch);
    size_t rounded = (bytes + 4095) & ~size_t(4095);
    ts.scratch = aligned_alloc(4096, rounded);
    ts.scratchBytes = ts.scratch ? rounded : 0;
    if (!ts.scratch)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cpu backend: cannot allocate a %zu-byte oneDNN "
                      "scratchpad",
                      bytes),
             false;
  }
  stream = ts.stream;
  scratchpad = ts.scratch;
  return true;
}

#endif // AMPC_RUNTIME_WITH_ONEDNN


#if defined(AMPC_RUNTIME_WITH_ONEDNN)

bool enabled() { return library().ok; }
bool nativeBf16() { return library().ok && library().nativeBf16; }

namespace {

enum class Policy { Auto, OneDnn, OpenBlas };

Policy policy() {
  static const Policy p = [] {
    const char *e = getenv("AMPC_CPU_GEMM");
    if (!e || !*e || !strcasecmp(e, "auto"))
      return Policy::Auto;
    if (!strcasecmp(e, "onednn"))
      return Policy::OneDnn;
    if (!strcasecmp(e, "openblas"))
      return Policy::OpenBlas;
    fprintf(stderr,
            "ampc runtime: AMPC_CPU_GEMM=%s is not one of auto, onednn, "
            "openblas; ignored\n",
            e);
    return Policy::Auto;
  }();
  return p;
}

/// Whether OpenBLAS runs vector kernels of AVX2 or later on this processor.
bool blasIsVectorised() {
  static const bool fast = [] {
    const char *core = openblas_get_corename();
    if (!core)
      return false;
    for (const char *name :
         {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
      if (!strcasecmp(core, name))
        return true;
    return false;
  }();
  return fast;
}

} // namespace

bool wanted(bool bf16Operands, int64_t macs) {
  switch (policy()) {
  case Policy::OpenBlas:
    return false;
  case Policy::OneDnn:
    return enabled();
  case Policy::Auto:
    break;
  }
  constexpr int64_t kSmall = int64_t(1) << 17, kLarge = int64_t(1) << 21;
  if (macs < kSmall || !enabled())
    return false;
  return bf16Operands || macs >= kLarge || !blasIsVectorised();
}
const char *engineSummary() { return library().summary.c_str(); }

bool MatmulKey::operator<(const MatmulKey &o) const {
  auto tie = [](const MatmulKey &x) {
    uint32_t al, be;
    memcpy(&al, &x.alpha, 4);
    memcpy(&be, &x.beta, 4);
    return std::make_tuple(x.rows, x.cols, x.k, x.lda, x.ldb, x.ldc, x.transA,
                           x.transB, static_cast<int>(x.dtype), al, be);
  };
  return tie(*this) < tie(o);
}

MatmulCache::~MatmulCache() {
  if (entries.empty())
    return;
  const Api &a = library().api;
  for (auto &e : entries)
    if (e.second) {
      a.dnnl_primitive_destroy(
          static_cast<dnnl_primitive_t>(e.second->primitive));
      delete static_cast<Descs *>(e.second->descs);
    }
}

const Matmul *MatmulCache::get(const MatmulKey &key, std::string &why) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = entries.find(key);
  if (it != entries.end())
    return it->second.get(); // NULL: oneDNN refused it before
  const Library &lib = library();
  if (!lib.ok) {
    why = lib.summary;
    return nullptr;
  }
  // A refused problem is remembered as NULL, so it is asked about once.
  std::unique_ptr<Matmul> &slot = entries[key];
  const Api &a = lib.api;
  // Some implementations (gemm:jit) fix their team size when they are
  // created, and a num_threads clause overrides the team size run() sets:
  // create them on one thread too.
  OneThread one(a);
  auto d = std::make_unique<Descs>();
  dnnl_data_type_t t = dnnlType(key.dtype);
  // Row-major A [rows x k], B [k x cols], C [rows x cols]; a transposed
  // operand is the same matrix read with swapped strides.
  dnnl_dims_t aDims = {key.rows, key.k}, bDims = {key.k, key.cols},
              cDims = {key.rows, key.cols};
  dnnl_dims_t aStr = {key.transA ? 1 : key.lda, key.transA ? key.lda : 1};
  dnnl_dims_t bStr = {key.transB ? 1 : key.ldb, key.transB ? key.ldb : 1};
  dnnl_dims_t cStr = {key.ldc, 1};
  if (a.dnnl_memory_desc_init_by_strides(&d->a, 2, aDims, t, aStr) ||
      a.dnnl_memory_desc_init_by_strides(&d->b, 2, bDims, t, bStr) ||
      a.dnnl_memory_desc_init_by_strides(&d->c, 2, cDims, dnnl_f32, cStr)) {
    why = "oneDNN refused the operands' layout";
    return nullptr;
  }
  dnnl_matmul_desc_t md;
  if (a.dnnl_matmul_desc_init(&md, &d->a, &d->b, nullptr, &d->c)) {
    why = "oneDNN refused the matmul";
    return nullptr;
  }
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t ops = nullptr;
  a.dnnl_primitive_attr_create(&attr);
  a.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (key.alpha != 1.0f)
    a.dnnl_primitive_attr_set_output_scales(attr, 1, 0, &key.alpha);
  if (key.beta != 0.0f) {
    a.dnnl_post_ops_create(&ops);
    a.dnnl_post_ops_append_sum(ops, key.beta);
    a.dnnl_primitive_attr_set_post_ops(attr, ops);
  }
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_status_t st = a.dnnl_primitive_desc_create(&pd, &md, attr,
                                                  lib.api.engine, nullptr);
  if (ops)
    a.dnnl_post_ops_destroy(ops);
  a.dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success) {
    why = "oneDNN has no matmul for this problem";
    return nullptr;
  }
  auto m = std::make_unique<Matmul>();
  const char *impl = nullptr;
  a.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  m->impl = impl ? impl : "?";
  d->scratchpad = *a.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md,
                                                  0);
  m->scratchpadBytes = a.dnnl_memory_desc_get_size(&d->scratchpad);
  dnnl_primitive_t prim = nullptr;
  st = a.dnnl_primitive_create(&prim, pd);
  a.dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success) {
    why = "oneDNN could not create the matmul primitive";
    return nullptr;
  }
  m->primitive = prim;
  m->descs = d.release();
  slot = std::move(m);
  return slot.get();
}

std::string MatmulCache::implementations() const {
  std::lock_guard<std::mutex> lock(mutex);
  return implementationNames(entries);
}

bool run(const Matmul &m, const void *a, const void *b, float *c) {
  const Api &api = library().api;
  dnnl_stream_t stream;
  void *scratch;
  if (!threadStream(stream, m.scratchpadBytes, scratch))
    return false;
  const Descs &d = *static_cast<const Descs *>(m.descs);
  dnnl_memory_t mem[4] = {};
  bool ok =
      !api.dnnl_memory_create(&mem[0], &d.a, api.engine,
                              const_cast<void *>(a)) &&
      !api.dnnl_memory_create(&mem[1], &d.b, api.engine,
                              const_cast<void *>(b)) &&
      !api.dnnl_memory_create(&mem[2], &d.c, api.engine, c) &&
      !api.dnnl_memory_create(&mem[3], &d.scratchpad, api.engine, scratch);
  if (ok) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]},
                               {DNNL_ARG_WEIGHTS, mem[1]},
                               {DNNL_ARG_DST, mem[2]},
                               {DNNL_ARG_SCRATCHPAD, mem[3]}};
    OneThread one(api);
    ok = api.dnnl_primitive_execute(
             static_cast<dnnl_primitive_t>(m.primitive), stream, 4,
             args) == dnnl_success;
  }
  for (dnnl_memory_t x : mem)
    if (x)
      api.dnnl_memory_destroy(x);
  if (!ok)
    setError(AMPC_ERROR_INTERNAL, "cpu backend: oneDNN matmul %s failed",
             m.impl.c_str());
  return ok;
}

#else // !AMPC_RUNTIME_WITH_ONEDNN

bool enabled() { return false; }
bool nativeBf16() { return false; }
bool wanted(bool, int64_t) { return false; }
const char *engineSummary() {
  return "openblas (the runtime was built without oneDNN's headers)";
}
bool MatmulKey::operator<(const MatmulKey &) const { return false; }
MatmulCache::~MatmulCache() = default;
const Matmul *MatmulCache::get(const MatmulKey &, std::string &why) {
  why = engineSummary();
  return nullptr;
}
std::string MatmulCache::implementations() const { return ""; }
bool run(const Matmul &, const void *, const void *, float *) {
  return false;
}

#endif // AMPC_RUNTIME_WITH_ONEDNN

} // namespace onednn
} // namespace ampc
