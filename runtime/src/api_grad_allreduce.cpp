//===- api_grad_allreduce.cpp - The gradient all-reduce ------*- C++ -*-===//
//
// What the data-parallel ops of a compiled step call (docs/distributed.md,
// docs/distributed.md): ampc_grad_allreduce_start / _wait reduce one bucket
// of gradients over the communicator attached to the context, and
// ampc_divide_by_world divides the backward seed by the world size. A
// bucket is packed into one staging buffer per element type with the
// backend's copy (so 16-bit gradients are widened or rounded by the same
// kernel as a cast), then handed to ampc_comm_allreduce_async: whatever
// carries the context's collectives (MPI on the CPU) carries the bucket.
// The staging buffers are kept per context and bucket between steps and
// freed with the context.
//
// MPI moves a non-blocking collective mostly inside MPI calls, so the step
// calls ampc_grad_allreduce_progress between its other calls while a bucket
// is in flight (the lowering inserts the calls): at most every
// AMPC_COMM_PROGRESS_US microseconds it tests the context's buckets, which
// drives MPI's progress engine, so a bucket's transfer advances during the
// rest of the backward instead of inside its wait. With nothing in flight
// (no communicator, one rank, or between steps) the call returns after one
// atomic load.
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

using namespace ampc;

namespace {

/// One message of a bucket: the gradients of one reduction type.
struct Message {
  ampc_dtype dtype = AMPC_F32;
  std::vector<int32_t> members; ///< indices into the bucket's gradients
  int64_t numel = 0;
  bool staged = false; ///< false: a lone gradient reduced in place
  void *staging = nullptr;
  size_t capacity = 0; ///< bytes of `staging`
  ampc_request request = nullptr;
};

struct BucketState {
  std::vector<Message> messages;
  bool pending = false;
  /// Every message's transfer has completed (seen by a progress test).
  bool transferred = false;
  int32_t count = 0;
};

/// What ampc_grad_allreduce_stats reports, per context.
struct Stats {
  int64_t waits = 0;
  int64_t doneBeforeWait = 0;
  double waitSeconds = 0;
  int64_t tests = 0;
};

/// Buckets started and not yet waited for, over every context: the fast
/// path of ampc_grad_allreduce_progress.
std::atomic<int32_t> gInFlight{0};
/// When the last progress test ran (steady clock, ns).
std::atomic<int64_t> gLastPollNs{0};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The least time between two progress tests: AMPC_COMM_PROGRESS_US
/// microseconds (10 by default); "off" (or a negative number) disables the
/// progress calls, so a bucket moves only in its wait.
int64_t progressIntervalNs() {
  static const int64_t interval = [] {
    const char *env = std::getenv("AMPC_COMM_PROGRESS_US");
    if (!env || !*env)
      return int64_t(10000);
    if (std::strcmp(env, "off") == 0)
      return int64_t(-1);
    char *end = nullptr;
    double us = std::strtod(env, &end);
    if (end == env || *end)
      return int64_t(10000);
    return us < 0 ? int64_t(-1) : static_cast<int64_t>(us * 1000.0);
  }();
  return interval;
}

/// Tests the bucket's messages in order up to the first still in flight
/// (one test drives MPI's progress for all of them).
ampc_status testBucket(BucketState &b, Stats &stats) {
  if (b.transferred)
    return AMPC_OK;
  ++stats.tests;
  for (Message &m : b.messages) {
    int32_t done = 0;
    AMPC_TRY(ampc_comm_test(m.request, &done));
    if (!done)
      return AMPC_OK;
  }
  b.transferred = true;
  return AMPC_OK;
}

struct Registry {
  std::mutex lock;
  std::map<std::pair<ampc_context, int64_t>, BucketState> buckets;
  std::map<ampc_context, Stats> stats;
};

Registry &registry() {
  static Registry *r = new Registry; // outlives every context
  return *r;
}

/// The in-flight state of `bucket` on `ctx` (r.lock held), or an error
/// when it was not started.
ampc_status startedBucket(const char *fn, Registry &r, ampc_context ctx,
                          int64_t bucket, BucketState *&out) {
  auto it = r.buckets.find({ctx, bucket});
  if (it == r.buckets.end() || !it->second.pending)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: bucket %lld was not started", fn, (long long)bucket);
  out = &it->second;
  return AMPC_OK;
}

ampc_status copyFlat(Backend &be, Buf dst, Buf src, int64_t n, float scale) {
  if (n == 0)
    return AMPC_OK;
  return be.copy(dst, src, flatWalk(n), scale);
}

int32_t worldSize(ampc_context ctx) {
  int32_t size = 1;
  if (ctx->comm && ampc_comm_size(ctx->comm, &size) != AMPC_OK)
    return 1;
  return size;
}

/// Whether a bucket skips the collective: without a communicator, and on
/// one rank, where the sum and the mean are the values themselves, unless
/// AMPC_GRAD_BUCKETS_ONE_RANK=1 asks for the whole path (staging, the
/// collective, the copy back) so a one-GPU check exercises it
/// (scripts/gpu/gpu_run.sh).
bool skipsCollective(ampc_context ctx) {
  if (!ctx->comm)
    return true;
  if (worldSize(ctx) != 1)
    return false;
  const char *all = getenv("AMPC_GRAD_BUCKETS_ONE_RANK");
  return !(all && std::strcmp(all, "1") == 0);
}

ampc_status checkList(const char *fn, void *const *grads,
                      const ampc_dtype *dtypes, const int64_t *numels,
                      int32_t count, int64_t bucket) {
  if (count < 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: count %d", fn,
                    int(count));
  if (bucket < 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: bucket %lld", fn,
                    (long long)bucket);
  if (count > 0 && (!grads || !dtypes || !numels))
    return setError(AMPC_ERROR_NULL_POINTER, "%s: a gradient list is NULL", fn);
  for (int32_t i = 0; i < count; ++i) {
    if (!grads[i] && numels[i] > 0)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: gradient %d is NULL", fn,
                      int(i));
    if (!isFloatDtype(dtypes[i]) && dtypes[i] != AMPC_F64)
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: gradient %d is %s (f64, f32, f16 or bf16 "
                      "expected)",
                      fn, int(i), dtypeName(dtypes[i]));
    if (numels[i] < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: numel %lld", fn,
                      (long long)numels[i]);
  }
  return AMPC_OK;
}

} // namespace

/// Frees the staging buffers of `ctx` (ampc_context_destroy).
void ampc::releaseGradBuckets(ampc_context ctx) {
  Registry &r = registry();
  std::lock_guard<std::mutex> guardLock(r.lock);
  r.stats.erase(ctx);
  for (auto it = r.buckets.begin(); it != r.buckets.end();) {
    if (it->first.first != ctx) {
      ++it;
      continue;
    }
    if (it->second.pending)
      gInFlight.fetch_sub(1, std::memory_order_relaxed);
    for (Message &m : it->second.messages) {
      if (m.request)
        ampc_comm_wait(m.request);
      if (m.staging)
        ctx->backend->release(m.staging);
    }
    it = r.buckets.erase(it);
  }
}

extern "C" {

AMPC_API ampc_status ampc_grad_allreduce_start(
    ampc_context ctx, void *const *grads, const ampc_dtype *dtypes,
    const int64_t *numels, int32_t count, int64_t bucket, int32_t mean,
    int32_t reduce_f32) {
  const char *fn = "ampc_grad_allreduce_start";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkList(fn, grads, dtypes, numels, count, bucket));
    if (skipsCollective(ctx))
      return AMPC_OK; // one rank: the sum and the mean are the values
    Registry &r = registry();
    std::lock_guard<std::mutex> guardLock(r.lock);
    BucketState &b = r.buckets[{ctx, bucket}];
    if (b.pending)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: bucket %lld is already in flight", fn,
                      (long long)bucket);
    // The messages: one per reduction type, in order of first appearance.
    std::vector<Message> previous = std::move(b.messages);
    b.messages.clear();
    for (int32_t i = 0; i < count; ++i) {
      // f64 gradients travel as f64 even with reduce_f32 (which widens
      // the 16-bit ones).
      ampc_dtype type =
          reduce_f32 && dtypes[i] != AMPC_F64 ? AMPC_F32 : dtypes[i];
      Message *m = nullptr;
      for (Message &have : b.messages)
        if (have.dtype == type)
          m = &have;
      if (!m) {
        b.messages.emplace_back();
        m = &b.messages.back();
        m->dtype = type;
      }
      m->members.push_back(i);
      m->numel += numels[i];
    }
    // Staging buffers carry over from the last step of this bucket.
    for (size_t k = 0; k < b.messages.size(); ++k)
      if (k < previous.size()) {
        b.messages[k].staging = previous[k].staging;
        b.messages[k].capacity = previous[k].capacity;
        previous[k].staging = nullptr;
      }
    for (Message &m : previous)
      if (m.staging)
        ctx->backend->release(m.staging);
    Backend &be = *ctx->backend;
    for (Message &m : b.messages) {
      m.staged = !(m.members.size() == 1 && dtypes[m.members[0]] == m.dtype);
      void *data = grads[m.members[0]];
      if (m.staged) {
        size_t bytes = size_t(m.numel) * dtypeSize(m.dtype);
        if (m.capacity < bytes) {
          if (m.staging)
            be.release(m.staging);
          m.staging = nullptr;
          m.capacity = 0;
          AMPC_TRY(be.alloc(bytes ? bytes : 1, &m.staging));
          m.capacity = bytes;
        }
        int64_t at = 0;
        for (int32_t g : m.members) {
          AMPC_TRY(copyFlat(be, offsetBuf(Buf{m.staging, m.dtype}, at),
                            Buf{grads[g], dtypes[g]}, numels[g], 1.0f));
          at += numels[g];
        }
        data = m.staging;
      }
      AMPC_TRY(ampc_comm_allreduce_async(
          ctx->comm, ctx, data, m.dtype, m.numel,
          mean ? AMPC_REDUCE_MEAN : AMPC_REDUCE_SUM, &m.request));
    }
    b.pending = true;
    b.transferred = false;
    b.count = count;
    gInFlight.fetch_add(1, std::memory_order_relaxed);
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_grad_allreduce_wait(ampc_context ctx,
                                              void *const *grads,
                                              const ampc_dtype *dtypes,
                                              const int64_t *numels,
                                              int32_t count, int64_t bucket) {
  const char *fn = "ampc_grad_allreduce_wait";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    AMPC_TRY(checkList(fn, grads, dtypes, numels, count, bucket));
    if (skipsCollective(ctx))
      return AMPC_OK;
    Registry &r = registry();
    std::lock_guard<std::mutex> guardLock(r.lock);
    BucketState *started = nullptr;
    AMPC_TRY(startedBucket(fn, r, ctx, bucket, started));
    BucketState &b = *started;
    if (b.count != count)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: bucket %lld started %d gradients, waits for %d", fn,
                      (long long)bucket, int(b.count), int(count));
    auto t0 = std::chrono::steady_clock::now();
    Stats &stats = r.stats[ctx];
    // Whether the transfer was over when the step reached the wait: one
    // last test (what the progress calls did not see yet).
    if (testBucket(b, stats) == AMPC_OK && b.transferred)
      ++stats.doneBeforeWait;
    ++stats.waits;
    b.pending = false;
    gInFlight.fetch_sub(1, std::memory_order_relaxed);
    ampc_status first = AMPC_OK;
    // Every request is completed, even after an error, so none is left in
    // flight.
    for (Message &m : b.messages) {
      ampc_request req = m.request;
      m.request = nullptr;
      ampc_status st = ampc_comm_wait(req);
      if (st != AMPC_OK) {
        if (first == AMPC_OK)
          first = st;
        continue;
      }
      if (!m.staged || first != AMPC_OK)
        continue;
      int64_t at = 0;
      for (int32_t g : m.members) {
        st = copyFlat(*ctx->backend, Buf{grads[g], dtypes[g]},
                      offsetBuf(Buf{m.staging, m.dtype}, at), numels[g], 1.0f);
        if (st != AMPC_OK && first == AMPC_OK)
          first = st;
        at += numels[g];
      }
    }
    stats.waitSeconds += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
    return first;
  });
}

AMPC_API ampc_status ampc_grad_allreduce_progress(ampc_context ctx) {
  // Nothing in flight anywhere: no communicator, one rank, or no bucket
  // between its start and its wait.
  if (gInFlight.load(std::memory_order_relaxed) == 0)
    return AMPC_OK;
  const char *fn = "ampc_grad_allreduce_progress";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    int64_t interval = progressIntervalNs();
    if (interval < 0)
      return AMPC_OK;
    int64_t now = nowNs();
    if (now - gLastPollNs.load(std::memory_order_relaxed) < interval)
      return AMPC_OK;
    Registry &r = registry();
    std::lock_guard<std::mutex> guardLock(r.lock);
    for (auto it = r.buckets.lower_bound({ctx, INT64_MIN});
         it != r.buckets.end() && it->first.first == ctx; ++it) {
      BucketState &b = it->second;
      if (!b.pending || b.transferred)
        continue;
      AMPC_TRY(testBucket(b, r.stats[ctx]));
      if (!b.transferred)
        break; // that test progressed the later buckets too
    }
    gLastPollNs.store(nowNs(), std::memory_order_relaxed);
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_grad_allreduce_test(ampc_context ctx,
                                              int64_t bucket, int32_t *done) {
  const char *fn = "ampc_grad_allreduce_test";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    if (!done)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: done is NULL", fn);
    *done = 1;
    if (skipsCollective(ctx))
      return AMPC_OK; // nothing travels
    Registry &r = registry();
    std::lock_guard<std::mutex> guardLock(r.lock);
    BucketState *b = nullptr;
    AMPC_TRY(startedBucket(fn, r, ctx, bucket, b));
    AMPC_TRY(testBucket(*b, r.stats[ctx]));
    *done = b->transferred ? 1 : 0;
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_grad_allreduce_stats(ampc_context ctx,
                                               int64_t *waits,
                                               int64_t *done_before_wait,
                                               double *wait_seconds,
                                               int64_t *tests,
                                               int64_t *unfinished) {
  const char *fn = "ampc_grad_allreduce_stats";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    Registry &r = registry();
    std::lock_guard<std::mutex> guardLock(r.lock);
    Stats s;
    if (auto it = r.stats.find(ctx); it != r.stats.end())
      s = it->second;
    if (waits)
      *waits = s.waits;
    if (done_before_wait)
      *done_before_wait = s.doneBeforeWait;
    if (wait_seconds)
      *wait_seconds = s.waitSeconds;
    if (tests)
      *tests = s.tests;
    if (unfinished) {
      *unfinished = 0;
      for (auto it = r.buckets.lower_bound({ctx, INT64_MIN});
           it != r.buckets.end() && it->first.first == ctx; ++it)
        *unfinished += it->second.pending && !it->second.transferred;
    }
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_divide_by_world(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank) {
  const char *fn = "ampc_divide_by_world";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, xs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(x), kFloatDtype, true, xs));
    if (ys.numel() != xs.numel())
      return shapeError(fn, "y", ys, xs);
    int32_t w = worldSize(ctx);
    if (w == 1 && y == x && y_dtype == x_dtype)
      return AMPC_OK;
    if ((y_dtype == AMPC_F64 || x_dtype == AMPC_F64) && w != 1 &&
        ys.numel() > 0) {
      // f64: y = x / W, divided in f64.
      Backend &be = *ctx->backend;
      Temp world(be);
      AMPC_TRY(world.alloc(sizeof(double)));
      Buf wb{world.get(), AMPC_F64};
      AMPC_TRY(be.fill(wb, 1, static_cast<double>(w)));
      return be.binary(BinaryOp::Div, Buf{y, y_dtype},
                       Buf{const_cast<void *>(x), x_dtype}, wb,
                       flatWalk(ys.numel()));
    }
    return copyFlat(*ctx->backend, Buf{y, y_dtype},
                    Buf{const_cast<void *>(x), x_dtype}, ys.numel(),
                    1.0f / static_cast<float>(w));
  });
}

} // extern "C"
