//===- cpu_isa.h - The instruction sets the CPU backend may use -*- C++ -*-===//
//
// One answer, for every kernel family of the CPU backend, to "which units
// may I use": what the processor has (cpuid, and the OS saving the AVX-512
// state), capped by AMPC_CPU_ISA=NAME. The names are oneDNN's
// (ONEDNN_MAX_CPU_ISA) and the cap is passed on to it (cpu_onednn.h), so
// one variable moves the GEMMs, the direct convolutions and the 16-bit
// conversions to the fallback paths together, e.g. AMPC_CPU_ISA=avx2 on an
// AMX machine:
//
//   sse41, avx        the scalar / SSE kernels
//   avx2, avx2_vnni   AVX2 + FMA + F16C
//   avx512_core (avx512), avx512_core_vnni
//                     AVX-512 F/BW/VL
//   avx512_core_bf16 (avx512_bf16)
//                     + AVX512-BF16 (vcvtneps2bf16, vdpbf16ps)
//   avx512_core_amx (amx), all
//                     + AMX-BF16 (oneDNN's GEMMs only); `all` is no cap
//
// An unknown name is reported once on stderr and ignored.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_ISA_H
#define AMPC_RUNTIME_CPU_CPU_ISA_H

namespace ampc {
namespace cpuisa {

/// The levels, in increasing order.
enum class Isa : int {
  Scalar = 0,
  Avx2 = 1,
  Avx512 = 2,
  Avx512Bf16 = 3,
  Amx = 4,
};

/// The best level this processor has, the cap aside.
Isa hardware();
/// The cap AMPC_CPU_ISA sets (Amx when unset), read once.
Isa cap();
/// Whether this processor runs `isa` and the cap allows it.
bool usable(Isa isa);
/// oneDNN's dnnl_cpu_isa_t for the cap, or -1 when there is none.
int dnnlCap();
const char *name(Isa isa);

} // namespace cpuisa
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_ISA_H
