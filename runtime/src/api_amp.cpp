//===- api_amp.cpp - Loss scaling and optimizer updates
//--------------------===//
#include "common.h"

#include <vector>

#include <math.h>

using namespace ampc;

namespace {

ampc_status checkFoundInf(const char *fn, const void *p, ampc_dtype dt,
                          bool required) {
  if (!p) {
    if (required)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: found_inf is NULL", fn);
    return AMPC_OK;
  }
  if (dt != AMPC_F32 && dt != AMPC_I32)
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: found_inf must be f32 or i32, got %s", fn,
                    dtypeName(dt));
  return AMPC_OK;
}

/// Checks a list of `count` float tensors (entries of `data` may be NULL only
/// if `optional`).
ampc_status checkList(const char *fn, const char *what, void *const *data,
                      const ampc_dtype *dtypes, const int64_t *numels,
                      int32_t count, bool optional, bool f64 = false) {
  if (!data && !optional)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn, what);
  if (!data)
    return AMPC_OK;
  for (int32_t i = 0; i < count; ++i) {
    if (!data[i] && numels[i] > 0)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: %s[%d] is NULL", fn, what,
                      i);
    if (dtypes && (!isValidDtype(dtypes[i]) ||
                   !(isFloatDtype(dtypes[i]) ||
                     (f64 && dtypes[i] == AMPC_F64))))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: %s[%d] must be %sf32, f16 or bf16", fn, what, i,
                      f64 ? "f64, " : "");
  }
  return AMPC_OK;
}

ampc_status checkCounts(const char *fn, const int64_t *numels, int32_t count) {
  if (count < 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: negative count", fn);
  if (count > 0 && !numels)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: numels is NULL", fn);
  for (int32_t i = 0; i < count; ++i)
    if (numels[i] < 0)
      return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: numels[%d] < 0", fn, i);
    else if (numels[i] > INT64_MAX / 4) // the f32 state's bytes
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: numels[%d] = %lld is more than 2^63 bytes of f32",
                      fn, i, static_cast<long long>(numels[i]));
  return AMPC_OK;
}

ampc_status checkGrads(const char *fn, void *const *grads,
                       const ampc_dtype *dtypes, const int64_t *numels,
                       int32_t count, bool f64 = false) {
  AMPC_TRY(checkCounts(fn, numels, count));
  if (count > 0 && !dtypes)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: grad_dtypes is NULL", fn);
  return checkList(fn, "grads", grads, dtypes, numels, count, count == 0, f64);
}

float limitOr(double v, float none) {
  return (v > 0 && isfinite(v)) ? static_cast<float>(v) : none;
}

} // namespace

extern "C" {

ampc_status ampc_check_finite_unscale(ampc_context ctx, void *found_inf,
                                      ampc_dtype found_inf_dtype,
                                      void *const *grads,
                                      const ampc_dtype *grad_dtypes,
                                      const int64_t *numels, int32_t count,
                                      const void *scale) {
  const char *fn = "ampc_check_finite_unscale";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkFoundInf(fn, found_inf, found_inf_dtype, true));
    // f64 gradients (of f64 params) are checked and unscaled in f64 on the
    // CPU backend.
    AMPC_TRY(checkGrads(fn, grads, grad_dtypes, numels, count,
                        ctx->backend->kind() == AMPC_BACKEND_CPU));
    TensorList g{grads, grad_dtypes, numels, count};
    return ctx->backend->checkFiniteUnscale(Buf{found_inf, found_inf_dtype}, g,
                                            static_cast<const float *>(scale));
  });
}

ampc_status ampc_update_scale(ampc_context ctx, void *scale,
                              void *growth_tracker, void *hysteresis_left,
                              const void *found_inf, ampc_dtype found_inf_dtype,
                              double growth_factor, double backoff_factor,
                              int32_t growth_interval, int32_t hysteresis,
                              double min_scale, double max_scale) {
  const char *fn = "ampc_update_scale";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    if (!scale || !growth_tracker || !hysteresis_left)
      return setError(
          AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
          !scale ? "scale"
                 : (!growth_tracker ? "growth_tracker" : "hysteresis_left"));
    AMPC_TRY(checkFoundInf(fn, found_inf, found_inf_dtype, true));
    if (growth_interval <= 0 || hysteresis <= 0 || !(growth_factor > 0) ||
        !(backoff_factor > 0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: growth_interval, hysteresis and the factors must "
                      "be > 0",
                      fn);
    return ctx->backend->updateScale(
        static_cast<float *>(scale), static_cast<int32_t *>(growth_tracker),
        static_cast<int32_t *>(hysteresis_left),
        Buf{const_cast<void *>(found_inf), found_inf_dtype},
        static_cast<float>(growth_factor), static_cast<float>(backoff_factor),
        growth_interval, hysteresis, limitOr(min_scale, 0.0f),
        limitOr(max_scale, INFINITY));
  });
}

ampc_status ampc_clip_grad_norm(ampc_context ctx, void *total_norm,
                                void *const *grads,
                                const ampc_dtype *grad_dtypes,
                                const int64_t *numels, int32_t count,
                                double max_norm, const void *found_inf,
                                ampc_dtype found_inf_dtype) {
  const char *fn = "ampc_clip_grad_norm";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkFoundInf(fn, found_inf, found_inf_dtype, false));
    AMPC_TRY(checkGrads(fn, grads, grad_dtypes, numels, count, true));
    if (!(max_norm > 0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: max_norm must be > 0",
                      fn);
    TensorList g{grads, grad_dtypes, numels, count};
    return ctx->backend->clipGradNorm(
        static_cast<float *>(total_norm), g, static_cast<float>(max_norm),
        Buf{const_cast<void *>(found_inf), found_inf_dtype});
  });
}

} // extern "C"

/// The body of ampc_sgd_update and ampc_sgd_update_model (`models`: opt
/// level O2's low copies, aligned with `params`).
static ampc_status sgdUpdate(const char *fn, ampc_context ctx,
                             void *const *params,
                             const ampc_dtype *param_dtypes,
                             void *const *grads, const ampc_dtype *grad_dtypes,
                             void *const *momentum_bufs, const int64_t *numels,
                             int32_t count, double lr, double momentum,
                             double weight_decay, int32_t nesterov,
                             double max_grad_norm, const void *found_inf,
                             ampc_dtype found_inf_dtype,
                             const void *lr_scale,
                             const ModelCopies &models,
                             const LowUpdate &low = LowUpdate()) {
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkFoundInf(fn, found_inf, found_inf_dtype, false));
    // f64 params (and grads) have f64 kernels (the CPU backend's).
    bool f64 = true;
    AMPC_TRY(checkGrads(fn, grads, grad_dtypes, numels, count, f64));
    if (count > 0 && !param_dtypes)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: param_dtypes is NULL", fn);
    AMPC_TRY(checkList(fn, "params", params, param_dtypes, numels, count,
                       count == 0, f64));
    if (!(lr >= 0) || !(momentum >= 0) || !(weight_decay >= 0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: lr, momentum and weight_decay must be >= 0", fn);
    if (nesterov && momentum <= 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: nesterov needs momentum > 0", fn);
    if (momentum != 0)
      AMPC_TRY(checkList(fn, "momentum_bufs", momentum_bufs, nullptr, numels,
                         count, count == 0));
    Buf fi{const_cast<void *>(found_inf), found_inf_dtype};
    TensorList g{grads, grad_dtypes, numels, count};
    TensorList p{params, param_dtypes, numels, count};
    if (max_grad_norm > 0)
      AMPC_TRY(ctx->backend->clipGradNorm(
          nullptr, g, static_cast<float>(max_grad_norm), fi));
    SgdScalars s;
    s.lr = static_cast<float>(lr);
    s.momentum = static_cast<float>(momentum);
    s.weightDecay = static_cast<float>(weight_decay);
    s.nesterov = nesterov != 0;
    s.hasMomentum = momentum != 0;
    s.hasWeightDecay = weight_decay != 0;
    s.lrScale = static_cast<const float *>(lr_scale);
    s.lr64 = lr;
    s.momentum64 = momentum;
    s.weightDecay64 = weight_decay;
    return ctx->backend->sgd(p, g, momentum_bufs, s, fi, models, low);
  });
}

/// The body of ampc_adamw_update and ampc_adamw_update_model.
static ampc_status adamwUpdate(
    const char *fn, ampc_context ctx, void *const *params,
    const ampc_dtype *param_dtypes, void *const *grads,
    const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, const ModelCopies &models,
    const LowUpdate &low = LowUpdate()) {
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkFoundInf(fn, found_inf, found_inf_dtype, false));
    // f64 params (and grads) have f64 kernels, and f64 moments.
    AMPC_TRY(checkGrads(fn, grads, grad_dtypes, numels, count, true));
    if (count > 0 && !param_dtypes)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: param_dtypes is NULL", fn);
    AMPC_TRY(checkList(fn, "params", params, param_dtypes, numels, count,
                       count == 0, true));
    AMPC_TRY(checkList(fn, "exp_avgs", exp_avgs, nullptr, numels, count,
                       count == 0));
    AMPC_TRY(checkList(fn, "exp_avg_sqs", exp_avg_sqs, nullptr, numels, count,
                       count == 0));
    if (!step)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: step is NULL", fn);
    if (!(lr >= 0) || !(beta1 >= 0 && beta1 < 1) ||
        !(beta2 >= 0 && beta2 < 1) || !(eps >= 0) || !(weight_decay >= 0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: needs lr >= 0, 0 <= beta < 1, eps >= 0, "
                      "weight_decay >= 0",
                      fn);
    Buf fi{const_cast<void *>(found_inf), found_inf_dtype};
    TensorList g{grads, grad_dtypes, numels, count};
    TensorList p{params, param_dtypes, numels, count};
    if (max_grad_norm > 0)
      AMPC_TRY(ctx->backend->clipGradNorm(
          nullptr, g, static_cast<float>(max_grad_norm), fi));
    return ctx->backend->adamw(p, g, exp_avgs, exp_avg_sqs,
                               static_cast<int32_t *>(step), lr, beta1, beta2,
                               eps, weight_decay, fi,
                               static_cast<const float *>(lr_scale), models,
                               low);
  });
}

extern "C" {

ampc_status ampc_sgd_update(ampc_context ctx, void *const *params,
                            const ampc_dtype *param_dtypes, void *const *grads,
                            const ampc_dtype *grad_dtypes,
                            void *const *momentum_bufs, const int64_t *numels,
                            int32_t count, double lr, double momentum,
                            double weight_decay, int32_t nesterov,
                            double max_grad_norm, const void *found_inf,
                            ampc_dtype found_inf_dtype, const void *lr_scale) {
  return sgdUpdate("ampc_sgd_update", ctx, params, param_dtypes, grads,
                   grad_dtypes, momentum_bufs, numels, count, lr, momentum,
                   weight_decay, nesterov, max_grad_norm, found_inf,
                   found_inf_dtype, lr_scale, ModelCopies());
}

ampc_status ampc_adamw_update(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale) {
  return adamwUpdate("ampc_adamw_update", ctx, params, param_dtypes, grads,
                     grad_dtypes, exp_avgs, exp_avg_sqs, step, numels, count,
                     lr, beta1, beta2, eps, weight_decay, max_grad_norm,
                     found_inf, found_inf_dtype, lr_scale, ModelCopies());
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Opt level O2: optimizer updates that also write the low model copies
//===----------------------------------------------------------------------===//

namespace {
/// The model copies of ampc_*_update_model as a list aligned with the
/// parameters (null where a parameter has none), after checking them.
struct AlignedModels {
  std::vector<void *> data;
  std::vector<ampc_dtype> dtypes;
  ModelCopies view() const { return {data.data(), dtypes.data()}; }
};

ampc_status alignModels(const char *fn, int32_t count, void *const *models,
                        const ampc_dtype *model_dtypes,
                        const int64_t *model_params, int32_t model_count,
                        AlignedModels &out) {
  if (model_count < 0 || model_count > count)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: model_count %d must be in [0, count = %d]", fn,
                    model_count, count);
  if (model_count > 0 && (!models || !model_dtypes || !model_params))
    return setError(AMPC_ERROR_NULL_POINTER,
                    "%s: models, model_dtypes or model_params is NULL", fn);
  out.data.assign(count > 0 ? count : 1, nullptr);
  out.dtypes.assign(count > 0 ? count : 1, AMPC_F32);
  int64_t previous = -1;
  for (int32_t k = 0; k < model_count; ++k) {
    int64_t i = model_params[k];
    if (i <= previous || i >= count)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: model_params must be increasing indices below %d",
                      fn, count);
    previous = i;
    if (!models[k])
      return setError(AMPC_ERROR_NULL_POINTER, "%s: models[%d] is NULL", fn,
                      k);
    if (model_dtypes[k] != AMPC_F32 && model_dtypes[k] != AMPC_F16 &&
        model_dtypes[k] != AMPC_BF16)
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: model copy %d is not a float tensor", fn, k);
    out.data[i] = models[k];
    out.dtypes[i] = model_dtypes[k];
  }
  return AMPC_OK;
}
} // namespace

extern "C" {

ampc_status ampc_sgd_update_model(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes,
    void *const *momentum_bufs, const int64_t *numels, int32_t count, double lr,
    double momentum, double weight_decay, int32_t nesterov,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count) {
  const char *fn = "ampc_sgd_update_model";
  AlignedModels aligned;
  ampc_status st = guard(fn, [&] {
    return alignModels(fn, count, models, model_dtypes, model_params,
                       model_count, aligned);
  });
  if (st != AMPC_OK)
    return st;
  return sgdUpdate(fn, ctx, params, param_dtypes, grads, grad_dtypes,
                   momentum_bufs, numels, count, lr, momentum, weight_decay,
                   nesterov, max_grad_norm, found_inf, found_inf_dtype,
                   lr_scale, aligned.view());
}

ampc_status ampc_adamw_update_model(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count) {
  const char *fn = "ampc_adamw_update_model";
  AlignedModels aligned;
  ampc_status st = guard(fn, [&] {
    return alignModels(fn, count, models, model_dtypes, model_params,
                       model_count, aligned);
  });
  if (st != AMPC_OK)
    return st;
  return adamwUpdate(fn, ctx, params, param_dtypes, grads, grad_dtypes,
                     exp_avgs, exp_avg_sqs, step, numels, count, lr, beta1,
                     beta2, eps, weight_decay, max_grad_norm, found_inf,
                     found_inf_dtype, lr_scale, aligned.view());
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Updates of 16-bit params: stochastic rounding, Kahan compensation
//===----------------------------------------------------------------------===//

namespace {
/// The arguments of the _low entry points after the model copies, checked,
/// with the compensation buffers aligned with the params.
struct AlignedLow {
  AlignedModels models, comps;
  LowUpdate low;
};

ampc_status alignLow(const char *fn, int32_t count, const void *const *params,
                     const ampc_dtype *param_dtypes, void *const *models,
                     const ampc_dtype *model_dtypes,
                     const int64_t *model_params, int32_t model_count,
                     const ampc_dtype *state_dtypes, ampc_low_update mode,
                     uint64_t seed, int64_t param_base, void *counter,
                     bool needCounter, void *const *comps,
                     const int64_t *comp_params, int32_t comp_count,
                     AlignedLow &out) {
  AMPC_TRY(alignModels(fn, count, models, model_dtypes, model_params,
                       model_count, out.models));
  if (mode != AMPC_LOW_NEAREST && mode != AMPC_LOW_STOCHASTIC &&
      mode != AMPC_LOW_KAHAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: low_update %d is not an ampc_low_update", fn,
                    static_cast<int>(mode));
  if (param_base < 0 || param_base + count > (int64_t(1) << 28))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: param_base + count must be in [0, 2^28]", fn);
  // An f64 param keeps f64 state and is updated in f64 whatever the mode
  // (the mode writes 16-bit values only); the others' state is f32, f16 or
  // bf16.
  for (int32_t t = 0; state_dtypes && t < count; ++t) {
    bool wide = param_dtypes && param_dtypes[t] == AMPC_F64;
    if (wide ? state_dtypes[t] != AMPC_F64 : !isFloatDtype(state_dtypes[t]))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      wide ? "%s: state_dtypes[%d] must be f64 (the state of "
                             "an f64 param)"
                           : "%s: state_dtypes[%d] is not f32, f16 or bf16",
                      fn, t);
  }
  if (comp_count > 0 && mode != AMPC_LOW_KAHAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: compensation buffers need AMPC_LOW_KAHAN", fn);
  // The compensation buffers: aligned like the model copies, each of its
  // param's (16-bit) dtype.
  if (comp_count > 0 && !comp_params)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: comp_params is NULL", fn);
  std::vector<ampc_dtype> compDtypes;
  for (int32_t k = 0; k < comp_count && k <= count; ++k) {
    int64_t i = comp_params[k];
    if (i < 0 || i >= count)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: comp_params must be increasing indices below %d",
                      fn, count);
    if (param_dtypes[i] != AMPC_F16 && param_dtypes[i] != AMPC_BF16)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: param %lld has a compensation buffer but is not "
                      "f16 or bf16",
                      fn, static_cast<long long>(i));
    compDtypes.push_back(param_dtypes[i]);
  }
  AMPC_TRY(alignModels(fn, count, comps, compDtypes.data(), comp_params,
                       comp_count, out.comps));
  (void)params;
  if (needCounter && mode == AMPC_LOW_STOCHASTIC && !counter)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "%s: stochastic rounding needs the update counter", fn);
  out.low.mode = static_cast<int32_t>(mode);
  out.low.seed = seed;
  out.low.paramBase = param_base;
  out.low.stateDtypes = state_dtypes;
  out.low.comps = comp_count > 0 ? out.comps.data.data() : nullptr;
  out.low.counter = static_cast<int32_t *>(counter);
  return AMPC_OK;
}
} // namespace

extern "C" {

ampc_status ampc_sgd_update_low(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes,
    void *const *momentum_bufs, const int64_t *numels, int32_t count, double lr,
    double momentum, double weight_decay, int32_t nesterov,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count,
    const ampc_dtype *state_dtypes, ampc_low_update low_update, uint64_t seed,
    int64_t param_base, void *counter, void *const *comps,
    const int64_t *comp_params, int32_t comp_count) {
  const char *fn = "ampc_sgd_update_low";
  AlignedLow a;
  ampc_status st = guard(fn, [&] {
    if (count > 0 && !param_dtypes)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: param_dtypes is NULL", fn);
    return alignLow(fn, count, params, param_dtypes, models, model_dtypes,
                    model_params, model_count,
                    momentum != 0 ? state_dtypes : nullptr, low_update, seed,
                    param_base, counter, /*needCounter=*/true, comps,
                    comp_params, comp_count, a);
  });
  if (st != AMPC_OK)
    return st;
  // Without momentum there are no buffers, and state_dtypes may be empty.
  if (momentum == 0)
    a.low.stateDtypes = nullptr;
  return sgdUpdate(fn, ctx, params, param_dtypes, grads, grad_dtypes,
                   momentum_bufs, numels, count, lr, momentum, weight_decay,
                   nesterov, max_grad_norm, found_inf, found_inf_dtype,
                   lr_scale, a.models.view(), a.low);
}

ampc_status ampc_adamw_update_low(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count,
    const ampc_dtype *state_dtypes, ampc_low_update low_update, uint64_t seed,
    int64_t param_base, void *const *comps, const int64_t *comp_params,
    int32_t comp_count) {
  const char *fn = "ampc_adamw_update_low";
  AlignedLow a;
  ampc_status st = guard(fn, [&] {
    if (count > 0 && !param_dtypes)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: param_dtypes is NULL", fn);
    return alignLow(fn, count, params, param_dtypes, models, model_dtypes,
                    model_params, model_count, state_dtypes, low_update, seed,
                    param_base, nullptr, /*needCounter=*/false, comps,
                    comp_params, comp_count, a);
  });
  if (st != AMPC_OK)
    return st;
  return adamwUpdate(fn, ctx, params, param_dtypes, grads, grad_dtypes,
                     exp_avgs, exp_avg_sqs, step, numels, count, lr, beta1,
                     beta2, eps, weight_decay, max_grad_norm, found_inf,
                     found_inf_dtype, lr_scale, a.models.view(), a.low);
}

} // extern "C"
