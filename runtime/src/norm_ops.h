//===- norm_ops.h - Batch norm, per channel and per element ---*- C++ -*-===//
//
// The scalar code of ampc_batch_norm_*, shared by the CPU loops and the
// CUDA kernels (compiled by both, see hd.h). Batch norm accumulates each
// channel's sums in f64: the CPU backend loops over a channel's values in
// order, the CUDA backend splits them over a block of threads; both then
// apply the per-channel and per-element formulas below, so they differ only
// in the order of the f64 sums. (Dropout's mask: dropout_ops.h.)
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_NORM_OPS_H
#define AMPC_RUNTIME_SRC_NORM_OPS_H

#include "backend.h"
#include "half.h"

#include <math.h>
#include <stdint.h>

namespace ampc {

/// (N, C, inner) of a batch-norm input: channel c of sample n holds the
/// `inner` contiguous values from (n * C + c) * inner.
struct BnGeom {
  int64_t n, c, inner;
  AMPC_HD int64_t perChannel() const { return n * inner; }
  AMPC_HD int64_t at(int64_t sample, int64_t channel, int64_t j) const {
    return (sample * c + channel) * inner + j;
  }
};

/// The batch mean and biased variance of channel `ch` (two passes, f64).
AMPC_HD void bnBatchStats(Buf x, const BnGeom &g, int64_t ch, double &mean,
                          double &var) {
  double s = 0.0;
  for (int64_t s0 = 0; s0 < g.n; ++s0)
    for (int64_t j = 0; j < g.inner; ++j)
      s += loadF32(x.data, x.dtype, g.at(s0, ch, j));
  double m = g.perChannel();
  mean = s / m;
  double s2 = 0.0;
  for (int64_t s0 = 0; s0 < g.n; ++s0)
    for (int64_t j = 0; j < g.inner; ++j) {
      double d = loadF32(x.data, x.dtype, g.at(s0, ch, j)) - mean;
      s2 += d * d;
    }
  var = s2 / m;
}

/// The mean and 1 / sqrt(var + eps) a channel normalises with, from its
/// (batch or running) mean and variance.
AMPC_HD void bnStatsOf(double mu, double var, float eps, float &mean,
                       float &invstd) {
  mean = static_cast<float>(mu);
  invstd = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
}

/// The mean and 1 / sqrt(var + eps) channel `ch` normalises with: in
/// training from `batchStats(mu, var)` (the CPU's loop, or a CUDA block's
/// sums), otherwise from the running statistics.
template <class BatchStats>
AMPC_HD void bnChannelStatsWith(BatchStats batchStats, Buf rm, Buf rv,
                                bool training, int64_t ch, float eps,
                                float &mean, float &invstd) {
  double mu, var;
  if (training) {
    batchStats(mu, var);
  } else {
    mu = loadF32(rm.data, rm.dtype, ch);
    var = loadF32(rv.data, rv.dtype, ch);
  }
  bnStatsOf(mu, var, eps, mean, invstd);
}

/// The mean and 1 / sqrt(var + eps) channel `ch` normalises with.
AMPC_HD void bnChannelStats(Buf x, Buf rm, Buf rv, bool training,
                            const BnGeom &g, int64_t ch, float eps,
                            float &mean, float &invstd) {
  bnChannelStatsWith(
      [&](double &mu, double &var) { bnBatchStats(x, g, ch, mu, var); }, rm,
      rv, training, ch, eps, mean, invstd);
}

/// One normalised element: (x - mean) * scale + shift, scale = invstd * w.
AMPC_HD float bnNormalised(float x, float mean, float scale, float shift) {
  return (x - mean) * scale + shift;
}

/// One element of dx (see bnBackwardChannel).
AMPC_HD float bnGradInput(float d, float x, float mean, float invstd, float wc,
                          float meanDy, float meanDyX, bool training) {
  if (!training)
    return d * wc * invstd;
  float xhat = (x - mean) * invstd;
  return wc * invstd * (d - meanDy - xhat * meanDyX);
}

/// The new running mean and variance of channel `ch` from its batch mean
/// and biased variance over m values (PyTorch's update, with the unbiased
/// batch variance).
AMPC_HD void bnUpdateFrom(Buf newMean, Buf newVar, Buf rm, Buf rv, int64_t ch,
                          double mean, double var, double m, float momentum) {
  double unbiased = var * m / (m - 1.0);
  double k = momentum;
  storeF32(newMean.data, newMean.dtype, ch,
           static_cast<float>((1.0 - k) * loadF32(rm.data, rm.dtype, ch) +
                              k * mean));
  storeF32(newVar.data, newVar.dtype, ch,
           static_cast<float>((1.0 - k) * loadF32(rv.data, rv.dtype, ch) +
                              k * unbiased));
}

/// y of channel `ch`.
AMPC_HD void bnForwardChannel(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                              bool training, const BnGeom &g, int64_t ch,
                              float eps) {
  float mean, invstd;
  bnChannelStats(x, rm, rv, training, g, ch, eps, mean, invstd);
  float scale = invstd * loadF32(w.data, w.dtype, ch);
  float shift = loadF32(b.data, b.dtype, ch);
  for (int64_t s0 = 0; s0 < g.n; ++s0)
    for (int64_t j = 0; j < g.inner; ++j) {
      int64_t i = g.at(s0, ch, j);
      storeF32(y.data, y.dtype, i,
               bnNormalised(loadF32(x.data, x.dtype, i), mean, scale, shift));
    }
}

/// dx, dw, db of channel `ch`. Training: dx = w * invstd / M * (M * dy -
/// sum(dy) - xhat * sum(dy * xhat)) (the batch statistics depend on x);
/// otherwise dx = dy * w * invstd.
AMPC_HD void bnBackwardChannel(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                               Buf rm, Buf rv, bool training, const BnGeom &g,
                               int64_t ch, float eps) {
  float mean, invstd;
  bnChannelStats(x, rm, rv, training, g, ch, eps, mean, invstd);
  double sumDy = 0.0, sumDyX = 0.0;
  for (int64_t s0 = 0; s0 < g.n; ++s0)
    for (int64_t j = 0; j < g.inner; ++j) {
      int64_t i = g.at(s0, ch, j);
      double d = loadF32(dy.data, dy.dtype, i);
      sumDy += d;
      sumDyX += d * ((loadF32(x.data, x.dtype, i) - mean) * invstd);
    }
  if (dw.data)
    storeF32(dw.data, dw.dtype, ch, static_cast<float>(sumDyX));
  if (db.data)
    storeF32(db.data, db.dtype, ch, static_cast<float>(sumDy));
  if (!dx.data)
    return;
  float wc = loadF32(w.data, w.dtype, ch);
  double m = g.perChannel();
  float meanDy = static_cast<float>(sumDy / m);
  float meanDyX = static_cast<float>(sumDyX / m);
  for (int64_t s0 = 0; s0 < g.n; ++s0)
    for (int64_t j = 0; j < g.inner; ++j) {
      int64_t i = g.at(s0, ch, j);
      storeF32(dx.data, dx.dtype, i,
               bnGradInput(loadF32(dy.data, dy.dtype, i),
                           loadF32(x.data, x.dtype, i), mean, invstd, wc,
                           meanDy, meanDyX, training));
    }
}

/// The new running statistics of channel `ch` (PyTorch's update, with the
/// unbiased batch variance).
AMPC_HD void bnUpdateChannel(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                             const BnGeom &g, int64_t ch, float momentum) {
  double mean, var;
  bnBatchStats(x, g, ch, mean, var);
  bnUpdateFrom(newMean, newVar, rm, rv, ch, mean, var, g.perChannel(),
               momentum);
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_NORM_OPS_H
