//===- test_cpu_pooling.cpp - The CPU pooling's vector rows ---------------===//
//
// The AVX-512 rows of max and average pooling against the element loop's
// rules (window order, first maximum, a NaN wins over numbers and the
// first NaN over later ones, f32 sums from 0), on planes full of ties,
// signed zeros and NaNs, every geometry of kernel 1-3 and stride 1-3; and
// the public entry points' results against the same rules.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "cpu/cpu_pooling.h"

using namespace ampc_test;

namespace {


/// The element loop: first maximum in window order.
int64_t refArgmax(const float *p, int64_t w, int64_t row0, int64_t col0,
                  int64_t kh, int64_t kw) {
  int64_t best = -1;
  float bv = -INFINITY;
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx) {
      int64_t off = (row0 + ky) * w + col0 + kx;
      float v = p[off];
      if (best < 0 || v > bv || (v != v && bv == bv)) {
        best = off;
        bv = v;
      }
    }
  return best;
}

/// A plane with few distinct values (many ties), both zeros and NaNs.
std::vector<float> trickyPlane(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const float vals[] = {1.0f, -1.0f, 0.0f, -0.0f, 2.5f, NAN, -INFINITY,
                        INFINITY, 1.0f, 2.5f};
  std::vector<float> p(static_cast<size_t>(n));
  for (float &v : p)
    v = vals[rng() % 10];
  // A NaN with another payload and sign, so "which NaN" is visible.
  p[static_cast<size_t>(n / 3)] = -std::nanf("7");
  return p;
}

} // namespace

TEST(CpuPooling, VectorRowsFollowTheElementLoop) {
  if (!ampc::cpupooling::vectorRows()) {
    std::printf("AVX-512 not on this CPU: the vector rows are not used, "
                "not tested\n");
    GTEST_SKIP();
  }
  const int64_t h = 11, w = 45;
  std::vector<float> plane = trickyPlane(h * w, 3);
  for (int64_t kh = 1; kh <= 3; ++kh)
    for (int64_t kw = 1; kw <= 3; ++kw)
      for (int64_t sw = 1; sw <= 3; ++sw) {
        int64_t cols = (w - kw) / sw + 1;
        for (int64_t row0 = 0; row0 + kh <= h; ++row0) {
          ampc::cpupooling::RowWindows r{plane.data(), w, row0, kh, kw, sw};
          for (int64_t ox0 = 0; ox0 < cols; ox0 += 16) {
            int n = static_cast<int>(std::min<int64_t>(16, cols - ox0));
            int32_t idx[16];
            float val[16], avg[16];
            ampc::cpupooling::maxRow(r, ox0, n, idx, val);
            float div = static_cast<float>(kh * kw);
            ampc::cpupooling::avgRow(r, ox0, n, div, avg);
            for (int l = 0; l < n; ++l) {
              int64_t col0 = (ox0 + l) * sw;
              int64_t a = refArgmax(plane.data(), w, row0, col0, kh, kw);
              ASSERT_EQ(idx[l], a) << kh << "x" << kw << " sw " << sw
                                   << " row " << row0 << " col " << col0;
              ASSERT_EQ(bitsOf(val[l]), bitsOf(plane[a]));
              float s = 0.0f;
              for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx)
                  s += plane[(row0 + ky) * w + col0 + kx];
              float want = s / div;
              ASSERT_EQ(bitsOf(avg[l]), bitsOf(want))
                  << "avg " << kh << "x" << kw << " sw " << sw;
            }
          }
        }
      }
}

TEST(CpuPooling, EntryPointsGiveTheElementLoopsValuesAndGradients) {
  // max_pool2d / avg_pool2d forward and backward through the C ABI, f32 and
  // f16, kernel 3 stride 2 padding 1 (edge windows take the element loop,
  // inside ones the vector rows) and kernel 2 stride 2.
  ampc_context ctx = nullptr;
  ASSERT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), AMPC_OK);
  struct Geo {
    int64_t k, s, p;
  } geos[] = {{3, 2, 1}, {2, 2, 0}, {3, 1, 0}};
  const int64_t n = 2, c = 3, h = 9, w = 37;
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16})
    for (const Geo &ge : geos)
      for (int isMax = 0; isMax < 2; ++isMax) {
        int64_t oh = (h + 2 * ge.p - ge.k) / ge.s + 1;
        int64_t ow = (w + 2 * ge.p - ge.k) / ge.s + 1;
        Tensor x({n, c, h, w}, dt), y({n, c, oh, ow}, dt), dy({n, c, oh, ow}, dt),
            dx({n, c, h, w}, dt);
        std::vector<float> vals = trickyPlane(n * c * h * w, 11);
        for (int64_t i = 0; i < x.size(); ++i)
          x.set(i, vals[static_cast<size_t>(i)]);
        for (int64_t i = 0; i < dy.size(); ++i)
          dy.set(i, 0.25 * static_cast<double>(i % 13) - 1.0);
        auto fwd = isMax ? ampc_max_pool2d_fwd : ampc_avg_pool2d_fwd;
        auto bwd = isMax ? ampc_max_pool2d_bwd : ampc_avg_pool2d_bwd;
        ASSERT_EQ(fwd(ctx, T(y), T(x), ge.k, ge.k, ge.s, ge.s, ge.p, ge.p),
                  AMPC_OK)
            << ampc_last_error();
        ASSERT_EQ(bwd(ctx, T(dx), T(dy), T(x), ge.k, ge.k, ge.s, ge.s, ge.p,
                      ge.p),
                  AMPC_OK)
            << ampc_last_error();
        std::vector<float> wantDx(static_cast<size_t>(x.size()), 0.0f);
        for (int64_t pl = 0; pl < n * c; ++pl)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              int64_t best = -1;
              float bv = -INFINITY, s = 0.0f;
              float d = static_cast<float>(dy.get((pl * oh + oy) * ow + ox));
              std::vector<int64_t> inWin;
              for (int64_t ky = 0; ky < ge.k; ++ky)
                for (int64_t kx = 0; kx < ge.k; ++kx) {
                  int64_t iy = oy * ge.s - ge.p + ky, ix = ox * ge.s - ge.p + kx;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                    continue;
                  int64_t off = iy * w + ix;
                  float v = static_cast<float>(x.get(pl * h * w + off));
                  inWin.push_back(off);
                  s += v;
                  if (best < 0 || v > bv || (v != v && bv == bv)) {
                    best = off;
                    bv = v;
                  }
                }
              float div = static_cast<float>(ge.k * ge.k);
              float want = isMax ? (best < 0 ? -INFINITY : bv) : s / div;
              Tensor one({1}, dt);
              one.set(0, want);
              uint16_t got16 = 0, want16 = 0;
              int64_t yi = (pl * oh + oy) * ow + ox;
              if (dt == AMPC_F32) {
                ASSERT_EQ(bitsOf(static_cast<float>(y.get(yi))), bitsOf(want))
                    << "y " << yi;
              } else {
                std::memcpy(&got16, y.bytes.data() + 2 * yi, 2);
                std::memcpy(&want16, one.bytes.data(), 2);
                ASSERT_EQ(got16, want16) << "y " << yi;
              }
              if (isMax) {
                if (best >= 0)
                  wantDx[static_cast<size_t>(pl * h * w + best)] += d;
              } else {
                for (int64_t off : inWin)
                  wantDx[static_cast<size_t>(pl * h * w + off)] += d / div;
              }
            }
        for (int64_t i = 0; i < dx.size(); ++i) {
          Tensor one({1}, dt);
          one.set(0, wantDx[static_cast<size_t>(i)]);
          ASSERT_EQ(std::memcmp(dx.bytes.data() + i * (dt == AMPC_F32 ? 4 : 2),
                                one.bytes.data(), dt == AMPC_F32 ? 4 : 2),
                    0)
              << (isMax ? "max" : "avg") << " dx " << i;
        }
      }
  ampc_context_destroy(ctx);
}
