//===- api_checks.cpp - the context's check words
//---------------------------===//
//
// Kernels that validate their inputs on the device (class labels, ids) or
// that look for non-finite values record the caller's site number in a word
// of the context with an atomic minimum; nothing in a step waits for them.
// The caller reads a word when it reads the step's results anyway.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

namespace {
constexpr int kCheckWords = 2;
/// Bytes the words take (one allocation, aligned like every other).
constexpr size_t kCheckBytes = 256;

ampc_status checkKind(const char *fn, ampc_check check) {
  if (check != AMPC_CHECK_INDEX && check != AMPC_CHECK_NONFINITE)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: unknown check %d", fn,
                    static_cast<int>(check));
  return AMPC_OK;
}
} // namespace

namespace ampc {
/// Allocates and clears the check words of a new context's backend.
ampc_status createCheckWords(Backend &be) {
  void *words = nullptr;
  AMPC_TRY(be.alloc(kCheckBytes, &words));
  be.checkWords = static_cast<uint32_t *>(words);
  return be.setBytes(words, 0xFF, kCheckWords * sizeof(uint32_t));
}

/// Frees them (before the backend goes).
void destroyCheckWords(Backend &be) {
  if (be.checkWords)
    be.release(be.checkWords);
  be.checkWords = nullptr;
}
} // namespace ampc

extern "C" {

ampc_status ampc_check_read(ampc_context ctx, ampc_check check, int32_t clear,
                            int32_t *site) {
  const char *fn = "ampc_check_read";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkKind(fn, check));
    if (!site)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: site is NULL", fn);
    Backend &be = *ctx->backend;
    uint32_t word = 0;
    ++be.hostSyncs; // a device-to-host read (ampc_host_syncs)
    AMPC_TRY(be.copyBytes(&word, be.checkWords + check, sizeof(word),
                          AMPC_MEMCPY_DEVICE_TO_HOST));
    *site = word == 0xFFFFFFFFu ? -1 : static_cast<int32_t>(word);
    if (clear && word != 0xFFFFFFFFu)
      AMPC_TRY(be.setBytes(be.checkWords + check, 0xFF, sizeof(uint32_t)));
    return AMPC_OK;
  });
}

ampc_status ampc_check_nonfinite(ampc_context ctx, const void *x,
                                 ampc_dtype dtype, int64_t numel,
                                 int32_t site) {
  const char *fn = "ampc_check_nonfinite";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    if (site < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: site %d is negative",
                      fn, static_cast<int>(site));
    if (numel < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: numel %lld is negative",
                      fn, static_cast<long long>(numel));
    if (isFloatDtype(dtype) &&
        numel > INT64_MAX / static_cast<int64_t>(dtypeSize(dtype)))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: numel %lld of %s is more than 2^63 bytes", fn,
                      static_cast<long long>(numel), dtypeName(dtype));
    if (!isFloatDtype(dtype))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: dtype %d is not f32, f16 or bf16", fn,
                      static_cast<int>(dtype));
    if (numel == 0)
      return AMPC_OK;
    if (!x)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: x is NULL", fn);
    return ctx->backend->checkNonfinite(Buf{const_cast<void *>(x), dtype},
                                        numel, site);
  });
}

} // extern "C"
