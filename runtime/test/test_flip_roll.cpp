//===- test_flip_roll.cpp - flip and roll kernels ----------------------------===//
//
// ampc_flip_fwd and ampc_roll_fwd (runtime/src/api_shape.cpp), strided
// copies of the backends, on the CPU backend against an index reference:
// negative dims, a flipped size-1 dim, a converting store (f32 into f16), an
// integer dtype, shifts beyond the size and negative, a repeated dim, the
// flattened roll, and the argument errors. The checks against PyTorch are
// the lit suite's (test/Ops/flip-roll-diff.test).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

using namespace ampc_test;

namespace {

using FlipRoll = CpuTest;

/// x[i] = i (exact in every dtype used here).
Tensor iota(const Shape &s, ampc_dtype dt) {
  Tensor t(s, dt);
  for (int64_t i = 0; i < t.size(); ++i)
    t.set(i, static_cast<double>(i));
  return t;
}

/// The row-major offset of `idx` in shape `s`.
int64_t ravel(const Shape &idx, const Shape &s) {
  int64_t off = 0;
  for (size_t d = 0; d < s.size(); ++d)
    off = off * s[d] + idx[d];
  return off;
}

/// `v` modulo `n`, in [0, n).
int64_t wrap(int64_t v, int64_t n) { return ((v % n) + n) % n; }

TEST_F(FlipRoll, FlipMatchesIndexReference) {
  Shape s = {3, 1, 4, 5};
  Tensor x = iota(s, AMPC_F32), y(s, AMPC_F16);
  // Dims 0, 1 (size 1) and -1; y stored in f16.
  int64_t dims[3] = {-1, 0, 1};
  ASSERT_OK(ampc_flip_fwd(ctx, T(y), T(x), dims, 3));
  for (int64_t i = 0; i < y.size(); ++i) {
    Shape idx = unravel(i, s);
    idx[0] = s[0] - 1 - idx[0];
    idx[3] = s[3] - 1 - idx[3];
    EXPECT_EQ(y.get(i), x.get(ravel(idx, s))) << i;
  }
  // No dims: a copy.
  Tensor z(s, AMPC_F32);
  ASSERT_OK(ampc_flip_fwd(ctx, T(z), T(x), nullptr, 0));
  EXPECT_EQ(z.values(), x.values());
}

TEST_F(FlipRoll, RollMatchesIndexReference) {
  Shape s = {3, 4, 5};
  Tensor x = iota(s, AMPC_I32), y(s, AMPC_I32);
  // Dim 2 by -7 (= 3 mod 5), dim 0 by 1 + 4 (a repeated dim adds up).
  int64_t shifts[3] = {-7, 1, 4}, dims[3] = {-1, 0, 0};
  ASSERT_OK(ampc_roll_fwd(ctx, T(y), T(x), shifts, 3, dims, 3));
  for (int64_t i = 0; i < y.size(); ++i) {
    Shape idx = unravel(i, s);
    idx[2] = wrap(idx[2] + 7, s[2]);
    idx[0] = wrap(idx[0] - 5, s[0]);
    EXPECT_EQ(y.get(i), x.get(ravel(idx, s))) << i;
  }
}

TEST_F(FlipRoll, RollWithoutDimsRollsTheFlattenedTensor) {
  Shape s = {2, 3, 2};
  Tensor x = iota(s, AMPC_BF16), y(s, AMPC_BF16);
  int64_t shift = -13; // = 11 mod 12
  ASSERT_OK(ampc_roll_fwd(ctx, T(y), T(x), &shift, 1, nullptr, 0));
  for (int64_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y.get(i), x.get(wrap(i - 11, 12))) << i;
}

TEST_F(FlipRoll, ArgumentErrors) {
  Tensor x = iota({2, 3}, AMPC_F32), y({2, 3}, AMPC_F32), t({3, 2}, AMPC_F32);
  int64_t d2 = 2, d1[2] = {1, -1}, s2[2] = {1, 2}, d0 = 0;
  EXPECT_EQ(ampc_flip_fwd(ctx, T(y), T(x), &d2, 1), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_flip_fwd(ctx, T(y), T(x), d1, 2), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_flip_fwd(ctx, T(t), T(x), &d0, 1),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_EQ(ampc_roll_fwd(ctx, T(y), T(x), s2, 2, &d0, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_roll_fwd(ctx, T(y), T(x), s2, 2, nullptr, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_roll_fwd(ctx, T(y), T(x), s2, 1, &d2, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
}

} // namespace
