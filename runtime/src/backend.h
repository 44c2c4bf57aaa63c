//===- backend.h - The primitive interface every backend implements -*- C++
//-*-===//
//
// The public API (src/api_*.cpp) validates arguments and composes the ops of
// the language from these primitives; a backend implements only primitives.
// All pointers are device pointers of the backend; shapes arrive normalised.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_BACKEND_H
#define AMPC_RUNTIME_SRC_BACKEND_H

#include "ampc/runtime.h"
#include "lr_schedule.h"
#include "scalar_ops.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <string>

namespace ampc {

constexpr int kMaxRank = AMPC_MAX_RANK;

/// A device pointer and its element type.
struct Buf {
  void *data;
  ampc_dtype dtype;
};

/// Where a rank's dropout element draws its mask (data-parallel runs,
/// ampc_dropout_ranked_fwd): rank `rank` of `world` holds, for each of its
/// samples j, `sample` contiguous elements, and its sample j is sample
/// j * world + rank of one process whose batch holds every rank's samples
/// (the ranks' samples interleave, docs/distributed.md). Element i then
/// draws the mask of that process's element
/// ((i / sample) * world + rank) * sample + i % sample. One rank, or
/// `sample` 0 (the layout is not known), keeps i.
struct DropoutShard {
  int64_t world = 1, rank = 0, sample = 0;
  AMPC_HD bool active() const { return world > 1 && sample > 0; }
  AMPC_HD int64_t global(int64_t i) const {
    if (!active())
      return i;
    return ((i / sample) * world + rank) * sample + i % sample;
  }
};

/// An index space of `rank` dims walked in row-major order, with the element
/// strides of up to three operands over it (0 for broadcast dims).
struct Walk {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[3][kMaxRank] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= shape[i];
    return n;
  }
};

/// Row-major strided-batched GEMM (see ampc_gemm).
struct GemmDesc {
  Buf c, a, b, bias{nullptr, AMPC_F32};
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t lda = 0, ldb = 0, ldc = 0, strideA = 0, strideB = 0, strideC = 0;
  float alpha = 1.0f, beta = 0.0f;
  ampc_epilogue epilogue = AMPC_EPILOGUE_NONE;
};

/// One image (and one group) of a convolution, for im2col / col2im: 2-D
/// (H, W) or, with the depth fields, 3-D (D, H, W); a 1-D convolution is a
/// 2-D one of height 1. The image is [channels, d, h, w], the column matrix
/// [channels * kd * kh * kw, od * oh * ow]. The depth fields default to a
/// depth of 1 (a 2-D convolution).
struct ConvGeom {
  int64_t channels, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
  // Depth: size, kernel, output, stride, padding, dilation.
  int64_t d = 1, kd = 1, od = 1, sd = 1, pd = 0, dd = 1;
  AMPC_HD int64_t columns() const { return od * oh * ow; }
  AMPC_HD int64_t rows() const { return channels * kd * kh * kw; }
  AMPC_HD int64_t imageSize() const { return channels * d * h * w; }
  /// The image element that entry i of the column matrix (row-major, rows()
  /// by columns()) copies, or -1 where the entry is padding: im2col.
  AMPC_HD int64_t imageElementOf(int64_t i) const {
    int64_t cols = columns(), hw = oh * ow;
    int64_t row = i / cols, pix = i % cols;
    int64_t c = row / (kd * kh * kw), z = (row / (kh * kw)) % kd;
    int64_t y = (row / kw) % kh, x = row % kw;
    int64_t iz = (pix / hw) * sd - pd + z * dd;
    int64_t iy = ((pix / ow) % oh) * sh - ph + y * dh;
    int64_t ix = (pix % ow) * sw - pw + x * dw;
    if (iz < 0 || iz >= d || iy < 0 || iy >= h || ix < 0 || ix >= w)
      return -1;
    return ((c * d + iz) * h + iy) * w + ix;
  }
  /// Calls f(k) for each entry k of the column matrix (row-major, rows by
  /// columns()) that im2col copies image element i into, in the order of
  /// the rows (kernel taps ascending): what col2im adds into element i.
  template <typename F> AMPC_HD void forEachColumnOf(int64_t i, F &&f) const {
    int64_t cols = columns();
    int64_t c = i / (d * h * w), iz = (i / (h * w)) % d;
    int64_t iy = (i / w) % h, ix = i % w;
    for (int64_t z = 0; z < kd; ++z) {
      int64_t tz = iz + pd - z * dd;
      if (tz < 0 || tz % sd || tz / sd >= od)
        continue;
      for (int64_t y = 0; y < kh; ++y) {
        int64_t ty = iy + ph - y * dh;
        if (ty < 0 || ty % sh || ty / sh >= oh)
          continue;
        for (int64_t x = 0; x < kw; ++x) {
          int64_t tx = ix + pw - x * dw;
          if (tx < 0 || tx % sw || tx / sw >= ow)
            continue;
          f((((c * kd + z) * kh + y) * kw + x) * cols +
            ((tz / sd) * oh + ty / sh) * ow + tx / sw);
        }
      }
    }
  }
};

/// A whole convolution pass over a batch, for a backend's own convolution
/// engine (Backend::convolve). Plain layouts (images [n, groups *
/// g.channels, d, h, w], weights [outChannels, g.channels, kd, kh, kw]);
/// `out` is f32 and overwritten.
struct ConvCall {
  enum Pass { Forward, BackwardData, BackwardWeights } pass;
  ConvGeom g; // one group of one image
  int64_t n, groups, outChannels;
  Buf a, b;   // Forward: x, w; BackwardData: dy, w; BackwardWeights: x, dy
  float *out; // Forward: y; BackwardData: dx; BackwardWeights: dw
  /// Forward and backward data, optional: the result's own tensor when it
  /// is not f32 (and the forward's bias, or none). A backend that takes the
  /// call then leaves the result there, the bias added in f32 and each
  /// element rounded once (Backend::addChannelBias's arithmetic), and may
  /// use `out` as scratch; without it, the f32 result goes to `out`.
  Buf final{nullptr, AMPC_F32};
  Buf bias{nullptr, AMPC_F32};
  /// One image's elements (all groups), one output's; then the batch's.
  int64_t imageElemsEach() const { return groups * g.imageSize(); }
  int64_t outputElemsEach() const { return outChannels * g.columns(); }
  int64_t imageElems() const { return n * imageElemsEach(); }
  int64_t outputElems() const { return n * outputElemsEach(); }
  int64_t weightElems() const { return outChannels * g.rows(); }
  int64_t aElems() const {
    return pass == BackwardData ? outputElems() : imageElems();
  }
  int64_t bElems() const {
    return pass == BackwardWeights ? outputElems() : weightElems();
  }
};

/// A convolution pass with an f64 tensor (Backend::convWide), computed in
/// f64 whatever the other operands' dtypes: the f32 engines never see one.
/// Plain layouts as ConvCall's; `out` and `bias` in their own dtypes, each
/// element rounded once.
struct ConvWideCall {
  ConvCall::Pass pass;
  ConvGeom g; // one group of one image
  int64_t n, groups, outChannels;
  Buf a, b; // Forward: x, w; BackwardData: dy, w; BackwardWeights: x, dy
  /// Forward: y; BackwardData: dx; BackwardWeights: dw (null data: not
  /// wanted). Overwritten.
  Buf out;
  /// Forward: the bias added to y (null data: none); BackwardWeights: the
  /// bias gradient, dy summed over images and pixels (null data: not
  /// wanted). Unused by BackwardData.
  Buf bias{nullptr, AMPC_F32};
};

/// A 2-D pooling problem over N*C planes.
struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  bool isMax;
  /// Calls f(input offset within the plane) for each in-bounds tap of the
  /// window at (oy, ox), in window order (rows, then columns).
  template <typename F>
  AMPC_HD void forEachTap(int64_t oy, int64_t ox, F &&f) const {
    for (int64_t ky = 0; ky < kh; ++ky) {
      int64_t iy = oy * sh - ph + ky;
      if (iy < 0 || iy >= h)
        continue;
      for (int64_t kx = 0; kx < kw; ++kx) {
        int64_t ix = ox * sw - pw + kx;
        if (ix >= 0 && ix < w)
          f(iy * w + ix);
      }
    }
  }
};

/// A list of tensors for multi-tensor (optimizer) primitives.
struct TensorList {
  void *const *data;
  const ampc_dtype *dtypes;
  const int64_t *numels;
  int32_t count;
};

/// Opt level O2: the low model copy of each parameter of a TensorList
/// (data[t] null: parameter t has none; data null: none has one). The
/// optimizer kernels store the updated parameter into it in the same pass.
struct ModelCopies {
  void *const *data = nullptr;
  const ampc_dtype *dtypes = nullptr;
  void *at(int32_t t) const { return data ? data[t] : nullptr; }
};

/// How an update writes 16-bit params and state (ampc_sgd_update_low,
/// ampc_adamw_update_low; src/low_update.h). The default is today's
/// rounding to nearest with f32 state.
struct LowUpdate {
  int32_t mode = 0; ///< ampc_low_update
  uint64_t seed = 0;
  int64_t paramBase = 0;
  /// Per param: the dtype of its momentum buffer / Adam moments (null: f32).
  const ampc_dtype *stateDtypes = nullptr;
  /// Per param: its 16-bit Kahan compensation buffer, or null.
  void *const *comps = nullptr;
  /// SGD's update counter (a device i32 scalar, advanced with every applied
  /// update), or null; AdamW keys with its step count.
  int32_t *counter = nullptr;
  ampc_dtype stateDtype(int32_t t) const {
    return stateDtypes ? stateDtypes[t] : AMPC_F32;
  }
  void *comp(int32_t t) const { return comps ? comps[t] : nullptr; }
  /// Whether the update needs the widening path (anything but f32 state
  /// rounded to nearest).
  bool special(int32_t count) const {
    if (mode != 0 || counter)
      return true;
    for (int32_t t = 0; stateDtypes && t < count; ++t)
      if (stateDtypes[t] != AMPC_F32)
        return true;
    return false;
  }
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual ampc_backend kind() const = 0;
  /// The units the backend's GEMMs run on (ampc_context_engine).
  virtual std::string engine() const {
    return kind() == AMPC_BACKEND_CUDA ? "cuBLASLt" : "";
  }
  /// Records that the entry point now running ran work on `name` (an
  /// implementation as ampc_context_engine names them); the CPU backend
  /// keeps them for takeEngines, others drop them.
  virtual void noteEngine(const std::string &name) { (void)name; }
  /// The implementations noted since the previous take, comma-separated in
  /// the order first noted, then forgets them (ampc_context_take_engines).
  virtual std::string takeEngines() { return ""; }

  /// The context's check words (ampc_check), in device memory: one uint32
  /// per kind, 0xFFFFFFFF when nothing was recorded, else the smallest site
  /// recorded (runtime/src/api_checks.cpp allocates them with the context).
  uint32_t *checkWords = nullptr;
  /// Records `site` in checkWords[AMPC_CHECK_NONFINITE] when an element of
  /// x[0..n) is an inf or a NaN.
  virtual ampc_status checkNonfinite(Buf x, int64_t n, int32_t site) = 0;

  // Memory. temp* are for scratch space inside one call (stream-ordered).
  virtual ampc_status alloc(size_t bytes, void **ptr) = 0;
  virtual ampc_status release(void *ptr) = 0;
  virtual ampc_status copyBytes(void *dst, const void *src, size_t bytes,
                                ampc_memcpy_kind kind) = 0;
  virtual ampc_status setBytes(void *ptr, int value, size_t bytes) = 0;
  virtual ampc_status synchronize() = 0;
  virtual void *stream() { return nullptr; }
  virtual ampc_status tempAlloc(size_t bytes, void **ptr) = 0;
  virtual void tempFree(void *ptr) = 0;

  /// dst[walk stride 0] = scale * src[walk stride 1], converting dtypes.
  virtual ampc_status copy(Buf dst, Buf src, const Walk &walk, float scale) = 0;
  virtual ampc_status fill(Buf y, int64_t n, double value) = 0;
  virtual ampc_status random(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                             bool normal, double p0, double p1) = 0;

  virtual ampc_status unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x,
                            int64_t n) = 0;
  virtual ampc_status unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx,
                               Buf dy, Buf x, int64_t n) = 0;
  /// y (stride 0, contiguous) = op(a (stride 1), b (stride 2)).
  virtual ampc_status binary(BinaryOp op, Buf y, Buf a, Buf b,
                             const Walk &walk) = 0;
  /// g (contiguous over the walk) = d op / d operand `which` * dy, where dy
  /// is contiguous over the walk and a, b use strides 1 and 2.
  virtual ampc_status binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a,
                                Buf b, const Walk &walk) = 0;
  /// y[outer stride 0] = reduce over inner of x[outer stride 1 + inner
  /// stride 1]; Mean divides by inner.numel().
  virtual ampc_status reduce(ReduceOp op, Buf y, Buf x, const Walk &outer,
                             const Walk &inner) = 0;
  /// amax backward over the same walks; dx shares x's strides.
  virtual ampc_status reduceMaxBwd(Buf dx, Buf dy, Buf x, Buf y,
                                   const Walk &outer, const Walk &inner) = 0;

  virtual ampc_status softmax(bool log, Buf y, Buf x, int64_t outer,
                              int64_t dim, int64_t inner) = 0;
  virtual ampc_status softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                                 int64_t dim, int64_t inner) = 0;
  /// w and b may have null data (1 and 0).
  virtual ampc_status norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows,
                           int64_t cols, float eps) = 0;
  virtual ampc_status normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                              Buf w, int64_t rows, int64_t cols, float eps) = 0;
  /// y[o, i] (i32, contiguous [outer, inner]) = the first index along dim
  /// of the maximum of x[o, :, i] (NaN counts as the maximum, as in
  /// torch.argmax).
  virtual ampc_status argmax(Buf y, Buf x, int64_t outer, int64_t dim,
                             int64_t inner) = 0;
  /// The cumulative sums the f32 GEMM path does not compute: y[o, :, i] =
  /// the running sum of x[o, :, i] (from the end when `reverse`), both
  /// contiguous [outer, len, inner]; f64 in f64, integer or bool x into an
  /// i64 y exactly with two's-complement wrap-around. False (touching
  /// nothing) where the backend has no such code; the caller reports it.
  /// True where it took the call, its status in `st` (as for the other
  /// wide hooks below).
  virtual bool cumsumWide(Buf y, Buf x, int64_t outer, int64_t len,
                          int64_t inner, bool reverse, ampc_status &st) {
    (void)y, (void)x, (void)outer, (void)len, (void)inner, (void)reverse,
        (void)st;
    return false;
  }
  virtual ampc_status pool(Buf y, Buf x, const PoolGeom &g) = 0;
  virtual ampc_status poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) = 0;
  /// Ids outside [0, vocab) give zeros and, when site >= 0, record site
  /// in checkWords[AMPC_CHECK_INDEX] (atomic minimum).
  virtual ampc_status embedding(Buf y, Buf table, Buf ids, int64_t n,
                                int64_t vocab, int64_t dim,
                                int32_t site = -1) = 0;
  virtual ampc_status embeddingBwd(Buf dtable, Buf dy, Buf ids, int64_t n,
                                   int64_t vocab, int64_t dim) = 0;
  /// Labels outside [0, classes) other than -100 make the loss NaN and,
  /// when site >= 0, record site in checkWords[AMPC_CHECK_INDEX].
  virtual ampc_status crossEntropy(Buf loss, Buf logits, Buf labels,
                                   int64_t rows, int64_t classes,
                                   int32_t site = -1) = 0;
  virtual ampc_status crossEntropyBwd(Buf dlogits, Buf dloss, Buf logits,
                                      Buf labels, int64_t rows,
                                      int64_t classes) = 0;
  virtual ampc_status mse(Buf loss, Buf a, Buf b, int64_t n) = 0;
  virtual ampc_status mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                             int64_t n) = 0;

  virtual ampc_status gemm(const GemmDesc &d) = 0;
  /// col [C*kh*kw, oh*ow] (col's dtype) from one image x [C, h, w].
  virtual ampc_status im2col(Buf col, Buf x, const ConvGeom &g) = 0;
  /// dx [C, h, w] (f32, accumulated into) += col2im(col (f32)).
  virtual ampc_status col2im(float *dx, const float *col,
                             const ConvGeom &g) = 0;
  /// Runs `c` on an engine of the backend's own and returns true (its
  /// status in `status`), or returns false, untouched, when it has none for
  /// it: then the generic im2col / GEMM paths run.
  virtual bool convolve(const ConvCall &c, ampc_status &status) {
    (void)c;
    (void)status;
    return false;
  }
  /// Runs a convolution's backward data and backward weights passes (the
  /// same output gradient) together on such an engine, where it can share
  /// work between them, and returns true (the status in `status`); returns
  /// false, untouched, where it cannot: then each pass goes to convolve().
  virtual bool convolveBackward(const ConvCall &data, const ConvCall &weights,
                                ampc_status &status) {
    (void)data;
    (void)weights;
    (void)status;
    return false;
  }

  /// Runs a convolution pass with an f64 tensor in f64 and returns true
  /// (its status in `status`), or returns false, touching nothing, where
  /// the backend has no f64 convolution: the caller reports it.
  virtual bool convWide(const ConvWideCall &c, ampc_status &status) {
    (void)c;
    (void)status;
    return false;
  }

  // Planning (ampc_plan_begin; runtime/src/api_plan.cpp): while a context
  // plans, its entry points see a stand-in backend that sends these three
  // here and does nothing else.
  /// Makes the primitives gemm(d) would run, reading and writing no data.
  virtual ampc_status planGemm(const GemmDesc &d) {
    (void)d;
    return AMPC_OK;
  }
  /// Makes the primitives convolve(c, ...) would run, reading and writing
  /// no data; returns what convolve would.
  virtual bool planConvolve(const ConvCall &c) {
    (void)c;
    return false;
  }
  /// The GEMM and convolution problems planned so far, made or refused
  /// (ampc_context_primitives).
  virtual int64_t primitives() const { return 0; }
  /// Whether this is the planning stand-in: code of the entry points that
  /// reads or writes data other than through the backend skips it.
  virtual bool planning() const { return false; }

  virtual ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                                         const float *scale) = 0;
  virtual ampc_status updateScale(float *scale, int32_t *growthTracker,
                                  int32_t *hysteresisLeft, Buf foundInf,
                                  float growthFactor, float backoffFactor,
                                  int32_t growthInterval, int32_t hysteresis,
                                  float minScale, float maxScale) = 0;
  /// foundInf.data may be null. totalNorm may be null.
  virtual ampc_status clipGradNorm(float *totalNorm, const TensorList &g,
                                   float maxNorm, Buf foundInf) = 0;
  virtual ampc_status sgd(const TensorList &params, const TensorList &grads,
                          void *const *bufs, const SgdScalars &s,
                          Buf foundInf, const ModelCopies &models,
                          const LowUpdate &low) = 0;
  virtual ampc_status adamw(const TensorList &params, const TensorList &grads,
                            void *const *expAvgs, void *const *expAvgSqs,
                            int32_t *step, double lr, double beta1,
                            double beta2, double eps, double weightDecay,
                            Buf foundInf, const float *lrScale,
                            const ModelCopies &models,
                            const LowUpdate &low) = 0;
  /// *factor = lrScheduleFactor(s, *step); then *step += 1 unless foundInf
  /// (its data may be null) is set.
  virtual ampc_status lrSchedule(float *factor, int32_t *step,
                                 const LrSchedule &s, Buf foundInf) = 0;
  /// Gradient accumulation: accs.data[t] (f32) = grads[t] when *micro == 0,
  /// else accs + grads; then *micro = (*micro + 1) % k.
  virtual ampc_status gradAccumulate(const TensorList &accs,
                                     const TensorList &grads, int32_t *micro,
                                     int64_t k) = 0;

  // Batch norm and dropout (docs/jobs.md; scalar code in norm_ops.h and dropout_ops.h).
  // The geometry is (N, C, inner); w, b, running_mean, running_var are [C].
  virtual ampc_status batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                                bool training, int64_t n, int64_t c,
                                int64_t inner, float eps) = 0;
  /// dw and db may have null data.
  virtual ampc_status batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                                   Buf w, Buf rm, Buf rv, bool training,
                                   int64_t n, int64_t c, int64_t inner,
                                   float eps) = 0;
  virtual ampc_status batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm,
                                      Buf rv, int64_t n, int64_t c,
                                      int64_t inner, float momentum) = 0;
  /// y = x * dropoutFactor(seed, dropoutStream(key, *step),
  /// shard.global(i), p): `step` is a device i32 scalar; a default shard
  /// (one rank) draws element i's own mask.
  virtual ampc_status dropout(Buf y, Buf x, const int32_t *step,
                              uint64_t seed, uint64_t key, float p,
                              int64_t numel, DropoutShard shard) = 0;
  /// dropout of f64 tensors (x or y f64), computed in f64: the mask is
  /// dropout()'s for the f32 threshold `pMask` (the same kept elements as
  /// the f32 kernel), the kept elements multiplied by 1 / (1 - p) computed
  /// in f64 from the exact `p`. False (touching nothing) where the backend
  /// has no such code; the caller reports it.
  virtual bool dropoutWide(Buf y, Buf x, const int32_t *step, uint64_t seed,
                           uint64_t key, float pMask, double p, int64_t numel,
                           DropoutShard shard, ampc_status &st) {
    (void)y, (void)x, (void)step, (void)seed, (void)key, (void)pMask, (void)p,
        (void)numel, (void)shard, (void)st;
    return false;
  }
  /// batchNorm, batchNormBwd and batchNormUpdate of f64 tensors (any of
  /// them f64), computed in f64 with eps and momentum exact. False
  /// (touching nothing) where the backend has no such code; true where it
  /// took the call, its status in `st`.
  virtual bool batchNormWide(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                             bool training, int64_t n, int64_t c,
                             int64_t inner, double eps, ampc_status &st) {
    (void)y, (void)x, (void)w, (void)b, (void)rm, (void)rv, (void)training,
        (void)n, (void)c, (void)inner, (void)eps, (void)st;
    return false;
  }
  virtual bool batchNormBwdWide(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                                Buf rm, Buf rv, bool training, int64_t n,
                                int64_t c, int64_t inner, double eps,
                                ampc_status &st) {
    (void)dx, (void)dw, (void)db, (void)dy, (void)x, (void)w, (void)rm,
        (void)rv, (void)training, (void)n, (void)c, (void)inner, (void)eps,
        (void)st;
    return false;
  }
  virtual bool batchNormUpdateWide(Buf newMean, Buf newVar, Buf x, Buf rm,
                                   Buf rv, int64_t n, int64_t c,
                                   int64_t inner, double momentum,
                                   ampc_status &st) {
    (void)newMean, (void)newVar, (void)x, (void)rm, (void)rv, (void)n,
        (void)c, (void)inner, (void)momentum, (void)st;
    return false;
  }
  /// *next = *counter + 1 (device i32 scalars).
  virtual ampc_status counterNext(int32_t *next, const int32_t *counter) = 0;

  // Asynchronous reads (api_host.cpp). The defaults suit a backend whose
  // work is done when a call returns (the CPU).
  static constexpr int kReadPieces = 8, kReadBytes = 256, kReadSlots = 8;
  virtual ampc_status hostAlloc(size_t bytes, void **ptr) {
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? AMPC_OK : AMPC_ERROR_OUT_OF_MEMORY; // the caller reports
  }
  virtual ampc_status hostFree(void *ptr) {
    free(ptr);
    return AMPC_OK;
  }
  /// Queues the packed copy of ampc_read_async as read `ticket`.
  virtual ampc_status readAsync(void *dst, const void *const *srcs,
                                const size_t *bytes, int count,
                                uint64_t ticket) {
    size_t at = 0;
    for (int i = 0; i < count; ++i) {
      ampc_status st = copyBytes(static_cast<char *>(dst) + at, srcs[i],
                                 bytes[i], AMPC_MEMCPY_DEVICE_TO_HOST);
      if (st != AMPC_OK)
        return st;
      at += bytes[i];
    }
    return AMPC_OK;
  }
  virtual ampc_status readWait(uint64_t ticket) { return AMPC_OK; }

  /// ampc_copy_if_flag (api_snapshot.cpp): the copies, made only when
  /// *flag != 0. The default suits a backend whose work is done when a call
  /// returns (the CPU).
  virtual ampc_status copyIfFlag(const float *flag, int count,
                                 void *const *dsts, const void *const *srcs,
                                 const int64_t *bytes) {
    float f = 0.0f;
    ampc_status st = copyBytes(&f, flag, sizeof(f), AMPC_MEMCPY_DEVICE_TO_HOST);
    for (int i = 0; st == AMPC_OK && f != 0.0f && i < count; ++i)
      if (bytes[i] > 0)
        st = copyBytes(dsts[i], srcs[i], static_cast<size_t>(bytes[i]),
                       AMPC_MEMCPY_DEVICE_TO_DEVICE);
    return st;
  }

  // Convolution support (cpugemm).
  /// y (contiguous [outer, channels, inner]) = src + bias[channel], each sum
  /// rounded once to y's dtype; y may be src. The default is a broadcast
  /// binary() add.
  virtual ampc_status addChannelBias(Buf y, Buf src, Buf bias, int64_t outer,
                                     int64_t channels, int64_t inner) {
    Walk w;
    w.rank = 3;
    w.shape[0] = outer;
    w.shape[1] = channels;
    w.shape[2] = inner;
    w.stride[0][0] = w.stride[1][0] = channels * inner;
    w.stride[0][1] = w.stride[1][1] = inner;
    w.stride[0][2] = w.stride[1][2] = 1;
    w.stride[2][0] = 0;
    w.stride[2][1] = 1;
    w.stride[2][2] = 0;
    return binary(BinaryOp::Add, y, src, bias, w);
  }

  /// Host synchronisations so far (ampc_host_syncs) and reads issued.
  uint64_t hostSyncs = 0, readsIssued = 0;
};

/// The CPU backend (always built).
Backend *createCpuBackend();
/// Whether the CPU backend's GEMMs run bf16 operands on AMX (oneDNN), where
/// bf16 convolutions are meant to run as im2col + GEMM rather than on the
/// direct f32 kernels. (On AVX512-BF16 without AMX the direct kernels
/// measured faster: 50 against 56 ms per bf16 step of bench/models/resnet.)
bool cpuBf16GemmsOnAmx();
/// The CUDA backend, or null with the error recorded (status in *status).
Backend *createCudaBackend(int device, ampc_status *status);
/// Whether a CUDA device is usable (false in a CPU-only build).
bool cudaBackendAvailable();

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_BACKEND_H
