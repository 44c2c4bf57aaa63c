//===- CudaCapability.cpp - A GPU's compute capability ----------*- C++ -*-===//
//
// Standard C++ and dlopen only (see the header): scripts/gpu/gpu_run.sh
// compiles this file with scripts/gpu/cuda_capability_main.cpp on the GPU
// machine and compares its answer with nvidia-smi's.
//
//===----------------------------------------------------------------------===//

#include "ampc/Pipelines/CudaCapability.h"

#include <dlfcn.h>

using namespace ampc;

std::optional<int> ampc::cudaDeviceComputeCapability(int ordinal,
                                                     std::string &error) {
  // The driver API, loaded on demand: ampc itself does not link CUDA.
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = "no CUDA driver (libcuda.so.1) to read the GPU's compute "
            "capability from";
    return std::nullopt;
  }
  using InitFn = int (*)(unsigned);
  using DeviceGetFn = int (*)(int *, int);
  using AttributeFn = int (*)(int *, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(handle, "cuInit"));
  auto deviceGet = reinterpret_cast<DeviceGetFn>(dlsym(handle, "cuDeviceGet"));
  auto attribute = reinterpret_cast<AttributeFn>(
      dlsym(handle, "cuDeviceGetAttribute"));
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
  constexpr int kMajor = 75, kMinor = 76;
  int device = 0, major = 0, minor = 0;
  if (!init || !deviceGet || !attribute || init(0) != 0 ||
      deviceGet(&device, ordinal) != 0 ||
      attribute(&major, kMajor, device) != 0 ||
      attribute(&minor, kMinor, device) != 0) {
    // The handle stays open: a driver is never unloaded once initialised.
    error = "cannot read the compute capability of CUDA device " +
            std::to_string(ordinal) + " (no usable GPU)";
    return std::nullopt;
  }
  return major * 10 + minor;
}
