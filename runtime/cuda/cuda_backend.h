//===- cuda_backend.h - The CUDA backend -----------------------*- CUDA -*-===//
//
// The CUDA backend's class. Stream-ordered kernels over the shared scalar
// formulas of src/. One thread per element for elementwise work, one warp per
// row for softmax, norms and cross-entropy, fixed-order tree reductions (no
// float atomics) so results are deterministic run to run. Dtypes are
// dispatched inside the kernels by the (warp-uniform) dtype switch of
// loadF32/storeF32 rather than templates, which keeps the translation units
// quick to compile. Convolutions use im2col + cuBLASLt like the CPU backend
// (one code path for both backends; cuDNN would add a dependency and could not
// be measured here).
//
// The class is declared here; its entry points are defined, with the kernels
// they launch, in one file per kernel family (named in the declaration).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_BACKEND_H
#define AMPC_RUNTIME_CUDA_BACKEND_H

#include "cuda_device.cuh"

#include <initializer_list>
#include <vector>

namespace ampc {
namespace cuda {

#define LAUNCH_CHECK(what)                                                     \
  do {                                                                         \
    lastLaunch = what;                                                         \
    cudaError_t launchErr_ = cudaGetLastError();                               \
    if (launchErr_ != cudaSuccess)                                             \
      return cudaFail(launchErr_, what);                                       \
  } while (0)

#define ENTER()                                                                \
  do {                                                                         \
    ampc_status enterStatus_ = enter();                                        \
    if (enterStatus_ != AMPC_OK)                                               \
      return enterStatus_;                                                     \
  } while (0)

#define CUDA_TRY(call)                                                         \
  do {                                                                         \
    cudaError_t cudaErr_ = (call);                                             \
    if (cudaErr_ != cudaSuccess)                                               \
      return cudaFail(cudaErr_, #call);                                        \
  } while (0)

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(int device) : device(device) {}

  // cuda_backend.cu: the context: streams, memory, copies to and from the host,
  // asynchronous reads, scratch, predicated copies.
  ~CudaBackend() override;
  ampc_status init();
  ampc_status enter();
  ampc_status asyncFail(cudaError_t err, const char *what);
  ampc_status launchStatus(const char *what);
  ampc_status alloc(size_t bytes, void **ptr) override;
  ampc_status release(void *ptr) override;
  ampc_status copyBytes(void *dst, const void *src, size_t bytes,
                        ampc_memcpy_kind kind) override;
  static bool isPageable(const void *p);
  ampc_status stagedUpload(void *dst, const void *src, size_t bytes);
  ampc_status setBytes(void *ptr, int value, size_t bytes) override;
  ampc_status synchronize() override;
  ampc_status hostAlloc(size_t bytes, void **ptr) override;
  ampc_status hostFree(void *ptr) override;
  ampc_status readAsync(void *dst, const void *const *srcs, const size_t *bytes,
                        int count, uint64_t ticket) override;
  ampc_status readWait(uint64_t ticket) override;
  ampc_status tempAlloc(size_t bytes, void **ptr) override;
  void tempFree(void *ptr) override;
  ampc_status copyIfFlag(const float *flag, int count, void *const *dsts,
                         const void *const *srcs,
                         const int64_t *bytes) override;
  ampc_backend kind() const override { return AMPC_BACKEND_CUDA; }
  void *stream() override { return stream_; }

  // cuda_shape.cu: strided copies and casts (reshape, transpose, concat, slice,
  // broadcast), embedding.
  ampc_status copy(Buf dst, Buf src, const Walk &w0, float scale) override;
  bool launchConvert(Buf dst, Buf src, float scale, int64_t n);
  ampc_status embedding(Buf y, Buf table, Buf ids, int64_t n, int64_t vocab,
                        int64_t dim, int32_t site) override;
  ampc_status embeddingBwd(Buf dtable, Buf dy, Buf ids, int64_t n,
                           int64_t vocab, int64_t dim) override;

  // cuda_elementwise.cu: fill, random, unary and binary ops and their
  // gradients. launchContig is instantiated there (kind 0 for cuda_linalg.cu
  // too).
  template <int Kind>
  bool launchContig(int opCode, const UnaryAttrs &attrs, Buf y, Buf x0, Buf x1,
                    int64_t n);
  ampc_status fill(Buf y, int64_t n, double value) override;
  ampc_status random(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                     bool normal, double p0, double p1) override;
  ampc_status unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x,
                    int64_t n) override;
  ampc_status unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy,
                       Buf x, int64_t n) override;
  ampc_status binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w0) override;
  ampc_status binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
                        const Walk &w0) override;

  // cuda_reduction.cu: reductions, argmax, softmax, sums of two arrays.
  ampc_status reduce(ReduceOp op, Buf y, Buf x, const Walk &outer,
                     const Walk &inner) override;
  ampc_status reduceMaxBwd(Buf dx, Buf dy, Buf x, Buf y, const Walk &outer,
                           const Walk &inner) override;
  ampc_status columnSums(Buf y0, Buf y1, Buf x, Buf x2, int64_t rows,
                         int64_t cols, int64_t rowStride, const float *mean,
                         const float *rstd, float div0);
  ampc_status argmax(Buf y, Buf x, int64_t outer, int64_t dim,
                     int64_t inner) override;
  ampc_status softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
                      int64_t inner) override;
  ampc_status softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                         int64_t dim, int64_t inner) override;
  ampc_status sumTwo(const float *a, const float *b, int64_t n, double *sums);

  // cuda_loss.cu: cross-entropy, MSE.
  ampc_status crossEntropyRows(Buf logits, Buf labels, int64_t rows,
                               int64_t classes, Temp &t, int32_t site = -1);
  ampc_status crossEntropy(Buf loss, Buf logits, Buf labels, int64_t rows,
                           int64_t classes, int32_t site) override;
  ampc_status crossEntropyBwd(Buf dlogits, Buf dloss, Buf logits, Buf labels,
                              int64_t rows, int64_t classes) override;
  ampc_status mse(Buf loss, Buf a, Buf b, int64_t n) override;
  ampc_status mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                     int64_t n) override;

  // cuda_norm.cu: layer / RMS norm, batch norm.
  ampc_status stats(bool rms, Buf x, int64_t rows, int64_t cols, float eps,
                    Temp &t);
  ampc_status norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows,
                   int64_t cols, float eps) override;
  ampc_status normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                      int64_t rows, int64_t cols, float eps) override;
  ampc_status batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                        bool training, int64_t n, int64_t c, int64_t inner,
                        float eps) override;
  ampc_status batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w, Buf rm,
                           Buf rv, bool training, int64_t n, int64_t c,
                           int64_t inner, float eps) override;
  ampc_status batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                              int64_t n, int64_t c, int64_t inner,
                              float momentum) override;

  // cuda_dropout.cu: dropout and its step counter.
  ampc_status dropout(Buf y, Buf x, const int32_t *step, uint64_t seed,
                      uint64_t key, float p, int64_t numel,
                      DropoutShard shard) override;
  ampc_status counterNext(int32_t *next, const int32_t *counter) override;

  // cuda_conv_pool.cu: pooling, im2col / col2im of convolutions.
  ampc_status pool(Buf y, Buf x, const PoolGeom &g) override;
  ampc_status poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) override;
  ampc_status im2col(Buf col, Buf x, const ConvGeom &g) override;
  ampc_status col2im(float *dx, const float *col, const ConvGeom &g) override;

  // cuda_conv_wide.cu: convolution passes with an f64 tensor, in f64
  // (im2col / col2im in f64 and gemmF64; the CPU's cpu_conv_wide.cpp).
  bool convWide(const ConvWideCall &c, ampc_status &status) override;

  // cuda_linalg.cu: GEMMs: cuBLASLt, mixed dtypes, the f32 fallback and its
  // epilogue.
  ampc_status gemmSplit(const GemmDesc &d);
  ampc_status gemm(const GemmDesc &d) override;
  ampc_status geluInPlace(const GemmDesc &d);

  // cuda_amp_optimizer.cu: loss scaling, clipping, SGD / AdamW, gradient
  // accumulation, the learning-rate schedule, the non-finite check.
  // forChunks is a template used by that file alone.
  template <typename Fill, typename Launch>
  ampc_status forChunks(const TensorList &g, Fill fill, Launch launch);
  static int64_t mtBlocks(const TensorList &g);
  ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                                 const float *scale) override;
  ampc_status updateScale(float *scale, int32_t *growthTracker,
                          int32_t *hysteresisLeft, Buf foundInf,
                          float growthFactor, float backoffFactor,
                          int32_t growthInterval, int32_t hysteresis,
                          float minScale, float maxScale) override;
  ampc_status clipGradNorm(float *totalNorm, const TensorList &g, float maxNorm,
                           Buf foundInf) override;
  ampc_status sgd(const TensorList &params, const TensorList &grads,
                  void *const *bufs, const SgdScalars &s, Buf foundInf,
                  const ModelCopies &models, const LowUpdate &low) override;
  ampc_status adamw(const TensorList &params, const TensorList &grads,
                    void *const *expAvgs, void *const *expAvgSqs, int32_t *step,
                    double lr, double beta1, double beta2, double eps,
                    double weightDecay, Buf foundInf, const float *lrScale,
                    const ModelCopies &models, const LowUpdate &low) override;
  ampc_status gradAccumulate(const TensorList &accs, const TensorList &grads,
                             int32_t *micro, int64_t k) override;
  ampc_status lrSchedule(float *factor, int32_t *step, const LrSchedule &s,
                         Buf foundInf) override;
  ampc_status checkNonfinite(Buf x, int64_t n, int32_t site) override;

  // cuda_wide.cu: f64 tensors in f64 and integer tensors exactly (the
  // counterpart of the CPU's cpu_wide.cpp, taking the same calls). Each
  // returns false, launching nothing, where the operands are all of the
  // f32-computing types; true where it took the call, its status in `st`.
  // The entry points call them first, after ENTER().
  ampc_status refuseWide(const char *what, std::initializer_list<Buf> bufs);
  /// An f64 gradient of a narrower param (it would round) is refused
  /// before an update runs, naming `what` and the gradient.
  ampc_status refuseNarrowF64Grads(const char *what, const TensorList &params,
                                   const TensorList &grads);
  ampc_status launchStatusOf(const char *what);
  /// Launches `kernel` (a grid-stride loop) over n items on the stream with
  /// `args`: AMPC_OK, launching nothing, when n is 0; else
  /// launchStatusOf(what). Defined (and used) in cuda_wide.cu.
  template <typename... P, typename... A>
  ampc_status launchOver(int64_t n, const char *what, void (*kernel)(P...),
                         A &&...args);
  bool fillWide(Buf y, int64_t n, double value, ampc_status &st);
  bool copyScaleWide(Buf dst, Buf src, const Walk &w, float scale,
                     ampc_status &st);
  bool unaryWide(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x, int64_t n,
                 ampc_status &st);
  bool unaryBwdWide(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy, Buf x,
                    int64_t n, ampc_status &st);
  bool binaryWide(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w,
                  ampc_status &st);
  bool binaryBwdWide(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
                     const Walk &w, ampc_status &st);
  bool nonfiniteWide(Buf x, int64_t n, int32_t site, ampc_status &st);
  bool embeddingWide(Buf y, Buf table, Buf ids, int64_t n, int64_t vocab,
                     int64_t dim, int32_t site, ampc_status &st);
  bool reduceWide(ReduceOp op, Buf y, Buf x, const Walk &outer,
                  const Walk &inner, ampc_status &st);
  bool reduceMaxBwdWide(Buf dx, Buf dy, Buf x, Buf y, const Walk &outer,
                        const Walk &inner, ampc_status &st);
  bool argmaxWide(Buf y, Buf x, int64_t outer, int64_t dim, int64_t inner,
                  ampc_status &st);
  bool cumsumWide(Buf y, Buf x, int64_t outer, int64_t len, int64_t inner,
                  bool reverse, ampc_status &st) override;
  bool softmaxWide(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
                   int64_t inner, ampc_status &st);
  bool softmaxBwdWide(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                      int64_t dim, int64_t inner, ampc_status &st);
  bool normWide(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows,
                int64_t cols, float eps, ampc_status &st);
  bool normBwdWide(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                   int64_t rows, int64_t cols, float eps, ampc_status &st);
  /// Batch norm in f64, one thread per channel in the CPU's order (the
  /// API sends f64 batch norms here; the f32 entry points refuse f64).
  bool batchNormWide(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv, bool training,
                     int64_t n, int64_t c, int64_t inner, double eps,
                     ampc_status &st) override;
  bool batchNormBwdWide(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w, Buf rm,
                        Buf rv, bool training, int64_t n, int64_t c,
                        int64_t inner, double eps, ampc_status &st) override;
  bool batchNormUpdateWide(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                           int64_t n, int64_t c, int64_t inner,
                           double momentum, ampc_status &st) override;
  bool dropoutWide(Buf y, Buf x, const int32_t *step, uint64_t seed,
                   uint64_t key, float pMask, double p, int64_t numel,
                   DropoutShard shard, ampc_status &st) override;
  bool poolWide(Buf y, Buf x, const PoolGeom &g, ampc_status &st);
  bool poolBwdWide(Buf dx, Buf dy, Buf x, const PoolGeom &g, ampc_status &st);
  bool mseWide(Buf loss, Buf a, Buf b, int64_t n, ampc_status &st);
  bool mseBwdWide(Buf da, Buf db, Buf dloss, Buf a, Buf b, int64_t n,
                  ampc_status &st);
  bool crossEntropyWide(Buf loss, Buf logits, Buf labels, int64_t rows,
                        int64_t classes, int32_t site, ampc_status &st);
  bool crossEntropyBwdWide(Buf dlogits, Buf dloss, Buf logits, Buf labels,
                           int64_t rows, int64_t classes, ampc_status &st);
  /// SGD / AdamW of the f64 params of a list (f64 moments and momentum
  /// buffers, the hyperparameters as given; AdamW after the step kernel):
  /// `rest` gets the list's numels with the f64 entries 0, for the f32
  /// multi-tensor kernels.
  /// checkFiniteUnscale's f64 gradients (flag: the call's f32 found flag).
  bool unscaleWide(const TensorList &g, float *flag, const float *scale,
                   std::vector<int64_t> &rest, ampc_status &st);
  /// clip_grad_norm of a list with f64 gradients: their squares in f64
  /// beside the others' partials, the coefficient in f64 (f64 gradients
  /// scaled by it, the others by its f32 rounding).
  bool clipWide(float *totalNorm, const TensorList &g, float maxNorm,
                Buf foundInf, ampc_status &st);
  bool sgdWide(const TensorList &params, const TensorList &grads,
               void *const *bufs, const SgdScalars &s, Buf foundInf,
               std::vector<int64_t> &rest, ampc_status &st);
  bool adamwWide(const TensorList &params, const TensorList &grads,
                 void *const *expAvgs, void *const *expAvgSqs,
                 const int32_t *step, double lr, double beta1, double beta2,
                 double eps, double weightDecay, Buf foundInf,
                 const float *lrScale, std::vector<int64_t> &rest,
                 ampc_status &st);
  bool gemmWide(const GemmDesc &d, ampc_status &st);
  ampc_status gemmF64(const GemmDesc &d);

private:
  int device;
  cudaStream_t stream_ = nullptr;
  bool usePool = true;
  const char *lastLaunch = "none";
  /// Page-locked staging of pageable uploads (stagedUpload); larger copies
  /// go directly.
  static constexpr int kUploadSlots = 4;
  static constexpr size_t kUploadMaxBytes = size_t(256) << 20;
  struct UploadSlot {
    void *host = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    bool busy = false;
  };
  UploadSlot uploads[kUploadSlots];
  uint64_t nextUpload = 0;
  void *readStage = nullptr;
  cudaEvent_t readEvents[kReadSlots] = {};
  LtGemm lt;
};

} // namespace cuda
} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_BACKEND_H
