//===- cpu_onednn.h - oneDNN as the CPU backend's GEMM engine ---*- C++ -*-===//
//
// The CPU backend runs its GEMMs on oneDNN's matmul primitives (Debian's
// libdnnl 2.x): f32 x f32 and bf16 x bf16 operands, f32 accumulation and an
// f32 result, on the best units the processor has (AMX, AVX512-BF16,
// AVX-512, AVX2), picked by oneDNN at run time.
//
//  - oneDNN is loaded with dlopen() the first time a CPU GEMM asks for it,
//    never by the compiler: `ampc --emit=mlir` maps none of it.
//    Without libdnnl.so.2, or with AMPC_CPU_GEMM=openblas, GEMMs stay on
//    OpenBLAS (engineSummary() says which, and why).
//  - AMPC_CPU_ISA=NAME (cpu_isa.h) caps oneDNN's instruction sets too
//    (dnnl_set_max_cpu_isa, the same as ONEDNN_MAX_CPU_ISA).
//  - A primitive is made once per problem (shape, strides, dtypes, alpha,
//    beta) and kept by the backend (MatmulCache); every later call with the
//    same problem reuses it. Primitives run single-threaded (the backend's
//    pool splits a GEMM into fixed tiles: cpu_pool.h) with a scratchpad of
//    the calling thread, so no result depends on the thread count.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_ONEDNN_H
#define AMPC_RUNTIME_CPU_CPU_ONEDNN_H

#include "ampc/runtime.h"

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace ampc {
namespace onednn {

/// Whether GEMMs run on oneDNN (loads it on the first call).
bool enabled();

/// Whether oneDNN runs bf16 on bf16 units here (AVX512-BF16 or AMX, within
/// AMPC_CPU_ISA). Without them its bf16 kernels emulate the products with
/// AVX-512 integer instructions, which is slower than widening the
/// operands to f32 (docs/runtime.md), so GEMMs and convolutions only take
/// bf16 operands as they are where this is true.
bool nativeBf16();

/// Whether a GEMM of `macs` multiply-adds per call goes to oneDNN (else to
/// OpenBLAS on f32 operands), from measurements (docs/runtime.md):
///  - products below 2^17 multiply-adds stay on OpenBLAS: oneDNN's fixed
///    cost per call (about 1-2 us, more on its gemm:jit) outweighs the
///    product;
///  - bf16 x bf16 products go to oneDNN's bf16 kernels where it has bf16
///    units (nativeBf16()); elsewhere the operands are widened and the
///    product is an f32 one, below;
///  - f32 products go to oneDNN from 2^21 multiply-adds (128^3), and
///    smaller ones too unless OpenBLAS runs AVX2 or AVX-512 kernels on this
///    processor (openblas_get_corename()): with its Cooperlake kernels on an
///    AMD EPYC OpenBLAS was 25% faster at 64^3 and oneDNN 5-10% faster from
///    128^3; where OpenBLAS falls back to its SSE3 kernels ("Prescott", on
///    processors it does not know) oneDNN is 2-4x faster.
/// AMPC_CPU_GEMM=onednn sends every GEMM to oneDNN, =openblas none.
bool wanted(bool bf16Operands, int64_t macs);
/// One line naming the GEMM engine and the units it may use, e.g.
/// "avx512_core_bf16 (oneDNN 2.6.3)" or "openblas (oneDNN not loaded:
/// ...)". Valid for the life of the process.
const char *engineSummary();

/// The distinct implementation names of a primitive cache's entries
/// (`impl` of each non-null one), sorted and comma-separated.
template <typename Entries>
std::string implementationNames(const Entries &entries) {
  std::set<std::string> names;
  for (auto &e : entries)
    if (e.second)
      names.insert(e.second->impl);
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// One GEMM problem: C[rows x cols] (f32, row-major, ldc) =
/// alpha * op(A) * op(B) + beta * C, A and B both f32 or both bf16.
struct MatmulKey {
  int64_t rows, cols, k, lda, ldb, ldc;
  bool transA, transB;
  ampc_dtype dtype; // of A and B: AMPC_F32 or AMPC_BF16
  float alpha, beta;
  bool operator<(const MatmulKey &o) const;
};

/// A created primitive (opaque) and the scratchpad bytes it needs.
struct Matmul {
  void *primitive = nullptr;
  void *descs = nullptr; // its memory descriptors
  size_t scratchpadBytes = 0;
  std::string impl; // oneDNN's implementation name, e.g. brg:avx512_core
};

/// The primitives of one backend instance, by problem.
class MatmulCache {
public:
  MatmulCache() = default;
  MatmulCache(const MatmulCache &) = delete;
  MatmulCache &operator=(const MatmulCache &) = delete;
  ~MatmulCache();

  /// The primitive for `key`, created on first use; NULL (with the reason
  /// in `why`) when oneDNN cannot run it.
  const Matmul *get(const MatmulKey &key, std::string &why);
  /// The distinct implementation names of the primitives made so far,
  /// comma-separated.
  std::string implementations() const;
  /// The problems asked about so far: primitives made, and those oneDNN
  /// refused (ampc_context_primitives).
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return entries.size();
  }

private:
  mutable std::mutex mutex;
  std::map<MatmulKey, std::unique_ptr<Matmul>> entries;
};

/// The implementations a backend's calls ran on since they were last
/// taken (ampc_context_take_engines), each once, in the order first noted.
class EngineNotes {
public:
  /// `names`: one name, or several comma-separated.
  void note(const std::string &names) {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t from = 0; from < names.size();) {
      size_t end = std::min(names.find(", ", from), names.size());
      std::string name = names.substr(from, end - from);
      if (std::find(this->names.begin(), this->names.end(), name) ==
          this->names.end())
        this->names.push_back(name);
      from = end + 2;
    }
  }
  /// The names, comma-separated; then forgets them.
  std::string take() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string out;
    for (const std::string &n : names)
      out += (out.empty() ? "" : ", ") + n;
    names.clear();
    return out;
  }

private:
  std::mutex mutex;
  std::vector<std::string> names;
};

/// Runs `m` on the calling thread: C = alpha * op(A) * op(B) + beta * C.
/// Returns false (with the reason in ampc's last error) when oneDNN fails.
bool run(const Matmul &m, const void *a, const void *b, float *c);

} // namespace onednn
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_ONEDNN_H
