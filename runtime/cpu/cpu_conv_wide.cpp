//===- cpu_conv_wide.cpp - f64 convolutions of the CPU backend ------------===//
//
// See cpu_conv_wide.h. OpenBLAS runs single-threaded inside the runtime
// (createCpuBackend), so each item's dgemm is one fixed sequence of
// operations; the pool only chooses which thread runs an item.
//
//===----------------------------------------------------------------------===//
#include "cpu_conv_wide.h"

#include "../src/common.h"
#include "../src/half.h"
#include "cpu_pool.h"

#include <cblas.h>

#include <atomic>
#include <new>
#include <vector>

namespace ampc {
namespace cpuwide {
namespace {

/// Output channels per item of the weight gradient: rows of dw summed over
/// all images by one item.
constexpr int64_t kWeightRows = 16;

/// b's first n elements as f64: b itself, or widened exactly into tmp.
const double *asF64(Buf b, int64_t n, std::vector<double> &tmp) {
  if (!b.data)
    return nullptr;
  if (b.dtype == AMPC_F64)
    return static_cast<const double *>(b.data);
  tmp.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    tmp[i] = loadF64(b.data, b.dtype, i);
  return tmp.data();
}

/// Whether the column matrix is the image itself (a 1x1x1 kernel, stride
/// 1, no padding).
bool pointwise(const ConvGeom &g) {
  return g.kd == 1 && g.kh == 1 && g.kw == 1 && g.sd == 1 && g.sh == 1 &&
         g.sw == 1 && g.pd == 0 && g.ph == 0 && g.pw == 0;
}

/// Calls f(row, column, image offset or -1 for padding) for every element
/// of the column matrix [C * kd * kh * kw, od * oh * ow] of one image
/// [C, d, h, w], rows and columns in order.
template <typename F> void forColumns(const ConvGeom &g, F &&f) {
  int64_t r = 0;
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t kz = 0; kz < g.kd; ++kz)
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx, ++r) {
          int64_t q = 0;
          for (int64_t oz = 0; oz < g.od; ++oz) {
            int64_t iz = oz * g.sd - g.pd + kz * g.dd;
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              int64_t iy = oy * g.sh - g.ph + ky * g.dh;
              bool out = iz < 0 || iz >= g.d || iy < 0 || iy >= g.h;
              int64_t base = ((c * g.d + iz) * g.h + iy) * g.w;
              for (int64_t ox = 0; ox < g.ow; ++ox, ++q) {
                int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                f(r, q, out || ix < 0 || ix >= g.w ? -1 : base + ix);
              }
            }
          }
        }
}

void im2col(double *col, const double *x, const ConvGeom &g) {
  int64_t hw = g.columns();
  forColumns(g, [&](int64_t r, int64_t q, int64_t at) {
    col[r * hw + q] = at < 0 ? 0.0 : x[at];
  });
}

/// dx [C, d, h, w] += col2im(col), rows and columns in order.
void col2im(double *dx, const double *col, const ConvGeom &g) {
  int64_t hw = g.columns();
  forColumns(g, [&](int64_t r, int64_t q, int64_t at) {
    if (at >= 0)
      dx[at] += col[r * hw + q];
  });
}

/// C [m, n] = op(A) op(B) + beta C, row-major, in f64.
void dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           const double *a, int64_t lda, const double *b, int64_t ldb,
           double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

/// Scratch of the running thread, grown as needed.
double *scratch(std::vector<double> &v, int64_t n) {
  if (v.size() < static_cast<size_t>(n))
    v.resize(static_cast<size_t>(n));
  return v.data();
}

/// Runs fn(item) for items [0, n) on the pool; false when one ran out of
/// memory (an exception must not leave a worker thread).
template <typename F> bool runItems(int64_t n, F &&fn) {
  std::atomic<bool> failed{false};
  cpupool::parallelFor(n, [&](int64_t item) {
    if (failed.load(std::memory_order_relaxed))
      return;
    try {
      fn(item);
    } catch (const std::bad_alloc &) {
      failed.store(true);
    }
  });
  return !failed.load();
}

/// The sizes of one pass.
struct Sizes {
  int64_t n, groups, o, og, ckk, hw, gimg;
  explicit Sizes(const ConvWideCall &c)
      : n(c.n), groups(c.groups), o(c.outChannels), og(o / groups),
        ckk(c.g.rows()), hw(c.g.columns()), gimg(c.g.imageSize()) {}
  int64_t imageElems() const { return n * groups * gimg; }
  int64_t outputElems() const { return n * o * hw; }
  int64_t weightElems() const { return o * ckk; }
};

/// y = conv(x, w) + bias, one item per (image, group).
bool forward(const ConvWideCall &c) {
  const ConvGeom &g = c.g;
  Sizes z(c);
  bool pw = pointwise(g), f64 = c.out.dtype == AMPC_F64;
  std::vector<double> xTmp, wTmp, biasTmp;
  const double *x = asF64(c.a, z.imageElems(), xTmp);
  const double *w = asF64(c.b, z.weightElems(), wTmp);
  const double *bias = asF64(c.bias, z.o, biasTmp);
  return runItems(z.n * z.groups, [&](int64_t item) {
    int64_t i = item / z.groups, gi = item % z.groups, og = z.og, hw = z.hw;
    thread_local std::vector<double> colT, accT;
    int64_t at = (i * z.o + gi * og) * hw;
    double *acc =
        f64 ? static_cast<double *>(c.out.data) + at : scratch(accT, og * hw);
    if (z.ckk == 0 || og == 0 || hw == 0) {
      for (int64_t k = 0; k < og * hw; ++k)
        acc[k] = 0.0;
    } else {
      const double *xg = x + (i * z.groups + gi) * z.gimg;
      const double *cols = xg;
      if (!pw) {
        double *col = scratch(colT, z.ckk * hw);
        im2col(col, xg, g);
        cols = col;
      }
      dgemm(false, false, og, hw, z.ckk, w + gi * og * z.ckk, z.ckk, cols, hw,
            0.0, acc, hw);
    }
    for (int64_t oo = 0; oo < og; ++oo) {
      double *row = acc + oo * hw;
      if (bias)
        for (int64_t p = 0; p < hw; ++p)
          row[p] += bias[gi * og + oo];
      if (!f64)
        for (int64_t p = 0; p < hw; ++p)
          storeF64(c.out.data, c.out.dtype, at + oo * hw + p, row[p]);
    }
  });
}

/// dx = conv's input gradient for dy, one item per (image, group).
bool backwardData(const ConvWideCall &c) {
  const ConvGeom &g = c.g;
  Sizes z(c);
  bool pw = pointwise(g), f64 = c.out.dtype == AMPC_F64;
  std::vector<double> dyTmp, wTmp;
  const double *dy = asF64(c.a, z.outputElems(), dyTmp);
  const double *w = asF64(c.b, z.weightElems(), wTmp);
  return runItems(z.n * z.groups, [&](int64_t item) {
    int64_t i = item / z.groups, gi = item % z.groups, og = z.og, hw = z.hw;
    int64_t ckk = z.ckk, gimg = z.gimg;
    thread_local std::vector<double> colT, imgT;
    int64_t at = (i * z.groups + gi) * gimg;
    double *img =
        f64 ? static_cast<double *>(c.out.data) + at : scratch(imgT, gimg);
    for (int64_t k = 0; k < gimg; ++k)
      img[k] = 0.0;
    if (og > 0 && hw > 0 && ckk > 0) {
      // dcol [ckk, hw] = w_g [og, ckk]^T dy_g [og, hw], then scattered
      // back to the image (a pointwise one's columns are the image).
      const double *wg = w + gi * og * ckk,
                   *dyg = dy + (i * z.o + gi * og) * hw;
      if (pw) {
        dgemm(true, false, ckk, hw, og, wg, ckk, dyg, hw, 0.0, img, hw);
      } else {
        double *col = scratch(colT, ckk * hw);
        dgemm(true, false, ckk, hw, og, wg, ckk, dyg, hw, 0.0, col, hw);
        col2im(img, col, g);
      }
    }
    if (!f64)
      for (int64_t k = 0; k < gimg; ++k)
        storeF64(c.out.data, c.out.dtype, at + k, img[k]);
  });
}

/// dw (when wanted), one item per group and block of kWeightRows output
/// channels summing the images in order; db (when wanted), one f64 sum per
/// channel over (image, pixel) in that order.
bool backwardWeights(const ConvWideCall &c) {
  const ConvGeom &g = c.g;
  Sizes z(c);
  bool pw = pointwise(g), f64 = c.out.dtype == AMPC_F64;
  std::vector<double> xTmp, dyTmp;
  const double *x = asF64(c.a, z.imageElems(), xTmp);
  const double *dy = asF64(c.b, z.outputElems(), dyTmp);
  bool ok = true;
  if (c.out.data && z.og > 0 && z.ckk > 0) {
    int64_t blocks = (z.og + kWeightRows - 1) / kWeightRows;
    ok = runItems(z.groups * blocks, [&](int64_t item) {
      int64_t gi = item / blocks, r0 = (item % blocks) * kWeightRows;
      int64_t rows = z.og - r0 < kWeightRows ? z.og - r0 : kWeightRows;
      int64_t ckk = z.ckk, hw = z.hw;
      thread_local std::vector<double> colT, accT;
      int64_t at = (gi * z.og + r0) * ckk;
      double *acc = f64 ? static_cast<double *>(c.out.data) + at
                        : scratch(accT, rows * ckk);
      for (int64_t k = 0; k < rows * ckk; ++k)
        acc[k] = 0.0;
      // dw rows [rows, ckk] += dy rows [rows, hw] col^T, image by image in
      // order.
      for (int64_t i = 0; i < z.n && hw > 0; ++i) {
        const double *xg = x + (i * z.groups + gi) * z.gimg;
        const double *cols = xg;
        if (!pw) {
          double *col = scratch(colT, ckk * hw);
          im2col(col, xg, g);
          cols = col;
        }
        dgemm(false, true, rows, ckk, hw, dy + (i * z.o + gi * z.og + r0) * hw,
              hw, cols, hw, 1.0, acc, ckk);
      }
      if (!f64)
        for (int64_t k = 0; k < rows * ckk; ++k)
          storeF64(c.out.data, c.out.dtype, at + k, acc[k]);
    });
  } else if (c.out.data) {
    for (int64_t k = 0; k < z.weightElems(); ++k)
      storeF64(c.out.data, c.out.dtype, k, 0.0);
  }
  if (ok && c.bias.data)
    ok = runItems(z.o, [&](int64_t ch) {
      double s = 0.0;
      for (int64_t i = 0; i < z.n; ++i) {
        const double *row = dy + (i * z.o + ch) * z.hw;
        for (int64_t p = 0; p < z.hw; ++p)
          s += row[p];
      }
      storeF64(c.bias.data, c.bias.dtype, ch, s);
    });
  return ok;
}

} // namespace

ampc_status conv(const ConvWideCall &c) {
  bool ok = c.pass == ConvCall::Forward        ? forward(c)
            : c.pass == ConvCall::BackwardData ? backwardData(c)
                                               : backwardWeights(c);
  if (!ok)
    return setError(AMPC_ERROR_OUT_OF_MEMORY,
                    "cpu backend: out of memory in an f64 convolution");
  return AMPC_OK;
}

} // namespace cpuwide
} // namespace ampc
