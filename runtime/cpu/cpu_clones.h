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

#include "cpu_fast.h"

#include <atomic>

#if defined(__GNUC__)
#define AMPC_ALWAYS_INLINE __attribute__((always_inline))
#define AMPC_FLATTEN __attribute__((flatten))
#else
#define AMPC_ALWAYS_INLINE
#define AMPC_FLATTEN
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define AMPC_CPU_CLONES 1
// The AVX2 clones also have F16C: the AVX2 clone runs only where both are
// (cpufast::convertSupported).
#define AMPC_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define AMPC_AVX512_TARGET                                                     \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
// The three clones NAME##Base, NAME##AVX2 and NAME##AVX512 as CloneSet's
// constructor takes them (the last two null where they are not compiled).
#define AMPC_CLONES_OF(NAME) NAME##Base, &NAME##AVX2, &NAME##AVX512
// MACRO(SUFFIX, TARGET) for each clone compiled here: Base (no target
// attribute), AVX2 and AVX512.
#define AMPC_EACH_CLONE(MACRO)                                                 \
  MACRO(Base, )                                                                \
  MACRO(AVX2, AMPC_AVX2_TARGET)                                                \
  MACRO(AVX512, AMPC_AVX512_TARGET)
#else
#define AMPC_CPU_CLONES 0
#define AMPC_CLONES_OF(NAME) NAME##Base, nullptr, nullptr
#define AMPC_EACH_CLONE(MACRO) MACRO(Base, )
#endif

// FN(), returning the CloneSet<LOOPS> of the clones NAME##Base,
// NAME##AVX2 and NAME##AVX512 (the ones compiled here).
#define AMPC_CLONE_SET(LOOPS, NAME, FN)                                        \
  CloneSet<LOOPS> &FN() {                                                      \
    static CloneSet<LOOPS> set(AMPC_CLONES_OF(NAME));                          \
    return set;                                                                \
  }

namespace ampc {

/// One family of loops compiled per instruction set (a struct of function
/// pointers per clone): the clone in use is that of the conversions'
/// instruction set (cpufast::convertIsa(), which AMPC_CPU_ISA caps; AVX-512
/// with or without AVX512-BF16, AVX2, else the baseline), unless a test
/// chose another with use().
template <typename Loops> class CloneSet {
public:
  CloneSet(const Loops &base, const Loops *avx2, const Loops *avx512)
      : base(base), avx2(avx2), avx512(avx512),
        inUse(&forIsa(cpufast::convertIsa())) {}

  const Loops &get() const { return *inUse.load(std::memory_order_relaxed); }
  /// Every later get() returns `isa`'s clone (it must be supported; tests
  /// only, not thread-safe against running kernels).
  void use(cpufast::ConvertIsa isa) {
    inUse.store(&forIsa(isa), std::memory_order_relaxed);
  }

private:
  const Loops &forIsa(cpufast::ConvertIsa isa) const {
    if (avx512 && (isa == cpufast::ConvertIsa::AVX512 ||
                   isa == cpufast::ConvertIsa::AVX512BF16))
      return *avx512;
    if (avx2 && isa == cpufast::ConvertIsa::AVX2)
      return *avx2;
    return base;
  }

  const Loops &base;
  const Loops *avx2, *avx512;
  std::atomic<const Loops *> inUse;
};

} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_CLONES_H
