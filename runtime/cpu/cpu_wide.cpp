//===- cpu_wide.cpp - f64 and exact-integer kernels of the CPU backend ----===//
//
// Plain loops (one thread): f64 through the shared scalar formulas
// instantiated for double, integers in int64 with unsigned (wrapping)
// arithmetic, stored to their width with two's-complement wrap-around.
//
//===----------------------------------------------------------------------===//
#include "cpu_wide.h"

#include "../src/dropout_ops.h"
#include "../src/as_written.h"
#include "../src/half.h"
#include "../src/int_ops.h"
#include "cpu_kernels.h"

#include <cblas.h>

#include <math.h>

#include <vector>

namespace ampc {
namespace cpuwide {
namespace {

using cpukern::forEach;

bool isIntOrBool(Buf b) {
  return isIntegerDtype(b.dtype) || b.dtype == AMPC_BOOL;
}

bool anyF64(std::initializer_list<Buf> bufs) {
  for (const Buf &b : bufs)
    if (isF64(b))
      return true;
  return false;
}

} // namespace

bool unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x, int64_t n) {
  if (anyF64({y, x})) {
    for (int64_t i = 0; i < n; ++i)
      storeF64(y.data, y.dtype, i,
               unaryForward(op, loadF64(x.data, x.dtype, i), attrs));
    return true;
  }
  if (!isIntegerDtype(y.dtype) || !isIntOrBool(x) ||
      (op != UnaryOp::Neg && op != UnaryOp::Abs))
    return false;
  for (int64_t i = 0; i < n; ++i) {
    storeInt(y.data, y.dtype, i,
             intNegAbs(op == UnaryOp::Neg, loadInt(x.data, x.dtype, i)));
  }
  return true;
}

bool unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy, Buf x,
              int64_t n) {
  if (!anyF64({dx, dy, x}))
    return false;
  for (int64_t i = 0; i < n; ++i)
    storeF64(dx.data, dx.dtype, i,
             unaryBackward(op, loadF64(x.data, x.dtype, i),
                           loadF64(dy.data, dy.dtype, i), attrs));
  return true;
}

bool binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w) {
  if (anyF64({y, a, b})) {
    forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t o2) {
      storeF64(y.data, y.dtype, o0,
               binaryForward(op, loadF64(a.data, a.dtype, o1),
                             loadF64(b.data, b.dtype, o2)));
    });
    return true;
  }
  // Integer operands: exact when the result is an integer (arithmetic,
  // where) or a comparison's bool.
  if (!isIntOrBool(a) || !isIntOrBool(b) ||
      !(isIntegerDtype(y.dtype) || isComparison(op)))
    return false;
  int64_t probe;
  if (!intBinary(op, 0, 0, probe))
    return false;
  forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t o2) {
    int64_t r = 0;
    intBinary(op, loadInt(a.data, a.dtype, o1), loadInt(b.data, b.dtype, o2),
              r);
    storeInt(y.data, y.dtype, o0, r);
  });
  return true;
}

bool binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
               const Walk &w) {
  if (!anyF64({g, dy, a, b}))
    return false;
  forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t o2) {
    storeF64(g.data, g.dtype, o0,
             binaryBackward(op, which, loadF64(a.data, a.dtype, o1),
                            loadF64(b.data, b.dtype, o2),
                            loadF64(dy.data, dy.dtype, o0)));
  });
  return true;
}

bool reduce(ReduceOp op, Buf y, Buf x, const Walk &outer, const Walk &inner) {
  if (anyF64({y, x})) {
    double count = static_cast<double>(inner.numel());
    forEach(outer, [&](int64_t, int64_t yo, int64_t xo, int64_t) {
      double acc = op == ReduceOp::Max ? -INFINITY : 0.0;
      forEach(inner, [&](int64_t, int64_t, int64_t xi, int64_t) {
        double v = loadF64(x.data, x.dtype, xo + xi);
        if (op != ReduceOp::Max)
          acc += v;
        else if (v != v || acc != acc)
          acc = v != v ? v : acc;
        else if (v > acc)
          acc = v;
      });
      storeF64(y.data, y.dtype, yo, op == ReduceOp::Mean ? acc / count : acc);
    });
    return true;
  }
  if (!isIntOrBool(x) || !isIntOrBool(y) || op == ReduceOp::Mean)
    return false;
  forEach(outer, [&](int64_t, int64_t yo, int64_t xo, int64_t) {
    bool first = true;
    int64_t acc = 0;
    forEach(inner, [&](int64_t, int64_t, int64_t xi, int64_t) {
      int64_t v = loadInt(x.data, x.dtype, xo + xi);
      if (op == ReduceOp::Sum)
        acc = static_cast<int64_t>(static_cast<uint64_t>(acc) +
                                   static_cast<uint64_t>(v));
      else if (first || v > acc)
        acc = v;
      first = false;
    });
    storeInt(y.data, y.dtype, yo, acc);
  });
  return true;
}

bool argmax(Buf y, Buf x, int64_t outer, int64_t dim, int64_t inner) {
  bool ints = isIntOrBool(x);
  if (!ints && x.dtype != AMPC_F64)
    return false;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * dim * inner + i, at = 0;
      for (int64_t d = 1; d < dim; ++d) {
        int64_t p = base + d * inner, q = base + at * inner;
        bool takes =
            ints ? loadInt(x.data, x.dtype, p) > loadInt(x.data, x.dtype, q)
                 : argmaxTakes(loadF64(x.data, x.dtype, p),
                               loadF64(x.data, x.dtype, q));
        if (takes)
          at = d;
      }
      storeInt(y.data, y.dtype, o * inner + i, at);
    }
  return true;
}

bool cumsum(Buf y, Buf x, int64_t outer, int64_t len, int64_t inner,
            bool reverse) {
  bool f64 = anyF64({y, x});
  if (!f64 && !(isIntOrBool(x) && y.dtype == AMPC_I64))
    return false;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0.0;
      uint64_t iacc = 0;
      for (int64_t k = 0; k < len; ++k) {
        int64_t at = (o * len + (reverse ? len - 1 - k : k)) * inner + i;
        if (f64) {
          acc += loadF64(x.data, x.dtype, at);
          storeF64(y.data, y.dtype, at, acc);
        } else {
          iacc += static_cast<uint64_t>(loadInt(x.data, x.dtype, at));
          static_cast<int64_t *>(y.data)[at] = static_cast<int64_t>(iacc);
        }
      }
    }
  return true;
}

bool softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
             int64_t inner) {
  if (!anyF64({y, x}))
    return false;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * dim * inner + i;
      double m = -INFINITY;
      for (int64_t d = 0; d < dim; ++d)
        m = fmax(m, loadF64(x.data, x.dtype, base + d * inner));
      double sum = 0.0;
      for (int64_t d = 0; d < dim; ++d)
        sum += exp(loadF64(x.data, x.dtype, base + d * inner) - m);
      double ls = ::log(sum);
      for (int64_t d = 0; d < dim; ++d) {
        double v = loadF64(x.data, x.dtype, base + d * inner) - m;
        storeF64(y.data, y.dtype, base + d * inner,
                 log ? v - ls : exp(v) / sum);
      }
    }
  return true;
}

bool softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer, int64_t dim,
                int64_t inner) {
  if (!anyF64({dx, dy, y}))
    return false;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * dim * inner + i;
      double dot = 0.0;
      for (int64_t d = 0; d < dim; ++d) {
        int64_t at = base + d * inner;
        double g = loadF64(dy.data, dy.dtype, at);
        dot += log ? g : g * loadF64(y.data, y.dtype, at);
      }
      for (int64_t d = 0; d < dim; ++d) {
        int64_t at = base + d * inner;
        double g = loadF64(dy.data, dy.dtype, at),
               v = loadF64(y.data, y.dtype, at);
        storeF64(dx.data, dx.dtype, at, log ? g - exp(v) * dot : v * (g - dot));
      }
    }
  return true;
}

namespace {

/// Row r of x in f64 and its mean (0 for RMS) and 1 / sqrt(var + eps).
void rowStats64(bool rms, Buf x, int64_t r, int64_t cols, double eps,
                std::vector<double> &row, double &mean, double &rstd) {
  row.resize(static_cast<size_t>(cols));
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) {
    row[j] = loadF64(x.data, x.dtype, r * cols + j);
    s += row[j];
  }
  mean = rms ? 0.0 : s / static_cast<double>(cols);
  double v = 0.0;
  for (int64_t j = 0; j < cols; ++j)
    v += (row[j] - mean) * (row[j] - mean);
  rstd = 1.0 / sqrt(v / static_cast<double>(cols) + asWritten(eps));
}

/// Calls f(input offset within the plane) for each in-bounds tap of the
/// pooling window at (oy, ox), in window order.
template <typename F>
void poolWindow(const PoolGeom &g, int64_t oy, int64_t ox, F &&f) {
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    int64_t iy = oy * g.sh - g.ph + ky;
    if (iy < 0 || iy >= g.h)
      continue;
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      int64_t ix = ox * g.sw - g.pw + kx;
      if (ix >= 0 && ix < g.w)
        f(iy * g.w + ix);
    }
  }
}

/// The plane offset of the first maximum of window (oy, ox) of plane p
/// (-1: an empty window), NaN counting as the maximum.
int64_t poolArgmax(const PoolGeom &g, Buf x, int64_t p, int64_t oy,
                   int64_t ox, double &best) {
  int64_t at = -1;
  best = -INFINITY;
  poolWindow(g, oy, ox, [&](int64_t off) {
    double v = loadF64(x.data, x.dtype, p * g.h * g.w + off);
    if (at < 0 || v > best || (v != v && best == best)) {
      at = off;
      best = v;
    }
  });
  return at;
}

} // namespace

bool norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows, int64_t cols,
          double eps) {
  if (!anyF64({y, x, w, b}))
    return false;
  std::vector<double> row;
  for (int64_t r = 0; r < rows; ++r) {
    double mean, rstd;
    rowStats64(rms, x, r, cols, eps, row, mean, rstd);
    for (int64_t j = 0; j < cols; ++j) {
      double v = (row[j] - mean) * rstd;
      if (w.data)
        v *= loadF64(w.data, w.dtype, j);
      if (b.data)
        v += loadF64(b.data, b.dtype, j);
      storeF64(y.data, y.dtype, r * cols + j, v);
    }
  }
  return true;
}

bool normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
             int64_t rows, int64_t cols, double eps) {
  if (!anyF64({dx, dw, db, dy, x, w}))
    return false;
  size_t n = static_cast<size_t>(cols);
  std::vector<double> row, d(n), g(n), xhat(n), dwAcc(n, 0.0), dbAcc(n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mean, rstd;
    rowStats64(rms, x, r, cols, eps, row, mean, rstd);
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      d[j] = loadF64(dy.data, dy.dtype, r * cols + j);
      xhat[j] = (row[j] - mean) * rstd;
      g[j] = w.data ? d[j] * loadF64(w.data, w.dtype, j) : d[j];
      sumG += g[j];
      sumGX += g[j] * xhat[j];
      dwAcc[j] += d[j] * xhat[j];
      dbAcc[j] += d[j];
    }
    if (!dx.data)
      continue;
    double meanG = rms ? 0.0 : sumG / static_cast<double>(cols);
    double meanGX = sumGX / static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j)
      storeF64(dx.data, dx.dtype, r * cols + j,
               rstd * (g[j] - meanG - xhat[j] * meanGX));
  }
  for (int64_t j = 0; j < cols; ++j) {
    if (dw.data)
      storeF64(dw.data, dw.dtype, j, dwAcc[j]);
    if (db.data)
      storeF64(db.data, db.dtype, j, dbAcc[j]);
  }
  return true;
}

bool pool(Buf y, Buf x, const PoolGeom &g) {
  if (!anyF64({y, x}))
    return false;
  double div = static_cast<double>(g.kh * g.kw);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        double v = 0.0;
        if (g.isMax) {
          poolArgmax(g, x, p, oy, ox, v);
        } else {
          poolWindow(g, oy, ox, [&](int64_t off) {
            v += loadF64(x.data, x.dtype, p * g.h * g.w + off);
          });
          v /= div;
        }
        storeF64(y.data, y.dtype, (p * g.oh + oy) * g.ow + ox, v);
      }
  return true;
}

bool poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) {
  if (!anyF64({dx, dy, x}))
    return false;
  double div = static_cast<double>(g.kh * g.kw);
  int64_t hw = g.h * g.w;
  std::vector<double> acc(static_cast<size_t>(hw));
  for (int64_t p = 0; p < g.planes; ++p) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        double d = loadF64(dy.data, dy.dtype, (p * g.oh + oy) * g.ow + ox);
        if (g.isMax) {
          double best;
          int64_t at = poolArgmax(g, x, p, oy, ox, best);
          if (at >= 0)
            acc[at] += d;
        } else {
          poolWindow(g, oy, ox, [&](int64_t off) { acc[off] += d / div; });
        }
      }
    for (int64_t i = 0; i < hw; ++i)
      storeF64(dx.data, dx.dtype, p * hw + i, acc[i]);
  }
  return true;
}

double rowLse(Buf logits, int64_t base, int64_t classes) {
  double m = -INFINITY;
  for (int64_t c = 0; c < classes; ++c)
    m = fmax(m, loadF64(logits.data, logits.dtype, base + c));
  double sum = 0.0;
  for (int64_t c = 0; c < classes; ++c)
    sum += exp(loadF64(logits.data, logits.dtype, base + c) - m);
  return m + log(sum);
}

void crossEntropyBwdRow(Buf dlogits, Buf logits, int64_t base, int64_t classes,
                        int64_t label, double scale) {
  double lse = label == -100 ? 0.0 : rowLse(logits, base, classes);
  for (int64_t c = 0; c < classes; ++c) {
    double v = 0.0;
    if (label != -100)
      v = (exp(loadF64(logits.data, logits.dtype, base + c) - lse) -
           (c == label ? 1.0 : 0.0)) *
          scale;
    storeF64(dlogits.data, dlogits.dtype, base + c, v);
  }
}

bool mse(Buf loss, Buf a, Buf b, int64_t n) {
  if (!anyF64({loss, a, b}))
    return false;
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double d = loadF64(a.data, a.dtype, i) - loadF64(b.data, b.dtype, i);
    s += d * d;
  }
  storeF64(loss.data, loss.dtype, 0, s / static_cast<double>(n));
  return true;
}

bool mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b, int64_t n) {
  if (!anyF64({da, db, dloss, a, b}))
    return false;
  double norm = 2.0 / static_cast<double>(n);
  double g = loadF64(dloss.data, dloss.dtype, 0);
  for (int64_t i = 0; i < n; ++i) {
    double v =
        norm * (loadF64(a.data, a.dtype, i) - loadF64(b.data, b.dtype, i)) * g;
    if (da.data)
      storeF64(da.data, da.dtype, i, v);
    if (db.data)
      storeF64(db.data, db.dtype, i, -v);
  }
  return true;
}

bool gemm(const GemmDesc &d) {
  if (!anyF64({d.c, d.a, d.b, d.bias}))
    return false;
  // Operands of another dtype (a mixed call) are widened exactly first.
  auto widen = [](Buf b, int64_t n, std::vector<double> &tmp) {
    if (b.dtype == AMPC_F64)
      return static_cast<const double *>(b.data);
    tmp.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      tmp[i] = loadF64(b.data, b.dtype, i);
    return static_cast<const double *>(tmp.data());
  };
  int64_t aRows = d.transA ? d.k : d.m, bRows = d.transB ? d.n : d.k;
  int64_t aN = (d.batch - 1) * d.strideA + (aRows ? (aRows - 1) * d.lda : 0) +
               (d.transA ? d.m : d.k);
  int64_t bN = (d.batch - 1) * d.strideB + (bRows ? (bRows - 1) * d.ldb : 0) +
               (d.transB ? d.k : d.n);
  std::vector<double> at, bt, ct;
  const double *a = widen(d.a, aN, at), *b = widen(d.b, bN, bt);
  int64_t cN = (d.batch - 1) * d.strideC + (d.m ? (d.m - 1) * d.ldc : 0) + d.n;
  double *c = d.c.dtype == AMPC_F64 ? static_cast<double *>(d.c.data)
                                    : const_cast<double *>(widen(d.c, cN, ct));
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    double *cb = c + bi * d.strideC;
    if (d.k == 0 || d.m == 0 || d.n == 0) {
      for (int64_t r = 0; r < d.m; ++r)
        for (int64_t j = 0; j < d.n; ++j)
          cb[r * d.ldc + j] = d.beta == 0.0f ? 0.0 : d.beta * cb[r * d.ldc + j];
    } else {
      cblas_dgemm(CblasRowMajor, d.transA ? CblasTrans : CblasNoTrans,
                  d.transB ? CblasTrans : CblasNoTrans, static_cast<int>(d.m),
                  static_cast<int>(d.n), static_cast<int>(d.k), d.alpha,
                  a + bi * d.strideA, static_cast<int>(d.lda),
                  b + bi * d.strideB, static_cast<int>(d.ldb), d.beta, cb,
                  static_cast<int>(d.ldc));
    }
    for (int64_t r = 0; r < d.m; ++r)
      for (int64_t j = 0; j < d.n; ++j) {
        double v = cb[r * d.ldc + j];
        if (d.bias.data)
          v += loadF64(d.bias.data, d.bias.dtype, j);
        cb[r * d.ldc + j] = cpukern::applyEpilogue(d.epilogue, v);
      }
  }
  if (d.c.dtype != AMPC_F64)
    for (int64_t i = 0; i < cN; ++i)
      storeF64(d.c.data, d.c.dtype, i, c[i]);
  return true;
}

bool unscale(double *g, int64_t n, float inv) {
  bool found = false;
  for (int64_t i = 0; i < n; ++i) {
    found |= !(g[i] - g[i] == 0.0);
    if (inv != 1.0f)
      g[i] = g[i] * static_cast<double>(inv);
  }
  return found;
}

bool sgd(Buf param, Buf grad, void *bufData, const SgdScalars &s, int64_t n) {
  if (!isF64(param))
    return false;
  double *buf = static_cast<double *>(bufData);
  double lr = s.lr64 * (s.lrScale ? static_cast<double>(*s.lrScale) : 1.0);
  for (int64_t i = 0; i < n; ++i) {
    double p = loadF64(param.data, param.dtype, i);
    double d = loadF64(grad.data, grad.dtype, i);
    if (s.hasWeightDecay)
      d = d + s.weightDecay64 * p;
    if (s.hasMomentum) {
      double m = buf[i] * s.momentum64 + d;
      buf[i] = m;
      d = s.nesterov ? d + s.momentum64 * m : m;
    }
    storeF64(param.data, param.dtype, i, p + -lr * d);
  }
  return true;
}

bool adamw(Buf param, Buf grad, double *m, double *v, int64_t n, double lr,
           const float *lrScale, double beta1, double beta2, double eps,
           double weightDecay, int32_t step) {
  if (!isF64(param))
    return false;
  if (lrScale)
    lr *= static_cast<double>(*lrScale);
  double decay = 1.0 - lr * weightDecay, w = 1.0 - beta1;
  double bc1 = 1.0 - pow(beta1, static_cast<double>(step));
  double bc2Sqrt = sqrt(1.0 - pow(beta2, static_cast<double>(step)));
  double stepSize = lr / bc1;
  for (int64_t i = 0; i < n; ++i) {
    double p = loadF64(param.data, param.dtype, i) * decay;
    double g = loadF64(grad.data, grad.dtype, i);
    // exp_avg.lerp_(grad, 1 - beta1), as torch.lerp computes it.
    m[i] = fabs(w) < 0.5 ? m[i] + w * (g - m[i]) : g - (g - m[i]) * (1.0 - w);
    v[i] = v[i] * beta2 + (1.0 - beta2) * g * g;
    double denom = sqrt(v[i]) / bc2Sqrt + eps;
    storeF64(param.data, param.dtype, i, p + -stepSize * (m[i] / denom));
  }
  return true;
}

bool addSquares(Buf g, int64_t n, double &sq) {
  if (!isF64(g))
    return false;
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<const double *>(g.data)[i];
    sq += v * v;
  }
  return true;
}

bool scaleF64(Buf g, int64_t n, double coef) {
  if (!isF64(g))
    return false;
  double *p = static_cast<double *>(g.data);
  for (int64_t i = 0; i < n; ++i)
    p[i] *= coef;
  return true;
}

namespace {
/// The batch mean and biased variance of channel ch (two passes, f64).
void bnStats64(Buf x, int64_t n, int64_t c, int64_t inner, int64_t ch,
               double &mean, double &var) {
  double s = 0.0;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j)
      s += loadF64(x.data, x.dtype, (s0 * c + ch) * inner + j);
  double m = static_cast<double>(n * inner);
  mean = s / m;
  double s2 = 0.0;
  for (int64_t s0 = 0; s0 < n; ++s0)
    for (int64_t j = 0; j < inner; ++j) {
      double d = loadF64(x.data, x.dtype, (s0 * c + ch) * inner + j) - mean;
      s2 += d * d;
    }
  var = s2 / m;
}

/// The mean and 1 / sqrt(var + eps) channel ch normalises with.
void bnChannel64(Buf x, Buf rm, Buf rv, bool training, int64_t n, int64_t c,
                 int64_t inner, int64_t ch, double eps, double &mean,
                 double &invstd) {
  double var;
  if (training) {
    bnStats64(x, n, c, inner, ch, mean, var);
  } else {
    mean = loadF64(rm.data, rm.dtype, ch);
    var = loadF64(rv.data, rv.dtype, ch);
  }
  invstd = 1.0 / sqrt(var + eps);
}
} // namespace

bool batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv, bool training,
               int64_t n, int64_t c, int64_t inner, double eps) {
  if (!anyF64({y, x, w, b, rm, rv}))
    return false;
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean, invstd;
    bnChannel64(x, rm, rv, training, n, c, inner, ch, eps, mean, invstd);
    double wc = w.data ? loadF64(w.data, w.dtype, ch) : 1.0;
    double bc = b.data ? loadF64(b.data, b.dtype, ch) : 0.0;
    for (int64_t s0 = 0; s0 < n; ++s0)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t i = (s0 * c + ch) * inner + j;
        storeF64(y.data, y.dtype, i,
                 (loadF64(x.data, x.dtype, i) - mean) * invstd * wc + bc);
      }
  }
  return true;
}

bool batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w, Buf rm,
                  Buf rv, bool training, int64_t n, int64_t c, int64_t inner,
                  double eps) {
  if (!anyF64({dx, dw, db, dy, x, w, rm, rv}))
    return false;
  double m = static_cast<double>(n * inner);
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean, invstd;
    bnChannel64(x, rm, rv, training, n, c, inner, ch, eps, mean, invstd);
    double sumDy = 0.0, sumDyX = 0.0;
    for (int64_t s0 = 0; s0 < n; ++s0)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t i = (s0 * c + ch) * inner + j;
        double d = loadF64(dy.data, dy.dtype, i);
        sumDy += d;
        sumDyX += d * ((loadF64(x.data, x.dtype, i) - mean) * invstd);
      }
    if (dw.data)
      storeF64(dw.data, dw.dtype, ch, sumDyX);
    if (db.data)
      storeF64(db.data, db.dtype, ch, sumDy);
    if (!dx.data)
      continue;
    double wc = w.data ? loadF64(w.data, w.dtype, ch) : 1.0;
    double meanDy = sumDy / m, meanDyX = sumDyX / m;
    for (int64_t s0 = 0; s0 < n; ++s0)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t i = (s0 * c + ch) * inner + j;
        double d = loadF64(dy.data, dy.dtype, i);
        double v;
        if (training) {
          double xhat = (loadF64(x.data, x.dtype, i) - mean) * invstd;
          v = wc * invstd * (d - meanDy - xhat * meanDyX);
        } else {
          v = d * wc * invstd;
        }
        storeF64(dx.data, dx.dtype, i, v);
      }
  }
  return true;
}

bool batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                     int64_t n, int64_t c, int64_t inner, double momentum) {
  if (!anyF64({newMean, newVar, x, rm, rv}))
    return false;
  double m = static_cast<double>(n * inner);
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean, var;
    bnStats64(x, n, c, inner, ch, mean, var);
    double unbiased = var * m / (m - 1.0);
    storeF64(newMean.data, newMean.dtype, ch,
             (1.0 - momentum) * loadF64(rm.data, rm.dtype, ch) +
                 momentum * mean);
    storeF64(newVar.data, newVar.dtype, ch,
             (1.0 - momentum) * loadF64(rv.data, rv.dtype, ch) +
                 momentum * unbiased);
  }
  return true;
}

bool dropout(Buf y, Buf x, const int32_t *step, uint64_t seed, uint64_t key,
             float pMask, double p, int64_t numel, DropoutShard shard) {
  if (!isF64(y) && !isF64(x))
    return false;
  uint64_t stream = dropoutStream(key, static_cast<uint32_t>(*step));
  double scale = 1.0 / (1.0 - p);
  int64_t block = -1;
  Philox4 r{};
  for (int64_t i = 0; i < numel; ++i) {
    int64_t gi = shard.global(i);
    if (gi >> 2 != block) {
      block = gi >> 2;
      r = dropoutDraws(seed, stream, gi);
    }
    // A dropped element is x * 0 (NaN stays NaN, as x * mask in PyTorch).
    bool keep = uniformFromBits(r.v[gi & 3]) >= static_cast<double>(pMask);
    storeF64(y.data, y.dtype, i,
             loadF64(x.data, x.dtype, i) * (keep ? scale : 0.0));
  }
  return true;
}

double asWritten(double v) { return asWrittenDouble(v); }

} // namespace cpuwide
} // namespace ampc
