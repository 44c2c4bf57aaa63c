//===- CudaCapability.h - A GPU's compute capability ------------*- C++ -*-===//
//
// Read through the CUDA driver, loaded on demand: ampc itself does not link
// CUDA. Standard C++ and dlopen only, so that the GPU script
// (scripts/gpu/gpu_run.sh) builds this same code on a machine without LLVM
// and checks it against the GPU's own report.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_PIPELINES_CUDACAPABILITY_H
#define AMPC_PIPELINES_CUDACAPABILITY_H

#include <optional>
#include <string>

namespace ampc {

/// The compute capability (major * 10 + minor) of CUDA device `ordinal`,
/// read through the CUDA driver (libcuda.so.1, loaded on demand); std::nullopt
/// and `error` set where there is no driver or no such device.
std::optional<int> cudaDeviceComputeCapability(int ordinal,
                                               std::string &error);

} // namespace ampc

#endif // AMPC_PIPELINES_CUDACAPABILITY_H
