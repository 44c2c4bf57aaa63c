//===- api_schedule.cpp - learning-rate schedules -------------------------===//
//
// ampc_lr_schedule (the device side: the factor of the current update and
// the update counter) and ampc_lr_schedule_factor (the same formula on the
// host, for logs). The formula is lr_schedule.h's.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "lr_schedule.h"

#include <math.h>

using namespace ampc;

namespace {

/// Why a schedule's arguments are invalid, or null.
const char *badSchedule(int32_t kind, double lr, int64_t warmup,
                        int64_t total, double minLr, int64_t stepSize,
                        double gamma) {
  if (kind < AMPC_LR_CONSTANT || kind > AMPC_LR_STEP)
    return "unknown schedule kind";
  if (!(lr > 0) || !isfinite(lr))
    return "lr must be > 0";
  if (warmup < 0)
    return "warmup_steps must be >= 0";
  if ((kind == AMPC_LR_LINEAR || kind == AMPC_LR_COSINE) && total <= warmup)
    return "total_steps must exceed warmup_steps";
  if (!(minLr >= 0) || !isfinite(minLr))
    return "min_lr must be >= 0";
  if (kind == AMPC_LR_STEP && (stepSize < 1 || !(gamma > 0) || !isfinite(gamma)))
    return "step needs step_size >= 1 and gamma > 0";
  return nullptr;
}

} // namespace

extern "C" {

double ampc_lr_schedule_factor(ampc_lr_schedule_kind kind, double lr,
                               int64_t warmup_steps, int64_t total_steps,
                               double min_lr, int64_t step_size, double gamma,
                               int64_t t) {
  // A double, not a status: NaN for bad arguments, with the reason in
  // ampc_last_error().
  if (const char *why = badSchedule(kind, lr, warmup_steps, total_steps,
                                    min_lr, step_size, gamma)) {
    setError(AMPC_ERROR_INVALID_ARGUMENT, "ampc_lr_schedule_factor: %s", why);
    return NAN;
  }
  if (t < 0) {
    setError(AMPC_ERROR_INVALID_ARGUMENT,
             "ampc_lr_schedule_factor: t %lld is negative",
             static_cast<long long>(t));
    return NAN;
  }
  LrSchedule s{kind, lr, warmup_steps, total_steps, min_lr, step_size, gamma};
  return lrScheduleFactor(s, t);
}

ampc_status ampc_lr_schedule(ampc_context ctx, void *factor, void *step,
                             ampc_lr_schedule_kind kind, double lr,
                             int64_t warmup_steps, int64_t total_steps,
                             double min_lr, int64_t step_size, double gamma,
                             const void *found_inf,
                             ampc_dtype found_inf_dtype) {
  const char *fn = "ampc_lr_schedule";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    if (!factor || !step)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                      !factor ? "factor" : "step");
    if (found_inf && found_inf_dtype != AMPC_F32 && found_inf_dtype != AMPC_I32)
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE, "%s: found_inf must be f32 or i32, got %s", fn,
                      dtypeName(found_inf_dtype));
    if (const char *why = badSchedule(kind, lr, warmup_steps, total_steps,
                                      min_lr, step_size, gamma))
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: %s", fn, why);
    LrSchedule s{kind, lr, warmup_steps, total_steps, min_lr, step_size,
                 gamma};
    return ctx->backend->lrSchedule(
        static_cast<float *>(factor), static_cast<int32_t *>(step), s,
        Buf{const_cast<void *>(found_inf), found_inf_dtype});
  });
}

} // extern "C"
