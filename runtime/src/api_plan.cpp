//===- api_plan.cpp - Primitives made before the first step ---------------===//
//
// ampc_plan_begin / ampc_plan_end: a program's initialisation repeats its
// step's GEMM and convolution calls between these two, so that the CPU
// backend makes every oneDNN primitive the step will use when the program
// is created (docs/runtime.md, "Primitives made before the first step").
// While a context plans, its entry points run against a stand-in backend:
// GEMMs and convolutions go to the real backend's planGemm / planConvolve,
// allocations to the real backend, and every other primitive (copies,
// fills, elementwise work, im2col, reductions) does nothing. The entry
// points then check their arguments and reach the same GEMMs and
// convolutions as in a step, and no tensor data is read or written.
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include <string.h>

using namespace ampc;

namespace {

class PlanningBackend final : public Backend {
public:
  explicit PlanningBackend(Backend &real) : real(real) {
    checkWords = real.checkWords;
  }

  ampc_backend kind() const override { return real.kind(); }
  std::string engine() const override { return real.engine(); }
  bool planning() const override { return true; }

  // What plans.
  ampc_status gemm(const GemmDesc &d) override { return real.planGemm(d); }
  bool convolve(const ConvCall &c, ampc_status &status) override {
    status = AMPC_OK;
    return real.planConvolve(c);
  }

  // Memory comes from the real backend (nothing is written to it).
  ampc_status alloc(size_t bytes, void **ptr) override {
    return real.alloc(bytes, ptr);
  }
  ampc_status release(void *ptr) override { return real.release(ptr); }
  ampc_status tempAlloc(size_t bytes, void **ptr) override {
    return real.tempAlloc(bytes, ptr);
  }
  void tempFree(void *ptr) override { real.tempFree(ptr); }
  void *stream() override { return real.stream(); }

  // Everything else touches data: nothing to do.
  ampc_status checkNonfinite(Buf, int64_t, int32_t) override { return AMPC_OK; }
  ampc_status copyBytes(void *, const void *, size_t,
                        ampc_memcpy_kind) override {
    return AMPC_OK;
  }
  ampc_status setBytes(void *, int, size_t) override { return AMPC_OK; }
  ampc_status synchronize() override { return AMPC_OK; }
  ampc_status copy(Buf, Buf, const Walk &, float) override { return AMPC_OK; }
  ampc_status fill(Buf, int64_t, double) override { return AMPC_OK; }
  ampc_status random(Buf, int64_t, uint64_t, uint64_t, bool, double,
                     double) override {
    return AMPC_OK;
  }
  ampc_status unary(UnaryOp, const UnaryAttrs &, Buf, Buf, int64_t) override {
    return AMPC_OK;
  }
  ampc_status unaryBwd(UnaryOp, const UnaryAttrs &, Buf, Buf, Buf,
                       int64_t) override {
    return AMPC_OK;
  }
  ampc_status binary(BinaryOp, Buf, Buf, Buf, const Walk &) override {
    return AMPC_OK;
  }
  ampc_status binaryBwd(BinaryOp, int, Buf, Buf, Buf, Buf,
                        const Walk &) override {
    return AMPC_OK;
  }
  ampc_status reduce(ReduceOp, Buf, Buf, const Walk &, const Walk &) override {
    return AMPC_OK;
  }
  ampc_status reduceMaxBwd(Buf, Buf, Buf, Buf, const Walk &,
                           const Walk &) override {
    return AMPC_OK;
  }
  ampc_status softmax(bool, Buf, Buf, int64_t, int64_t, int64_t) override {
    return AMPC_OK;
  }
  ampc_status softmaxBwd(bool, Buf, Buf, Buf, int64_t, int64_t,
                         int64_t) override {
    return AMPC_OK;
  }
  ampc_status norm(bool, Buf, Buf, Buf, Buf, int64_t, int64_t,
                   float) override {
    return AMPC_OK;
  }
  ampc_status normBwd(bool, Buf, Buf, Buf, Buf, Buf, Buf, int64_t, int64_t,
                      float) override {
    return AMPC_OK;
  }
  bool cumsumWide(Buf, Buf, int64_t, int64_t, int64_t, bool,
                  ampc_status &st) override {
    st = AMPC_OK;
    return true;
  }
  ampc_status argmax(Buf, Buf, int64_t, int64_t, int64_t) override {
    return AMPC_OK;
  }
  ampc_status pool(Buf, Buf, const PoolGeom &) override { return AMPC_OK; }
  ampc_status poolBwd(Buf, Buf, Buf, const PoolGeom &) override {
    return AMPC_OK;
  }
  ampc_status embedding(Buf, Buf, Buf, int64_t, int64_t, int64_t,
                        int32_t) override {
    return AMPC_OK;
  }
  ampc_status embeddingBwd(Buf, Buf, Buf, int64_t, int64_t, int64_t) override {
    return AMPC_OK;
  }
  ampc_status crossEntropy(Buf, Buf, Buf, int64_t, int64_t, int32_t) override {
    return AMPC_OK;
  }
  ampc_status crossEntropyBwd(Buf, Buf, Buf, Buf, int64_t, int64_t) override {
    return AMPC_OK;
  }
  ampc_status mse(Buf, Buf, Buf, int64_t) override { return AMPC_OK; }
  ampc_status mseBwd(Buf, Buf, Buf, Buf, Buf, int64_t) override {
    return AMPC_OK;
  }
  ampc_status im2col(Buf, Buf, const ConvGeom &) override { return AMPC_OK; }
  ampc_status col2im(float *, const float *, const ConvGeom &) override {
    return AMPC_OK;
  }
  ampc_status checkFiniteUnscale(Buf, const TensorList &,
                                 const float *) override {
    return AMPC_OK;
  }
  ampc_status updateScale(float *, int32_t *, int32_t *, Buf, float, float,
                          int32_t, int32_t, float, float) override {
    return AMPC_OK;
  }
  ampc_status clipGradNorm(float *, const TensorList &, float, Buf) override {
    return AMPC_OK;
  }
  ampc_status sgd(const TensorList &, const TensorList &, void *const *,
                  const SgdScalars &, Buf, const ModelCopies &,
                  const LowUpdate &) override {
    return AMPC_OK;
  }
  ampc_status adamw(const TensorList &, const TensorList &, void *const *,
                    void *const *, int32_t *, double, double, double, double,
                    double, Buf, const float *, const ModelCopies &,
                    const LowUpdate &) override {
    return AMPC_OK;
  }
  ampc_status lrSchedule(float *, int32_t *, const LrSchedule &,
                         Buf) override {
    return AMPC_OK;
  }
  ampc_status gradAccumulate(const TensorList &, const TensorList &, int32_t *,
                             int64_t) override {
    return AMPC_OK;
  }
  ampc_status batchNorm(Buf, Buf, Buf, Buf, Buf, Buf, bool, int64_t, int64_t,
                        int64_t, float) override {
    return AMPC_OK;
  }
  ampc_status batchNormBwd(Buf, Buf, Buf, Buf, Buf, Buf, Buf, Buf, bool,
                           int64_t, int64_t, int64_t, float) override {
    return AMPC_OK;
  }
  ampc_status batchNormUpdate(Buf, Buf, Buf, Buf, Buf, int64_t, int64_t,
                              int64_t, float) override {
    return AMPC_OK;
  }
  ampc_status dropout(Buf, Buf, const int32_t *, uint64_t, uint64_t, float,
                      int64_t, DropoutShard) override {
    return AMPC_OK;
  }
  bool dropoutWide(Buf, Buf, const int32_t *, uint64_t, uint64_t, float,
                   double, int64_t, DropoutShard, ampc_status &st) override {
    st = AMPC_OK;
    return true;
  }
  bool batchNormWide(Buf, Buf, Buf, Buf, Buf, Buf, bool, int64_t, int64_t,
                     int64_t, double, ampc_status &st) override {
    st = AMPC_OK;
    return true;
  }
  bool batchNormBwdWide(Buf, Buf, Buf, Buf, Buf, Buf, Buf, Buf, bool, int64_t,
                        int64_t, int64_t, double, ampc_status &st) override {
    st = AMPC_OK;
    return true;
  }
  bool batchNormUpdateWide(Buf, Buf, Buf, Buf, Buf, int64_t, int64_t, int64_t,
                           double, ampc_status &st) override {
    st = AMPC_OK;
    return true;
  }
  ampc_status counterNext(int32_t *, const int32_t *) override {
    return AMPC_OK;
  }
  ampc_status readAsync(void *, const void *const *, const size_t *, int,
                        uint64_t) override {
    return AMPC_OK;
  }
  ampc_status copyIfFlag(const float *, int, void *const *,
                         const void *const *, const int64_t *) override {
    return AMPC_OK;
  }
  ampc_status addChannelBias(Buf, Buf, Buf, int64_t, int64_t,
                             int64_t) override {
    return AMPC_OK;
  }

private:
  Backend &real;
};

} // namespace

namespace ampc {

void endPlanning(ampc_context ctx) {
  if (ctx && ctx->planned)
    ctx->backend = std::move(ctx->planned);
}

} // namespace ampc

extern "C" {

ampc_status ampc_plan_begin(ampc_context ctx) {
  const char *fn = "ampc_plan_begin";
  return guard(fn, [&] {
    if (!ctx || !ctx->backend)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: context is NULL", fn);
    if (ctx->planned)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: the context already plans", fn);
    auto stand = std::make_unique<PlanningBackend>(*ctx->backend);
    ctx->planned = std::move(ctx->backend);
    ctx->backend = std::move(stand);
    return AMPC_OK;
  });
}

ampc_status ampc_plan_end(ampc_context ctx) {
  const char *fn = "ampc_plan_end";
  return guard(fn, [&] {
    if (!ctx || !ctx->backend)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: context is NULL", fn);
    if (!ctx->planned)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: the context does not plan (no ampc_plan_begin)",
                      fn);
    endPlanning(ctx);
    return AMPC_OK;
  });
}

ampc_status ampc_context_primitives(ampc_context ctx, int64_t *count) {
  const char *fn = "ampc_context_primitives";
  AMPC_TRY(checkContext(fn, ctx));
  if (!count)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: count is NULL", fn);
  *count = ctx->backend->primitives();
  return AMPC_OK;
}

} // extern "C"
