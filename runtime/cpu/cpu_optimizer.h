//===- cpu_optimizer.h - The CPU's loss scaling and optimizers -*- C++ -*-===//
//
// The CPU backend's steps of the loss scaler, the gradient clip, the
// optimizers and gradient accumulation (Backend's methods of the same
// names, backend.h): the multi-tensor calls, their threading and the
// widening of 16-bit tensors around cpu_update.h's element loops.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_OPTIMIZER_H
#define AMPC_RUNTIME_CPU_CPU_OPTIMIZER_H

#include "../src/backend.h"

namespace ampc {
namespace cpuopt {

/// GradScaler's unscale_ and inf check in one pass: every gradient times
/// 1 / *scale (none with no scale or a scale of 1), and *foundInf set to
/// whether any was an inf or a NaN. Fixed chunks on the pool; the flag is an
/// OR, so it does not depend on the order they finish in.
ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                               const float *scale);

/// The dynamic loss scale's update (scalar_ops.h's updateScaleState).
ampc_status updateScale(float *scale, int32_t *growthTracker,
                        int32_t *hysteresisLeft, Buf foundInf,
                        float growthFactor, float backoffFactor,
                        int32_t growthInterval, int32_t hysteresis,
                        float minScale, float maxScale);

/// clip_grad_norm_: the squares summed in one fixed order whatever the
/// thread count and the instruction set (blocks of kItemElements, sixteen
/// f64 lanes each, the blocks in order), then every gradient scaled by the
/// coefficient unless it is exactly 1. Nothing on a step whose foundInf is
/// set.
ampc_status clipGradNorm(float *totalNorm, const TensorList &g, float maxNorm,
                         Buf foundInf);

/// The SGD step over every param (fused loops for f32 and bf16 tensors, f16
/// ones widened into f32 scratch, f64 ones in f64, 16-bit state, stochastic
/// rounding and Kahan compensation through `low`). Element by element over
/// fixed chunks: any split gives the same bits.
ampc_status sgd(const TensorList &params, const TensorList &grads,
                void *const *bufs, const SgdScalars &scalars, Buf foundInf,
                const ModelCopies &models, const LowUpdate &low);

/// The AdamW step, the same way as sgd (its step counter incremented).
ampc_status adamw(const TensorList &params, const TensorList &grads,
                  void *const *expAvgs, void *const *expAvgSqs, int32_t *step,
                  double lr, double beta1, double beta2, double eps,
                  double weightDecay, Buf foundInf, const float *lrScale,
                  const ModelCopies &models, const LowUpdate &low);

/// *factor from the schedule at *step; *step += 1 unless foundInf is set.
ampc_status lrSchedule(float *factor, int32_t *step, const LrSchedule &s,
                       Buf foundInf);

/// Gradient accumulation: the first micro-batch writes, the others add (one
/// f32 addition per element; f64 for f64 params); *micro advances mod k.
ampc_status gradAccumulate(const TensorList &accs, const TensorList &grads,
                           int32_t *micro, int64_t k);

} // namespace cpuopt
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_OPTIMIZER_H
