//===- api_accumulate.cpp - gradient accumulation -------------------------===//
//
// ampc_grad_accumulate (`accumulate = K`, docs/optimizer.md): a micro-batch's
// gradients added into f32 accumulators (f64 ones for f64 gradients), and
// the micro-batch index.
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include <vector>

using namespace ampc;

extern "C" {

ampc_status ampc_grad_accumulate(ampc_context ctx, void *const *accs,
                                 void *const *grads,
                                 const ampc_dtype *grad_dtypes,
                                 const int64_t *numels, int32_t count,
                                 void *micro, int64_t k) {
  const char *fn = "ampc_grad_accumulate";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    if (!micro)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: micro is NULL", fn);
    if (k < 1 || k > INT32_MAX)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: k must be in [1, 2^31), got %lld", fn,
                      static_cast<long long>(k));
    if (count < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: count is negative",
                      fn);
    if (count > 0 && (!accs || !grads || !grad_dtypes || !numels))
      return setError(AMPC_ERROR_NULL_POINTER, "%s: a list is NULL", fn);
    // f32 accumulators; an f64 gradient (an f64 param's) has an f64 one.
    std::vector<ampc_dtype> accDtypes(count, AMPC_F32);
    for (int32_t t = 0; t < count; ++t) {
      if (numels[t] < 0)
        return setError(AMPC_ERROR_INVALID_ARGUMENT,
                        "%s: numels[%d] is negative", fn, t);
      if (numels[t] > INT64_MAX / 8) // the accumulator's bytes
        return setError(AMPC_ERROR_INVALID_ARGUMENT,
                        "%s: numels[%d] = %lld is more than 2^63 bytes of f64",
                        fn, t, static_cast<long long>(numels[t]));
      if (numels[t] > 0 && (!accs[t] || !grads[t]))
        return setError(AMPC_ERROR_NULL_POINTER, "%s: %s[%d] is NULL", fn,
                        !accs[t] ? "accs" : "grads", t);
      ampc_dtype d = grad_dtypes[t];
      if (d != AMPC_F32 && d != AMPC_F16 && d != AMPC_BF16 && d != AMPC_F64)
        return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                        "%s: grads[%d] must be f64, f32, f16 or bf16, got %s",
                        fn, t, dtypeName(d));
      if (d == AMPC_F64)
        accDtypes[t] = AMPC_F64;
    }
    TensorList a{accs, accDtypes.data(), numels, count};
    TensorList g{grads, grad_dtypes, numels, count};
    return ctx->backend->gradAccumulate(a, g, static_cast<int32_t *>(micro),
                                        k);
  });
}

} // extern "C"
