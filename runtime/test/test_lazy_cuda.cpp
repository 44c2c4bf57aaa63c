//===- test_lazy_cuda.cpp - The CPU path never maps CUDA --------*- C++ -*-===//
//
// A program that only uses the CPU backend must not map the CUDA backend
// library, cudart or cuBLASLt (the backend is loaded on the first CUDA
// query). Then, in a build with CUDA, the first CUDA query must map the
// backend library, which shows the check above can see it. Exits non-zero
// with a message on failure.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace {

/// The first mapped file whose name contains one of the CUDA libraries, or "".
std::string mappedCudaLibrary() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    for (const char *lib :
         {"libampc_runtime_cuda", "libcudart", "libcublas", "libcuda.so"})
      if (line.find(lib) != std::string::npos)
        return line;
  return "";
}

bool mapsBackend() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libampc_runtime_cuda") != std::string::npos)
      return true;
  return false;
}

} // namespace

int main(int argc, char **argv) {
  bool builtWithCuda = argc > 1 && std::string(argv[1]) == "--with-cuda";
  std::ifstream probe("/proc/self/maps");
  if (!probe) {
    std::printf("SKIP: no /proc/self/maps\n");
    return 0;
  }
  ampc_context ctx = nullptr;
  if (ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx) != AMPC_OK) {
    std::printf("FAIL: cpu context: %s\n", ampc_last_error());
    return 1;
  }
  float x[4] = {-1, 2, -3, 4}, y[4] = {};
  int64_t shape[1] = {4};
  if (ampc_relu_fwd(ctx, y, AMPC_F32, shape, 1, x, AMPC_F32, shape, 1) !=
          AMPC_OK ||
      y[0] != 0 || y[1] != 2) {
    std::printf("FAIL: relu on cpu: %s\n", ampc_last_error());
    return 1;
  }
  ampc_context_destroy(ctx);
  std::string mapped = mappedCudaLibrary();
  if (!mapped.empty()) {
    std::printf("FAIL: the CPU path mapped a CUDA library:\n%s\n",
                mapped.c_str());
    return 1;
  }
  std::printf("OK: no CUDA library mapped on the CPU path\n");

  int32_t available = 0;
  ampc_status s = ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  if (s != AMPC_OK) {
    std::printf("FAIL: ampc_backend_available(cuda): %s\n", ampc_last_error());
    return 1;
  }
  if (builtWithCuda && !mapsBackend()) {
    std::printf("FAIL: a CUDA query did not load libampc_runtime_cuda\n");
    return 1;
  }
  if (!builtWithCuda && mapsBackend()) {
    std::printf("FAIL: a runtime built without CUDA loaded a CUDA backend\n");
    return 1;
  }
  // Collectives: neither NCCL nor MPI is mapped without a communicator,
  // even once the CUDA backend is loaded.
  {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      for (const char *lib :
           {"libnccl", "libampc_runtime_nccl", "libmpi", "libampc_runtime_mpi"})
        if (line.find(lib) != std::string::npos) {
          std::printf("FAIL: %s mapped without a communicator:\n%s\n", lib,
                      line.c_str());
          return 1;
        }
  }
  std::printf("OK: the CUDA query %s the backend library (available: %d)\n",
              builtWithCuda ? "loaded" : "did not load", available);
  return 0;
}
