//===- cuda_amp_optimizer.cu - Loss scaling and optimizers on CUDA -------===//
//
// Mixed precision and the optimizer step: the multi-tensor launches (up to
// kMtMax tensors each) of unscaling with the found_inf check, gradient
// clipping, SGD and AdamW, whose kernels round like the CPU and so live in
// cuda_exact.cu (built without fused multiply-add); the loss-scale update, the
// learning-rate schedule, gradient accumulation and the non-finite check.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"
#include "cuda_exact.h"

namespace ampc {
namespace cuda {
namespace {

// Gradient accumulation (docs/optimizer.md): the first micro-batch (*micro == 0)
// writes, the others add in f32.
__global__ void gradAccumulateKernel(float *acc, const void *g,
                                     ampc_dtype gd, int64_t n,
                                     const int32_t *micro) {
  bool first = *micro == 0;
  GRID_STRIDE(i, n) {
    float v = loadF32(g, gd, i);
    acc[i] = first ? v : acc[i] + v;
  }
}

// An f64 param's gradients: an f64 accumulator, one f64 addition.
__global__ void gradAccumulateF64Kernel(double *acc, const double *g,
                                        int64_t n, const int32_t *micro) {
  bool first = *micro == 0;
  GRID_STRIDE(i, n) { acc[i] = first ? g[i] : acc[i] + g[i]; }
}

__global__ void advanceMicroKernel(int32_t *micro, int64_t k) {
  *micro = static_cast<int32_t>((*micro + 1) % k);
}

__global__ void checkNonfiniteKernel(Buf x, int64_t n, uint32_t *word,
                                     int32_t site) {
  GRID_STRIDE(i, n) {
    if (!isfinite(loadF32(x.data, x.dtype, i))) {
      recordCheck(word, site);
      return;
    }
  }
}

} // namespace

/// Splits a tensor list into launches of at most kMtMax tensors; `fill`
/// adds each tensor's extra pointers, `launch` runs one chunk on `blocks`
/// blocks with `firstBlock` the number of blocks of earlier chunks.
template <typename Fill, typename Launch>
ampc_status CudaBackend::forChunks(const TensorList &g, Fill fill,
                                   Launch launch) {
  MtChunk c{};
  int64_t firstBlock = 0;
  auto flush = [&]() -> ampc_status {
    if (c.count == 0)
      return AMPC_OK;
    int32_t blocks = c.blockStart[c.count];
    AMPC_TRY(launch(c, blocks, firstBlock));
    firstBlock += blocks;
    c.count = 0;
    return AMPC_OK;
  };
  for (int32_t t = 0; t < g.count; ++t) {
    if (g.numels[t] == 0)
      continue;
    int64_t blocks = (g.numels[t] + kMtPerBlock - 1) / kMtPerBlock;
    if (c.count == kMtMax || c.blockStart[c.count] + blocks > (1 << 30))
      AMPC_TRY(flush());
    int k = c.count;
    c.data[k] = g.data[t];
    c.dtype[k] = static_cast<int8_t>(g.dtypes[t]);
    c.numel[k] = g.numels[t];
    c.aux0[k] = c.aux1[k] = c.aux2[k] = c.model[k] = nullptr;
    c.auxDtype[k] = 0;
    fill(c, k, t);
    c.blockStart[k + 1] = c.blockStart[k] + static_cast<int32_t>(blocks);
    c.count = k + 1;
  }
  return flush();
}

int64_t CudaBackend::mtBlocks(const TensorList &g) {
  int64_t b = 0;
  for (int32_t t = 0; t < g.count; ++t)
    b += (g.numels[t] + kMtPerBlock - 1) / kMtPerBlock;
  return b;
}

ampc_status CudaBackend::checkFiniteUnscale(Buf foundInf, const TensorList &g,
                                            const float *scale) {
  ENTER();
  Temp flag(*this);
  AMPC_TRY(flag.alloc(sizeof(float)));
  CUDA_TRY(cudaMemsetAsync(flag.get(), 0, sizeof(float), stream_));
  // f64 gradients in f64 (cuda_wide.cu); the rest below, the f64 entries
  // skipped.
  std::vector<int64_t> rest;
  ampc_status st = AMPC_OK;
  TensorList others = g;
  if (unscaleWide(g, flag.f32(), scale, rest, st)) {
    AMPC_TRY(st);
    others.numels = rest.data();
  }
  AMPC_TRY(forChunks(
      others, [](MtChunk &, int, int32_t) {},
      [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
        lastLaunch = "unscale kernel";
        CUDA_TRY(launchUnscale(stream_, c, blocks, flag.f32(), scale));
        return AMPC_OK;
      }));
  lastLaunch = "found_inf kernel";
  CUDA_TRY(launchStoreFlag(stream_, foundInf, flag.f32()));
  return AMPC_OK;
}

ampc_status CudaBackend::updateScale(float *scale, int32_t *growthTracker,
                                     int32_t *hysteresisLeft, Buf foundInf,
                                     float growthFactor, float backoffFactor,
                                     int32_t growthInterval, int32_t hysteresis,
                                     float minScale, float maxScale) {
  ENTER();
  lastLaunch = "scale update kernel";
  CUDA_TRY(launchUpdateScale(stream_, scale, growthTracker, hysteresisLeft,
                             foundInf, growthFactor, backoffFactor,
                             growthInterval, hysteresis, minScale, maxScale));
  return AMPC_OK;
}

/// clip_grad_norm with f64 gradients (the CPU's arithmetic): the other
/// gradients' partial sums of squares as before, one more per f64 gradient
/// (cuda_wide.cu, in f64), the f32 coefficient from all of them, then the
/// f64 coefficient, which replaces it (its f32 rounding) for the others.
bool CudaBackend::clipWide(float *totalNorm, const TensorList &g,
                           float maxNorm, Buf foundInf, ampc_status &st) {
  bool any = false;
  for (int32_t t = 0; t < g.count; ++t)
    any |= g.dtypes[t] == AMPC_F64;
  if (!any)
    return false;
  std::vector<int64_t> rest;
  for (int32_t t = 0; t < g.count; ++t)
    rest.push_back(g.dtypes[t] == AMPC_F64 ? 0 : g.numels[t]);
  TensorList others = g;
  others.numels = rest.data();
  // Slots: the multi-tensor kernel's blocks, then one per f64 gradient.
  int64_t slots = mtBlocks(others), wide = 0;
  for (int32_t t = 0; t < g.count; ++t)
    wide += g.dtypes[t] == AMPC_F64;
  int64_t count = slots + wide;
  Temp tmp(*this);
  if ((st = tmp.alloc((count + 2) * sizeof(double))) != AMPC_OK)
    return true;
  double *partials = static_cast<double *>(tmp.get());
  double *coef64 = partials + count;
  float *coef = reinterpret_cast<float *>(partials + count + 1);
  st = forChunks(
      others, [](MtChunk &, int, int32_t) {},
      [&](const MtChunk &c, int32_t blocks, int64_t first) -> ampc_status {
        lastLaunch = "norm kernel";
        CUDA_TRY(launchSumSquares(stream_, c, blocks, partials + first,
                                  foundInf));
        return AMPC_OK;
      });
  int64_t slot = slots;
  for (int32_t t = 0; t < g.count && st == AMPC_OK; ++t) {
    if (g.dtypes[t] != AMPC_F64)
      continue;
    double *partial = partials + slot++;
    if (g.numels[t] == 0) {
      cudaError_t e = cudaMemsetAsync(partial, 0, sizeof(double), stream_);
      st = e == cudaSuccess ? AMPC_OK : cudaFail(e, "clip_grad_norm memset");
      continue;
    }
    cudaError_t e = launchSumSquaresF64(
        stream_, static_cast<const double *>(g.data[t]), g.numels[t], partial,
        foundInf);
    st = e == cudaSuccess ? AMPC_OK : cudaFail(e, "norm kernel (f64)");
  }
  if (st != AMPC_OK)
    return true;
  lastLaunch = "clip coefficient kernel";
  cudaError_t err = launchClipCoef(stream_, partials, count, maxNorm, coef,
                                   totalNorm, foundInf);
  if (err != cudaSuccess) {
    st = cudaFail(err, "clip coefficient kernel");
    return true;
  }
  err = launchClipCoefF64(stream_, partials, count, maxNorm, coef, coef64,
                          foundInf);
  if (err != cudaSuccess) {
    st = cudaFail(err, "clip coefficient kernel (f64)");
    return true;
  }
  for (int32_t t = 0; t < g.count && st == AMPC_OK; ++t) {
    if (g.dtypes[t] != AMPC_F64 || g.numels[t] == 0)
      continue;
    cudaError_t e = launchScaleF64(stream_, static_cast<double *>(g.data[t]),
                                   g.numels[t], coef64, foundInf);
    st = e == cudaSuccess ? AMPC_OK : cudaFail(e, "clip kernel (f64)");
  }
  if (st != AMPC_OK)
    return true;
  st = forChunks(
      others, [](MtChunk &, int, int32_t) {},
      [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
        lastLaunch = "clip kernel";
        CUDA_TRY(launchScale(stream_, c, blocks, coef, foundInf));
        return AMPC_OK;
      });
  return true;
}

ampc_status CudaBackend::clipGradNorm(float *totalNorm, const TensorList &g,
                                      float maxNorm, Buf foundInf) {
  ENTER();
  ampc_status st;
  if (clipWide(totalNorm, g, maxNorm, foundInf, st))
    return st;
  Temp t(*this);
  int64_t slots = mtBlocks(g);
  AMPC_TRY(t.alloc((slots + 1) * sizeof(double) + sizeof(double)));
  double *partials = static_cast<double *>(t.get());
  if (slots == 0)
    CUDA_TRY(cudaMemsetAsync(partials, 0, sizeof(double), stream_));
  AMPC_TRY(forChunks(
      g, [](MtChunk &, int, int32_t) {},
      [&](const MtChunk &c, int32_t blocks, int64_t first) -> ampc_status {
        lastLaunch = "norm kernel";
        CUDA_TRY(launchSumSquares(stream_, c, blocks, partials + first,
                                  foundInf));
        return AMPC_OK;
      }));
  float *coef = reinterpret_cast<float *>(partials + slots + 1);
  lastLaunch = "clip coefficient kernel";
  CUDA_TRY(launchClipCoef(stream_, partials, slots > 0 ? slots : 1, maxNorm,
                          coef, totalNorm, foundInf));
  return forChunks(
      g, [](MtChunk &, int, int32_t) {},
      [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
        lastLaunch = "clip kernel";
        CUDA_TRY(launchScale(stream_, c, blocks, coef, foundInf));
        return AMPC_OK;
      });
}

ampc_status CudaBackend::sgd(const TensorList &params, const TensorList &grads,
                             void *const *bufs, const SgdScalars &s,
                             Buf foundInf, const ModelCopies &models,
                             const LowUpdate &low) {
  ENTER();
  // An f64 gradient of a narrower param would round: refused before
  // anything runs. f64 params in f64 (cuda_wide.cu), whatever the
  // low-precision mode (it rounds 16-bit values only); the rest below, the
  // f64 entries skipped.
  AMPC_TRY(refuseNarrowF64Grads("sgd", params, grads));
  std::vector<int64_t> rest;
  ampc_status st = AMPC_OK;
  TensorList others = params;
  if (sgdWide(params, grads, bufs, s, foundInf, rest, st)) {
    AMPC_TRY(st);
    others.numels = rest.data();
  }
  if (low.special(params.count)) {
    // 16-bit state or special rounding: the f32 and 16-bit params.
    if (low.counter) {
      lastLaunch = "sgd counter kernel";
      CUDA_TRY(launchCountUpdate(stream_, low.counter, foundInf));
    }
    MtLow ml{low.mode, low.seed, low.paramBase, low.counter};
    return forChunks(
        others,
        [&](MtChunk &c, int k, int32_t t) {
          c.aux0[k] = grads.data[t];
          c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[t]);
          c.aux1[k] = s.hasMomentum ? bufs[t] : nullptr;
          c.stateDtype[k] = static_cast<int8_t>(low.stateDtype(t));
          c.index[k] = t;
          bool low16 = params.dtypes[t] != AMPC_F32;
          c.model[k] = low16 ? low.comp(t) : models.at(t);
          c.modelDtype[k] = static_cast<int8_t>(
              !low16 && models.at(t) ? models.dtypes[t] : params.dtypes[t]);
        },
        [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
          lastLaunch = "sgd kernel";
          CUDA_TRY(launchSgdLow(stream_, c, blocks, s, foundInf, ml));
          return AMPC_OK;
        });
  }
  return forChunks(
      others,
      [&](MtChunk &c, int k, int32_t t) {
        c.aux0[k] = grads.data[t];
        c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[t]);
        c.aux1[k] = s.hasMomentum ? bufs[t] : nullptr;
        c.model[k] = models.at(t);
        c.modelDtype[k] =
            static_cast<int8_t>(models.at(t) ? models.dtypes[t] : AMPC_F32);
      },
      [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
        lastLaunch = "sgd kernel";
        CUDA_TRY(launchSgd(stream_, c, blocks, s, foundInf));
        return AMPC_OK;
      });
}

ampc_status CudaBackend::adamw(const TensorList &params,
                               const TensorList &grads, void *const *expAvgs,
                               void *const *expAvgSqs, int32_t *step, double lr,
                               double beta1, double beta2, double eps,
                               double weightDecay, Buf foundInf,
                               const float *lrScale, const ModelCopies &models,
                               const LowUpdate &low) {
  ENTER();
  AMPC_TRY(refuseNarrowF64Grads("adamw", params, grads));
  Temp t(*this);
  AMPC_TRY(t.alloc(sizeof(AdamwScalars)));
  AdamwScalars *sc = static_cast<AdamwScalars *>(t.get());
  lastLaunch = "adamw step kernel";
  CUDA_TRY(launchAdamwStep(stream_, step, lr, beta1, beta2, eps, weightDecay,
                           sc, foundInf, lrScale));
  // f64 params in f64 after the step kernel (cuda_wide.cu), whatever the
  // low-precision mode (it rounds 16-bit values only); the rest below, the
  // f64 entries skipped.
  std::vector<int64_t> rest;
  ampc_status st = AMPC_OK;
  TensorList others = params;
  if (adamwWide(params, grads, expAvgs, expAvgSqs, step, lr, beta1, beta2, eps,
                weightDecay, foundInf, lrScale, rest, st)) {
    AMPC_TRY(st);
    others.numels = rest.data();
  }
  if (low.special(params.count)) {
    // The key's counter is the step count after this update's increment.
    MtLow ml{low.mode, low.seed, low.paramBase, step};
    return forChunks(
        others,
        [&](MtChunk &c, int k, int32_t tt) {
          c.aux0[k] = grads.data[tt];
          c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[tt]);
          c.aux1[k] = expAvgs[tt];
          c.aux2[k] = expAvgSqs[tt];
          c.stateDtype[k] = static_cast<int8_t>(low.stateDtype(tt));
          c.index[k] = tt;
          bool low16 = params.dtypes[tt] != AMPC_F32;
          c.model[k] = low16 ? low.comp(tt) : models.at(tt);
          c.modelDtype[k] = static_cast<int8_t>(
              !low16 && models.at(tt) ? models.dtypes[tt]
                                      : params.dtypes[tt]);
        },
        [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
          lastLaunch = "adamw kernel";
          CUDA_TRY(launchAdamwLow(stream_, c, blocks, sc, foundInf, ml));
          return AMPC_OK;
        });
  }
  return forChunks(
      others,
      [&](MtChunk &c, int k, int32_t t) {
        c.aux0[k] = grads.data[t];
        c.auxDtype[k] = static_cast<int8_t>(grads.dtypes[t]);
        c.aux1[k] = expAvgs[t];
        c.aux2[k] = expAvgSqs[t];
        c.model[k] = models.at(t);
        c.modelDtype[k] =
            static_cast<int8_t>(models.at(t) ? models.dtypes[t] : AMPC_F32);
      },
      [&](const MtChunk &c, int32_t blocks, int64_t) -> ampc_status {
        lastLaunch = "adamw kernel";
        CUDA_TRY(launchAdamw(stream_, c, blocks, sc, foundInf));
        return AMPC_OK;
      });
}

// Gradient accumulation (docs/optimizer.md): one launch per tensor, then the
// index advances (kernels of one stream run in order).
ampc_status CudaBackend::gradAccumulate(const TensorList &accs,
                                        const TensorList &grads, int32_t *micro,
                                        int64_t k) {
  ENTER();
  for (int32_t t = 0; t < accs.count; ++t) {
    int64_t n = accs.numels[t];
    if (n == 0)
      continue;
    if (accs.dtypes[t] == AMPC_F64)
      gradAccumulateF64Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(
          static_cast<double *>(accs.data[t]),
          static_cast<const double *>(grads.data[t]), n, micro);
    else
      gradAccumulateKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
          static_cast<float *>(accs.data[t]), grads.data[t], grads.dtypes[t],
          n, micro);
    LAUNCH_CHECK("grad_accumulate kernel");
  }
  advanceMicroKernel<<<1, 1, 0, stream_>>>(micro, k);
  LAUNCH_CHECK("grad_accumulate index kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::lrSchedule(float *factor, int32_t *step,
                                    const LrSchedule &s, Buf foundInf) {
  ENTER();
  lastLaunch = "lr schedule kernel";
  CUDA_TRY(launchLrSchedule(stream_, factor, step, s, foundInf));
  return AMPC_OK;
}

ampc_status CudaBackend::checkNonfinite(Buf x, int64_t n, int32_t site) {
  ENTER();
  ampc_status st;
  if (nonfiniteWide(x, n, site, st))
    return st;
  checkNonfiniteKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
      x, n, checkWords + AMPC_CHECK_NONFINITE, site);
  LAUNCH_CHECK("non-finite check kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
