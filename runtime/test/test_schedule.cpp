//===- test_schedule.cpp - learning-rate schedules --------------------------===//
#include "test_util.h"

#include <cmath>

using namespace ampc_test;

namespace {

class Schedule : public CpuTest {};

/// The formulas of docs/optimizer.md, written out again (in rate space, with
/// the base rate lr) as the reference.
double rate(int kind, double lr, int64_t w, int64_t T, double m, int64_t k,
            double g, int64_t t) {
  if (t < w)
    return lr * double(t + 1) / double(w);
  switch (kind) {
  case AMPC_LR_LINEAR:
    return m + (lr - m) * std::max(0.0, double(T - t) / double(T - w));
  case AMPC_LR_COSINE:
    return m + (lr - m) * 0.5 *
                   (1 + std::cos(M_PI * std::min(1.0, double(t - w) /
                                                          double(T - w))));
  case AMPC_LR_STEP:
    return lr * std::pow(g, std::floor(double(t - w) / double(k)));
  default:
    return lr;
  }
}

TEST_F(Schedule, FactorMatchesTheFormulas) {
  const double lr = 0.1, m = 0.01;
  for (int kind = AMPC_LR_CONSTANT; kind <= AMPC_LR_STEP; ++kind)
    for (int64_t w : {0, 3})
      for (int64_t t = 0; t < 30; ++t) {
        double f = ampc_lr_schedule_factor(
            static_cast<ampc_lr_schedule_kind>(kind), lr, w, 20, m, 4, 0.5, t);
        EXPECT_NEAR(lr * f, rate(kind, lr, w, 20, m, 4, 0.5, t), 1e-15)
            << "kind " << kind << " warmup " << w << " t " << t;
      }
  // Hand-computed points: warm-up 1/4 of the way, cosine half way, the end.
  EXPECT_DOUBLE_EQ(ampc_lr_schedule_factor(AMPC_LR_COSINE, 1.0, 4, 14, 0.0, 0,
                                           0, 0),
                   0.25);
  EXPECT_NEAR(ampc_lr_schedule_factor(AMPC_LR_COSINE, 1.0, 4, 14, 0.0, 0, 0, 9),
              0.5, 1e-15);
  EXPECT_DOUBLE_EQ(
      ampc_lr_schedule_factor(AMPC_LR_LINEAR, 2.0, 0, 10, 1.0, 0, 0, 50), 0.5);
  EXPECT_DOUBLE_EQ(
      ampc_lr_schedule_factor(AMPC_LR_STEP, 1.0, 0, 0, 0.0, 3, 0.1, 6),
      0.1 * 0.1);
  // Invalid arguments: NaN.
  EXPECT_TRUE(std::isnan(
      ampc_lr_schedule_factor(AMPC_LR_LINEAR, 1.0, 5, 5, 0.0, 0, 0, 0)));
  EXPECT_TRUE(std::isnan(
      ampc_lr_schedule_factor(AMPC_LR_STEP, 1.0, 0, 0, 0.0, 0, 0.5, 0)));
  EXPECT_TRUE(std::isnan(
      ampc_lr_schedule_factor(AMPC_LR_CONSTANT, 0.0, 0, 0, 0.0, 0, 0, 0)));
  // ... with the reason in ampc_last_error() (it was left as it was).
  ampc_set_last_error(AMPC_OK, nullptr);
  EXPECT_TRUE(std::isnan(
      ampc_lr_schedule_factor(AMPC_LR_LINEAR, 1.0, 5, 5, 0.0, 0, 0, 0)));
  EXPECT_STREQ(ampc_last_error(), "ampc_lr_schedule_factor: total_steps must "
                                  "exceed warmup_steps");
  EXPECT_TRUE(std::isnan(ampc_lr_schedule_factor(
      static_cast<ampc_lr_schedule_kind>(9), 1.0, 0, 10, 0.0, 0, 0, 1)));
  EXPECT_STREQ(ampc_last_error(),
               "ampc_lr_schedule_factor: unknown schedule kind");
  EXPECT_TRUE(std::isnan(
      ampc_lr_schedule_factor(AMPC_LR_COSINE, 1.0, 0, 10, 0.0, 0, 0, -5)));
  EXPECT_STREQ(ampc_last_error(), "ampc_lr_schedule_factor: t -5 is negative");
}

TEST_F(Schedule, DeviceCounterSkipsOverflowedSteps) {
  float factor = -1.0f;
  int32_t step = 0;
  float found = 0.0f;
  ASSERT_OK(ampc_lr_schedule(ctx, &factor, &step, AMPC_LR_LINEAR, 0.5, 2, 10,
                             0.0, 0, 0.0, &found, AMPC_F32));
  EXPECT_EQ(factor, 0.5f); // (0 + 1) / 2
  EXPECT_EQ(step, 1);
  found = 1.0f; // skipped: the factor is computed, the count stays
  ASSERT_OK(ampc_lr_schedule(ctx, &factor, &step, AMPC_LR_LINEAR, 0.5, 2, 10,
                             0.0, 0, 0.0, &found, AMPC_F32));
  EXPECT_EQ(factor, 1.0f); // (1 + 1) / 2
  EXPECT_EQ(step, 1);
  ASSERT_OK(ampc_lr_schedule(ctx, &factor, &step, AMPC_LR_LINEAR, 0.5, 2, 10,
                             0.0, 0, 0.0, nullptr, AMPC_F32));
  EXPECT_EQ(step, 2);
  EXPECT_EQ(ampc_lr_schedule(ctx, &factor, &step, AMPC_LR_COSINE, 0.5, 2, 2,
                             0.0, 0, 0.0, nullptr, AMPC_F32),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_lr_schedule(ctx, nullptr, &step, AMPC_LR_CONSTANT, 0.5, 0, 0,
                             0.0, 0, 0.0, nullptr, AMPC_F32),
            AMPC_ERROR_NULL_POINTER);
}

TEST_F(Schedule, LrScaleMultipliesTheRate) {
  // The same update with lr 0.2 and with lr 0.4 scaled by 0.5.
  for (bool adamw : {false, true}) {
    float p[2] = {1.0f, -2.0f}, q[2] = {1.0f, -2.0f}, g[2] = {0.25f, 0.5f};
    float m1[2] = {}, v1[2] = {}, m2[2] = {}, v2[2] = {};
    int32_t s1 = 0, s2 = 0;
    float half = 0.5f;
    void *ps[1] = {p}, *qs[1] = {q}, *gs[1] = {g};
    void *ma[1] = {m1}, *va[1] = {v1}, *mb[1] = {m2}, *vb[1] = {v2};
    ampc_dtype dt[1] = {AMPC_F32};
    int64_t n[1] = {2};
    for (int k = 0; k < 3; ++k) {
      if (adamw) {
        ASSERT_OK(ampc_adamw_update(ctx, ps, dt, gs, dt, ma, va, &s1, n, 1,
                                    0.2, 0.9, 0.999, 1e-8, 0.01, 0.0, nullptr,
                                    AMPC_F32, nullptr));
        ASSERT_OK(ampc_adamw_update(ctx, qs, dt, gs, dt, mb, vb, &s2, n, 1,
                                    0.4, 0.9, 0.999, 1e-8, 0.01, 0.0, nullptr,
                                    AMPC_F32, &half));
      } else {
        ASSERT_OK(ampc_sgd_update(ctx, ps, dt, gs, dt, ma, n, 1, 0.2, 0.9,
                                  0.01, 0, 0.0, nullptr, AMPC_F32, nullptr));
        ASSERT_OK(ampc_sgd_update(ctx, qs, dt, gs, dt, mb, n, 1, 0.4, 0.9,
                                  0.01, 0, 0.0, nullptr, AMPC_F32, &half));
      }
    }
    EXPECT_NE(p[0], 1.0f);
    EXPECT_EQ(p[0], q[0]) << (adamw ? "adamw" : "sgd");
    EXPECT_EQ(p[1], q[1]) << (adamw ? "adamw" : "sgd");
  }
}

} // namespace
