//===- Target.h - precision from the target (--amp=auto) --------*- C++ -*-===//
//
// What processor a step is compiled or run for, and the AMP mode that pays
// there (docs/amp.md, "Precision from the target"): low precision only where
// the hardware runs it faster than f32. `ampc` fills a Target from
// `--cuda-arch=sm_XX`, the GPU's own compute capability (`run
// --device=cuda`) or `--cpu-features=` / /proc/cpuinfo, then chooses with
// chooseAmp and warns with ampWarning when an explicit `--amp` slows the
// target down or has no hardware support there.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_PIPELINES_TARGET_H
#define AMPC_PIPELINES_TARGET_H

#include "ampc/Pipelines/CudaCapability.h"
#include "ampc/Transforms/AMPPolicy.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <set>
#include <string>

namespace ampc {

/// The processor a step is for.
struct Target {
  enum class Kind { CPU, CUDA } kind = Kind::CPU;
  /// CUDA: the compute capability as major * 10 + minor (sm_61: 61).
  int sm = 0;
  /// CPU: /proc/cpuinfo flag names (`avx512_bf16`, `amx_bf16`, `f16c`).
  std::set<std::string> cpuFeatures;

  /// "cuda:sm_61"; "cpu:amx_bf16" (the most capable 16-bit unit the CPU
  /// has: amx_bf16, avx512_bf16, avx512_fp16, f16c) or "cpu" without one.
  std::string describe() const;
  bool hasCpu(llvm::StringRef feature) const {
    return cpuFeatures.count(feature.str()) != 0;
  }
};

/// Parses `sm_XX` for a GPU generation ampc emits code for (sm_60 ...
/// sm_120: 60 61 62 70 72 75 80 86 87 89 90 100 101 103 110 120). Returns
/// std::nullopt and sets `error` (one line naming the flag) otherwise.
std::optional<int> parseCudaArch(llvm::StringRef text, std::string &error);

/// The flags of a comma-separated `--cpu-features` list; an empty name or
/// one with characters /proc/cpuinfo never has is an error.
std::optional<std::set<std::string>> parseCpuFeatures(llvm::StringRef list,
                                                      std::string &error);

/// The flags of the processor this process runs on (/proc/cpuinfo's first
/// `flags` line); empty where it cannot be read.
std::set<std::string> hostCpuFeatures();

/// What `--amp=auto` chooses for `target`, and why (one sentence with the
/// figures of the table in docs/amp.md).
struct AmpChoice {
  amp::Mode mode = amp::Mode::Off;
  std::string reason;
};
AmpChoice chooseAmp(const Target &target);

/// The warning for an explicit `mode` that slows `target` down or that it
/// has no hardware support for (the mode is obeyed), or "".
std::string ampWarning(amp::Mode mode, const Target &target);

} // namespace ampc

#endif // AMPC_PIPELINES_TARGET_H
