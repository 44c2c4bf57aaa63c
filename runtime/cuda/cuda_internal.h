//===- cuda_internal.h - Pieces shared by the CUDA backend's TUs -*- C++
//-*-===//
#ifndef AMPC_RUNTIME_CUDA_INTERNAL_H
#define AMPC_RUNTIME_CUDA_INTERNAL_H

#include "../src/common.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>

namespace ampc {
namespace cuda {

/// Records a CUDA error as the last error.
ampc_status cudaFail(cudaError_t err, const char *what);

/// GEMMs through cuBLASLt: the heuristic's algorithm is cached per problem,
/// the workspace belongs to the context.
class LtGemm {
public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm &) = delete;
  LtGemm &operator=(const LtGemm &) = delete;
  ampc_status init(cudaStream_t stream);
  /// Whether cuBLASLt takes these types directly (A and B one dtype; C that
  /// dtype or f32).
  static bool supports(ampc_dtype ab, ampc_dtype c);
  /// C = epilogue(alpha op(A) op(B) + beta C + bias) with the bias already
  /// in C's dtype and `epilogue` one of NONE, RELU, GELU_TANH. Where
  /// cuBLASLt has no algorithm for the problem, returns an error and sets
  /// *noAlgo (when given) so the caller can take another path.
  ampc_status run(const GemmDesc &d, bool *noAlgo);
  /// Problems whose descriptors and algorithms are cached (tests).
  size_t cachedProblems() const;
  /// Times the heuristic was asked (tests: once per problem, also for a
  /// problem without an algorithm).
  size_t heuristicQueries() const;

private:
  struct Cache;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  std::unique_ptr<Cache> cache;
};

} // namespace cuda

/// The backend library's side of cuda_plugin.h (cuda_backend.cu).
bool cudaPluginAvailable();
Backend *cudaPluginCreate(int device, ampc_status *status);

} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_INTERNAL_H
