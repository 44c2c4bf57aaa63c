//===- cuda_plugin.cpp - Entry point of libampc_runtime_cuda.so -*- C++ -*-===//
//
// The backend library links none of the runtime's own sources: its errors go
// to the loading runtime's last-error slot through the host's callback.
//
//===----------------------------------------------------------------------===//
#include "../src/cuda_plugin.h"
#include "cuda_internal.h"

#include <stdarg.h>
#include <stdio.h>

namespace ampc {
namespace {
const CudaPluginHost *host = nullptr;
} // namespace

ampc_status setError(ampc_status status, const char *fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  return host ? host->recordError(status, message) : status;
}

} // namespace ampc

extern "C" __attribute__((visibility("default"))) int
AMPC_CUDA_PLUGIN_ENTRY(const ampc::CudaPluginHost *host,
                       ampc::CudaPluginApi *api) {
  if (!host || !api || host->abi != ampc::kCudaPluginAbi ||
      host->runtimeVersion != AMPC_RUNTIME_VERSION)
    return 1;
  ampc::host = host;
  api->abi = ampc::kCudaPluginAbi;
  api->runtimeVersion = AMPC_RUNTIME_VERSION;
  api->available = &ampc::cudaPluginAvailable;
  api->create = &ampc::cudaPluginCreate;
  return 0;
}
