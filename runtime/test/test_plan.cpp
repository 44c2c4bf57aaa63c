//===- test_plan.cpp - Primitives made before the first step --------------===//
//
// Between ampc_plan_begin and ampc_plan_end the GEMM and convolution entry
// points make the primitives their calls use and touch no tensor data: the
// operands keep a sentinel, the context's primitive count grows by what the
// same call makes in a context that never planned, the real call then makes
// none, and its result is the unplanned context's bit for bit. (CI also runs
// these with oneDNN capped at AVX2 and with GEMMs on OpenBLAS, where a GEMM
// may make no primitive: the counts are compared, not assumed.)
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <algorithm>
#include <cstdlib>

using namespace ampc_test;

namespace {

int64_t primitives(ampc_context ctx) {
  int64_t n = -1;
  EXPECT_EQ(ampc_context_primitives(ctx, &n), AMPC_OK) << ampc_last_error();
  return n;
}

/// Every byte of `t` set to 0x5A (finite in f32, f16 and bf16).
void sentinel(Tensor &t) { std::fill(t.bytes.begin(), t.bytes.end(), 0x5A); }
bool untouched(const Tensor &t) {
  return std::all_of(t.bytes.begin(), t.bytes.end(),
                     [](uint8_t b) { return b == 0x5A; });
}

/// One program's calls on the tensors `ts` (its outputs and inputs).
using Calls = std::function<ampc_status(ampc_context, std::vector<Tensor> &)>;

/// Plans `calls` on sentinel tensors shaped as `inputs`, checks that nothing
/// was touched and that planning made what running makes, then runs them on
/// `inputs` and checks that running made nothing more and gives the bits of
/// a context that never planned. Returns the primitives made.
int64_t checkPlanned(const Calls &calls, const std::vector<Tensor> &inputs) {
  ampc_context planned = nullptr, plain = nullptr;
  EXPECT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &planned), AMPC_OK);
  EXPECT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &plain), AMPC_OK);
  std::vector<Tensor> marked = inputs;
  for (Tensor &t : marked)
    sentinel(t);
  EXPECT_EQ(primitives(planned), 0);
  EXPECT_EQ(ampc_plan_begin(planned), AMPC_OK) << ampc_last_error();
  EXPECT_EQ(calls(planned, marked), AMPC_OK) << ampc_last_error();
  EXPECT_EQ(ampc_plan_end(planned), AMPC_OK) << ampc_last_error();
  for (size_t i = 0; i < marked.size(); ++i)
    EXPECT_TRUE(untouched(marked[i])) << "tensor " << i << " was touched";
  int64_t made = primitives(planned);

  std::vector<Tensor> ran = inputs, want = inputs;
  EXPECT_EQ(calls(planned, ran), AMPC_OK) << ampc_last_error();
  EXPECT_EQ(primitives(planned), made) << "the call made a primitive";
  EXPECT_EQ(calls(plain, want), AMPC_OK) << ampc_last_error();
  EXPECT_EQ(primitives(plain), made) << "planning made other primitives";
  for (size_t i = 0; i < ran.size(); ++i)
    EXPECT_EQ(ran[i].bytes, want[i].bytes) << "tensor " << i << " differs";
  ampc_context_destroy(planned);
  ampc_context_destroy(plain);
  return made;
}

/// Whether oneDNN loads and the environment variable `off` (AMPC_CPU_GEMM,
/// AMPC_CPU_CONV) does not send the work elsewhere.
bool onednnRuns(const char *off) {
  char engine[512] = "";
  ampc_context ctx;
  EXPECT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), AMPC_OK);
  EXPECT_EQ(ampc_context_engine(ctx, engine, sizeof engine), AMPC_OK);
  ampc_context_destroy(ctx);
  // Every fallback's text begins "openblas (" and says why, which may name
  // oneDNN ("oneDNN not loaded: ...").
  return !getenv(off) && std::string(engine).rfind("openblas", 0) != 0;
}

TEST(CpuPlan, GemmMakesItsPrimitivesAndTouchesNothing) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_BF16, AMPC_F16}) {
    const int64_t m = 192, n = 160, k = 128;
    std::vector<Tensor> ts = {randomTensor({m, n}, AMPC_F32),
                              randomTensor({m, k}, dt),
                              randomTensor({n, k}, dt), randomTensor({n}, dt)};
    int64_t made = checkPlanned(
        [&](ampc_context ctx, std::vector<Tensor> &t) {
          return ampc_gemm(ctx, t[0].data(), t[0].dtype, t[1].data(), dt,
                           t[2].data(), dt, t[3].data(), dt, 1, m, n, k, 0, 1,
                           k, k, n, 0, 0, 0, 1.0f, 0.5f,
                           AMPC_EPILOGUE_GELU_TANH);
        },
        ts);
    // 192 x 160 x 128 is one tile: one primitive on oneDNN (and a bf16
    // problem it refused, where it has no bf16 kernel on these units).
    if (onednnRuns("AMPC_CPU_GEMM"))
      EXPECT_GE(made, 1) << "dtype " << dt;
  }
}

TEST(CpuPlan, LinearBackwardMakesItsPrimitivesAndTouchesNothing) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_BF16}) {
    // dx, dw, db, dy, x, w
    std::vector<Tensor> ts = {
        randomTensor({256, 128}, dt), randomTensor({96, 128}, dt),
        randomTensor({96}, dt),       randomTensor({256, 96}, dt),
        randomTensor({256, 128}, dt), randomTensor({96, 128}, dt)};
    checkPlanned(
        [&](ampc_context ctx, std::vector<Tensor> &t) {
          return ampc_linear_bwd(ctx, T(t[0]), T(t[1]), T(t[2]), T(t[3]), T(t[4]), T(t[5]));
        },
        ts);
  }
}

TEST(CpuPlan, ConvolutionMakesItsPrimitivesAndTouchesNothing) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_BF16}) {
    // y, x, w, bias, then dx, dw, dbias, dy
    std::vector<Tensor> ts = {
        randomTensor({4, 32, 12, 12}, dt), randomTensor({4, 16, 12, 12}, dt),
        randomTensor({32, 16, 3, 3}, dt),  randomTensor({32}, dt),
        randomTensor({4, 16, 12, 12}, dt), randomTensor({32, 16, 3, 3}, dt),
        randomTensor({32}, dt),            randomTensor({4, 32, 12, 12}, dt)};
    int64_t made = checkPlanned(
        [&](ampc_context ctx, std::vector<Tensor> &t) {
          ampc_status st = ampc_conv2d_fwd(ctx, T(t[0]), T(t[1]), T(t[2]), T(t[3]), 1, 1,
                                           1, 1, 1, 1, 1);
          if (st != AMPC_OK)
            return st;
          return ampc_conv2d_bwd(ctx, T(t[4]), T(t[5]), T(t[6]), T(t[7]), T(t[1]), T(t[2]), 1,
                                 1, 1, 1, 1, 1, 1);
        },
        ts);
    // Forward, backward data, backward weights: one primitive each where
    // oneDNN runs convolutions (a batch of 4 is one chunk).
    if (onednnRuns("AMPC_CPU_CONV"))
      EXPECT_GE(made, 3);
  }
}

TEST(CpuPlan, NestedEntryPointsPlanToo) {
  // conv_transpose2d adds its bias with ampc_add_fwd, and cumsum is an
  // ampc_gemm: entry points called by a planned one run (and touch
  // nothing) while the context plans.
  for (ampc_dtype dt : {AMPC_F32, AMPC_BF16}) {
    // y, x, w, bias
    std::vector<Tensor> ts = {
        randomTensor({4, 16, 14, 14}, dt), randomTensor({4, 32, 12, 12}, dt),
        randomTensor({32, 16, 3, 3}, dt), randomTensor({16}, dt)};
    checkPlanned(
        [&](ampc_context ctx, std::vector<Tensor> &t) {
          return ampc_conv_transpose2d_fwd(ctx, T(t[0]), T(t[1]), T(t[2]),
                                           T(t[3]), 1, 1, 0, 0, 1, 1, 1);
        },
        ts);
    std::vector<Tensor> cs = {randomTensor({64, 256}, dt),
                              randomTensor({64, 256}, dt)};
    checkPlanned(
        [&](ampc_context ctx, std::vector<Tensor> &t) {
          return ampc_cumsum_fwd(ctx, T(t[0]), T(t[1]), 1);
        },
        cs);
  }
}

TEST(CpuPlan, OnlyPlannedEntryPointsWhilePlanning) {
  ampc_context ctx;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  EXPECT_EQ(ampc_plan_end(ctx), AMPC_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(ampc_plan_begin(ctx));
  EXPECT_EQ(ampc_plan_begin(ctx), AMPC_ERROR_INVALID_ARGUMENT);
  Tensor x = randomTensor({8}, AMPC_F32), y({8}, AMPC_F32);
  EXPECT_EQ(ampc_relu_fwd(ctx, y.data(), y.dtype, y.dims(), y.rank(),
                          x.data(), x.dtype, x.dims(), x.rank()),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("ampc_relu_fwd: not callable "
                                                "while the context plans"),
            std::string::npos)
      << ampc_last_error();
  int64_t n;
  EXPECT_EQ(ampc_context_primitives(ctx, &n), AMPC_ERROR_INVALID_ARGUMENT);
  // Memory, which a caller frees after a failed call, is not tensor data.
  void *p = nullptr;
  ASSERT_OK(ampc_malloc(ctx, 64, &p));
  ASSERT_OK(ampc_free(ctx, p));
  ASSERT_OK(ampc_plan_end(ctx));
  ASSERT_OK(ampc_relu_fwd(ctx, y.data(), y.dtype, y.dims(), y.rank(),
                          x.data(), x.dtype, x.dims(), x.rank()));
  EXPECT_EQ(y.get(0), std::max(0.0, x.get(0)));
  // Destroying a context that plans ends its planning first.
  ASSERT_OK(ampc_plan_begin(ctx));
  EXPECT_EQ(ampc_context_destroy(ctx), AMPC_OK);
}

} // namespace
