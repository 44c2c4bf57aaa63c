//===- test_wide_dtypes.cpp - f64, u8, i8, i16 and exact integers --------===//
//
// The 1.8 dtypes through the C ABI on the CPU backend: sizes, exact casts
// (integer wrap, float truncation), integer arithmetic exact beyond 2^53 and
// wrapping in its width, integer sums into i64, and f64 kernels computing in
// f64 (a sum no f32 computation could give).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"
#include "src/dropout_ops.h"

#include "cpu/cpu_pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

using namespace ampc_test;

namespace {

class WideDtypes : public CpuTest {};

template <typename E> Tensor make(Shape s, ampc_dtype dt, std::vector<E> v) {
  Tensor t(std::move(s), dt);
  std::memcpy(t.data(), v.data(), v.size() * sizeof(E));
  return t;
}

template <typename E> E at(Tensor &t, int64_t i) {
  E v;
  std::memcpy(&v, static_cast<uint8_t *>(t.data()) + i * sizeof(E), sizeof(E));
  return v;
}

TEST_F(WideDtypes, Sizes) {
  size_t n = 0;
  const std::pair<ampc_dtype, size_t> want[] = {
      {AMPC_F64, 8}, {AMPC_U8, 1}, {AMPC_I8, 1}, {AMPC_I16, 2}};
  for (auto [dt, size] : want) {
    ASSERT_OK(ampc_dtype_size(dt, &n));
    EXPECT_EQ(n, size);
  }
  EXPECT_EQ(ampc_dtype_size(static_cast<ampc_dtype>(10), &n),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
}

TEST_F(WideDtypes, CastsWrapAndTruncate) {
  Tensor x =
      make<int64_t>({4}, AMPC_I64, {300, -1, (int64_t(1) << 53) + 1, -129});
  Tensor u8({4}, AMPC_U8), i8({4}, AMPC_I8), f64({4}, AMPC_F64);
  ASSERT_OK(ampc_cast_fwd(ctx, T(u8), T(x)));
  ASSERT_OK(ampc_cast_fwd(ctx, T(i8), T(x)));
  ASSERT_OK(ampc_cast_fwd(ctx, T(f64), T(x)));
  EXPECT_EQ(at<uint8_t>(u8, 0), 44);  // 300 mod 256
  EXPECT_EQ(at<uint8_t>(u8, 1), 255); // -1
  EXPECT_EQ(at<int8_t>(i8, 3), 127);  // -129 wraps
  // 2^53 + 1 rounds to nearest even in f64, as torch's cast.
  EXPECT_EQ(at<double>(f64, 2), 9007199254740992.0);
  Tensor f = make<float>({3}, AMPC_F32, {-2.75f, 299.9f, 1.5f});
  Tensor i16({3}, AMPC_I16), back({3}, AMPC_U8);
  ASSERT_OK(ampc_cast_fwd(ctx, T(i16), T(f)));
  ASSERT_OK(ampc_cast_fwd(ctx, T(back), T(f)));
  EXPECT_EQ(at<int16_t>(i16, 0), -2); // toward zero
  EXPECT_EQ(at<int16_t>(i16, 1), 299);
  EXPECT_EQ(at<uint8_t>(back, 1), 43); // 299 mod 256
}

TEST_F(WideDtypes, IntegerArithmeticIsExact) {
  int64_t big = (int64_t(1) << 53) + 1;
  Tensor a = make<int64_t>({2}, AMPC_I64, {big, INT64_MAX});
  Tensor b = make<int64_t>({2}, AMPC_I64, {2, 1});
  Tensor y({2}, AMPC_I64);
  ASSERT_OK(ampc_add_fwd(ctx, T(y), T(a), T(b)));
  EXPECT_EQ(at<int64_t>(y, 0), big + 2);
  EXPECT_EQ(at<int64_t>(y, 1), INT64_MIN); // wraps
  ASSERT_OK(ampc_mul_fwd(ctx, T(y), T(a), T(b)));
  EXPECT_EQ(at<int64_t>(y, 0), 2 * big);
  Tensor lt({2}, AMPC_BOOL);
  Tensor c = make<int64_t>({2}, AMPC_I64, {big - 1, INT64_MAX});
  ASSERT_OK(ampc_less_fwd(ctx, T(lt), T(c), T(a)));
  EXPECT_EQ(at<uint8_t>(lt, 0), 1); // f32 would see them equal
  EXPECT_EQ(at<uint8_t>(lt, 1), 0);
  Tensor u = make<uint8_t>({2}, AMPC_U8, {200, 7});
  Tensor v = make<uint8_t>({2}, AMPC_U8, {100, 9});
  Tensor w({2}, AMPC_U8);
  ASSERT_OK(ampc_add_fwd(ctx, T(w), T(u), T(v)));
  EXPECT_EQ(at<uint8_t>(w, 0), 44);
  ASSERT_OK(ampc_sub_fwd(ctx, T(w), T(u), T(v)));
  EXPECT_EQ(at<uint8_t>(w, 1), 254);
  Tensor n = make<int16_t>({1}, AMPC_I16, {-32768});
  Tensor nn({1}, AMPC_I16);
  ASSERT_OK(ampc_neg_fwd(ctx, T(nn), T(n)));
  EXPECT_EQ(at<int16_t>(nn, 0), -32768);
}

TEST_F(WideDtypes, IntegerPowIsExactAndWraps) {
  // 3 ** 39 is above 2^53 (a pow through f64 rounds it), 7 ** 40 wraps, a
  // negative exponent gives 1 for 1, +-1 for -1 and 0 otherwise.
  Tensor a = make<int64_t>({6}, AMPC_I64, {3, 7, 1, -1, -1, 5});
  Tensor b = make<int64_t>({6}, AMPC_I64, {39, 40, -9, -3, -4, -1});
  Tensor y({6}, AMPC_I64);
  ASSERT_OK(ampc_pow_fwd(ctx, T(y), T(a), T(b)));
  EXPECT_EQ(at<int64_t>(y, 0), 4052555153018976267);
  EXPECT_EQ(at<int64_t>(y, 1), -6212923193149656639); // torch.pow's value
  EXPECT_EQ(at<int64_t>(y, 2), 1);
  EXPECT_EQ(at<int64_t>(y, 3), -1);
  EXPECT_EQ(at<int64_t>(y, 4), 1);
  EXPECT_EQ(at<int64_t>(y, 5), 0);
  // In the result's width: 3 ** 5 is -13 in i8, 200 ** 3 is 0 in u8.
  Tensor e = make<int8_t>({1}, AMPC_I8, {3});
  Tensor f = make<int8_t>({1}, AMPC_I8, {5});
  Tensor e5({1}, AMPC_I8);
  ASSERT_OK(ampc_pow_fwd(ctx, T(e5), T(e), T(f)));
  EXPECT_EQ(at<int8_t>(e5, 0), -13);
  Tensor u = make<uint8_t>({2}, AMPC_U8, {200, 2});
  Tensor v = make<uint8_t>({2}, AMPC_U8, {3, 7});
  Tensor w({2}, AMPC_U8);
  ASSERT_OK(ampc_pow_fwd(ctx, T(w), T(u), T(v)));
  EXPECT_EQ(at<uint8_t>(w, 0), 0);
  EXPECT_EQ(at<uint8_t>(w, 1), 128);
}

TEST_F(WideDtypes, IntegerSumIsI64) {
  Tensor x = make<int32_t>({3}, AMPC_I32, {INT32_MAX, INT32_MAX, 3});
  Tensor s({}, AMPC_I64);
  int64_t dims[] = {0};
  ASSERT_OK(ampc_sum_fwd(ctx, T(s), T(x), dims, 1, 0));
  EXPECT_EQ(at<int64_t>(s, 0), 2 * int64_t(INT32_MAX) + 3);
}

TEST_F(WideDtypes, IntegerCumsumIsExactI64) {
  // [2, 3] along dim 1: beyond 2^53, and 2^62 + 2^62 wraps to -2^63.
  int64_t big = (int64_t(1) << 53) + 1, q = int64_t(1) << 62;
  Tensor x = make<int64_t>({2, 3}, AMPC_I64, {big, 1, 2, q, q, 5});
  Tensor y({2, 3}, AMPC_I64);
  ASSERT_OK(ampc_cumsum_fwd(ctx, T(y), T(x), 1));
  EXPECT_EQ(at<int64_t>(y, 1), big + 1);
  EXPECT_EQ(at<int64_t>(y, 2), big + 3);
  EXPECT_EQ(at<int64_t>(y, 4), INT64_MIN);
  EXPECT_EQ(at<int64_t>(y, 5), INT64_MIN + 5);
  // u8 along dim 0 of [2, 2] into i64 (no wrap at 8 bits); bool counts.
  Tensor u = make<uint8_t>({2, 2}, AMPC_U8, {200, 1, 100, 255});
  Tensor uy({2, 2}, AMPC_I64);
  ASSERT_OK(ampc_cumsum_fwd(ctx, T(uy), T(u), 0));
  EXPECT_EQ(at<int64_t>(uy, 2), 300);
  EXPECT_EQ(at<int64_t>(uy, 3), 256);
  Tensor k = make<uint8_t>({3}, AMPC_BOOL, {1, 0, 1});
  Tensor ky({3}, AMPC_I64);
  ASSERT_OK(ampc_cumsum_fwd(ctx, T(ky), T(k), -1));
  EXPECT_EQ(at<int64_t>(ky, 2), 2);
  // The result must be i64, and integers have no backward.
  Tensor y32({2, 3}, AMPC_I32);
  EXPECT_EQ(ampc_cumsum_fwd(ctx, T(y32), T(x), 1),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_EQ(ampc_cumsum_bwd(ctx, T(y), T(x), 1), AMPC_ERROR_UNSUPPORTED_DTYPE);
}

TEST_F(WideDtypes, F64CumsumSumsInF64) {
  // 1, then + 2^-40 each: f64 keeps every step, f32 would lose them.
  double e = std::ldexp(1.0, -40);
  Tensor x = make<double>({4}, AMPC_F64, {1.0, e, e, 1e300});
  Tensor y({4}, AMPC_F64), dx({4}, AMPC_F64);
  ASSERT_OK(ampc_cumsum_fwd(ctx, T(y), T(x), 0));
  EXPECT_EQ(at<double>(y, 2) - 1.0, 2 * e);
  EXPECT_EQ(at<double>(y, 3), 1e300);
  // The backward is the reversed cumulative sum.
  ASSERT_OK(ampc_cumsum_bwd(ctx, T(dx), T(x), 0));
  EXPECT_EQ(at<double>(dx, 3), 1e300);
  EXPECT_EQ(at<double>(dx, 0), ((1e300 + e) + e) + 1.0);
  EXPECT_EQ(at<double>(dx, 1) - at<double>(dx, 3), 0.0); // absorbed
  Tensor small = make<double>({3}, AMPC_F64, {e, e, 1.0});
  Tensor ds({3}, AMPC_F64);
  ASSERT_OK(ampc_cumsum_bwd(ctx, T(ds), T(small), 0));
  EXPECT_EQ(at<double>(ds, 0) - 1.0, 2 * e);
}

TEST_F(WideDtypes, F64NormPoolEmbeddingComputeInF64) {
  // A row of 1 + k 2^-30: f32 cannot hold the deviations; f64 normalises
  // them to +-1.22474487139158904.
  double e = std::ldexp(1.0, -30);
  Tensor x = make<double>({1, 3}, AMPC_F64, {1.0 - e, 1.0, 1.0 + e});
  Tensor y({1, 3}, AMPC_F64);
  ASSERT_OK(ampc_layer_norm_fwd(ctx, T(y), T(x), nullptr, AMPC_F64, nullptr,
                                0, nullptr, AMPC_F64, nullptr, 0, 0.0));
  EXPECT_NEAR(at<double>(y, 2), std::sqrt(1.5), 1e-12);
  EXPECT_EQ(at<double>(y, 1), 0.0);
  // max_pool2d and avg_pool2d of one 2x2 plane with a 2x2 window.
  Tensor p = make<double>({1, 1, 2, 2}, AMPC_F64, {1.0, 1.0 + e, 1e300, -1.0});
  Tensor mx({1, 1, 1, 1}, AMPC_F64), av({1, 1, 1, 1}, AMPC_F64);
  ASSERT_OK(ampc_max_pool2d_fwd(ctx, T(mx), T(p), 2, 2, 2, 2, 0, 0));
  ASSERT_OK(ampc_avg_pool2d_fwd(ctx, T(av), T(p), 2, 2, 2, 2, 0, 0));
  EXPECT_EQ(at<double>(mx, 0), 1e300); // beyond f32's range
  EXPECT_EQ(at<double>(av, 0), (((1.0 + (1.0 + e)) + 1e300) - 1.0) / 4.0);
  Tensor dp({1, 1, 2, 2}, AMPC_F64), one = make<double>({1, 1, 1, 1}, AMPC_F64, {e});
  ASSERT_OK(ampc_max_pool2d_bwd(ctx, T(dp), T(one), T(p), 2, 2, 2, 2, 0, 0));
  EXPECT_EQ(at<double>(dp, 2), e);
  EXPECT_EQ(at<double>(dp, 0), 0.0);
  // embedding: rows copied exactly, the backward sums repeated ids in f64.
  Tensor table = make<double>({2, 2}, AMPC_F64, {1.0 + e, 2.0, 3.0, 1e300});
  Tensor ids = make<int64_t>({3}, AMPC_I64, {1, 0, 0});
  Tensor rows({3, 2}, AMPC_F64), dt({2, 2}, AMPC_F64);
  ASSERT_OK(ampc_embedding_fwd(ctx, T(rows), T(table), T(ids), -1));
  EXPECT_EQ(at<double>(rows, 1), 1e300);
  EXPECT_EQ(at<double>(rows, 2), 1.0 + e);
  ASSERT_OK(ampc_embedding_bwd(ctx, T(dt), T(rows), T(ids)));
  EXPECT_EQ(at<double>(dt, 0), 2.0 + 2 * e);
  EXPECT_EQ(at<double>(dt, 3), 1e300);
  // The 2-norm of an f64 vector (its squares overflow f32 scratch).
  Tensor v = make<double>({2}, AMPC_F64, {3e20, 4e20});
  Tensor n({}, AMPC_F64);
  int64_t dims[] = {0};
  ASSERT_OK(ampc_norm_fwd(ctx, T(n), T(v), 2.0, dims, 1, 0));
  EXPECT_NEAR(at<double>(n, 0), 5e20, 1e6);
}

TEST_F(WideDtypes, F64ComposedKernelsComputeInF64) {
  double e = std::ldexp(1.0, -40);
  Tensor z = make<double>({1}, AMPC_F64, {0.0});
  // smooth_l1 with beta 0.1 taken as the double 0.1 (its f32 rounding is
  // 1.5e-9 off): 0.5 d^2 / beta below beta, |d| - 0.5 beta above.
  Tensor d = make<double>({1}, AMPC_F64, {0.05}),
         big = make<double>({1}, AMPC_F64, {1e300});
  Tensor s({}, AMPC_F64);
  ASSERT_OK(
      ampc_smooth_l1_loss_fwd(ctx, T(s), T(d), T(z), 0.1, AMPC_REDUCTION_SUM));
  EXPECT_EQ(at<double>(s, 0), 0.5 * 0.05 * 0.05 / 0.1);
  ASSERT_OK(ampc_smooth_l1_loss_fwd(ctx, T(s), T(big), T(z), 0.1,
                                    AMPC_REDUCTION_SUM));
  EXPECT_EQ(at<double>(s, 0), 1e300);
  Tensor one = make<double>({}, AMPC_F64, {1.0}), ga({1}, AMPC_F64);
  ASSERT_OK(ampc_smooth_l1_loss_bwd(ctx, T(ga), nullptr, AMPC_F64, nullptr, 0,
                                    T(one), T(d), T(z), 0.1,
                                    AMPC_REDUCTION_SUM));
  EXPECT_EQ(at<double>(ga, 0), 0.05 / 0.1);
  // l1_loss' mean divides the f64 sum by the count.
  Tensor a3 = make<double>({3}, AMPC_F64, {1.0 + e, 2.0, 0.0});
  Tensor z3 = make<double>({3}, AMPC_F64, {0.0, 0.0, 0.0}), g3({3}, AMPC_F64);
  ASSERT_OK(ampc_l1_loss_fwd(ctx, T(s), T(a3), T(z3), AMPC_REDUCTION_MEAN));
  EXPECT_EQ(at<double>(s, 0), (3.0 + e) / 3.0);
  ASSERT_OK(ampc_l1_loss_bwd(ctx, T(g3), nullptr, AMPC_F64, nullptr, 0, T(one),
                             T(a3), T(z3), AMPC_REDUCTION_MEAN));
  EXPECT_EQ(at<double>(g3, 0), 1.0 / 3.0);
  // nll_loss picks log-probabilities exactly (class indices widened on the
  // host) and leaves ignore_index rows out of the mean.
  Tensor logp = make<double>({2, 2}, AMPC_F64, {-(1.0 + e), -2.0, -3.0, -4.0});
  Tensor labels = make<int64_t>({2}, AMPC_I64, {0, 1});
  ASSERT_OK(ampc_nll_loss_fwd(ctx, T(s), T(logp), T(labels), 1,
                              AMPC_REDUCTION_MEAN, -1));
  EXPECT_EQ(at<double>(s, 0), 1.0 + e);
  // logsumexp of 0 and -20: 2.06e-9, below f32's resolution at 1.
  Tensor x2 = make<double>({2}, AMPC_F64, {0.0, -20.0});
  int64_t dims[] = {0};
  ASSERT_OK(ampc_logsumexp_fwd(ctx, T(s), T(x2), dims, 1, 0));
  EXPECT_NEAR(at<double>(s, 0), 2.0611536e-9, 1e-15);
  // group_norm of 1 - e, 1, 1 + e in one group: +-sqrt(1.5).
  Tensor gx = make<double>({1, 1, 3}, AMPC_F64, {1.0 - e, 1.0, 1.0 + e});
  Tensor gw = make<double>({1}, AMPC_F64, {1.0}), gy({1, 1, 3}, AMPC_F64);
  ASSERT_OK(ampc_group_norm_fwd(ctx, T(gy), T(gx), T(gw), T(z), 1, 0.0));
  EXPECT_NEAR(at<double>(gy, 2), std::sqrt(1.5), 1e-12);
}

TEST_F(WideDtypes, F64AdamwAndClippingComputeInF64) {
  // Step 1 with clipping: g = (3e-12, 4e-12) scaled to norm 1e-12 (max_norm
  // 1e-12: f32 would round the tiny norm's coefficient), then the sign
  // step lr * m / |m| (eps 0) with f64 moments of these tiny values.
  double p[2] = {1.0, -2.0}, g[2] = {3e-12, 4e-12}, m[2] = {}, v[2] = {};
  int32_t step = 0;
  void *ps[1] = {p}, *gs[1] = {g}, *ms[1] = {m}, *vs[1] = {v};
  ampc_dtype dt[1] = {AMPC_F64};
  int64_t n[1] = {2};
  ASSERT_OK(ampc_adamw_update(ctx, ps, dt, gs, dt, ms, vs, &step, n, 1, 0.01,
                              0.9, 0.999, 0.0, 0.0, 1e-12, nullptr,
                              AMPC_F32, nullptr));
  double coef = 1e-12 / (5e-12 + 1e-6);
  EXPECT_EQ(g[0], 3e-12 * coef);
  EXPECT_EQ(m[1], (1.0 - 0.9) * (4e-12 * coef)); // lerp from 0 by 1 - beta1
  EXPECT_NEAR(p[0], 1.0 - 0.01, 1e-15);
  EXPECT_NEAR(p[1], -2.0 - 0.01, 1e-15);
  EXPECT_EQ(step, 1);
}

/// A convolution problem over r spatial dims (unused dims size 1).
struct ConvCase {
  int r;
  int64_t n, c, o, groups;
  int64_t in[3], k[3], st[3], pad[3], dil[3];
  int64_t out(int i) const {
    return (in[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) / st[i] + 1;
  }
  Shape image(int64_t ch, bool output) const {
    Shape s{n, ch};
    for (int i = 0; i < r; ++i)
      s.push_back(output ? out(i) : in[i]);
    return s;
  }
  Shape weight() const {
    Shape s{o, c / groups};
    for (int i = 0; i < r; ++i)
      s.push_back(k[i]);
    return s;
  }
};

Tensor randomF64(const Shape &s) {
  Tensor t(s, AMPC_F64);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = u(rng());
    std::memcpy(static_cast<uint8_t *>(t.data()) + i * 8, &v, 8);
  }
  return t;
}

std::vector<double> values64(Tensor &t) {
  std::vector<double> v(static_cast<size_t>(t.size()));
  std::memcpy(v.data(), t.data(), v.size() * 8);
  return v;
}

/// The naive f64 convolution: y = conv(x, w) + b, and for dy its gradients
/// dx, dw, db, one loop over (image, output channel, output pixel, input
/// channel of the group, kernel tap).
struct ConvRef {
  std::vector<double> y, dx, dw, db;
  ConvRef(const ConvCase &p, const std::vector<double> &x,
          const std::vector<double> &w, const std::vector<double> &b,
          const std::vector<double> &dy) {
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1},
            st[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
    for (int i = 0; i < p.r; ++i) {
      int j = 3 - p.r + i;
      in[j] = p.in[i], k[j] = p.k[i], out[j] = p.out(i);
      st[j] = p.st[i], pad[j] = p.pad[i], dil[j] = p.dil[i];
    }
    int64_t cg = p.c / p.groups, og = p.o / p.groups;
    int64_t inPix = in[0] * in[1] * in[2], outPix = out[0] * out[1] * out[2];
    int64_t taps = k[0] * k[1] * k[2];
    y.assign(p.n * p.o * outPix, 0.0);
    dx.assign(x.size(), 0.0);
    dw.assign(w.size(), 0.0);
    db.assign(p.o, 0.0);
    for (int64_t ni = 0; ni < p.n; ++ni)
      for (int64_t oc = 0; oc < p.o; ++oc)
        for (int64_t q = 0; q < outPix; ++q) {
          int64_t oz = q / (out[1] * out[2]), oy = q / out[2] % out[1],
                  ox = q % out[2];
          int64_t yi = (ni * p.o + oc) * outPix + q;
          double acc = 0.0, g = dy[yi];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t t = 0; t < taps; ++t) {
              int64_t kz = t / (k[1] * k[2]), ky = t / k[2] % k[1],
                      kx = t % k[2];
              int64_t iz = oz * st[0] - pad[0] + kz * dil[0],
                      iy = oy * st[1] - pad[1] + ky * dil[1],
                      ix = ox * st[2] - pad[2] + kx * dil[2];
              if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 ||
                  ix >= in[2])
                continue;
              int64_t c = oc / og * cg + ci;
              int64_t xi =
                  (ni * p.c + c) * inPix + (iz * in[1] + iy) * in[2] + ix;
              int64_t wi = (oc * cg + ci) * taps + t;
              acc += x[xi] * w[wi];
              dx[xi] += w[wi] * g;
              dw[wi] += x[xi] * g;
            }
          y[yi] = acc + b[oc];
          db[oc] += g;
        }
  }
};

/// max |got - want| / max |want|.
double relError(const std::vector<double> &got,
                const std::vector<double> &want) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

ampc_status convFwd(ampc_context ctx, const ConvCase &p, Tensor &y, Tensor &x,
                    Tensor &w, Tensor &b) {
  const int64_t *s = p.st, *d = p.pad, *l = p.dil;
  if (p.r == 1)
    return ampc_conv1d_fwd(ctx, T(y), T(x), T(w), T(b), s[0], d[0], l[0],
                           p.groups);
  if (p.r == 2)
    return ampc_conv2d_fwd(ctx, T(y), T(x), T(w), T(b), s[0], s[1], d[0], d[1],
                           l[0], l[1], p.groups);
  return ampc_conv3d_fwd(ctx, T(y), T(x), T(w), T(b), s[0], s[1], s[2], d[0],
                         d[1], d[2], l[0], l[1], l[2], p.groups);
}

ampc_status convBwd(ampc_context ctx, const ConvCase &p, Tensor &dx, Tensor &dw,
                    Tensor &db, Tensor &dy, Tensor &x, Tensor &w) {
  const int64_t *s = p.st, *d = p.pad, *l = p.dil;
  if (p.r == 1)
    return ampc_conv1d_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w), s[0],
                           d[0], l[0], p.groups);
  if (p.r == 2)
    return ampc_conv2d_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w), s[0],
                           s[1], d[0], d[1], l[0], l[1], p.groups);
  return ampc_conv3d_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w), s[0],
                         s[1], s[2], d[0], d[1], d[2], l[0], l[1], l[2],
                         p.groups);
}

/// conv_transposeNd(xt, w) + b: the input gradient of the convolution p
/// for output gradient xt.
ampc_status convTransposeFwd(ampc_context ctx, const ConvCase &p, Tensor &y,
                             Tensor &xt, Tensor &w, Tensor &b) {
  const int64_t *s = p.st, *d = p.pad, *l = p.dil;
  if (p.r == 1)
    return ampc_conv_transpose1d_fwd(ctx, T(y), T(xt), T(w), T(b), s[0], d[0],
                                     l[0], p.groups);
  if (p.r == 2)
    return ampc_conv_transpose2d_fwd(ctx, T(y), T(xt), T(w), T(b), s[0], s[1],
                                     d[0], d[1], l[0], l[1], p.groups);
  return ampc_conv_transpose3d_fwd(ctx, T(y), T(xt), T(w), T(b), s[0], s[1],
                                   s[2], d[0], d[1], d[2], l[0], l[1], l[2],
                                   p.groups);
}

// Strides, padding, dilation and groups in every rank; 2-D also pointwise
// (the column matrix is the image) and 21 output channels (two blocks of
// the weight gradient's items).
const ConvCase kF64Convs[] = {
    {1, 2, 4, 6, 2, {11}, {3}, {2}, {1}, {2}},
    {2, 3, 4, 6, 2, {7, 6}, {3, 2}, {2, 1}, {1, 1}, {1, 2}},
    {2, 2, 3, 21, 1, {5, 5}, {3, 3}, {1, 1}, {1, 0}, {1, 1}},
    {2, 2, 4, 4, 1, {3, 4}, {1, 1}, {1, 1}, {0, 0}, {1, 1}},
    {3, 2, 4, 2, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}},
};

TEST_F(WideDtypes, F64ConvolutionsComputeInF64) {
  for (const ConvCase &p : kF64Convs) {
    SCOPED_TRACE("rank " + std::to_string(p.r) + ", o " + std::to_string(p.o));
    Tensor x = randomF64(p.image(p.c, false)), w = randomF64(p.weight());
    Tensor b = randomF64({p.o}), dy = randomF64(p.image(p.o, true));
    ConvRef ref(p, values64(x), values64(w), values64(b), values64(dy));
    Tensor y(p.image(p.o, true), AMPC_F64);
    ASSERT_OK(convFwd(ctx, p, y, x, w, b));
    EXPECT_LT(relError(values64(y), ref.y), 1e-13);
    Tensor dx(x.shape, AMPC_F64), dw(w.shape, AMPC_F64), db({p.o}, AMPC_F64);
    ASSERT_OK(convBwd(ctx, p, dx, dw, db, dy, x, w));
    EXPECT_LT(relError(values64(dx), ref.dx), 1e-13);
    EXPECT_LT(relError(values64(dw), ref.dw), 1e-13);
    EXPECT_LT(relError(values64(db), ref.db), 1e-13);
    // The weight gradient alone (a transposed convolution's backward asks
    // for no dx): the same bits.
    Tensor none, dw2(w.shape, AMPC_F64);
    none.dtype = AMPC_F64;
    ASSERT_OK(convBwd(ctx, p, none, dw2, none, dy, x, w));
    EXPECT_TRUE(values64(dw2) == values64(dw));
    // The transposed convolution of dy with w is the input gradient, plus a
    // bias per output channel (here x's channels).
    Tensor bt = randomF64({p.c}), yt(x.shape, AMPC_F64);
    ASSERT_OK(convTransposeFwd(ctx, p, yt, dy, w, bt));
    std::vector<double> want = ref.dx, btv = values64(bt);
    int64_t pix = x.size() / (p.n * p.c);
    for (size_t i = 0; i < want.size(); ++i)
      want[i] += btv[i / pix % p.c];
    EXPECT_LT(relError(values64(yt), want), 1e-13);
  }
}

TEST_F(WideDtypes, F64ConvolutionsSameBitsAtEveryThreadCount) {
  int saved = ampc::cpupool::threadCount();
  const ConvCase &p = kF64Convs[2];
  Tensor x = randomF64(p.image(p.c, false)), w = randomF64(p.weight());
  Tensor b = randomF64({p.o}), dy = randomF64(p.image(p.o, true));
  auto run = [&](int threads) {
    ampc::cpupool::setThreadCount(threads);
    Tensor y(p.image(p.o, true), AMPC_F64), dx(x.shape, AMPC_F64),
        dw(w.shape, AMPC_F64), db({p.o}, AMPC_F64);
    EXPECT_OK(convFwd(ctx, p, y, x, w, b));
    EXPECT_OK(convBwd(ctx, p, dx, dw, db, dy, x, w));
    return std::vector<std::vector<double>>{values64(y), values64(dx),
                                            values64(dw), values64(db)};
  };
  auto one = run(1);
  for (int t : {2, 3})
    EXPECT_TRUE(run(t) == one) << t << " threads";
  ampc::cpupool::setThreadCount(saved);
}

TEST_F(WideDtypes, F64ConvolutionMixedWithF32ComputesInF64) {
  // An f32 image with an f64 weight: the sum 1 + 2^-40 - 1 survives only in
  // f64 (the f32 engines would return 0).
  Tensor x = make<float>({1, 1, 3}, AMPC_F32, {1.0f, 1.0f, 1.0f});
  Tensor w =
      make<double>({1, 1, 3}, AMPC_F64, {1.0, std::ldexp(1.0, -40), -1.0});
  Tensor y({1, 1, 1}, AMPC_F64);
  ASSERT_OK(ampc_conv1d_fwd(ctx, T(y), T(x), T(w), nullptr, AMPC_F32, nullptr,
                            0, 1, 0, 1, 1));
  EXPECT_EQ(at<double>(y, 0), std::ldexp(1.0, -40));
}

TEST_F(WideDtypes, F64ComputesInF64) {
  // 1 + 2^-40 - 1 is 2^-40 in f64 and 0 in f32.
  Tensor a = make<double>({2}, AMPC_F64, {1.0, 1e300});
  Tensor b = make<double>({2}, AMPC_F64, {std::ldexp(1.0, -40), 1e300});
  Tensor y({2}, AMPC_F64);
  ASSERT_OK(ampc_add_fwd(ctx, T(y), T(a), T(b)));
  EXPECT_EQ(at<double>(y, 0) - 1.0, std::ldexp(1.0, -40));
  EXPECT_EQ(at<double>(y, 1), 2e300); // beyond f32's range
  Tensor m({}, AMPC_F64);
  int64_t dims[] = {0};
  ASSERT_OK(ampc_mean_fwd(ctx, T(m), T(y), dims, 1, 0));
  EXPECT_EQ(at<double>(m, 0), (at<double>(y, 0) + 2e300) / 2);
}

TEST_F(WideDtypes, F64DropoutKeepsTheF32MaskAndScalesInF64) {
  // p = 0.1: 1 / (1 - p) in f64 is not the f32 scale widened, and x holds
  // values f32 cannot (1 + 2^-40, 1e300).
  const int64_t n = 1000;
  const double p = 0.1;
  double e = std::ldexp(1.0, -40);
  Tensor x64({n}, AMPC_F64), x32({n}, AMPC_F32);
  for (int64_t i = 0; i < n; ++i) {
    double v = i % 3 == 0 ? 1.0 + e : (i % 3 == 1 ? 1e300 : -0.5 - i);
    static_cast<double *>(x64.data())[i] = v;
    x32.set(i, 1.0);
  }
  Tensor step({}, AMPC_I32);
  step.set(0, 7);
  Tensor y64({n}, AMPC_F64), y32({n}, AMPC_F32), r64({n}, AMPC_F64);
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y64), T(x64), step.data(), 42, p, 3));
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y32), T(x32), step.data(), 42, p, 3));
  double scale = 1.0 / (1.0 - p);
  ASSERT_NE(scale, static_cast<double>(1.0f / (1.0f - 0.1f)));
  uint64_t stream = ampc::dropoutStream(3, 7);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    // The naive mask: the 24-bit uniform of the element's Philox lane
    // against the f32 p, as the f32 kernel draws it.
    ampc::Philox4 r = ampc::dropoutDraws(42, stream, i);
    bool keep = ampc::uniformFromBits(r.v[i & 3]) >=
                static_cast<double>(static_cast<float>(p));
    EXPECT_EQ(keep, y32.get(i) != 0.0) << i; // the f32 kernel's mask
    double xi = at<double>(x64, i);
    EXPECT_EQ(at<double>(y64, i), keep ? xi * scale : 0.0 * xi) << i;
    kept += keep;
  }
  EXPECT_GT(kept, 850);
  EXPECT_LT(kept, 950);
  // The backward is the same call on dy; the ranked entry point without a
  // communicator is the plain one, bit for bit.
  ASSERT_OK(ampc_dropout_ranked_fwd(ctx, T(r64), T(x64), step.data(), 42, p,
                                    3, 10));
  EXPECT_EQ(0, std::memcmp(r64.data(), y64.data(), n * sizeof(double)));
  // Mixed f64 / f32 operands take the f64 kernel too (rounded once into y).
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y32), T(x64), step.data(), 42, p, 3));
  EXPECT_EQ(y32.get(0), static_cast<double>(static_cast<float>(
                            at<double>(y64, 0))));
}

TEST_F(WideDtypes, F64GemmAddComputesInF64) {
  // y = beta c + alpha (a @ b) against a naive f64 loop: entries 1 + k 2^-40
  // (lost in f32), alpha 0.1 and beta 0.3 (not f32 values), c broadcast.
  const int64_t m = 3, k = 4, n = 5, B = 2;
  double e = std::ldexp(1.0, -40);
  auto val = [&](int64_t i, int64_t salt) {
    return (i % 2 ? -1.0 : 1.0) * (1.0 + double((i * 7 + salt) % 11) * e);
  };
  Tensor a({B, m, k}, AMPC_F64), b({B, k, n}, AMPC_F64), c({n}, AMPC_F64);
  for (int64_t i = 0; i < B * m * k; ++i)
    static_cast<double *>(a.data())[i] = val(i, 1);
  for (int64_t i = 0; i < B * k * n; ++i)
    static_cast<double *>(b.data())[i] = val(i, 2);
  for (int64_t i = 0; i < n; ++i)
    static_cast<double *>(c.data())[i] = val(i, 3) * 1e-3;
  const double alpha = 0.1, beta = 0.3;
  // The product of batch entry t, naive.
  auto prod = [&](int64_t t, int64_t r, int64_t j) {
    double s = 0;
    for (int64_t q = 0; q < k; ++q)
      s += at<double>(a, t * m * k + r * k + q) *
           at<double>(b, t * k * n + q * n + j);
    return s;
  };
  auto close = [](double got, double want) {
    return std::fabs(got - want) <= 1e-15 * (std::fabs(want) + 1e-3);
  };
  // addmm of batch entry 0 (a [m, k] and b [k, n] are its first blocks).
  int64_t as[] = {m, k}, bs[] = {k, n};
  Tensor y({m, n}, AMPC_F64);
  ASSERT_OK(ampc_addmm_fwd(ctx, T(y), T(c), a.data(), AMPC_F64, as, 2,
                           b.data(), AMPC_F64, bs, 2, beta, alpha));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double want = beta * at<double>(c, j) + alpha * prod(0, r, j);
      EXPECT_TRUE(close(at<double>(y, r * n + j), want))
          << r << "," << j << ": " << at<double>(y, r * n + j) << " vs "
          << want;
    }
  // baddbmm (per batch) and addbmm (summed over the batch).
  Tensor yb({B, m, n}, AMPC_F64), ys({m, n}, AMPC_F64);
  ASSERT_OK(ampc_baddbmm_fwd(ctx, T(yb), T(c), T(a), T(b), beta, alpha));
  ASSERT_OK(ampc_addbmm_fwd(ctx, T(ys), T(c), T(a), T(b), beta, alpha));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t t = 0; t < B; ++t) {
        double want = beta * at<double>(c, j) + alpha * prod(t, r, j);
        EXPECT_TRUE(close(at<double>(yb, t * m * n + r * n + j), want));
        sum += prod(t, r, j);
      }
      EXPECT_TRUE(close(at<double>(ys, r * n + j),
                        beta * at<double>(c, j) + alpha * sum));
    }
  // addmv and addr (beta 0: c is not read, NaN stays out).
  Tensor v = make<double>({k}, AMPC_F64, {1.0 + e, -1.0, 2.0, 0.5});
  Tensor cm = make<double>({m}, AMPC_F64, {NAN, NAN, NAN});
  Tensor ym({m}, AMPC_F64);
  ASSERT_OK(ampc_addmv_fwd(ctx, T(ym), T(cm), a.data(), AMPC_F64, as, 2,
                           T(v), 0.0, alpha));
  for (int64_t r = 0; r < m; ++r) {
    double s = 0;
    for (int64_t q = 0; q < k; ++q)
      s += at<double>(a, r * k + q) * at<double>(v, q);
    EXPECT_TRUE(close(at<double>(ym, r), alpha * s)) << at<double>(ym, r);
  }
  Tensor yr({m, k}, AMPC_F64);
  Tensor u = make<double>({m}, AMPC_F64, {1.0 + e, 3.0, -2.0});
  Tensor cr = make<double>({m, 1}, AMPC_F64, {1.0, 2.0, 3.0});
  ASSERT_OK(ampc_addr_fwd(ctx, T(yr), T(cr), T(u), T(v), beta, alpha));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < k; ++j)
      EXPECT_TRUE(close(at<double>(yr, r * k + j),
                        beta * at<double>(cr, r) +
                            alpha * (at<double>(u, r) * at<double>(v, j))));
}

TEST_F(WideDtypes, F64BatchNormComputesInF64) {
  // x (N=2, C=2, inner=3): channel 0 holds 1 + k 2^-30 (deviations f32
  // cannot hold), channel 1 values beyond f32's range.
  const int64_t N = 2, C = 2, I = 3, M = N * I;
  double e = std::ldexp(1.0, -30);
  Tensor x({N, C, I}, AMPC_F64);
  auto xv = [&](int64_t s, int64_t ch, int64_t j) {
    int64_t k = s * I + j;
    return ch == 0 ? 1.0 + double(k) * e : 1e300 * (k % 2 ? 1.0 : -0.5);
  };
  for (int64_t s = 0; s < N; ++s)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t j = 0; j < I; ++j)
        static_cast<double *>(x.data())[(s * C + ch) * I + j] = xv(s, ch, j);
  Tensor w = make<double>({C}, AMPC_F64, {1.5, 0.25});
  Tensor b = make<double>({C}, AMPC_F64, {0.1, -2.0});
  Tensor rm = make<double>({C}, AMPC_F64, {1.0, 0.0});
  Tensor rv = make<double>({C}, AMPC_F64, {4.0, 1e-300});
  const double eps = 1e-5;
  // The naive statistics of channel ch (scaled for channel 1 to stay finite).
  auto stats = [&](int64_t ch, double &mean, double &var) {
    mean = 0;
    for (int64_t s = 0; s < N; ++s)
      for (int64_t j = 0; j < I; ++j)
        mean += xv(s, ch, j);
    mean /= double(M);
    var = 0;
    for (int64_t s = 0; s < N; ++s)
      for (int64_t j = 0; j < I; ++j)
        var += (xv(s, ch, j) - mean) * (xv(s, ch, j) - mean);
    var /= double(M);
  };
  Tensor y({N, C, I}, AMPC_F64);
  // Channel 0 only in training (channel 1's squares overflow in any type).
  Tensor x0({N, 1, I}, AMPC_F64), y0({N, 1, I}, AMPC_F64);
  for (int64_t s = 0; s < N; ++s)
    for (int64_t j = 0; j < I; ++j)
      static_cast<double *>(x0.data())[s * I + j] = xv(s, 0, j);
  int64_t cs[] = {1};
  double w0 = 1.5, b0 = 0.1, rm0 = 1.0, rv0 = 4.0;
  ASSERT_OK(ampc_batch_norm_fwd(ctx, T(y0), T(x0), &w0, AMPC_F64, cs, 1, &b0,
                                AMPC_F64, cs, 1, &rm0, AMPC_F64, cs, 1, &rv0,
                                AMPC_F64, cs, 1, 1, eps));
  double mean, var;
  stats(0, mean, var);
  double invstd = 1.0 / std::sqrt(var + eps);
  for (int64_t s = 0; s < N; ++s)
    for (int64_t j = 0; j < I; ++j) {
      double want = (xv(s, 0, j) - mean) * invstd * 1.5 + 0.1;
      EXPECT_NEAR(at<double>(y0, s * I + j), want, 1e-14) << s << "," << j;
    }
  // var is ~2.9e-18, below eps: y spreads ~1e-6 around b, which f32's
  // rounding of x (1 + k 2^-30 is not an f32) would flatten to exactly b.
  EXPECT_NE(at<double>(y0, 0), 0.1);
  // Backward in training against the naive formulas.
  Tensor dy0 = make<double>({N, 1, I}, AMPC_F64,
                            {0.5, -1.0, 2.0, 1.0 + e, 0.25, -0.75});
  Tensor dx0({N, 1, I}, AMPC_F64);
  double dw0 = 0, db0 = 0;
  ASSERT_OK(ampc_batch_norm_bwd(ctx, T(dx0), &dw0, AMPC_F64, cs, 1, &db0,
                                AMPC_F64, cs, 1, T(dy0), T(x0), &w0, AMPC_F64,
                                cs, 1, &rm0, AMPC_F64, cs, 1, &rv0, AMPC_F64,
                                cs, 1, 1, eps));
  double sumDy = 0, sumDyX = 0;
  for (int64_t i = 0; i < M; ++i) {
    double xhat = (xv(i / I, 0, i % I) - mean) * invstd;
    sumDy += at<double>(dy0, i);
    sumDyX += at<double>(dy0, i) * xhat;
  }
  EXPECT_NEAR(db0, sumDy, 1e-15);
  EXPECT_NEAR(dw0, sumDyX, 1e-12 * std::fabs(sumDyX));
  for (int64_t i = 0; i < M; ++i) {
    double xhat = (xv(i / I, 0, i % I) - mean) * invstd;
    double want = 1.5 * invstd *
                  (at<double>(dy0, i) - sumDy / M - xhat * sumDyX / M);
    EXPECT_NEAR(at<double>(dx0, i), want, 1e-12 * std::fabs(want) + 1e-15);
  }
  // Eval over both channels: the running statistics, 1e300 values kept.
  ASSERT_OK(ampc_batch_norm_fwd(ctx, T(y), T(x), T(w), T(b), T(rm), T(rv), 0,
                                eps));
  for (int64_t s = 0; s < N; ++s)
    for (int64_t j = 0; j < I; ++j) {
      double want0 = (xv(s, 0, j) - 1.0) * (1.0 / std::sqrt(4.0 + eps)) * 1.5 + 0.1;
      double want1 = xv(s, 1, j) * (1.0 / std::sqrt(1e-300 + eps)) * 0.25 - 2.0;
      EXPECT_EQ(at<double>(y, (s * C + 0) * I + j), want0);
      EXPECT_EQ(at<double>(y, (s * C + 1) * I + j), want1);
    }
  // The running-statistics update with momentum 0.1 (not an f32 value).
  double nm = 0, nv = 0;
  ASSERT_OK(ampc_batch_norm_update(ctx, &nm, AMPC_F64, cs, 1, &nv, AMPC_F64,
                                   cs, 1, T(x0), &rm0, AMPC_F64, cs, 1, &rv0,
                                   AMPC_F64, cs, 1, 0.1));
  EXPECT_NEAR(nm, 0.9 * 1.0 + 0.1 * mean, 1e-15);
  EXPECT_NEAR(nv, 0.9 * 4.0 + 0.1 * var * M / (M - 1.0), 1e-15);
}

} // namespace
