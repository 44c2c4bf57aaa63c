//===- Target.cpp - precision from the target (--amp=auto) ------*- C++ -*-===//
//
// The table of docs/amp.md ("Precision from the target") and the ways ampc
// learns the target: `--cuda-arch`, the GPU's compute capability through the
// CUDA driver (CudaCapability.cpp), `--cpu-features` or /proc/cpuinfo.
//
//===----------------------------------------------------------------------===//

#include "ampc/Pipelines/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"


using namespace ampc;

namespace {

/// The GPU generations ampc emits code for.
constexpr int kCudaArchs[] = {60, 61, 62, 70,  72,  75,  80, 86,
                              87, 89, 90, 100, 101, 103, 110, 120};

/// The CPU units that matter to 16-bit arithmetic, most capable first.
constexpr llvm::StringLiteral kCpuUnits[] = {"amx_bf16", "avx512_bf16",
                                             "avx512_fp16", "f16c"};

// The peak throughputs the table is built on (TFLOPS, half / single).
constexpr const char *kPascalFigures =
    "a GTX 1080 Ti (sm_61) does 0.17 TFLOPS in fp16 against 11.34 in f32, "
    "1/64";
constexpr const char *kTuringFigures =
    "an RTX 2080 Ti (sm_75) does 20.14 TFLOPS in fp16 against 10.07 in f32, "
    "plus fp16 tensor cores";

std::string smName(int sm) { return "sm_" + std::to_string(sm); }

} // namespace

std::string Target::describe() const {
  if (kind == Kind::CUDA)
    return "cuda:" + smName(sm);
  for (llvm::StringRef unit : kCpuUnits)
    if (hasCpu(unit))
      return ("cpu:" + unit).str();
  return "cpu";
}

std::optional<int> ampc::parseCudaArch(llvm::StringRef text,
                                       std::string &error) {
  std::string list;
  for (int sm : kCudaArchs)
    list += (list.empty() ? "" : " ") + smName(sm);
  unsigned value = 0;
  llvm::StringRef digits = text;
  if (digits.consume_front("sm_") && !digits.empty() &&
      digits.front() != '0' && llvm::all_of(digits, llvm::isDigit) &&
      !digits.getAsInteger(10, value) &&
      llvm::is_contained(kCudaArchs, static_cast<int>(value)))
    return static_cast<int>(value);
  error = "--cuda-arch must be a GPU generation sm_60 ... sm_120 (one of " +
          list + "), got '" + text.str() + "'";
  return std::nullopt;
}

std::optional<std::set<std::string>>
ampc::parseCpuFeatures(llvm::StringRef list, std::string &error) {
  std::set<std::string> features;
  llvm::SmallVector<llvm::StringRef> names;
  list.split(names, ',', -1, /*KeepEmpty=*/true);
  for (llvm::StringRef name : names) {
    name = name.trim();
    bool valid = !name.empty() && llvm::all_of(name, [](char c) {
      return llvm::isAlnum(c) || c == '_' || c == '.';
    });
    if (!valid) {
      error = "--cpu-features takes /proc/cpuinfo flag names separated by "
              "commas (such as 'avx512_bf16,f16c'), got '" +
              list.str() + "'";
      return std::nullopt;
    }
    features.insert(name.lower());
  }
  return features;
}

std::set<std::string> ampc::hostCpuFeatures() {
  std::set<std::string> features;
  // /proc files report size 0: read them as a stream.
  auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo");
  if (!buffer)
    return features;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    auto [key, value] = line.split(':');
    // x86 says `flags`, arm64 `Features`.
    if (key.trim() != "flags" && key.trim() != "Features")
      continue;
    llvm::SmallVector<llvm::StringRef> names;
    value.split(names, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef name : names)
      features.insert(name.trim().str());
    break;
  }
  return features;
}

AmpChoice ampc::chooseAmp(const Target &target) {
  AmpChoice c;
  if (target.kind == Target::Kind::CUDA) {
    int sm = target.sm;
    std::string name = smName(sm);
    if (sm < 60) {
      c.mode = amp::Mode::Off;
      c.reason = name + " is below sm_60: no fp16 arithmetic faster than f32 "
                        "and no tensor cores";
    } else if (sm == 61) {
      c.mode = amp::Mode::Off;
      c.reason = name + " (consumer Pascal) runs fp16 at 1/64 of f32: " +
                 kPascalFigures;
    } else if (sm < 70) {
      c.mode = amp::Mode::FP16;
      c.reason = name + " runs fp16 at 2x f32 (no tensor cores, no bf16); "
                        "dynamic loss scaling";
    } else if (sm < 80) {
      c.mode = amp::Mode::FP16;
      c.reason = name + " has fp16 tensor cores and no bf16 arithmetic (" +
                 kTuringFigures + "); dynamic loss scaling";
    } else {
      c.mode = amp::Mode::BF16;
      c.reason = name + " has bf16 tensor cores (sm_80 and later) at the "
                        "rate of fp16, with f32's range: no loss scaling";
    }
    return c;
  }
  for (llvm::StringRef unit : {"amx_bf16", "avx512_bf16"})
    if (target.hasCpu(unit)) {
      c.mode = amp::Mode::BF16;
      c.reason = ("the CPU has " + unit +
                  ": bf16 GEMMs and convolutions run faster than f32 (dot "
                  "products of bf16 pairs into f32)")
                     .str();
      return c;
    }
  c.mode = amp::Mode::Off;
  c.reason = "the CPU has neither amx_bf16 nor avx512_bf16: 16-bit floats "
             "are storage only there (converted to f32 for every op), so "
             "f32 is as fast";
  return c;
}

std::string ampc::ampWarning(amp::Mode mode, const Target &target) {
  if (mode == amp::Mode::Off)
    return "";
  std::string flag = mode == amp::Mode::FP16 ? "--amp=fp16" : "--amp=bf16";
  if (target.kind == Target::Kind::CUDA) {
    int sm = target.sm;
    std::string name = smName(sm);
    if (mode == amp::Mode::FP16 && sm == 61)
      return flag + " slows " + name + " down: consumer Pascal runs fp16 at "
             "1/64 of f32 (" + kPascalFigures + "); applying it as asked "
             "(--amp=auto chooses off there)";
    if (mode == amp::Mode::FP16 && sm < 60)
      return flag + ": " + name + " has no fp16 arithmetic faster than f32 "
             "(below sm_60); applying it as asked";
    if (mode == amp::Mode::BF16 && sm < 80)
      return flag + ": " + name + " has no bf16 hardware support (bf16 "
             "tensor cores start at sm_80): bf16 ops run as f32 arithmetic "
             "with conversions, slower than f32; applying it as asked" +
             (sm >= 60 && sm != 61 ? " (--amp=auto chooses fp16 there: " +
                                         std::string(sm >= 70
                                                         ? kTuringFigures
                                                         : "fp16 at 2x f32") +
                                         ")"
                                   : std::string(" (--amp=auto chooses off "
                                                 "there)"));
    return "";
  }
  if (mode == amp::Mode::BF16 && !target.hasCpu("amx_bf16") &&
      !target.hasCpu("avx512_bf16"))
    return flag + ": the CPU has no bf16 arithmetic units (neither amx_bf16 "
           "nor avx512_bf16): bf16 is storage only there, every op converts "
           "to f32 and back, slower than f32; applying it as asked";
  if (mode == amp::Mode::FP16 && !target.hasCpu("avx512_fp16") &&
      !target.hasCpu("amx_fp16"))
    return flag + ": the CPU has no fp16 arithmetic units (neither "
           "avx512_fp16 nor amx_fp16): fp16 is storage only there and every "
           "op converts to f32 and back (ampc's fp16 steps ran at 0.91x the "
           "f32 rate on an AVX512-BF16 CPU without them); applying it as "
           "asked" +
           (target.hasCpu("amx_bf16") || target.hasCpu("avx512_bf16")
                ? " (--amp=auto chooses bf16 there)"
                : " (--amp=auto chooses off there)");
  if (mode == amp::Mode::FP16)
    // The units are there, but the CPU backend does not use them: oneDNN
    // 2.x has no f16 GEMMs or convolutions on CPUs, and the elementwise
    // ops compute in f32.
    return flag + ": ampc's CPU backend has no fp16 kernels for this CPU's "
           "fp16 units (" +
           std::string(target.hasCpu("avx512_fp16") ? "avx512_fp16"
                                                     : "amx_fp16") +
           "): fp16 is storage only and every op converts to f32 and back "
           "(ampc's fp16 steps ran at 0.99x the f32 rate on a Xeon with "
           "AVX512-FP16 and AMX); applying it as asked" +
           (target.hasCpu("amx_bf16") || target.hasCpu("avx512_bf16")
                ? " (--amp=auto chooses bf16 there)"
                : " (--amp=auto chooses off there)");
  return "";
}
