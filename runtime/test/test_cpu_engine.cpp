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

// ampc_context_take_engines: what the calls since the last take ran on,
// each name once, then nothing until the next call; every name it gives
// is one ampc_context_engine lists (or openblas / f64).
TEST_F(CpuEngine, TakesTheEnginesOfTheCallsSinceTheLastTake) {
  auto take = [&]() {
    char text[512];
    EXPECT_EQ(ampc_context_take_engines(ctx, text, sizeof text), AMPC_OK)
        << ampc_last_error();
    return std::string(text);
  };
  EXPECT_EQ(take(), ""); // nothing ran yet
  Tensor a = randomTensor({64, 64}, AMPC_F32), b = randomTensor({64, 64},
                                                                AMPC_F32);
  Tensor c({64, 64}, AMPC_F32);
  ASSERT_OK(gemm(ctx, c, a, b, 64, 64, 64));
  ASSERT_OK(gemm(ctx, c, a, b, 64, 64, 64));
  std::string first = take();
  SCOPED_TRACE(first);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.find(", "), std::string::npos); // one problem, one engine
  EXPECT_EQ(take(), ""); // forgotten
  std::string all = engine();
  EXPECT_NE(all.find(first), std::string::npos) << all;
  const char *gemmEngine = getenv("AMPC_CPU_GEMM");
  if (gemmEngine && std::string(gemmEngine) == "openblas")
    EXPECT_EQ(first, "openblas");
  // f64 products run on the runtime's own loops.
  Tensor a64 = randomTensor({8, 8}, AMPC_F64), b64 = randomTensor({8, 8},
                                                                  AMPC_F64);
  Tensor c64({8, 8}, AMPC_F64);
  const int64_t shape[2] = {8, 8};
  ASSERT_OK(ampc_matmul_fwd(ctx, c64.data(), AMPC_F64, shape, 2, a64.data(),
                            AMPC_F64, shape, 2, b64.data(), AMPC_F64, shape,
                            2));
  EXPECT_EQ(take(), "f64");
  // Arguments as for ampc_context_engine.
  char small[4];
  ASSERT_OK(gemm(ctx, c, a, b, 64, 64, 64));
  ASSERT_OK(ampc_context_take_engines(ctx, small, sizeof small));
  EXPECT_EQ(strlen(small), sizeof small - 1); // cut to fit, terminated
  EXPECT_EQ(take(), "");
  EXPECT_EQ(ampc_context_take_engines(ctx, nullptr, 0), AMPC_OK);
  EXPECT_EQ(ampc_context_take_engines(ctx, nullptr, 4),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_NE(ampc_context_take_engines(nullptr, small, sizeof small), AMPC_OK);
}

// Operands read along k across rows a multiple of 2 KiB apart (a
// transposed A, an untransposed B) are copied with padded rows before
// oneDNN's f32 gemm:jit kernels read them (cache-set conflicts:
// cpu_gemm_tiles.h, conflictingOperands): the same values in the same
// kernels, so the same bits as reading them where they are
// (AMPC_CPU_GEMM_PAD=off); planning makes the padded problem's primitive,
// so the call after it makes none.
TEST_F(CpuEngine, PaddedOperandsGiveTheBitsOfTheOperandsAsTheyAre) {
  struct Case {
    int64_t batch, m, n, k;
    bool ta, tb, broadcastA;
    ampc_dtype dt;
  } cases[] = {
      {1, 1024, 256, 1024, true, false, false, AMPC_F32}, // X^T dY
      {1, 256, 1024, 1024, false, false, false, AMPC_F32},
      {1, 512, 512, 512, true, true, false, AMPC_F32},
      {2, 512, 256, 512, true, false, true, AMPC_F32}, // A for the batch
      {1, 512, 256, 1024, true, false, false, AMPC_F16}, // widened as copied
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.batch) + " x " + std::to_string(c.m) +
                 " x " + std::to_string(c.n) + " x " + std::to_string(c.k) +
                 (c.ta ? " tA" : "") + (c.tb ? " tB" : "") +
                 (c.dt == AMPC_F16 ? " f16" : ""));
    int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
    int64_t sizeA = c.m * c.k, sizeB = c.k * c.n;
    Tensor a = randomTensor({c.broadcastA ? 1 : c.batch, sizeA}, c.dt);
    Tensor b = randomTensor({c.batch, sizeB}, c.dt);
    auto run = [&](const char *pad, bool plan) {
      if (pad)
        setenv("AMPC_CPU_GEMM_PAD", pad, 1);
      else
        unsetenv("AMPC_CPU_GEMM_PAD");
      Tensor out({c.batch, c.m * c.n}, AMPC_F32);
      auto call = [&]() {
        return ampc_gemm(ctx, out.data(), AMPC_F32, a.data(), c.dt, b.data(),
                         c.dt, nullptr, AMPC_F32, c.batch, c.m, c.n, c.k,
                         c.ta, c.tb, lda, ldb, c.n,
                         c.broadcastA ? 0 : sizeA, sizeB, c.m * c.n, 1.0f,
                         0.0f, AMPC_EPILOGUE_NONE);
      };
      int64_t before = 0, planned = 0, after = 0;
      EXPECT_OK(ampc_context_primitives(ctx, &before));
      if (plan) {
        EXPECT_OK(ampc_plan_begin(ctx));
        EXPECT_OK(call());
        EXPECT_OK(ampc_plan_end(ctx));
      }
      EXPECT_OK(ampc_context_primitives(ctx, &planned));
      EXPECT_OK(call());
      EXPECT_OK(ampc_context_primitives(ctx, &after));
      if (plan)
        EXPECT_EQ(after, planned); // the planned primitives ran
      unsetenv("AMPC_CPU_GEMM_PAD");
      return std::make_pair(out, after - before);
    };
    Tensor asIs = run("off", false).first;
    char text[256];
    ASSERT_OK(ampc_context_take_engines(ctx, text, sizeof text));
    bool jit = std::string(text) == "gemm:jit";
    auto [padded, madePadded] = run(nullptr, true);
    // Where gemm:jit runs them the copies make problems of their own.
    EXPECT_EQ(madePadded > 0, jit) << text;
    ASSERT_EQ(asIs.bytes, padded.bytes);
    // And the values are the products: some entries against f64 sums.
    for (int64_t e = 0; e < c.batch * c.m * c.n; e += 997) {
      int64_t i = e / (c.m * c.n), r = e % (c.m * c.n) / c.n, col = e % c.n;
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        double x = a.get((c.broadcastA ? 0 : i * sizeA) +
                         (c.ta ? p * lda + r : r * lda + p));
        double y = b.get(i * sizeB + (c.tb ? col * ldb + p : p * ldb + col));
        sum += x * y;
        mag += std::fabs(x * y);
      }
      EXPECT_NEAR(padded.get(e), sum, mag * c.k * 6e-8) << e;
    }
  }
}

// A product whose C is one tile but whose k is long (the weight gradient
// Xᵀ dY of a narrow layer over many tokens) runs as a batch of partial
// products over equal blocks of k, summed in block order, then alpha, beta
// C, the bias and the epilogue, rounded once (cpu_gemm_tiles.h,
// kSplitParts): the bits of that batch (ampc_gemm's strided batch over the
// same blocks) summed the same way here, and the values the products'.
// Planning makes the batch's primitives; AMPC_CPU_GEMM_SPLIT=off leaves
// the product whole.
TEST_F(CpuEngine, LongKProductsOfOneTileAreSummedInBlocks) {
  struct Case {
    int64_t m, n, k, parts;
    bool ta, tb;
    ampc_dtype in, out;
    float alpha, beta;
    bool bias;
    ampc_epilogue epilogue;
  } cases[] = {
      {64, 192, 8192, 8, true, false, AMPC_F32, AMPC_F32, 1.0f, 0.0f, false,
       AMPC_EPILOGUE_NONE}, // Xᵀ dY
      {128, 64, 3072, 3, true, false, AMPC_BF16, AMPC_BF16, 1.0f, 0.0f, false,
       AMPC_EPILOGUE_NONE}, // rounded once into bf16; 3 blocks of 2^23
      {64, 96, 4096, 2, false, true, AMPC_F16, AMPC_F32, 0.5f, 1.0f, true,
       AMPC_EPILOGUE_RELU}, // alpha, beta, bias, epilogue; 3 would not divide k
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + " x " + std::to_string(c.n) + " x " +
                 std::to_string(c.k));
    int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
    Tensor a = randomTensor({c.m * c.k}, c.in);
    Tensor b = randomTensor({c.k * c.n}, c.in);
    Tensor bias = randomTensor({c.n}, AMPC_F32);
    Tensor c0 = randomTensor({c.m * c.n}, c.out); // C before, for beta
    auto call = [&](Tensor &out) {
      return ampc_gemm(ctx, out.data(), c.out, a.data(), c.in, b.data(), c.in,
                       c.bias ? bias.data() : nullptr, AMPC_F32, 1, c.m, c.n,
                       c.k, c.ta, c.tb, lda, ldb, c.n, 0, 0, 0, c.alpha,
                       c.beta, c.epilogue);
    };
    // Planned, then run: the batch's primitives are made by planning.
    Tensor split = c0;
    int64_t planned = 0, after = 0;
    ASSERT_OK(ampc_plan_begin(ctx));
    ASSERT_OK(call(split));
    ASSERT_OK(ampc_plan_end(ctx));
    split = c0;
    ASSERT_OK(ampc_context_primitives(ctx, &planned));
    ASSERT_OK(call(split));
    ASSERT_OK(ampc_context_primitives(ctx, &after));
    EXPECT_EQ(after, planned);
    // The partial products as ampc_gemm's strided batch over the blocks.
    int64_t kb = c.k / c.parts;
    Tensor partials({c.parts * c.m * c.n}, AMPC_F32);
    ASSERT_OK(ampc_gemm(ctx, partials.data(), AMPC_F32, a.data(), c.in,
                        b.data(), c.in, nullptr, AMPC_F32, c.parts, c.m, c.n,
                        kb, c.ta, c.tb, lda, ldb, c.n, c.ta ? kb * lda : kb,
                        c.tb ? kb : kb * ldb, c.m * c.n, 1.0f, 0.0f,
                        AMPC_EPILOGUE_NONE));
    Tensor expect({c.m * c.n}, c.out);
    for (int64_t e = 0; e < c.m * c.n; ++e) {
      float s = static_cast<float>(partials.get(e));
      for (int64_t p = 1; p < c.parts; ++p)
        s += static_cast<float>(partials.get(p * c.m * c.n + e));
      if (c.alpha != 1.0f)
        s *= c.alpha;
      if (c.beta != 0.0f)
        s += c.beta * static_cast<float>(c0.get(e));
      if (c.bias)
        s += static_cast<float>(bias.get(e % c.n));
      if (c.epilogue == AMPC_EPILOGUE_RELU)
        s = s > 0.0f ? s : 0.0f;
      expect.set(e, s);
    }
    ASSERT_EQ(split.bytes, expect.bytes);
    // The values: some entries against f64 sums.
    for (int64_t e = 0; e < c.m * c.n; e += 97) {
      int64_t r = e / c.n, col = e % c.n;
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        double x = a.get(c.ta ? p * lda + r : r * lda + p);
        double y = b.get(c.tb ? col * ldb + p : p * ldb + col);
        sum += x * y;
        mag += std::fabs(x * y);
      }
      double v = c.alpha * sum + c.beta * c0.get(e) +
                 (c.bias ? bias.get(col) : 0.0);
      if (c.epilogue == AMPC_EPILOGUE_RELU)
        v = std::max(v, 0.0);
      double rounding = c.out == AMPC_BF16 ? std::fabs(v) * 0x1p-8 : 0.0;
      EXPECT_NEAR(split.get(e), v, mag * c.k * 6e-8 + rounding + 1e-6) << e;
    }
    // Whole under AMPC_CPU_GEMM_SPLIT=off (one call over all of k): the
    // same values to the accumulation's rounding.
    setenv("AMPC_CPU_GEMM_SPLIT", "off", 1);
    Tensor whole = c0;
    ASSERT_OK(call(whole));
    unsetenv("AMPC_CPU_GEMM_SPLIT");
    for (int64_t e = 0; e < c.m * c.n; e += 97)
      EXPECT_NEAR(whole.get(e), split.get(e),
                  1e-4 + std::fabs(split.get(e)) *
                             (c.out == AMPC_BF16 ? 0x1p-7 : 1e-5))
          << e;
  }
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

// oneDNN's brgemm kernels take only dense operands. Where they run bf16
// (on bf16 units), a strided operand (one attention head of a wider
// activation, a block of columns of B) is copied dense first, and a long C
// is split into blocks of rows, which stay dense; the copies change no bit:
// each GEMM on strided operands gives the bits of the same GEMM on dense
// copies. Elsewhere the two may run different f32 kernels: both are checked
// against the reference.
TEST_F(CpuEngine, StridedBf16OperandsGiveTheBitsOfDenseOnes) {
  std::string units = engine();
  bool bf16Units = units.find("avx512_core_bf16") != std::string::npos ||
                   units.find("avx512_core_amx") != std::string::npos;
  struct Case {
    int64_t m, n, k;
    int ta, tb;
    int64_t spread; // rows of A and B this many times longer
  };
  const Case cases[] = {
      {128, 128, 64, 0, 1, 4},  // Q K^T of one head
      {128, 64, 128, 0, 0, 3},  // P V, V one head
      {128, 64, 128, 1, 0, 2},  // P^T dO
      {64, 1536, 256, 0, 0, 1}, // blocks of columns (m below 256)
      {64, 1536, 256, 0, 1, 2},
      {520, 1024, 256, 0, 0, 1}, // blocks of rows
      {300, 700, 96, 0, 1, 2},
      {256, 1024, 512, 1, 0, 1}, // X^T dY: blocks of columns, A transposed
  };
  for (const Case &t : cases) {
    SCOPED_TRACE(std::to_string(t.m) + "x" + std::to_string(t.n) + "x" +
                 std::to_string(t.k) + " ta " + std::to_string(t.ta) +
                 " tb " + std::to_string(t.tb) + " spread " +
                 std::to_string(t.spread));
    int64_t ar = t.ta ? t.k : t.m, ac = t.ta ? t.m : t.k;
    int64_t br = t.tb ? t.n : t.k, bc = t.tb ? t.k : t.n;
    Tensor wideA = randomTensor({ar, ac * t.spread}, AMPC_BF16);
    Tensor wideB = randomTensor({br, bc * t.spread}, AMPC_BF16);
    Tensor a({ar, ac}, AMPC_BF16), b({br, bc}, AMPC_BF16);
    for (int64_t r = 0; r < ar; ++r)
      for (int64_t c = 0; c < ac; ++c)
        a.set(r * ac + c, wideA.get(r * ac * t.spread + c));
    for (int64_t r = 0; r < br; ++r)
      for (int64_t c = 0; c < bc; ++c)
        b.set(r * bc + c, wideB.get(r * bc * t.spread + c));
    Tensor strided({t.m, t.n}, AMPC_F32), dense({t.m, t.n}, AMPC_F32);
    ASSERT_OK(ampc_gemm(ctx, strided.data(), AMPC_F32, wideA.data(),
                        AMPC_BF16, wideB.data(), AMPC_BF16, nullptr, AMPC_F32,
                        1, t.m, t.n, t.k, t.ta, t.tb, ac * t.spread,
                        bc * t.spread, t.n, 0, 0, 0, 1.0f, 0.0f,
                        AMPC_EPILOGUE_NONE));
    ASSERT_OK(gemm(ctx, dense, a, b, t.m, t.n, t.k, t.ta, t.tb));
    double worst = 0;
    int64_t differ = 0;
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.n; ++j) {
        float got = static_cast<float>(strided.get(i * t.n + j));
        differ += bitsOf(got) !=
                  bitsOf(static_cast<float>(dense.get(i * t.n + j)));
        if (i % 37 != 0) // the reference on some rows of every tile
          continue;
        double s = 0, mag = 0;
        for (int64_t p = 0; p < t.k; ++p) {
          double v = a.get(t.ta ? p * t.m + i : i * t.k + p) *
                     b.get(t.tb ? j * t.k + p : p * t.n + j);
          s += v;
          mag += std::fabs(v);
        }
        worst = std::max(worst, std::fabs(got - s) / std::max(mag, 1e-30));
      }
    EXPECT_LT(worst, 2e-6);
    if (bf16Units)
      EXPECT_EQ(differ, 0) << units;
  }
}

// A 16-bit C goes through f32 scratch a tile at a time, in blocks of rows
// small enough to stay in L2 (cpu_gemm_tiles.h, tilesOf): every block lands
// in its place, each element the f32 result rounded once (checked against
// the f64 reference on every row, to the f32 accumulation's error plus
// half a bf16 ulp).
TEST_F(CpuEngine, Bf16ResultsInBlocksOfRowsMatchTheReference) {
  const int64_t m = 520, n = 1024, k = 96;
  Tensor a = randomTensor({m, k}, AMPC_BF16),
         b = randomTensor({k, n}, AMPC_BF16);
  Tensor c({m, n}, AMPC_BF16);
  ASSERT_OK(gemm(ctx, c, a, b, m, n, k));
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; j += 7) {
      double s = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        double t = a.get(i * k + p) * b.get(p * n + j);
        s += t;
        mag += std::fabs(t);
      }
      double err = std::fabs(c.get(i * n + j) - s) -
                   std::ldexp(std::fabs(s), -8); // half an ulp of bf16
      worst = std::max(worst, err / std::max(mag, 1e-30));
    }
  EXPECT_LT(worst, 2e-6);
}

} // namespace
