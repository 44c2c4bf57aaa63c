// Prints what ampc reads as CUDA device 0's compute capability (the code
// `ampc run --device=cuda --amp=auto` uses, lib/Pipelines/CudaCapability.cpp)
// as "sm_XX", or the error it gives; exit 0 only with an answer.
// scripts/gpu/gpu_run.sh builds it on the GPU machine and compares the
// answer with nvidia-smi's compute_cap.
#include "ampc/Pipelines/CudaCapability.h"

#include <cstdio>

int main() {
  std::string error;
  std::optional<int> sm = ampc::cudaDeviceComputeCapability(0, error);
  if (!sm) {
    std::printf("error: %s\n", error.c_str());
    return 1;
  }
  std::printf("sm_%d\n", *sm);
  return 0;
}
