//===- hd.h - Host/device portability macros --------------------*- C++ -*-===//
//
// Headers under src/ are compiled by both the host compiler and nvcc so that
// the CPU and CUDA backends share one definition of every scalar formula.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_HD_H
#define AMPC_RUNTIME_SRC_HD_H

#if defined(__CUDACC__)
#define AMPC_HD __host__ __device__ __forceinline__
#else
#define AMPC_HD inline
#endif

#endif // AMPC_RUNTIME_SRC_HD_H
