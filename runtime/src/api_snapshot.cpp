//===- api_snapshot.cpp - Copies the device decides on --------------------===//
//
// ampc_copy_if_flag queues copies that take place only when a device flag
// (a step's found_inf) is set. `ampc run` uses it to keep the state a
// skipped step started from, for the overflow report, without the host
// waiting for the step: a step that was not skipped pays one tiny launch
// that reads the flag and copies nothing.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

extern "C" {

ampc_status ampc_copy_if_flag(ampc_context ctx, const void *flag,
                              int32_t count, void *const *dsts,
                              const void *const *srcs, const int64_t *bytes) {
  AMPC_TRY(checkContext("ampc_copy_if_flag", ctx));
  if (!flag)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_copy_if_flag: flag is NULL");
  if (count < 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "ampc_copy_if_flag: count %d is negative", count);
  if (count == 0)
    return AMPC_OK;
  if (!dsts || !srcs || !bytes)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_copy_if_flag: %s is NULL",
                    !dsts ? "dsts" : !srcs ? "srcs" : "bytes");
  for (int32_t i = 0; i < count; ++i) {
    if (bytes[i] < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_copy_if_flag: bytes[%d] is %lld", i,
                      static_cast<long long>(bytes[i]));
    if (bytes[i] > 0 && (!dsts[i] || !srcs[i]))
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_copy_if_flag: %s[%d] is NULL",
                      !dsts[i] ? "dsts" : "srcs", i);
  }
  return ctx->backend->copyIfFlag(static_cast<const float *>(flag), count,
                                  dsts, srcs, bytes);
}

} // extern "C"
