//===- test_conv_geom.cpp - The walks of im2col and col2im ----------------===//
//
// ConvGeom::imageElementOf and forEachColumnOf (src/backend.h), the walks
// the CUDA im2col and col2im kernels (f32 and f64) run, against im2col's
// definition written out here: every column entry names the image element
// it copies (-1 for padding), and scattering the column matrix back into
// the image row by row reaches each image element through exactly the
// entries forEachColumnOf lists, in its order. Every combination of kernel
// 1-3, stride 1-3, padding 0-2 and dilation 1-2 in 2-D (a 1-D convolution
// is a 2-D one of height 1) and a set of 3-D geometries. This runs on the
// CPU, so the walks the GPU kernels share are checked here too.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "src/backend.h"

#include <vector>

namespace {

using ampc::ConvGeom;

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t p, int64_t dil) {
  int64_t span = dil * (k - 1) + 1;
  return in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
}

/// For each image element, the column entries im2col copies it into, in
/// row order (the scatter of a CPU col2im).
std::vector<std::vector<int64_t>> scatterLists(const ConvGeom &g) {
  std::vector<std::vector<int64_t>> lists(static_cast<size_t>(g.imageSize()));
  int64_t cols = g.columns();
  for (int64_t row = 0; row < g.rows(); ++row) {
    int64_t c = row / (g.kd * g.kh * g.kw), kz = (row / (g.kh * g.kw)) % g.kd;
    int64_t ky = (row / g.kw) % g.kh, kx = row % g.kw;
    for (int64_t pix = 0; pix < cols; ++pix) {
      int64_t oz = pix / (g.oh * g.ow), oy = (pix / g.ow) % g.oh,
              ox = pix % g.ow;
      int64_t iz = oz * g.sd - g.pd + kz * g.dd;
      int64_t iy = oy * g.sh - g.ph + ky * g.dh;
      int64_t ix = ox * g.sw - g.pw + kx * g.dw;
      if (iz < 0 || iz >= g.d || iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
        continue; // padding
      lists[((c * g.d + iz) * g.h + iy) * g.w + ix].push_back(row * cols +
                                                               pix);
    }
  }
  return lists;
}

void expectWalkMatches(const ConvGeom &g) {
  auto want = scatterLists(g);
  // imageElementOf (im2col's gather) is the inverse of the same scatter.
  std::vector<int64_t> owner(static_cast<size_t>(g.rows() * g.columns()), -1);
  for (int64_t e = 0; e < g.imageSize(); ++e)
    for (int64_t k : want[e])
      owner[k] = e;
  for (int64_t k = 0; k < g.rows() * g.columns(); ++k)
    ASSERT_EQ(g.imageElementOf(k), owner[k]) << "column entry " << k;
  for (int64_t i = 0; i < g.imageSize(); ++i) {
    std::vector<int64_t> got;
    g.forEachColumnOf(i, [&](int64_t k) { got.push_back(k); });
    ASSERT_EQ(got, want[i]) << "element " << i << " of a " << g.d << "x"
                            << g.h << "x" << g.w << " image, kernel " << g.kd
                            << "x" << g.kh << "x" << g.kw << ", stride "
                            << g.sh << ", padding " << g.ph << ", dilation "
                            << g.dh;
  }
}

ConvGeom geom2d(int64_t c, int64_t h, int64_t w, int64_t k, int64_t s,
                int64_t p, int64_t dil) {
  ConvGeom g{};
  g.channels = c;
  g.h = h;
  g.w = w;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.ph = g.pw = p;
  g.dh = g.dw = dil;
  g.oh = outSize(h, k, s, p, dil);
  g.ow = outSize(w, k, s, p, dil);
  return g;
}

TEST(ConvGeom, ColumnWalkIsIm2colsScatter2d) {
  int checked = 0;
  for (int64_t k = 1; k <= 3; ++k)
    for (int64_t s = 1; s <= 3; ++s)
      for (int64_t p = 0; p <= 2; ++p)
        for (int64_t dil = 1; dil <= 2; ++dil) {
          ConvGeom g = geom2d(2, 7, 6, k, s, p, dil);
          if (g.oh <= 0 || g.ow <= 0)
            continue;
          expectWalkMatches(g);
          ++checked;
        }
  EXPECT_GT(checked, 50);
  // 1-D: height 1, kernel height 1.
  ConvGeom g1 = geom2d(3, 1, 11, 1, 1, 0, 1);
  g1.kw = 3;
  g1.sw = 2;
  g1.pw = 1;
  g1.dw = 2;
  g1.ow = outSize(11, 3, 2, 1, 2);
  expectWalkMatches(g1);
}

TEST(ConvGeom, ColumnWalkIsIm2colsScatter3d) {
  for (int64_t k : {1, 2, 3})
    for (int64_t s : {1, 2})
      for (int64_t p : {0, 1}) {
        ConvGeom g = geom2d(2, 5, 4, k, s, p, 1);
        g.d = 4;
        g.kd = k == 1 ? 2 : k;
        g.sd = s;
        g.pd = p;
        g.dd = k == 2 ? 2 : 1;
        g.od = outSize(g.d, g.kd, g.sd, g.pd, g.dd);
        if (g.od <= 0 || g.oh <= 0 || g.ow <= 0)
          continue;
        expectWalkMatches(g);
      }
}

} // namespace
