//===- cuda_plugin.h - The loaded CUDA backend's entry point ----*- C++ -*-===//
//
// The CUDA backend is a separate shared library (libampc_runtime_cuda.so)
// that the runtime loads with dlopen the first time a CUDA context is asked
// for, so the compiler and CPU-only programs never map cudart or cuBLASLt.
// This is the one symbol it exports and the handshake both sides check.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_CUDA_PLUGIN_H
#define AMPC_RUNTIME_SRC_CUDA_PLUGIN_H

#include "backend.h"

namespace ampc {

/// Bumped whenever Backend, the structs it takes or this handshake change:
/// the loader refuses a backend library built from other sources.
constexpr int kCudaPluginAbi = 2;

/// What the runtime gives the backend library.
struct CudaPluginHost {
  int abi;
  uint32_t runtimeVersion;
  /// Records `message` as the calling thread's last error; returns `status`.
  ampc_status (*recordError)(ampc_status status, const char *message);
};

/// What the backend library gives back.
struct CudaPluginApi {
  int abi;
  uint32_t runtimeVersion;
  bool (*available)();
  /// A new CUDA backend, or null with the error recorded and *status set.
  Backend *(*create)(int device, ampc_status *status);
};

/// The file name the loader looks for next to libampc_runtime.so.
constexpr const char *kCudaPluginFile = "libampc_runtime_cuda.so";
/// The exported entry point: fills *api, returns 0 on success.
#define AMPC_CUDA_PLUGIN_ENTRY ampc_cuda_plugin_init
#define AMPC_CUDA_PLUGIN_ENTRY_NAME "ampc_cuda_plugin_init"
typedef int (*CudaPluginEntry)(const CudaPluginHost *host, CudaPluginApi *api);

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_CUDA_PLUGIN_H
