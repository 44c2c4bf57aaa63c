//===- cuda_stub.cpp - The CUDA backend in a build without CUDA
//-------------===//
#include "../src/common.h"

namespace ampc {

Backend *createCudaBackend(int, ampc_status *status) {
  *status = setError(AMPC_ERROR_BACKEND_UNAVAILABLE,
                     "cuda backend: this ampc runtime was built without CUDA "
                     "(no CUDA toolkit found at build time)");
  return nullptr;
}

bool cudaBackendAvailable() { return false; }

} // namespace ampc
