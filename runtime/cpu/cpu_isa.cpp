//===- cpu_isa.cpp - The instruction sets the CPU backend may use ---------===//
//
// See cpu_isa.h.
//
//===----------------------------------------------------------------------===//
#include "cpu_isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ampc {
namespace cpuisa {
namespace {

struct IsaName {
  const char *name;
  Isa level;
  int dnnl; // dnnl_cpu_isa_t; -1: no cap
};

// The names AMPC_CPU_ISA takes: oneDNN's (ONEDNN_MAX_CPU_ISA) and short
// aliases.
const IsaName kIsaNames[] = {
    {"sse41", Isa::Scalar, 0x1},
    {"avx", Isa::Scalar, 0x3},
    {"avx2", Isa::Avx2, 0x7},
    {"avx2_vnni", Isa::Avx2, 0x407},
    {"avx512_core", Isa::Avx512, 0x27},
    {"avx512", Isa::Avx512, 0x27},
    {"avx512_core_vnni", Isa::Avx512, 0x67},
    {"avx512_core_bf16", Isa::Avx512Bf16, 0xe7},
    {"avx512_bf16", Isa::Avx512Bf16, 0xe7},
    {"avx512_core_amx", Isa::Amx, 0x3e7},
    {"amx", Isa::Amx, 0x3e7},
    {"all", Isa::Amx, -1},
};

struct Cap {
  Isa level = Isa::Amx;
  int dnnl = -1;
  const char *name = nullptr; // as given, when valid
};

const Cap &capFromEnvironment() {
  static const Cap c = [] {
    Cap r;
    const char *env = getenv("AMPC_CPU_ISA");
    if (!env || !*env)
      return r;
    for (const IsaName &n : kIsaNames)
      if (!strcasecmp(env, n.name)) {
        r.level = n.level;
        r.dnnl = n.dnnl;
        r.name = n.name;
        return r;
      }
    fprintf(stderr,
            "ampc runtime: AMPC_CPU_ISA=%s is not one of sse41, avx2, "
            "avx512_core, avx512_core_bf16, avx512_core_amx, all; ignored\n",
            env);
    return r;
  }();
  return c;
}

bool osSavesZmm() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
    return false; // no OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0xe6) == 0xe6; // SSE, AVX, opmask and both ZMM halves
#else
  return false;
#endif
}

} // namespace

Isa hardware() {
  static const Isa h = [] {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
      return Isa::Scalar;
    bool avx2 = (b & (1u << 5)) && __builtin_cpu_supports("fma");
    bool avx512 = (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)) &&
                  osSavesZmm();
    bool amx = (d & (1u << 22)) && (d & (1u << 24));
    unsigned a1 = 0, b1, c1, d1;
    __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
    bool bf16 = avx512 && (a1 & (1u << 5));
    if (bf16 && amx)
      return Isa::Amx;
    if (bf16)
      return Isa::Avx512Bf16;
    if (avx512)
      return Isa::Avx512;
    if (avx2)
      return Isa::Avx2;
#endif
    return Isa::Scalar;
  }();
  return h;
}

Isa cap() { return capFromEnvironment().level; }

bool usable(Isa isa) {
  return static_cast<int>(isa) <= static_cast<int>(hardware()) &&
         static_cast<int>(isa) <= static_cast<int>(cap());
}

int dnnlCap() { return capFromEnvironment().dnnl; }

const char *name(Isa isa) {
  switch (isa) {
  case Isa::Scalar:
    return "scalar";
  case Isa::Avx2:
    return "avx2";
  case Isa::Avx512:
    return "avx512_core";
  case Isa::Avx512Bf16:
    return "avx512_core_bf16";
  case Isa::Amx:
    return "avx512_core_amx";
  }
  return "?";
}

} // namespace cpuisa
} // namespace ampc
