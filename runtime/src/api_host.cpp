//===- api_host.cpp - Reads that do not block a step, host-sync counter ---===//
//
// ampc_read_async packs a few small device values (the loss, found_inf, the
// loss scale) into one device-to-host transfer into page-locked memory and
// returns; ampc_read_wait blocks until it has landed. A training loop queues
// the read of step k after step k and waits for it after step k + 1 is
// queued, so the device never idles waiting for the host.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

extern "C" {

ampc_status ampc_host_alloc(ampc_context ctx, size_t bytes, void **ptr) {
  AMPC_TRY(checkContext("ampc_host_alloc", ctx));
  if (!ptr)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_host_alloc: ptr is NULL");
  *ptr = nullptr;
  ampc_status st = ctx->backend->hostAlloc(bytes, ptr);
  if (st == AMPC_ERROR_OUT_OF_MEMORY)
    return setError(st, "ampc_host_alloc: cannot allocate %zu host bytes",
                    bytes);
  return st;
}

ampc_status ampc_host_free(ampc_context ctx, void *ptr) {
  AMPC_TRY(checkContext("ampc_host_free", ctx));
  if (!ptr)
    return AMPC_OK;
  ++ctx->backend->hostSyncs;
  return ctx->backend->hostFree(ptr);
}

ampc_status ampc_read_async(ampc_context ctx, void *dst,
                            const void *const *srcs, const size_t *bytes,
                            int32_t count, uint64_t *ticket) {
  AMPC_TRY(checkContext("ampc_read_async", ctx));
  if (!dst || !srcs || !bytes || !ticket)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_read_async: %s is NULL",
                    !dst ? "dst" : !srcs ? "srcs" : !bytes ? "bytes" : "ticket");
  if (count < 1 || count > Backend::kReadPieces)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "ampc_read_async: count %d (1 to %d)", count,
                    Backend::kReadPieces);
  size_t total = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (!srcs[i])
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_read_async: srcs[%d] is NULL", i);
    // Checked piece by piece: a sum of sizes can wrap past SIZE_MAX.
    if (bytes[i] > static_cast<size_t>(Backend::kReadBytes) - total)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_read_async: bytes[%d] = %zu brings the read past "
                      "%d bytes",
                      i, bytes[i], Backend::kReadBytes);
    total += bytes[i];
  }
  uint64_t t = ctx->backend->readsIssued + 1;
  AMPC_TRY(ctx->backend->readAsync(dst, srcs, bytes, count, t));
  ctx->backend->readsIssued = t;
  *ticket = t;
  return AMPC_OK;
}

ampc_status ampc_read_wait(ampc_context ctx, uint64_t ticket) {
  AMPC_TRY(checkContext("ampc_read_wait", ctx));
  uint64_t issued = ctx->backend->readsIssued;
  if (ticket == 0 || ticket > issued ||
      issued - ticket >= static_cast<uint64_t>(Backend::kReadSlots))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "ampc_read_wait: ticket %llu is not one of the %d most "
                    "recent reads (%llu issued)",
                    static_cast<unsigned long long>(ticket),
                    Backend::kReadSlots,
                    static_cast<unsigned long long>(issued));
  ++ctx->backend->hostSyncs;
  return ctx->backend->readWait(ticket);
}

ampc_status ampc_check_word(ampc_context ctx, int32_t check,
                            const void **word) {
  AMPC_TRY(checkContext("ampc_check_word", ctx));
  if (!word)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_check_word: word is NULL");
  if (check != AMPC_CHECK_INDEX && check != AMPC_CHECK_NONFINITE)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "ampc_check_word: unknown check %d", check);
  if (!ctx->backend->checkWords)
    return setError(AMPC_ERROR_INTERNAL, "ampc_check_word: no check words");
  *word = ctx->backend->checkWords + check;
  return AMPC_OK;
}

ampc_status ampc_host_syncs(ampc_context ctx, uint64_t *count) {
  AMPC_TRY(checkContext("ampc_host_syncs", ctx));
  if (!count)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_host_syncs: count is NULL");
  *count = ctx->backend->hostSyncs;
  return AMPC_OK;
}

} // extern "C"
