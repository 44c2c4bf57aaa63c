//===- norm_dropout_ops.h - batch norm and dropout, per element --*- C++ -*-===//
//
// The scalar code of ampc_batch_norm_* and ampc_dropout_fwd, shared by the
// CPU loops and the CUDA kernels (compiled by both, see hd.h). Batch norm
// works one channel at a time (the CPU backend loops over channels, the
// CUDA backend runs one thread per channel), accumulating in f64, so both
// backends compute the same statistics. The dropout mask is a pure function
// of (seed, key, step, element index), the index mapped by DropoutShard
// under data-parallel ranks: the same bits on every backend.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_NORM_DROPOUT_OPS_H
#define AMPC_RUNTIME_SRC_NORM_DROPOUT_OPS_H

#include "backend.h"
#include "half.h"
#include "philox.h"

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

/// The mean and 1 / sqrt(var + eps) channel `ch` normalises with.
AMPC_HD void bnChannelStats(Buf x, Buf rm, Buf rv, bool training,
                            const BnGeom &g, int64_t ch, float eps,
                            float &mean, float &invstd) {
  double mu, var;
  if (training) {
    bnBatchStats(x, g, ch, mu, var);
  } else {
    mu = loadF32(rm.data, rm.dtype, ch);
    var = loadF32(rv.data, rv.dtype, ch);
  }
  mean = static_cast<float>(mu);
  invstd = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
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
               (loadF32(x.data, x.dtype, i) - mean) * scale + shift);
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
      float d = loadF32(dy.data, dy.dtype, i);
      float v;
      if (training) {
        float xhat = (loadF32(x.data, x.dtype, i) - mean) * invstd;
        v = wc * invstd * (d - meanDy - xhat * meanDyX);
      } else {
        v = d * wc * invstd;
      }
      storeF32(dx.data, dx.dtype, i, v);
    }
}

/// The new running statistics of channel `ch` (PyTorch's update, with the
/// unbiased batch variance).
AMPC_HD void bnUpdateChannel(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                             const BnGeom &g, int64_t ch, float momentum) {
  double mean, var;
  bnBatchStats(x, g, ch, mean, var);
  double m = g.perChannel();
  double unbiased = var * m / (m - 1.0);
  double k = momentum;
  storeF32(newMean.data, newMean.dtype, ch,
           static_cast<float>((1.0 - k) * loadF32(rm.data, rm.dtype, ch) +
                              k * mean));
  storeF32(newVar.data, newVar.dtype, ch,
           static_cast<float>((1.0 - k) * loadF32(rv.data, rv.dtype, ch) +
                              k * unbiased));
}

/// The high counter word of dropout op `key` at step `step`: the top bit
/// keeps dropout streams apart from the initialisers' (whose high word is
/// the argument index).
AMPC_HD uint64_t dropoutStream(uint64_t key, uint32_t step) {
  return (uint64_t(1) << 63) | (key << 32) | step;
}

/// The factor element i is multiplied by: 0 (dropped) or 1 / (1 - p).
AMPC_HD float dropoutFactor(uint64_t seed, uint64_t stream, int64_t i,
                            float p, float scale) {
  Philox4 r = philox4x32_10(static_cast<uint64_t>(i) >> 2, stream, seed);
  double u = uniformFromBits(r.v[i & 3]);
  return u >= static_cast<double>(p) ? scale : 0.0f;
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_NORM_DROPOUT_OPS_H
