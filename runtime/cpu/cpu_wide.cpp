//===- cpu_wide.cpp - f64 and exact-integer kernels of the CPU backend ----===//
//
// Plain loops (one thread): f64 through the shared scalar formulas
// instantiated for double, integers in int64 with unsigned (wrapping)
// arithmetic, stored to their width with two's-complement wrap-around.
//
//===----------------------------------------------------------------------===//
#include "cpu_wide.h"

#include "../src/as_written.h"
#include "../src/dropout_ops.h"
#include "../src/half.h"
#include "../src/int_ops.h"
#include "../src/wide_ops.h"
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
      int64_t at = wideArgmaxRow(ints, x, o * dim * inner + i, dim, inner);
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
    for (int64_t i = 0; i < inner; ++i)
      wideCumsumRow(f64, y, x, o, i, len, inner, reverse);
  return true;
}

bool softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
             int64_t inner) {
  if (!anyF64({y, x}))
    return false;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      wideSoftmaxRow(log, y, x, o * dim * inner + i, dim, inner);
  return true;
}

bool softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer, int64_t dim,
                int64_t inner) {
  if (!anyF64({dx, dy, y}))
    return false;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      wideSoftmaxBwdRow(log, dx, dy, y, o * dim * inner + i, dim, inner);
  return true;
}

bool norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows, int64_t cols,
          double eps) {
  if (!anyF64({y, x, w, b}))
    return false;
  for (int64_t r = 0; r < rows; ++r) {
    double mean, rstd;
    wideRowStats(rms, x, r, cols, asWritten(eps), mean, rstd);
    wideNormRow(y, x, w, b, r, cols, mean, rstd);
  }
  return true;
}

bool normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
             int64_t rows, int64_t cols, double eps) {
  if (!anyF64({dx, dw, db, dy, x, w}))
    return false;
  size_t n = static_cast<size_t>(cols);
  std::vector<double> dwAcc(n, 0.0), dbAcc(n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mean, rstd;
    wideRowStats(rms, x, r, cols, asWritten(eps), mean, rstd);
    for (int64_t j = 0; j < cols; ++j)
      wideNormBwdColStep(dy, x, r, cols, j, mean, rstd, dwAcc[j], dbAcc[j]);
    if (dx.data)
      wideNormBwdDxRow(rms, dx, dy, x, w, r, cols, mean, rstd);
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
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        storeF64(y.data, y.dtype, (p * g.oh + oy) * g.ow + ox,
                 widePoolOut(g, x, p, oy, ox));
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
          int64_t at = widePoolArgmax(g, x, p, oy, ox, best);
          if (at >= 0)
            acc[at] += d;
        } else {
          g.forEachTap(oy, ox, [&](int64_t off) { acc[off] += d / div; });
        }
      }
    for (int64_t i = 0; i < hw; ++i)
      storeF64(dx.data, dx.dtype, p * hw + i, acc[i]);
  }
  return true;
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
  for (int64_t i = 0; i < n; ++i)
    wideMseBwdAt(da, db, a, b, i, norm, g);
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
  for (int64_t i = 0; i < n; ++i)
    found |= wideUnscaleAt(g, i, inv);
  return found;
}

bool sgd(Buf param, Buf grad, void *bufData, const SgdScalars &s, int64_t n) {
  if (!isF64(param))
    return false;
  double *buf = static_cast<double *>(bufData);
  double lr = wideSgdLr(s);
  for (int64_t i = 0; i < n; ++i)
    wideSgdAt(param, grad, buf, s, lr, i);
  return true;
}

bool adamw(Buf param, Buf grad, double *m, double *v, int64_t n, double lr,
           const float *lrScale, double beta1, double beta2, double eps,
           double weightDecay, int32_t step) {
  if (!isF64(param))
    return false;
  WideAdamwStep a = wideAdamwStep(lr, lrScale, beta1, beta2, eps, weightDecay,
                                  static_cast<double>(step));
  for (int64_t i = 0; i < n; ++i)
    wideAdamwAt(param, grad, m, v, i, a);
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

bool batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv, bool training,
               int64_t n, int64_t c, int64_t inner, double eps) {
  if (!anyF64({y, x, w, b, rm, rv}))
    return false;
  for (int64_t ch = 0; ch < c; ++ch)
    wideBnForwardChannel(y, x, w, b, rm, rv, training, n, c, inner, ch, eps);
  return true;
}

bool batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w, Buf rm,
                  Buf rv, bool training, int64_t n, int64_t c, int64_t inner,
                  double eps) {
  if (!anyF64({dx, dw, db, dy, x, w, rm, rv}))
    return false;
  for (int64_t ch = 0; ch < c; ++ch)
    wideBnBackwardChannel(dx, dw, db, dy, x, w, rm, rv, training, n, c, inner,
                          ch, eps);
  return true;
}

bool batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                     int64_t n, int64_t c, int64_t inner, double momentum) {
  if (!anyF64({newMean, newVar, x, rm, rv}))
    return false;
  for (int64_t ch = 0; ch < c; ++ch)
    wideBnUpdateChannel(newMean, newVar, x, rm, rv, n, c, inner, ch, momentum);
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
    wideDropoutAt(y, x, i, r, gi, pMask, scale);
  }
  return true;
}

double asWritten(double v) { return asWrittenDouble(v); }

} // namespace cpuwide
} // namespace ampc
