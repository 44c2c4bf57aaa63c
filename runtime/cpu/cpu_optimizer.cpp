//===- cpu_optimizer.cpp - The CPU backend's loss scaling and optimizers ===//
//
// See cpu_optimizer.h.
//
//===----------------------------------------------------------------------===//
#include "cpu_optimizer.h"

#include "../src/common.h"
#include "../src/half.h"
#include "../src/low_update.h"
#include "../src/lr_schedule.h"
#include "../src/scalar_ops.h"
#include "cpu_kernels.h"
#include "cpu_pool.h"
#include "cpu_update.h"
#include "cpu_wide.h"

#include <math.h>
#include <stdint.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

namespace ampc {
namespace cpuopt {
namespace {

using cpukern::forPieces;
using cpukern::kChunk;
using cpukern::loadContig;
using cpukern::storeContig;

constexpr int64_t kParChunk = cpupool::kItemElements;

/// One block of a gradient for the norm clip: elements [lo, lo + n).
struct NormBlock {
  Buf grad;
  int64_t lo, n;
};

/// The sum of one block's squares: sixteen f64 lanes (cpuupdate's
/// addSquares; an f16 block widened into f32 scratch a piece at a time,
/// kChunk being a multiple of the lane count), then the lanes added in a
/// fixed tree: lane j + lane j + 8, then j + j + 4, j + j + 2, j + j + 1.
double squaresOf(const NormBlock &b) {
  static_assert(kChunk % cpuupdate::kSquareLanes == 0,
                "an f16 piece must end on a lane boundary");
  double lanes[cpuupdate::kSquareLanes] = {};
  if (b.grad.dtype == AMPC_F16) {
    float tmp[kChunk];
    forPieces(b.lo, b.lo + b.n, [&](int64_t s, int64_t n) {
      loadContig(b.grad, s, n, tmp);
      cpuupdate::addSquares(Buf{tmp, AMPC_F32}, n, lanes);
    });
  } else {
    cpuupdate::addSquares(offsetBuf(b.grad, b.lo), b.n, lanes);
  }
  for (int w = cpuupdate::kSquareLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j)
      lanes[j] += lanes[j + w];
  return lanes[0];
}

/// Runs fn over the norm's blocks: on the pool when the gradients hold more
/// than one item's elements, else on this thread (the same blocks either
/// way).
template <typename Fn>
void forNormBlocks(size_t blocks, int64_t elements, Fn &&fn) {
  if (elements > cpupool::kItemElements) {
    cpupool::parallelFor(static_cast<int64_t>(blocks), fn);
    return;
  }
  for (size_t i = 0; i < blocks; ++i)
    fn(static_cast<int64_t>(i));
}


bool readFlag(Buf f) {
  if (!f.data)
    return false;
  return f.dtype == AMPC_I32 ? *static_cast<const int32_t *>(f.data) != 0
                             : *static_cast<const float *>(f.data) != 0.0f;
}

/// The optimizer's update on f32 arrays (f32 scratch of widened 16-bit
/// values, updateWidened and updateLow): cpu_update.h's loops.
void sgdF32(float *p, const float *g, float *buf, int64_t n,
            const SgdScalars &s) {
  cpuupdate::sgd(Buf{p, AMPC_F32}, Buf{const_cast<float *>(g), AMPC_F32}, buf,
                 Buf{nullptr, AMPC_F32}, n, s);
}

void adamwF32(float *p, const float *g, float *m, float *v, int64_t n,
              const AdamwScalars &s) {
  cpuupdate::adamw(Buf{p, AMPC_F32}, Buf{const_cast<float *>(g), AMPC_F32}, m,
                   v, Buf{nullptr, AMPC_F32}, n, s);
}

/// Elements [s, s + n) of `b` as f32: in place where b is f32, else widened
/// into `scratch`.
const float *f32Chunk(Buf b, int64_t s, int64_t n, float *scratch) {
  if (b.dtype == AMPC_F32)
    return static_cast<const float *>(b.data) + s;
  loadContig(b, s, n, scratch);
  return scratch;
}

/// Runs `update(p, g, off, n)` (f32 arrays of n elements starting at element
/// `off`) over one parameter with an f16 value, gradient or model copy
/// (which cpu_update.h's loops leave to their caller): fixed chunks on the
/// pool, each run of up to kChunk elements widened exactly into f32
/// scratch with the vector conversions, updated by the f32 loop, and
/// rounded back once (and into the model copy). The same operations per
/// element as the element loop, so the same bits.
template <typename F>
void updateWidened(Buf param, Buf grad, Buf model, int64_t numel, F &&update) {
  cpupool::forChunks(numel, kParChunk, [&](int64_t lo, int64_t hi) {
    float pt[kChunk], gt[kChunk];
    for (int64_t s = lo; s < hi; s += kChunk) {
      int64_t n = std::min(kChunk, hi - s);
      float *p = const_cast<float *>(f32Chunk(param, s, n, pt));
      const float *g = f32Chunk(grad, s, n, gt);
      update(p, g, s, n);
      if (param.dtype != AMPC_F32)
        storeContig(param, s, n, p);
      if (model.data)
        storeContig(model, s, n, p);
    }
  });
}

/// The update of param t over fixed chunks on the pool, with its O2 model
/// copy (if any) in the same pass: `fused(p, g, model, off, n)` on the
/// chunks of the tensors themselves where cpu_update.h's loops take the
/// dtypes (f32 and bf16), else `widened(p, g, off, n)` on f32 scratch
/// (updateWidened). Element by element: any split gives the same bits.
template <typename Fused, typename Widened>
void updateParam(const TensorList &params, const TensorList &grads,
                 const ModelCopies &models, int32_t t, Fused &&fused,
                 Widened &&widened) {
  Buf param{params.data[t], params.dtypes[t]};
  Buf grad{grads.data[t], grads.dtypes[t]};
  Buf model{models.at(t), models.at(t) ? models.dtypes[t] : AMPC_F32};
  int64_t numel = params.numels[t];
  if (!cpuupdate::fused(param.dtype, grad.dtype, model.data != nullptr,
                        model.dtype)) {
    updateWidened(param, grad, model, numel, widened);
    return;
  }
  cpupool::forChunks(numel, kParChunk, [&](int64_t lo, int64_t hi) {
    fused(offsetBuf(param, lo), offsetBuf(grad, lo),
          model.data ? offsetBuf(model, lo) : model, lo, hi - lo);
  });
}

/// lowUpdateWords for the CPU: whole Philox blocks in a loop the compiler
/// vectorises (lanes of independent blocks), then the range's words. The
/// same words.
void philoxWords(uint64_t seed, uint64_t counterHi, int64_t first, int64_t n,
                 uint32_t *out) {
  constexpr int64_t kBlocks = kChunk / 4 + 2;
  uint32_t c0[kBlocks], w0[kBlocks], w1[kBlocks], w2[kBlocks], w3[kBlocks];
  int64_t b0 = first >> 2, nb = ((first + n + 3) >> 2) - b0;
  const uint32_t hi0 = static_cast<uint32_t>(counterHi),
                 hi1 = static_cast<uint32_t>(counterHi >> 32);
  const uint32_t c1 = static_cast<uint32_t>(static_cast<uint64_t>(b0) >> 32);
  for (int64_t b = 0; b < nb; ++b)
    c0[b] = static_cast<uint32_t>(static_cast<uint64_t>(b0 + b));
  // Block indices below 2^32 share the high counter word (c1); the rare
  // range that crosses it takes the scalar path.
  if (static_cast<uint32_t>(static_cast<uint64_t>(b0 + nb - 1) >> 32) != c1) {
    lowUpdateWords(seed, counterHi, first, n, out);
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    uint32_t x0 = c0[b], x1 = c1, x2 = hi0, x3 = hi1;
    uint32_t k0 = static_cast<uint32_t>(seed),
             k1 = static_cast<uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * x0;
      uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * x2;
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ x1 ^ k0;
      uint32_t n1 = static_cast<uint32_t>(p1);
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ x3 ^ k1;
      uint32_t n3 = static_cast<uint32_t>(p0);
      x0 = n0;
      x1 = n1;
      x2 = n2;
      x3 = n3;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    w0[b] = x0;
    w1[b] = x1;
    w2[b] = x2;
    w3[b] = x3;
  }
  for (int64_t i = first; i < first + n; ++i) {
    int64_t b = (i >> 2) - b0;
    int lane = static_cast<int>(i & 3);
    out[i - first] = lane == 0 ? w0[b] : lane == 1 ? w1[b] : lane == 2 ? w2[b]
                                                                       : w3[b];
  }
}

/// Writes the f32 results v[0, n) into elements [off, off + n) of a 16-bit
/// (or f32) tensor: stochastically from the stream's words under
/// kLowStochastic, else rounded to nearest (the vector conversions, which
/// round as storeF32 does). The bits of src/low_update.h's element
/// functions, which the CUDA kernels use.
void storeLowContig(Buf b, int64_t off, int64_t n, const float *v,
                    const LowKey &key, int32_t stream, uint32_t *words) {
  if (b.dtype == AMPC_F32 || key.mode != kLowStochastic) {
    storeContig(b, off, n, v);
    return;
  }
  philoxWords(key.seed, lowUpdateCounterHi(stream, key.param, key.counter),
              off, n, words);
  uint16_t *out = static_cast<uint16_t *>(b.data) + off;
  if (b.dtype == AMPC_BF16)
    for (int64_t i = 0; i < n; ++i)
      out[i] = f32ToBf16Stochastic(v[i], words[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      out[i] = f32ToF16Stochastic(v[i], words[i]);
}

/// The update of one param with 16-bit state, stochastic rounding or Kahan
/// compensation (docs/optimizer.md "Updates of 16-bit params"): like
/// updateWidened, with the state (`s1`, `s2`: momentum / Adam moments, data
/// null when absent) widened into scratch as well, and every 16-bit result
/// written as src/low_update.h's writeParamElement / writeStateElement
/// write it (the CUDA kernels' code), keyed by the element's index, so any
/// split over threads gives the same bits.
template <typename F>
void updateLow(Buf param, Buf grad, Buf model, Buf s1, Buf s2, void *comp,
               int64_t numel, const LowKey &key, F &&update) {
  cpupool::forChunks(numel, kParChunk, [&](int64_t lo, int64_t hi) {
    float pt[kChunk], gt[kChunk], t1[kChunk], t2[kChunk], ct[kChunk];
    uint32_t words[kChunk];
    for (int64_t s = lo; s < hi; s += kChunk) {
      int64_t n = std::min(kChunk, hi - s);
      loadContig(param, s, n, pt);
      const float *g = f32Chunk(grad, s, n, gt);
      float *m1 = nullptr, *m2 = nullptr;
      if (s1.data) {
        loadContig(s1, s, n, t1);
        m1 = t1;
      }
      if (s2.data) {
        loadContig(s2, s, n, t2);
        m2 = t2;
      }
      update(pt, g, m1, m2, n);
      if (param.dtype != AMPC_F32 && key.mode == kLowKahan && comp) {
        // y = v + c rounded to nearest; c = y - p, rounded to nearest.
        Buf c{comp, param.dtype};
        loadContig(c, s, n, ct);
        for (int64_t i = 0; i < n; ++i)
          ct[i] = pt[i] + ct[i];
        storeContig(param, s, n, ct);
        loadContig(param, s, n, gt); // the stored param, widened
        for (int64_t i = 0; i < n; ++i)
          ct[i] = ct[i] - gt[i];
        storeContig(c, s, n, ct);
      } else {
        storeLowContig(param, s, n, pt, key, kLowStreamParam, words);
      }
      if (m1)
        storeLowContig(s1, s, n, t1, key, kLowStreamState1, words);
      if (m2)
        storeLowContig(s2, s, n, t2, key, kLowStreamState2, words);
      if (model.data)
        storeContig(model, s, n, pt);
    }
  });
}


} // namespace

ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                               const float *scale) {
  // Threads: fixed chunks of each tensor; the flag is an OR, which does
  // not depend on the order the chunks finish in.
  std::atomic<bool> anyFound{false};
  float inv = scale ? 1.0f / *scale : 1.0f;
  for (int32_t t = 0; t < g.count; ++t) {
    void *p = g.data[t];
    ampc_dtype dt = g.dtypes[t];
    cpupool::forChunks(g.numels[t], kParChunk, [&](int64_t lo, int64_t hi) {
      bool f = false;
      Buf chunk = offsetBuf(Buf{p, dt}, lo);
      if (dt == AMPC_F64) {
        f = cpuwide::unscale(static_cast<double *>(chunk.data), hi - lo, inv);
      } else if (inv == 1.0f) {
        // Nothing to scale (a scale of 1, e.g. opt level O3): the
        // patterns are checked as they are, an all-ones exponent being
        // an inf or a NaN, with no conversion and no store.
        f = cpuupdate::anyNonfinite(chunk, hi - lo);
      } else if (dt == AMPC_F32 || dt == AMPC_BF16) {
        f = cpuupdate::unscale(chunk, hi - lo, inv);
      } else {
        // f16: widened exactly, checked and scaled as f32, rounded back
        // once: what a per-element loop would do, on vector conversions.
        float tmp[kChunk];
        for (int64_t s = lo; s < hi; s += kChunk) {
          int64_t n = std::min(kChunk, hi - s);
          loadContig(Buf{p, dt}, s, n, tmp);
          f |= cpuupdate::unscale(Buf{tmp, AMPC_F32}, n, inv);
          storeContig(Buf{p, dt}, s, n, tmp);
        }
      }
      if (f)
        anyFound.store(true, std::memory_order_relaxed);
    });
  }
  bool found = anyFound.load();
  storeF32(foundInf.data, foundInf.dtype, 0, found ? 1.0f : 0.0f);
  return AMPC_OK;
}

ampc_status updateScale(float *scale, int32_t *growthTracker,
                        int32_t *hysteresisLeft, Buf foundInf,
                        float growthFactor, float backoffFactor,
                        int32_t growthInterval, int32_t hysteresis,
                        float minScale, float maxScale) {
  updateScaleState(*scale, *growthTracker, *hysteresisLeft,
                   readFlag(foundInf), growthFactor, backoffFactor,
                   growthInterval, hysteresis, minScale, maxScale);
  return AMPC_OK;
}

ampc_status clipGradNorm(float *totalNorm, const TensorList &g, float maxNorm,
                         Buf foundInf) {
  if (readFlag(foundInf))
    return AMPC_OK;
  // The squares are summed in one fixed order, whatever the thread count
  // and the instruction set: each gradient is cut into blocks of
  // kParChunk elements; a block's element k goes to lane k % 16 of
  // sixteen f64 sums (cpuupdate::addSquares), which squaresOf() adds in
  // a fixed tree; the block sums are then added in order, gradient by
  // gradient. The blocks are the pool's items.
  static_assert(kParChunk == 32768,
                "docs/runtime.md gives the norm's block size");
  std::vector<NormBlock> blocks;
  int64_t elements = 0;
  bool anyF64 = false;
  for (int32_t t = 0; t < g.count; ++t) {
    anyF64 |= g.dtypes[t] == AMPC_F64;
    elements += g.numels[t];
    for (int64_t lo = 0; lo < g.numels[t]; lo += kParChunk)
      blocks.push_back({Buf{g.data[t], g.dtypes[t]}, lo,
                        std::min(kParChunk, g.numels[t] - lo)});
  }
  std::vector<double> sums(blocks.size());
  auto sumBlock = [&](int64_t i) { sums[i] = squaresOf(blocks[i]); };
  forNormBlocks(blocks.size(), elements, sumBlock);
  double sq = 0.0;
  for (double b : sums)
    sq += b;
  float total = static_cast<float>(sqrt(sq));
  if (totalNorm)
    *totalNorm = total;
  float coef = clipCoefficient(total, maxNorm);
  // With f64 gradients (torch computes the norm in their dtype): the
  // coefficient in f64 from the f64 norm and max_norm as written; f64
  // tensors are scaled by it in f64, the others by its f32 rounding.
  double coef64 = coef;
  if (anyF64) {
    double total64 = sqrt(sq);
    double c = cpuwide::asWritten(maxNorm) / (total64 + 1e-6);
    coef64 = c < 1.0 ? c : 1.0;
    if (coef64 == 1.0 && std::isfinite(total64))
      return AMPC_OK;
    coef = static_cast<float>(coef64);
  } else if (coef == 1.0f && std::isfinite(total)) {
    // A coefficient of exactly 1 with a finite norm (so every gradient
    // is finite) leaves every value as it is: nothing to write. (A NaN
    // norm also gives 1; its NaNs are multiplied as before.)
    return AMPC_OK;
  }
  auto scaleBlock = [&](int64_t i) {
    const NormBlock &b = blocks[i];
    Buf at = offsetBuf(b.grad, b.lo);
    if (b.grad.dtype == AMPC_F64) {
      cpuwide::scaleF64(at, b.n, coef64);
    } else if (b.grad.dtype == AMPC_F32 || b.grad.dtype == AMPC_BF16) {
      // v * coef in f32, a bf16 value rounded back once (unscale's loop
      // multiplies by its factor; its inf/NaN answer is not needed).
      cpuupdate::unscale(at, b.n, coef);
    } else {
      // f16: widened, scaled in f32 and rounded back once, a chunk at a
      // time.
      float tmp[kChunk];
      forPieces(b.lo, b.lo + b.n, [&](int64_t s, int64_t n) {
        loadContig(b.grad, s, n, tmp);
        for (int64_t k = 0; k < n; ++k)
          tmp[k] *= coef;
        storeContig(b.grad, s, n, tmp);
      });
    }
  };
  forNormBlocks(blocks.size(), elements, scaleBlock);
  return AMPC_OK;
}

ampc_status sgd(const TensorList &params, const TensorList &grads,
                void *const *bufs, const SgdScalars &scalars,
                Buf foundInf, const ModelCopies &models,
                const LowUpdate &low) {
  if (readFlag(foundInf))
    return AMPC_OK;
  SgdScalars s = scalars;
  if (s.lrScale)
    s.lr = s.lr * *s.lrScale;
  // An f64 param (f64 state) takes the f64 update, whatever the
  // low-precision mode (which rounds 16-bit values only).
  auto wide = [&](int32_t t) {
    return cpuwide::sgd(Buf{params.data[t], params.dtypes[t]},
                        Buf{grads.data[t], grads.dtypes[t]},
                        s.hasMomentum ? bufs[t] : nullptr, s,
                        params.numels[t]);
  };
  if (low.special(params.count)) {
    LowKey key;
    key.mode = low.mode;
    key.seed = low.seed;
    if (low.counter)
      key.counter = static_cast<uint32_t>(*low.counter += 1);
    for (int32_t t = 0; t < params.count; ++t) {
      if (wide(t))
        continue;
      key.param = low.paramBase + t;
      Buf b{s.hasMomentum ? bufs[t] : nullptr, low.stateDtype(t)};
      updateLow(Buf{params.data[t], params.dtypes[t]},
                Buf{grads.data[t], grads.dtypes[t]},
                Buf{models.at(t), models.at(t) ? models.dtypes[t] : AMPC_F32},
                b, Buf{nullptr, AMPC_F32}, low.comp(t), params.numels[t], key,
                [&](float *p, const float *g, float *m, float *, int64_t n) {
                  sgdF32(p, g, m, n, s);
                });
    }
    return AMPC_OK;
  }
  for (int32_t t = 0; t < params.count; ++t) {
    float *buf = s.hasMomentum ? static_cast<float *>(bufs[t]) : nullptr;
    if (wide(t))
      continue;
    updateParam(
        params, grads, models, t,
        [&](Buf p, Buf g, Buf m, int64_t off, int64_t n) {
          cpuupdate::sgd(p, g, buf ? buf + off : nullptr, m, n, s);
        },
        [&](float *p, const float *g, int64_t off, int64_t n) {
          sgdF32(p, g, buf ? buf + off : nullptr, n, s);
        });
  }
  return AMPC_OK;
}

ampc_status adamw(const TensorList &params, const TensorList &grads,
                  void *const *expAvgs, void *const *expAvgSqs, int32_t *step,
                  double lr, double beta1, double beta2, double eps,
                  double weightDecay, Buf foundInf,
                  const float *lrScale,
                  const ModelCopies &models,
                  const LowUpdate &low) {
  if (readFlag(foundInf))
    return AMPC_OK;
  double lr0 = lr; // f64 params scale it themselves, in f64
  if (lrScale)
    lr = lr * static_cast<double>(*lrScale);
  *step += 1;
  AdamwScalars s = adamwScalars(lr, beta1, beta2, eps, weightDecay, *step);
  // An f64 param (f64 moments) takes the f64 update, whatever the
  // low-precision mode (which rounds 16-bit values only).
  auto wide = [&](int32_t t) {
    return cpuwide::adamw(Buf{params.data[t], params.dtypes[t]},
                          Buf{grads.data[t], grads.dtypes[t]},
                          static_cast<double *>(expAvgs[t]),
                          static_cast<double *>(expAvgSqs[t]),
                          params.numels[t], lr0, lrScale, beta1, beta2, eps,
                          weightDecay, *step);
  };
  if (low.special(params.count)) {
    LowKey key;
    key.mode = low.mode;
    key.seed = low.seed;
    key.counter = static_cast<uint32_t>(*step);
    for (int32_t t = 0; t < params.count; ++t) {
      if (wide(t))
        continue;
      key.param = low.paramBase + t;
      ampc_dtype sd = low.stateDtype(t);
      updateLow(Buf{params.data[t], params.dtypes[t]},
                Buf{grads.data[t], grads.dtypes[t]},
                Buf{models.at(t), models.at(t) ? models.dtypes[t] : AMPC_F32},
                Buf{expAvgs[t], sd}, Buf{expAvgSqs[t], sd}, low.comp(t),
                params.numels[t], key,
                [&](float *p, const float *g, float *m, float *v,
                    int64_t n) { adamwF32(p, g, m, v, n, s); });
    }
    return AMPC_OK;
  }
  for (int32_t t = 0; t < params.count; ++t) {
    if (wide(t))
      continue;
    float *m = static_cast<float *>(expAvgs[t]);
    float *v = static_cast<float *>(expAvgSqs[t]);
    updateParam(
        params, grads, models, t,
        [&](Buf p, Buf g, Buf mc, int64_t off, int64_t n) {
          cpuupdate::adamw(p, g, m + off, v + off, mc, n, s);
        },
        [&](float *p, const float *g, int64_t off, int64_t n) {
          adamwF32(p, g, m + off, v + off, n, s);
        });
  }
  return AMPC_OK;
}

ampc_status lrSchedule(float *factor, int32_t *step, const LrSchedule &s,
                       Buf foundInf) {
  *factor = static_cast<float>(lrScheduleFactor(s, *step));
  if (!readFlag(foundInf))
    *step += 1;
  return AMPC_OK;
}

// Gradient accumulation (docs/optimizer.md): the first micro-batch writes, the
// others add, one f32 addition per element.
ampc_status gradAccumulate(const TensorList &accs, const TensorList &grads,
                           int32_t *micro, int64_t k) {
  bool first = *micro == 0;
  for (int32_t t = 0; t < accs.count; ++t) {
    float *acc = static_cast<float *>(accs.data[t]);
    const void *g = grads.data[t];
    ampc_dtype gd = grads.dtypes[t];
    int64_t n = accs.numels[t];
    if (accs.dtypes[t] == AMPC_F64) {
      // An f64 param's: an f64 accumulator, one f64 addition.
      double *accD = static_cast<double *>(accs.data[t]);
      const double *gD = static_cast<const double *>(g);
      for (int64_t i = 0; i < n; ++i)
        accD[i] = first ? gD[i] : accD[i] + gD[i];
      continue;
    }
    if (gd == AMPC_F32) {
      const float *gf = static_cast<const float *>(g);
      if (first)
        for (int64_t i = 0; i < n; ++i)
          acc[i] = gf[i];
      else
        for (int64_t i = 0; i < n; ++i)
          acc[i] = acc[i] + gf[i];
      continue;
    }
    // Other dtypes widened a piece at a time, then the same f32 adds.
    float w[kChunk];
    Buf gb{const_cast<void *>(g), gd};
    forPieces(0, n, [&](int64_t s, int64_t len) {
      loadContig(gb, s, len, first ? acc + s : w);
      if (!first)
        for (int64_t i = 0; i < len; ++i)
          acc[s + i] = acc[s + i] + w[i];
    });
  }
  *micro = static_cast<int32_t>((*micro + 1) % k);
  return AMPC_OK;
}

} // namespace cpuopt
} // namespace ampc
