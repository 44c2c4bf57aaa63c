//===- cuda_exact.h - Kernels compiled without fused multiply-add -*- C++ -*-===//
//
// cuda_exact.cu holds the kernels whose results must match the CPU backend
// bit for bit although their formulas have a multiply feeding an add:
// random initialisation (Box-Muller and the uniform affine map, in f64),
// the loss-scale update, unscaling, clipping and the SGD / AdamW updates.
// nvcc contracts a*b+c into one fma by default, which rounds once where the
// CPU (built with -ffp-contract=off) rounds twice, so that file alone is
// compiled with --fmad=false; every other kernel keeps fma.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_EXACT_H
#define AMPC_RUNTIME_CUDA_EXACT_H

#include "cuda_internal.h"

namespace ampc {
namespace cuda {

constexpr int kMtMax = 64;          // tensors per launch
constexpr int64_t kMtPerBlock = 4096; // elements per block

/// Up to kMtMax tensors passed by value; block b works on tensor t where
/// blockStart[t] <= b < blockStart[t + 1].
struct MtChunk {
  int count;
  void *data[kMtMax];
  void *aux0[kMtMax]; // grads (SGD/AdamW) or nothing
  void *aux1[kMtMax]; // momentum buffer / exp_avg
  void *aux2[kMtMax]; // exp_avg_sq
  void *model[kMtMax]; // opt level O2: the low model copy (SGD/AdamW) or null
  int8_t modelDtype[kMtMax];
  int64_t numel[kMtMax];
  int8_t dtype[kMtMax], auxDtype[kMtMax];
  int32_t blockStart[kMtMax + 1];
  // SGD / AdamW with 16-bit state or stochastic / Kahan writes
  // (src/low_update.h): the dtype of the state (aux1, aux2) and the
  // tensor's index in the update. A 16-bit param's `model` is its Kahan
  // compensation buffer (model copies belong to f32 masters only).
  int8_t stateDtype[kMtMax];
  int32_t index[kMtMax];
};

/// The rounding of one SGD / AdamW update's 16-bit results.
struct MtLow {
  int32_t mode;     // ampc_low_update
  uint64_t seed;
  int64_t paramBase;
  const int32_t *counter; // the update count the key takes (device), or null
};

// Each launches one kernel on `s` and returns cudaGetLastError().
cudaError_t launchRandom(cudaStream_t s, Buf y, int64_t n, uint64_t seed,
                         uint64_t offset, bool normal, double p0, double p1);
cudaError_t launchStoreFlag(cudaStream_t s, Buf out, const float *flag);
cudaError_t launchUpdateScale(cudaStream_t s, float *scale,
                              int32_t *growthTracker, int32_t *hysteresisLeft,
                              Buf foundInf, float growthFactor,
                              float backoffFactor, int32_t growthInterval,
                              int32_t hysteresis, float minScale,
                              float maxScale);
cudaError_t launchAdamwStep(cudaStream_t s, int32_t *step, double lr,
                            double beta1, double beta2, double eps,
                            double weightDecay, AdamwScalars *out,
                            Buf foundInf, const float *lrScale);
/// ampc_lr_schedule: the factor from the step count, then the count
/// advances unless the step is skipped.
cudaError_t launchLrSchedule(cudaStream_t s, float *factor, int32_t *step,
                             const LrSchedule &sched, Buf foundInf);
cudaError_t launchUnscale(cudaStream_t s, const MtChunk &c, int32_t blocks,
                          float *flag, const float *scale);
cudaError_t launchSumSquares(cudaStream_t s, const MtChunk &c, int32_t blocks,
                             double *partials, Buf foundInf);
cudaError_t launchClipCoef(cudaStream_t s, const double *partials,
                           int64_t count, float maxNorm, float *coef,
                           float *totalNorm, Buf foundInf);
cudaError_t launchScale(cudaStream_t s, const MtChunk &c, int32_t blocks,
                        const float *coef, Buf foundInf);
cudaError_t launchSgd(cudaStream_t s, const MtChunk &c, int32_t blocks,
                      const SgdScalars &sc, Buf foundInf);
cudaError_t launchAdamw(cudaStream_t s, const MtChunk &c, int32_t blocks,
                        const AdamwScalars *sc, Buf foundInf);
/// SGD / AdamW with MtLow's rounding and the chunk's state dtypes.
cudaError_t launchSgdLow(cudaStream_t s, const MtChunk &c, int32_t blocks,
                         const SgdScalars &sc, Buf foundInf, const MtLow &low);
cudaError_t launchAdamwLow(cudaStream_t s, const MtChunk &c, int32_t blocks,
                           const AdamwScalars *sc, Buf foundInf,
                           const MtLow &low);
/// clip_grad_norm's f64 gradients (defined in cuda_wide.cu, also built
/// without fma): one gradient's sum of squares (one block, into *partial),
/// the f64 coefficient from `count` partials (into *coef64, its f32
/// rounding into *coef) and the scaling by it. Each does nothing when
/// found_inf is set.
cudaError_t launchSumSquaresF64(cudaStream_t s, const double *g, int64_t n,
                                double *partial, Buf foundInf);
cudaError_t launchClipCoefF64(cudaStream_t s, const double *partials,
                              int64_t count, float maxNorm, float *coef,
                              double *coef64, Buf foundInf);
cudaError_t launchScaleF64(cudaStream_t s, double *g, int64_t n,
                           const double *coef64, Buf foundInf);
/// SGD's update counter: += 1 unless found_inf is set.
cudaError_t launchCountUpdate(cudaStream_t s, int32_t *counter, Buf foundInf);

} // namespace cuda
} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_EXACT_H
