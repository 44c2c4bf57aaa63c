//===- cpu_clones.h - Per-instruction-set clones of a loop ------*- C++ -*-===//
//
// The CPU backend compiles some of its element loops three times, for the
// baseline, for AVX2 and for AVX-512, and picks a clone at run time from
// the conversions' instruction set (cpu_fast.h's convertIsa(), which
// AMPC_CPU_ISA caps). A clone is a function with one of the target
// attributes below and AMPC_FLATTEN, calling loops marked
// AMPC_ALWAYS_INLINE, so that everything it runs is compiled for its
// instruction set and the compiler vectorises it as wide as that allows.
// The runtime is built with -ffp-contract=off: every clone performs the
// same IEEE operations, so they all give the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_CLONES_H
#define AMPC_RUNTIME_CPU_CPU_CLONES_H

#if defined(__GNUC__)
#define AMPC_ALWAYS_INLINE __attribute__((always_inline))
#define AMPC_FLATTEN __attribute__((flatten))
#else
#define AMPC_ALWAYS_INLINE
#define AMPC_FLATTEN
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define AMPC_CPU_CLONES 1
#define AMPC_AVX2_TARGET __attribute__((target("avx2,fma")))
#define AMPC_AVX512_TARGET                                                     \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#else
#define AMPC_CPU_CLONES 0
#endif

#endif // AMPC_RUNTIME_CPU_CPU_CLONES_H
