//===- cpu_wide.h - f64 and exact-integer kernels of the CPU backend -*- C++
//-*-===//
//
// The CPU backend's kernels for the tensors its f32 paths do not compute:
// f64 (computed in f64 with the same scalar formulas as f32, scalar_ops.h,
// instantiated for double) and integer tensors (computed exactly in int64
// and wrapped to their width on store, as PyTorch's integer arithmetic).
// Each entry returns false, touching nothing, when its operands are all of
// the f32-computing types, so the f32, f16 and bf16 paths are untouched.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_WIDE_H
#define AMPC_RUNTIME_CPU_CPU_WIDE_H

#include "../src/backend.h"

namespace ampc {
namespace cpuwide {

/// Whether b holds f64 data.
inline bool isF64(Buf b) { return b.data && b.dtype == AMPC_F64; }

bool unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x, int64_t n);
bool unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy, Buf x,
              int64_t n);
bool binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w);
bool binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
               const Walk &w);
bool reduce(ReduceOp op, Buf y, Buf x, const Walk &outer, const Walk &inner);
bool argmax(Buf y, Buf x, int64_t outer, int64_t dim, int64_t inner);
/// cumsum along the middle dim of [outer, len, inner]: f64 in f64 (one
/// running sum in order, as PyTorch's CPU kernel), integer or bool x into
/// an i64 y exactly, wrapping; false for the f32-computing types.
bool cumsum(Buf y, Buf x, int64_t outer, int64_t len, int64_t inner,
            bool reverse);
bool softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim, int64_t inner);
bool softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer, int64_t dim,
                int64_t inner);
/// layer_norm (rms: RMS norm) of rows [rows, cols] in f64 when a tensor is
/// f64: the row's mean, then the mean of squared deviations (two passes),
/// rstd = 1 / sqrt(var + eps); w and b may be absent (null data).
bool norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows, int64_t cols,
          double eps);
/// Its backward in f64: dx = rstd (g - mean(g) - xhat mean(g xhat)) with
/// g = dy w (RMS: no mean(g)); dw, db summed over the rows (any may be
/// absent).
bool normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
             int64_t rows, int64_t cols, double eps);
/// max_pool2d / avg_pool2d (count_include_pad) in f64 when x or y is f64:
/// the first maximum of each window (NaN wins), or the window sum over
/// kh * kw.
bool pool(Buf y, Buf x, const PoolGeom &g);
bool poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g);
bool mse(Buf loss, Buf a, Buf b, int64_t n);
bool mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b, int64_t n);
/// An f64 GEMM (every operand f64): OpenBLAS dgemm, then bias and epilogue.
bool gemm(const GemmDesc &d);
/// Checks n f64 gradients for infs and NaNs and multiplies them by `inv`
/// (the f32 inverse scale, as GradScaler's f32 inv_scale tensor); true when
/// one is not finite.
bool unscale(double *g, int64_t n, float inv);
/// SGD on one f64 parameter (torch.optim.SGD in f64; its momentum buffer,
/// when it has one, is f64 like the param).
bool sgd(Buf param, Buf grad, void *buf, const SgdScalars &s, int64_t n);

/// torch.optim.AdamW (_single_tensor_adamw, amsgrad off) on one f64
/// parameter in f64 (its exp_avg and exp_avg_sq f64 too), the
/// hyperparameters as given; `lrScale` (a schedule's factor) may be null.
/// `step` is the step count after this update.
bool adamw(Buf param, Buf grad, double *m, double *v, int64_t n, double lr,
           const float *lrScale, double beta1, double beta2, double eps,
           double weightDecay, int32_t step);
/// The f64 gradients' part of clip_grad_norm_: an f64 tensor's scaling by
/// the f64 coefficient (false, writing nothing, for the other dtypes; the
/// sum of squares is cpuupdate::addSquares for every dtype).
bool scaleF64(Buf g, int64_t n, double coef);
/// Batch norm of x (N, C, inner) in f64 when a tensor is f64: per channel
/// the batch mean, then the mean of squared deviations (two passes, in
/// sample order), or the running statistics; y = (x - mean) * invstd * w +
/// b with invstd = 1 / sqrt(var + eps).
bool batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv, bool training,
               int64_t n, int64_t c, int64_t inner, double eps);
/// Its backward: dw = sum(dy xhat), db = sum(dy) per channel; training:
/// dx = w invstd (dy - mean(dy) - xhat mean(dy xhat)), else dy w invstd.
/// dx, dw or db may be absent (null data).
bool batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w, Buf rm,
                  Buf rv, bool training, int64_t n, int64_t c, int64_t inner,
                  double eps);
/// PyTorch's running-statistics update in f64 (unbiased batch variance).
bool batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                     int64_t n, int64_t c, int64_t inner, double momentum);
/// dropout in f64 (x or y f64): element i kept where the uniform of its
/// draw (dropout_ops.h, index shard.global(i)) is >= the f32 threshold
/// pMask, as in the f32 kernel, and multiplied by 1 / (1 - p) in f64.
bool dropout(Buf y, Buf x, const int32_t *step, uint64_t seed, uint64_t key,
             float pMask, double p, int64_t numel, DropoutShard shard);
/// The double a float argument was rounded from, as written (its shortest
/// decimal: 1e-05 for 1e-5f); a value that is no float is returned as is.
double asWritten(double v);

} // namespace cpuwide
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_WIDE_H
