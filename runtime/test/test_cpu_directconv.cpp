//===- test_cpu_directconv.cpp - The CPU backend's direct convolutions ----===//
//
// The AVX-512, AVX2 and scalar paths of runtime/cpu/cpu_directconv give the
// same bits (forward, backward-x, backward-w) on shapes with odd sizes,
// strides, dilations, paddings, channel counts that fill no block and
// kernels of more than 9 taps; the results do not depend on the order the
// work items run in; and every result is within the error bound of one
// chain of n fused multiply-adds of a double-precision reference:
// |got - ref| <= gamma_n * sum |terms|, gamma_n = n u / (1 - n u), u = 2^-24.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "cpu/cpu_directconv.h"

using namespace ampc::cpudirect;

namespace {

struct Case {
  int64_t n, c, o, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
};

const Case kCases[] = {
    // n, c, o, h, w, kh, kw, sh, sw, ph, pw, dh, dw
    {2, 16, 16, 12, 11, 3, 3, 1, 1, 1, 1, 1, 1}, // the ResNet's 3x3
    {2, 16, 32, 13, 10, 3, 3, 2, 2, 1, 1, 1, 1}, // stride 2, odd height
    {2, 16, 32, 9, 8, 1, 1, 2, 2, 0, 0, 1, 1},   // 1x1 stride-2 projection
    {2, 3, 16, 10, 9, 3, 3, 1, 1, 1, 1, 1, 1},   // RGB stem
    {2, 3, 32, 11, 12, 3, 3, 2, 2, 1, 1, 1, 1},  // strided RGB stem
    {1, 5, 7, 9, 13, 3, 3, 1, 1, 2, 2, 2, 2},    // dilation 2, 7 outputs
    {2, 9, 11, 11, 9, 5, 5, 1, 1, 2, 2, 1, 1},   // 25 taps: groups 9, 9, 7
    {1, 17, 9, 10, 14, 2, 3, 2, 3, 0, 2, 1, 1},  // mixed strides and pads
    {1, 4, 3, 3, 3, 3, 3, 1, 1, 0, 0, 1, 1},     // a single output pixel
    {1, 20, 19, 7, 30, 3, 1, 3, 1, 1, 0, 2, 1},  // stride 3 rows, 3x1
    {1, 33, 8, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1},    // pointwise
    {2, 6, 5, 7, 9, 1, 3, 2, 1, 0, 1, 1, 1},     // rows no tap reaches
};

Geom geomOf(const Case &k) {
  Geom g{k.c, k.o,  k.h,  k.w,  k.kh, k.kw, 0,
         0,   k.sh, k.sw, k.ph, k.pw, k.dh, k.dw};
  g.oh = (k.h + 2 * k.ph - (k.dh * (k.kh - 1) + 1)) / k.sh + 1;
  g.ow = (k.w + 2 * k.pw - (k.dw * (k.kw - 1) + 1)) / k.sw + 1;
  return g;
}

std::vector<float> randomVec(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

struct Results {
  std::vector<float> y, dx, dw;
};

/// Runs the three kernels for `isa` on the case's data; the work items run
/// in reverse order when `reverse` is set.
Results runAll(const Case &k, Isa isa, const std::vector<float> &x,
               const std::vector<float> &w, const std::vector<float> &bias,
               const std::vector<float> &dy, bool reverse) {
  Geom g = geomOf(k);
  int64_t chw = g.c * g.h * g.w, ohw = g.o * g.oh * g.ow;
  Results r;
  r.y.assign(k.n * ohw, -7.0f);
  r.dx.assign(k.n * chw, -7.0f);
  r.dw.assign(g.o * g.c * g.kh * g.kw, -7.0f);
  Forward f(g, w.data(), isa);
  BackwardData bd(g, w.data(), isa);
  BackwardWeight bw(g, isa);
  std::vector<float> packed(
      std::max({f.packedFloats(), bd.packedFloats(), bw.packedFloats()}));
  std::vector<float> work(std::max(f.workFloats(), bd.workFloats()));
  std::vector<float> acc(bw.accFloats(), 0.0f);
  auto each = [&](int64_t blocks, const std::function<void(int64_t)> &fn) {
    for (int64_t i = 0; i < blocks; ++i)
      fn(reverse ? blocks - 1 - i : i);
  };
  for (int64_t i = 0; i < k.n; ++i) {
    f.pack(x.data() + i * chw, Dt::F32, packed.data());
    each(f.blocks(), [&](int64_t b) {
      f.run(packed.data(), work.data(), r.y.data() + i * ohw, Dt::F32,
            bias.data(), b, b + 1);
    });
    bd.pack(dy.data() + i * ohw, Dt::F32, packed.data());
    each(bd.blocks(), [&](int64_t b) {
      bd.run(packed.data(), work.data(), r.dx.data() + i * chw, Dt::F32, b,
             b + 1);
    });
    bw.pack(x.data() + i * chw, Dt::F32, packed.data());
    each(bw.blocks(), [&](int64_t b) {
      bw.accumulate(packed.data(), dy.data() + i * ohw, acc.data(), b, b + 1);
    });
  }
  bw.finish(acc.data(), r.dw.data());
  return r;
}

/// Checks got against a double-precision sum of `terms` products.
struct Bound {
  double ref = 0, absSum = 0;
  int64_t n = 0;
  void add(double a, double b) {
    ref += a * b;
    absSum += std::fabs(a * b);
    ++n;
  }
  double limit() const {
    double nu = static_cast<double>(n) * std::ldexp(1.0, -24);
    return nu / (1 - nu) * absSum;
  }
};

void expectSameBits(const std::vector<float> &a, const std::vector<float> &b,
                    const char *what, const char *isa, int cs) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    ASSERT_EQ(ua, ub) << what << " element " << i << " of case " << cs << ": "
                      << isa << " " << a[i] << " against scalar " << b[i];
  }
}

} // namespace

TEST(CpuDirectConv, ReportsPaths) {
  // Not an assertion on the machine: records which paths the tests compare.
  std::printf("AVX2 %s, AVX-512 %s, default %s\n",
              supported(Isa::AVX2) ? "yes" : "no",
              supported(Isa::AVX512) ? "yes" : "no", isaName(defaultIsa()));
}

TEST(CpuDirectConv, PathsBitIdenticalAndWithinBound) {
  std::mt19937 rng(2026);
  int cs = 0;
  for (const Case &k : kCases) {
    Geom g = geomOf(k);
    int64_t chw = g.c * g.h * g.w, ohw = g.o * g.oh * g.ow, taps = g.kh * g.kw;
    std::vector<float> x = randomVec(k.n * chw, rng);
    std::vector<float> w = randomVec(g.o * g.c * taps, rng);
    std::vector<float> bias = randomVec(g.o, rng);
    std::vector<float> dy = randomVec(k.n * ohw, rng);
    Results ref = runAll(k, Isa::Scalar, x, w, bias, dy, false);
    for (Isa isa : {Isa::AVX2, Isa::AVX512}) {
      if (!supported(isa))
        continue; // The other paths are still compared with the scalar.
      for (bool reverse : {false, true}) {
        Results got = runAll(k, isa, x, w, bias, dy, reverse);
        expectSameBits(got.y, ref.y, "y", isaName(isa), cs);
        expectSameBits(got.dx, ref.dx, "dx", isaName(isa), cs);
        expectSameBits(got.dw, ref.dw, "dw", isaName(isa), cs);
      }
    }
    // The scalar result against the definition in double.
    auto xAt = [&](int64_t i, int64_t c, int64_t iy, int64_t ix) {
      return static_cast<double>(x[((i * g.c + c) * g.h + iy) * g.w + ix]);
    };
    std::vector<Bound> by(k.n * ohw), bdx(k.n * chw), bdw(g.o * g.c * taps);
    for (int64_t i = 0; i < k.n; ++i)
      for (int64_t o = 0; o < g.o; ++o)
        for (int64_t oy = 0; oy < g.oh; ++oy)
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            int64_t yi = ((i * g.o + o) * g.oh + oy) * g.ow + ox;
            for (int64_t c = 0; c < g.c; ++c)
              for (int64_t ky = 0; ky < g.kh; ++ky)
                for (int64_t kx = 0; kx < g.kw; ++kx) {
                  int64_t iy = oy * g.sh + ky * g.dh - g.ph;
                  int64_t ix = ox * g.sw + kx * g.dw - g.pw;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
                    continue;
                  int64_t wi = ((o * g.c + c) * g.kh + ky) * g.kw + kx;
                  by[yi].add(w[wi], xAt(i, c, iy, ix));
                  bdx[((i * g.c + c) * g.h + iy) * g.w + ix].add(w[wi], dy[yi]);
                  bdw[wi].add(dy[yi], xAt(i, c, iy, ix));
                }
          }
    for (size_t e = 0; e < by.size(); ++e) {
      // The bias is one more rounded addition.
      double want = by[e].ref + bias[e / (g.oh * g.ow) % g.o];
      double lim =
          by[e].limit() + std::ldexp(std::fabs(want) + by[e].absSum, -24);
      ASSERT_LE(std::fabs(ref.y[e] - want), lim) << "y " << e << " case " << cs;
    }
    for (size_t e = 0; e < bdx.size(); ++e)
      ASSERT_LE(std::fabs(ref.dx[e] - bdx[e].ref), bdx[e].limit())
          << "dx " << e << " case " << cs;
    for (size_t e = 0; e < bdw.size(); ++e)
      ASSERT_LE(std::fabs(ref.dw[e] - bdw[e].ref), bdw[e].limit())
          << "dw " << e << " case " << cs;
    ++cs;
  }
}

TEST(CpuDirectConv, PaddingTermsDoNotReachOtherPixels) {
  // A NaN in one input pixel reaches exactly the outputs whose window holds
  // that pixel (the dropped wide columns read neighbouring rows; they must
  // not leak into kept outputs), on every path.
  Case k{1, 2, 3, 6, 7, 3, 3, 2, 2, 1, 1, 1, 1};
  Geom g = geomOf(k);
  std::mt19937 rng(7);
  std::vector<float> x = randomVec(g.c * g.h * g.w, rng);
  x[(1 * g.h + 2) * g.w + 6] = NAN; // channel 1, row 2, last column
  std::vector<float> w = randomVec(g.o * g.c * 9, rng);
  std::vector<float> bias(g.o, 0.0f), dy(g.o * g.oh * g.ow, 1.0f);
  for (Isa isa : {Isa::Scalar, Isa::AVX2, Isa::AVX512}) {
    if (!supported(isa))
      continue;
    Results r = runAll(k, isa, x, w, bias, dy, false);
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          int64_t dyR = 2 + 1 - oy * 2, dxR = 6 + 1 - ox * 2;
          bool reaches = dyR >= 0 && dyR < 3 && dxR >= 0 && dxR < 3;
          float v = r.y[(o * g.oh + oy) * g.ow + ox];
          EXPECT_EQ(std::isnan(v), reaches)
              << isaName(isa) << " o " << o << " oy " << oy << " ox " << ox;
        }
  }
}

TEST(CpuDirectConv, BiasGradientIsTheF64SumInImagePixelOrder) {
  // ampc_conv2d_bwd on the direct path computes dbias alongside dw: the
  // runtime's sum over (image, pixel) in f64, in that order, rounded once to
  // f32, whatever else is requested (dx only, dw only, both).
  ampc_context ctx = nullptr;
  ASSERT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), AMPC_OK);
  const int64_t n = 3, c = 5, o = 11, h = 9, w = 7;
  int64_t xs[4] = {n, c, h, w}, ws[4] = {o, c, 3, 3}, ys[4] = {n, o, 5, 4},
          bs[1] = {o};
  std::mt19937 rng(3);
  std::vector<float> x = randomVec(n * c * h * w, rng);
  std::vector<float> wt = randomVec(o * c * 9, rng);
  std::vector<float> dy = randomVec(n * o * 5 * 4, rng);
  for (float &v : dy)
    v *= 1000.0f; // Sums whose f32 and f64 roundings differ.
  std::vector<float> want(o);
  for (int64_t k = 0; k < o; ++k) {
    double a = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < 20; ++p)
        a += dy[(i * o + k) * 20 + p];
    want[k] = static_cast<float>(a);
  }
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<float> dx(x.size()), dw(wt.size()), db(o, -1.0f);
    ASSERT_EQ(ampc_conv2d_bwd(ctx, mode != 1 ? dx.data() : nullptr, AMPC_F32,
                              xs, 4, mode != 0 ? dw.data() : nullptr, AMPC_F32,
                              ws, 4, db.data(), AMPC_F32, bs, 1, dy.data(),
                              AMPC_F32, ys, 4, x.data(), AMPC_F32, xs, 4,
                              wt.data(), AMPC_F32, ws, 4, 2, 2, 1, 1, 1, 1, 1),
              AMPC_OK)
        << ampc_last_error();
    expectSameBits(db, want, "dbias", "direct", mode);
  }
  ampc_context_destroy(ctx);
}
