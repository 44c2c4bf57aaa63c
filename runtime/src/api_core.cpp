//===- api_core.cpp - Version, errors, contexts, memory, init
//---------------===//
#include "common.h"

#include <math.h>
#include <stdio.h>

#include <string>

using namespace ampc;

namespace {
/// Writes the line `of` gives for ctx's backend into `text` (`size` bytes,
/// NUL-terminated, cut to fit; `text` may be NULL when `size` is 0).
template <typename Of>
ampc_status contextText(const char *fn, ampc_context ctx, char *text,
                        size_t size, Of of) {
  AMPC_TRY(checkContext(fn, ctx));
  if (!text && size)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: text is NULL", fn);
  std::string line = of(*ctx->backend);
  if (size)
    snprintf(text, size, "%s", line.c_str());
  return AMPC_OK;
}
} // namespace

extern "C" {

uint32_t ampc_runtime_version(void) { return AMPC_RUNTIME_VERSION; }

const char *ampc_status_string(ampc_status status) {
  switch (status) {
  case AMPC_OK:
    return "ok";
  case AMPC_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case AMPC_ERROR_NULL_POINTER:
    return "null pointer";
  case AMPC_ERROR_SHAPE_MISMATCH:
    return "shape mismatch";
  case AMPC_ERROR_UNSUPPORTED_DTYPE:
    return "unsupported dtype";
  case AMPC_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case AMPC_ERROR_BACKEND_UNAVAILABLE:
    return "backend unavailable";
  case AMPC_ERROR_NO_DEVICE:
    return "no device";
  case AMPC_ERROR_DEVICE:
    return "device error";
  case AMPC_ERROR_INTERNAL:
    return "internal error";
  }
  return "unknown status";
}

ampc_status ampc_dtype_size(ampc_dtype dtype, size_t *bytes) {
  if (!bytes)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_dtype_size: bytes is NULL");
  if (!isValidDtype(dtype))
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "ampc_dtype_size: unknown dtype %d",
                    static_cast<int>(dtype));
  *bytes = dtypeSize(dtype);
  return AMPC_OK;
}

ampc_status ampc_backend_available(ampc_backend backend, int32_t *available) {
  if (!available)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_backend_available: available is NULL");
  if (backend == AMPC_BACKEND_CPU)
    *available = 1;
  else if (backend == AMPC_BACKEND_CUDA)
    *available = cudaBackendAvailable() ? 1 : 0;
  else
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "ampc_backend_available: unknown backend %d",
                    static_cast<int>(backend));
  return AMPC_OK;
}

ampc_status ampc_context_create(ampc_backend backend, int32_t device,
                                ampc_context *ctx) {
  return guard("ampc_context_create", [&] {
    if (!ctx)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_context_create: ctx is NULL");
    *ctx = nullptr;
    Backend *be = nullptr;
    if (backend == AMPC_BACKEND_CPU) {
      be = createCpuBackend();
    } else if (backend == AMPC_BACKEND_CUDA) {
      ampc_status s = AMPC_OK;
      be = createCudaBackend(device, &s);
      if (!be)
        return s;
    } else {
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_context_create: unknown backend %d",
                      static_cast<int>(backend));
    }
    auto *c = new ampc_context_impl;
    c->backend.reset(be);
    if (ampc_status s = createCheckWords(*be); s != AMPC_OK) {
      delete c;
      return s;
    }
    *ctx = c;
    return AMPC_OK;
  });
}

ampc_status ampc_context_destroy(ampc_context ctx) {
  if (!ctx)
    return AMPC_OK;
  endPlanning(ctx);
  ampc_status s = ctx->backend ? ctx->backend->synchronize() : AMPC_OK;
  if (ctx->backend) {
    releaseGradBuckets(ctx);
    destroyCheckWords(*ctx->backend);
  }
  delete ctx;
  return s;
}

ampc_status ampc_context_backend(ampc_context ctx, ampc_backend *backend) {
  AMPC_TRY(checkContext("ampc_context_backend", ctx));
  if (!backend)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_context_backend: backend is NULL");
  *backend = ctx->backend->kind();
  return AMPC_OK;
}

ampc_status ampc_context_engine(ampc_context ctx, char *text, size_t size) {
  return contextText("ampc_context_engine", ctx, text, size,
                     [](Backend &b) { return b.engine(); });
}

ampc_status ampc_context_take_engines(ampc_context ctx, char *text,
                                      size_t size) {
  return contextText("ampc_context_take_engines", ctx, text, size,
                     [](Backend &b) { return b.takeEngines(); });
}

ampc_status ampc_context_stream(ampc_context ctx, void **stream) {
  AMPC_TRY(checkContext("ampc_context_stream", ctx));
  if (!stream)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_context_stream: stream is NULL");
  *stream = ctx->backend->stream();
  return AMPC_OK;
}

ampc_status ampc_synchronize(ampc_context ctx) {
  AMPC_TRY(checkContext("ampc_synchronize", ctx));
  ++ctx->backend->hostSyncs;
  return ctx->backend->synchronize();
}

ampc_status ampc_malloc(ampc_context ctx, size_t bytes, void **ptr) {
  AMPC_TRY(checkContext("ampc_malloc", ctx));
  if (!ptr)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_malloc: ptr is NULL");
  *ptr = nullptr;
  return ctx->backend->alloc(bytes ? bytes : 1, ptr);
}

ampc_status ampc_free(ampc_context ctx, void *ptr) {
  AMPC_TRY(checkContext("ampc_free", ctx));
  ctx->backend->hostSyncs += ptr != nullptr;
  return ptr ? ctx->backend->release(ptr) : AMPC_OK;
}

ampc_status ampc_memcpy(ampc_context ctx, void *dst, const void *src,
                        size_t bytes, ampc_memcpy_kind kind) {
  AMPC_TRY(checkContext("ampc_memcpy", ctx));
  // The kind is checked even for an empty copy: a bad value is a caller bug.
  if (kind < AMPC_MEMCPY_HOST_TO_DEVICE || kind > AMPC_MEMCPY_HOST_TO_HOST)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "ampc_memcpy: unknown kind %d",
                    static_cast<int>(kind));
  if (bytes == 0)
    return AMPC_OK;
  if (!dst || !src)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_memcpy: %s is NULL",
                    dst ? "src" : "dst");
  if (kind == AMPC_MEMCPY_DEVICE_TO_HOST || kind == AMPC_MEMCPY_HOST_TO_HOST)
    ++ctx->backend->hostSyncs; // these complete before the call returns
  return ctx->backend->copyBytes(dst, src, bytes, kind);
}

ampc_status ampc_memset(ampc_context ctx, void *ptr, int32_t value,
                        size_t bytes) {
  AMPC_TRY(checkContext("ampc_memset", ctx));
  if (bytes == 0)
    return AMPC_OK;
  if (!ptr)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_memset: ptr is NULL");
  return ctx->backend->setBytes(ptr, value, bytes);
}

ampc_status ampc_arena_create(ampc_context ctx, size_t bytes,
                              ampc_arena *arena) {
  return guard("ampc_arena_create", [&] {
    AMPC_TRY(checkContext("ampc_arena_create", ctx));
    if (!arena)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_arena_create: arena is NULL");
    *arena = nullptr;
    void *base = nullptr;
    AMPC_TRY(ctx->backend->alloc(bytes ? bytes : 1, &base));
    *arena = new ampc_arena_impl{ctx, base, bytes};
    return AMPC_OK;
  });
}

ampc_status ampc_arena_base(ampc_arena arena, void **base) {
  if (!arena || !base)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_arena_base: %s is NULL",
                    arena ? "base" : "arena");
  *base = arena->base;
  return AMPC_OK;
}

ampc_status ampc_arena_size(ampc_arena arena, size_t *bytes) {
  if (!arena || !bytes)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_arena_size: %s is NULL",
                    arena ? "bytes" : "arena");
  *bytes = arena->bytes;
  return AMPC_OK;
}

ampc_status ampc_arena_destroy(ampc_arena arena) {
  if (!arena)
    return AMPC_OK;
  ampc_status s = arena->ctx->backend->release(arena->base);
  delete arena;
  return s;
}

static ampc_status checkFlat(const char *fn, ampc_context ctx, void *y,
                             ampc_dtype dt, int64_t numel, bool floatOnly) {
  AMPC_TRY(checkContext(fn, ctx));
  if (!y && numel > 0)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: y is NULL", fn);
  if (!isValidDtype(dt))
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE, "%s: unknown dtype %d", fn,
                    static_cast<int>(dt));
  if (floatOnly && !isFloatDtype(dt) && dt != AMPC_F64)
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: y must be f64, f32, f16 or bf16, got %s", fn,
                    dtypeName(dt));
  if (numel < 0)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: negative numel %lld", fn,
                    static_cast<long long>(numel));
  // Its bytes must be an int64_t (numel * size wrapped, and the call did
  // nothing or wrote a wrapped count of bytes).
  if (numel > INT64_MAX / static_cast<int64_t>(dtypeSize(dt)))
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: numel %lld of %s is more than 2^63 bytes", fn,
                    static_cast<long long>(numel), dtypeName(dt));
  return AMPC_OK;
}

ampc_status ampc_fill(ampc_context ctx, void *y, ampc_dtype y_dtype,
                      int64_t numel, double value) {
  return guard("ampc_fill", [&] {
    AMPC_TRY(checkFlat("ampc_fill", ctx, y, y_dtype, numel, false));
    return numel ? ctx->backend->fill(Buf{y, y_dtype}, numel, value) : AMPC_OK;
  });
}

ampc_status ampc_init_uniform(ampc_context ctx, void *y, ampc_dtype y_dtype,
                              int64_t numel, uint64_t seed, uint64_t offset,
                              double low, double high) {
  return guard("ampc_init_uniform", [&] {
    AMPC_TRY(checkFlat("ampc_init_uniform", ctx, y, y_dtype, numel, true));
    if (!(low <= high))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_init_uniform: low %g > high %g", low, high);
    return numel ? ctx->backend->random(Buf{y, y_dtype}, numel, seed, offset,
                                        false, low, high)
                 : AMPC_OK;
  });
}

ampc_status ampc_init_normal(ampc_context ctx, void *y, ampc_dtype y_dtype,
                             int64_t numel, uint64_t seed, uint64_t offset,
                             double mean, double std) {
  return guard("ampc_init_normal", [&] {
    AMPC_TRY(checkFlat("ampc_init_normal", ctx, y, y_dtype, numel, true));
    if (!(std >= 0.0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_init_normal: std %g is negative", std);
    return numel ? ctx->backend->random(Buf{y, y_dtype}, numel, seed, offset,
                                        true, mean, std)
                 : AMPC_OK;
  });
}

} // extern "C"
