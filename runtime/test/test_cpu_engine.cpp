//===- test_cpu_engine.cpp - The CPU backend's GEMM engine (oneDNN) -------===//
//
// GEMMs on the CPU run on oneDNN's matmul (cpu/cpu_onednn.h) when
// libdnnl.so.2 loads: bf16 operands are read as they are, with f32
// accumulation and one rounding at the end; AMPC_CPU_ISA caps the units
// (CI runs this binary again with AMPC_CPU_ISA=avx2, the fallback path) and
// ampc_context_engine names them.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cstdlib>
#include <fstream>
#include <regex>

using namespace ampc_test;

namespace {

class CpuEngine : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  }
  void TearDown() override { ampc_context_destroy(ctx); }

  std::string engine() {
    char text[512];
    EXPECT_EQ(ampc_context_engine(ctx, text, sizeof text), AMPC_OK)
        << ampc_last_error();
    return text;
  }

  ampc_context ctx = nullptr;
};

/// Whether /proc/cpuinfo lists `flag`.
bool cpuHas(const std::string &flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

/// C = A * B on one f32 problem of shape m x n x k with A and B in `dt`,
/// row-major, no transposes.
ampc_status gemm(ampc_context ctx, Tensor &c, Tensor &a, Tensor &b,
                 int64_t m, int64_t n, int64_t k, bool ta = false,
                 bool tb = false) {
  return ampc_gemm(ctx, c.data(), c.dtype, a.data(), a.dtype, b.data(),
                   b.dtype, nullptr, AMPC_F32, 1, m, n, k, ta, tb,
                   ta ? m : k, tb ? k : n, n, 0, 0, 0, 1.0f, 0.0f,
                   AMPC_EPILOGUE_NONE);
}

TEST_F(CpuEngine, NamesTheUnitsItRuns) {
  std::string before = engine();
  ASSERT_FALSE(before.empty());
  Tensor a = randomTensor({64, 64}, AMPC_BF16), b = randomTensor({64, 64},
                                                                 AMPC_BF16);
  Tensor c({64, 64}, AMPC_F32);
  ASSERT_OK(gemm(ctx, c, a, b, 64, 64, 64));
  std::string after = engine();
  SCOPED_TRACE(after);
  const char *gemmEngine = getenv("AMPC_CPU_GEMM");
  if (gemmEngine && std::string(gemmEngine) == "openblas") {
    EXPECT_EQ(after, "openblas (AMPC_CPU_GEMM=openblas)");
    return;
  }
#ifndef AMPC_TEST_EXPECT_ONEDNN
  // A runtime built without oneDNN's header (the GPU machine's standalone
  // build) runs every GEMM on OpenBLAS and says why.
  EXPECT_EQ(after, "openblas (the runtime was built without oneDNN's headers)");
  return;
#endif
  // oneDNN is installed wherever the test suite runs (scripts/setup.sh).
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      after, m,
      std::regex("([a-z0-9_]+) \\(oneDNN 2\\.[0-9]+\\.[0-9]+; gemm (.+)\\)")));
  std::string isa = m[1];
  const char *cap = getenv("AMPC_CPU_ISA");
  if (cap && std::string(cap) == "avx2") {
    EXPECT_EQ(isa, "avx2");
    EXPECT_EQ(m[2].str().find("avx512"), std::string::npos);
  } else if (!cap && cpuHas("avx512_bf16")) {
    EXPECT_TRUE(isa == "avx512_core_bf16" || isa == "avx512_core_amx");
    // The bf16 GEMM runs on the bf16 units.
    EXPECT_NE(m[2].str().find(cpuHas("amx_bf16") ? "amx" : "bf16"),
              std::string::npos);
  }
}

TEST_F(CpuEngine, EngineTextArguments) {
  char small[8];
  ASSERT_OK(ampc_context_engine(ctx, small, sizeof small));
  EXPECT_EQ(strlen(small), sizeof small - 1); // cut to fit, terminated
  EXPECT_EQ(ampc_context_engine(ctx, nullptr, 0), AMPC_OK);
  EXPECT_EQ(ampc_context_engine(ctx, nullptr, 4), AMPC_ERROR_NULL_POINTER);
  EXPECT_NE(ampc_context_engine(nullptr, small, sizeof small), AMPC_OK);
}

// 1 + 511 * 2^-9 is exact in f32 and needs 10 significant bits: a 16-bit
// accumulator would stop at 1 + 2^-8 steps; f32 accumulation gets it, and a
// bf16 result is that sum rounded once (to 2).
TEST_F(CpuEngine, Bf16OperandsAccumulateInF32AndRoundOnce) {
  const int64_t k = 512;
  for (ampc_dtype out : {AMPC_F32, AMPC_BF16}) {
    Tensor a({1, k}, AMPC_BF16), b({k, 1}, AMPC_BF16), c({1, 1}, out);
    for (int64_t p = 0; p < k; ++p) {
      a.set(p, 1.0);
      b.set(p, p == 0 ? 1.0 : std::ldexp(1.0, -9));
    }
    ASSERT_OK(gemm(ctx, c, a, b, 1, 1, k));
    EXPECT_EQ(c.get(0), out == AMPC_F32 ? 1.0 + 511.0 / 512.0 : 2.0);
  }
}

// Large enough to be split into tiles (and run on the pool); every
// transpose; bf16 products are exact in f32, so the only error is the f32
// accumulation's.
TEST_F(CpuEngine, TiledBf16GemmMatchesTheReference) {
  const int64_t m = 600, n = 520, k = 96;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE("ta " + std::to_string(ta) + " tb " + std::to_string(tb));
      Tensor a = randomTensor({ta ? k : m, ta ? m : k}, AMPC_BF16);
      Tensor b = randomTensor({tb ? n : k, tb ? k : n}, AMPC_BF16);
      Tensor c({m, n}, AMPC_F32);
      ASSERT_OK(gemm(ctx, c, a, b, m, n, k, ta, tb));
      double worst = 0;
      for (int64_t i = 0; i < m; i += 29) // rows of every tile
        for (int64_t j = 0; j < n; ++j) {
          double s = 0, mag = 0;
          for (int64_t p = 0; p < k; ++p) {
            double t = a.get(ta ? p * m + i : i * k + p) *
                       b.get(tb ? j * k + p : p * n + j);
            s += t;
            mag += std::fabs(t);
          }
          worst = std::max(worst, std::fabs(c.get(i * n + j) - s) /
                                      std::max(mag, 1e-30));
        }
      EXPECT_LT(worst, 2e-6); // k * 2^-24 of the terms' magnitude at most
    }
}

} // namespace
