//===- test_convert.cpp - f16 / bf16 conversions, exhaustively
//-------------===//
//
// The reference is arithmetic, not bit tricks: a 16-bit pattern's value is
// computed from its fields with ldexp, and f32 -> 16-bit rounding is checked
// against the two neighbouring representable values.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

using namespace ampc_test;

namespace {

/// Value of a binary16 pattern from its fields (NaN for NaN patterns).
double f16Value(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(m, -24);
  else
    v = std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

double bf16Value(uint16_t h) {
  int sign = h >> 15, e = (h >> 7) & 255, m = h & 127;
  double v;
  if (e == 255)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(m, -133);
  else
    v = std::ldexp(128 + m, e - 134);
  return sign ? -v : v;
}

/// The round-to-nearest-even result of v among the finite non-negative
/// patterns of a format (value function `val`, largest finite `maxBits`,
/// overflow threshold `overflow`, infinity `infBits`).
uint16_t roundRef(double v, double (*val)(uint16_t), uint16_t maxBits,
                  double overflow, uint16_t infBits) {
  bool neg = std::signbit(v);
  double a = std::fabs(v);
  uint16_t sign = neg ? 0x8000 : 0;
  if (a >= overflow)
    return sign | infBits;
  // Binary search the largest pattern <= a (patterns are monotonic).
  uint32_t lo = 0, hi = maxBits;
  while (lo < hi) {
    uint32_t mid = (lo + hi + 1) / 2;
    if (val(static_cast<uint16_t>(mid)) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (val(static_cast<uint16_t>(lo)) == a)
    return sign | lo;
  double below = val(static_cast<uint16_t>(lo)),
         above = lo + 1 <= maxBits ? val(static_cast<uint16_t>(lo + 1))
                                   : overflow * 2;
  uint16_t pick;
  if (a - below < above - a)
    pick = lo;
  else if (a - below > above - a)
    pick = lo + 1;
  else
    pick = (lo & 1) ? lo + 1 : lo;
  return sign | (pick > maxBits ? infBits : pick);
}

uint16_t f16Ref(float f) {
  if (std::isnan(f))
    return 0x7e00 | (std::signbit(f) ? 0x8000 : 0);
  // 65520 = 65504 + half an ulp: ties round to the even side, which is inf.
  return roundRef(f, f16Value, 0x7bff, 65520.0, 0x7c00);
}

uint16_t bf16Ref(float f) {
  return roundRef(f, bf16Value, 0x7f7f,
                  std::ldexp(256.0 - 0.5, 127 - 7) /* max + half ulp */,
                  0x7f80);
}

float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace

TEST(Convert, F16ToF32AllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    double want = f16Value(static_cast<uint16_t>(h));
    float got = ampc::f16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << h;
      ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Convert, Bf16ToF32AllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    double want = bf16Value(static_cast<uint16_t>(h));
    float got = ampc::bf16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(got)) << h;
    else
      ASSERT_EQ(static_cast<double>(got), want) << h;
  }
}

TEST(Convert, RoundTripAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    uint16_t f16 = ampc::f32ToF16(ampc::f16ToF32(b));
    uint16_t bf = ampc::f32ToBf16(ampc::bf16ToF32(b));
    if (std::isnan(f16Value(b)))
      ASSERT_TRUE((f16 & 0x7c00) == 0x7c00 && (f16 & 0x3ff)) << h;
    else
      ASSERT_EQ(f16, b) << h;
    if (std::isnan(bf16Value(b)))
      ASSERT_TRUE((bf & 0x7f80) == 0x7f80 && (bf & 0x7f)) << h;
    else
      ASSERT_EQ(bf, b) << h;
  }
}

/// Every f32 halfway point between adjacent 16-bit values, and its two
/// neighbouring f32 values, rounds as round-to-nearest-even says.
TEST(Convert, F32ToF16Boundaries) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    double lo = f16Value(static_cast<uint16_t>(h));
    double hi =
        h + 1 < 0x7c00 ? f16Value(static_cast<uint16_t>(h + 1)) : 65536.0;
    float mid = static_cast<float>((lo + hi) / 2); // exact in f32
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, INFINITY), static_cast<float>(lo)}) {
      ASSERT_EQ(ampc::f32ToF16(f), f16Ref(f)) << "h=" << h << " f=" << f;
      ASSERT_EQ(ampc::f32ToF16(-f), f16Ref(-f)) << "h=" << h;
    }
  }
}

TEST(Convert, F32ToBf16Boundaries) {
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    uint32_t mid = (h << 16) | 0x8000; // halfway to the next pattern
    for (uint32_t bits : {mid, mid - 1, mid + 1, h << 16}) {
      float f = bitsToFloat(bits);
      ASSERT_EQ(ampc::f32ToBf16(f), bf16Ref(f)) << "h=" << h;
      ASSERT_EQ(ampc::f32ToBf16(-f), bf16Ref(-f)) << "h=" << h;
    }
  }
}

TEST(Convert, SpecialCases) {
  // Largest finite, overflow, ties to even, subnormal edges.
  EXPECT_EQ(ampc::f32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(ampc::f32ToF16(65519.99f), 0x7bff);
  EXPECT_EQ(ampc::f32ToF16(65520.0f), 0x7c00);
  EXPECT_EQ(ampc::f32ToF16(1e10f), 0x7c00);
  EXPECT_EQ(ampc::f32ToF16(-1e10f), 0xfc00);
  EXPECT_EQ(ampc::f32ToF16(INFINITY), 0x7c00);
  EXPECT_EQ(ampc::f32ToF16(-INFINITY), 0xfc00);
  EXPECT_EQ(ampc::f32ToF16(NAN) & 0x7fff, 0x7e00);
  EXPECT_EQ(ampc::f32ToF16(1.0f + 1.0f / 2048), 0x3c00);    // tie -> even
  EXPECT_EQ(ampc::f32ToF16(1.0f + 3.0f / 2048), 0x3c02);    // tie -> even
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(1.0f, -24)), 0x0001); // min subnormal
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(1.0f, -25)), 0x0000); // tie -> 0
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(3.0f, -25)), 0x0002); // tie -> even
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(1.0f, -14)), 0x0400); // min normal
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(1023.5f, -24)), 0x0400);
  EXPECT_EQ(ampc::f32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(ampc::f32ToF16(std::ldexp(1.0f, -149)), 0x0000);
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x7f7fffff)), 0x7f80); // -> inf
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x3f808000)), 0x3f80); // tie -> even
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x3f818000)), 0x3f82); // tie -> even
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x00000001)), 0x0000); // subnormal
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x00008000)), 0x0000); // tie -> 0
  EXPECT_EQ(ampc::f32ToBf16(bitsToFloat(0x00018000)), 0x0002);
  EXPECT_EQ(ampc::f32ToBf16(NAN) & 0x7fc0, 0x7fc0);
  EXPECT_EQ(ampc::f32ToBf16(-INFINITY), 0xff80);
}

/// The public cast kernel converts all 65,536 patterns both ways.
class CastApi : public CpuTest {};

TEST_F(CastApi, AllPatternsThroughTheApi) {
  for (ampc_dtype low : {AMPC_F16, AMPC_BF16}) {
    Tensor bits({65536}, low), wide({65536}, AMPC_F32), back({65536}, low);
    for (uint32_t h = 0; h < 65536; ++h)
      reinterpret_cast<uint16_t *>(bits.data())[h] = static_cast<uint16_t>(h);
    ASSERT_OK(ampc_cast_fwd(ctx, T(wide), T(bits)));
    ASSERT_OK(ampc_cast_fwd(ctx, T(back), T(wide)));
    for (uint32_t h = 0; h < 65536; ++h) {
      uint16_t b = reinterpret_cast<uint16_t *>(back.data())[h];
      float f = reinterpret_cast<float *>(wide.data())[h];
      if (std::isnan(f))
        continue;
      ASSERT_EQ(b, h) << "dtype " << low;
    }
  }
}

TEST_F(CastApi, IntegerAndBoolCasts) {
  Tensor x({5}, AMPC_F32), yi({5}, AMPC_I64), yb({5}, AMPC_BOOL),
      back({5}, AMPC_F32);
  float vals[5] = {-2.7f, -0.5f, 0.0f, 1.9f, 3e9f};
  for (int i = 0; i < 5; ++i)
    x.set(i, vals[i]);
  ASSERT_OK(ampc_cast_fwd(ctx, T(yi), T(x)));
  EXPECT_EQ(yi.get(0), -2);
  EXPECT_EQ(yi.get(3), 1);
  EXPECT_EQ(yi.get(4), 3e9);
  ASSERT_OK(ampc_cast_fwd(ctx, T(yb), T(x)));
  EXPECT_EQ(yb.bytes[0], 1);
  EXPECT_EQ(yb.bytes[2], 0);
  ASSERT_OK(ampc_cast_bwd(ctx, T(back), T(yi)));
  EXPECT_EQ(back.get(0), -2.0);
}
