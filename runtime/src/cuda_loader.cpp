//===- cuda_loader.cpp - Loads the CUDA backend on demand -------*- C++ -*-===//
//
// The first CUDA query (ampc_backend_available, ampc_context_create) loads
// libampc_runtime_cuda.so from the directory of this library (or from
// $AMPC_RUNTIME_CUDA_LIBRARY), checks its handshake and keeps it loaded for
// the life of the process. Nothing here touches CUDA itself.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "cuda_plugin.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <mutex>
#include <string>

namespace ampc {
namespace {

ampc_status recordError(ampc_status status, const char *message) {
  return setError(status, "%s", message);
}

struct Loaded {
  bool ok = false;
  ampc_status status = AMPC_OK;
  std::string error;
  CudaPluginApi api = {};
};

/// The directory holding this library, with a trailing '/', or "".
Loaded load() {
  Loaded l;
#ifndef AMPC_RUNTIME_WITH_CUDA
  l.status = AMPC_ERROR_BACKEND_UNAVAILABLE;
  l.error = "cuda backend: this ampc runtime was built without CUDA (no CUDA "
            "toolkit found at build time)";
  return l;
#else
  const char *env = getenv("AMPC_RUNTIME_CUDA_LIBRARY");
  std::string path =
      env && *env ? std::string(env) : runtimeDirectory() + kCudaPluginFile;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    l.status = AMPC_ERROR_BACKEND_UNAVAILABLE;
    l.error = "cuda backend: cannot load " + path + " (" +
              (why ? why : "unknown error") + ")";
    return l;
  }
  auto entry = reinterpret_cast<CudaPluginEntry>(
      dlsym(handle, AMPC_CUDA_PLUGIN_ENTRY_NAME));
  // The backend keeps this pointer for the life of the process.
  static const CudaPluginHost host{kCudaPluginAbi, AMPC_RUNTIME_VERSION,
                                   &recordError};
  if (!entry || entry(&host, &l.api) != 0 || l.api.abi != kCudaPluginAbi ||
      l.api.runtimeVersion != AMPC_RUNTIME_VERSION || !l.api.available ||
      !l.api.create) {
    dlclose(handle);
    l.status = AMPC_ERROR_BACKEND_UNAVAILABLE;
    l.error = "cuda backend: " + path +
              " does not match this ampc runtime (version " +
              std::to_string(AMPC_RUNTIME_VERSION) + ")";
    return l;
  }
  l.ok = true; // the handle stays open: contexts may outlive any caller
  return l;
#endif
}

const Loaded &plugin() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

} // namespace

bool cudaBackendAvailable() {
  const Loaded &l = plugin();
  return l.ok && l.api.available();
}

Backend *createCudaBackend(int device, ampc_status *status) {
  const Loaded &l = plugin();
  if (!l.ok) {
    *status = setError(l.status, "%s", l.error.c_str());
    return nullptr;
  }
  return l.api.create(device, status);
}

} // namespace ampc
