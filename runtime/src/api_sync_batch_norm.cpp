//===- api_sync_batch_norm.cpp - batch norm over every rank's batch -------===//
//
// ampc_sync_batch_norm_fwd/_bwd/_update: the training-mode batch norm of
// api_norm.cpp with its per-channel sums taken over the batches of
// every rank of the context's communicator (ampc_context_set_comm), as
// PyTorch's SyncBatchNorm. With no communicator attached, a communicator of
// one rank, or `training` off, each entry point is the one-rank entry point
// itself (the same bits).
//
// The sums are f64, as the one-rank kernels'. Each rank sums its own values,
// then the ranks exchange those partial sums exactly (an all-gather done as
// an i32 sum of words that are zero except in the sender's slot) and every
// rank adds them in rank order, so every rank holds the same bits. The mean
// comes first, then the sum of squared deviations from it (the one-rank
// kernel's two passes), so W ranks of batch B compute what one process of
// batch W*B computes up to the order of f64 additions.
//
// With an f64 tensor among the arguments the tensors are read and written
// through f64 (loadF64/storeF64) and the normalisation, the gradients and
// the running-statistics update are the one-rank f64 kernel's arithmetic
// (cpu_wide.cpp), eps and momentum exact; otherwise the one-rank f32
// kernel's (norm_ops.h). Both run on the host (below), so a CUDA context
// computes the same f64 statistics, sums and results as a CPU one; its
// one-rank call (which validates) is the CUDA f64 batch norm.
//
// The work is host-staged: the tensors are copied to host memory, computed
// there with the shared scalar helpers, and copied back. On the CPU backend
// the copies are plain memcpys; on CUDA they are ampc_memcpy calls (a
// device round trip per call, untested on a GPU), and the collectives run
// on a CPU context of the process.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "half.h"

#include <cstring>
#include <math.h>
#include <mutex>
#include <vector>

using namespace ampc;

namespace {

/// One tensor copied to host memory.
struct HostTensor {
  std::vector<char> bytes;
  ampc_dtype dtype = AMPC_F32;
  const void *device = nullptr;
  float at(int64_t i) const { return loadF32(bytes.data(), dtype, i); }
  void set(int64_t i, float v) { storeF32(bytes.data(), dtype, i, v); }
  // Element i as f64 (an f32, f16 or bf16 one widened exactly), and a
  // store of an f64 value (rounded once for a narrower dtype).
  double at64(int64_t i) const { return loadF64(bytes.data(), dtype, i); }
  void set64(int64_t i, double v) { storeF64(bytes.data(), dtype, i, v); }
};

/// Whether a present tensor among `ts` (data, dtype) is f64: the entry
/// point then computes in f64, as the one-rank entry points do.
bool anyF64(std::initializer_list<std::pair<const void *, ampc_dtype>> ts) {
  for (const auto &t : ts)
    if (t.first && t.second == AMPC_F64)
      return true;
  return false;
}

int64_t numelOf(const int64_t *shape, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i)
    n *= shape[i];
  return n;
}

/// Whether x of `shape` can be staged before the one-rank entry point has
/// validated it: a rank the runtime takes, no negative dim, a size in bytes
/// that fits. The one-rank call reports anything else (a negative dim was a
/// std::length_error out of the C ABI, an abort).
bool stageable(const int64_t *shape, int32_t rank) {
  if (!shape || rank < 2 || rank > AMPC_MAX_RANK)
    return false;
  int64_t bytes = 8;
  for (int32_t i = 0; i < rank; ++i)
    if (shape[i] < 0 || __builtin_mul_overflow(bytes, shape[i], &bytes))
      return false;
  return true;
}

bool sameShape(const int64_t *a, int32_t ra, const int64_t *b, int32_t rb) {
  if (!a || !b || ra != rb)
    return false;
  for (int32_t i = 0; i < ra; ++i)
    if (a[i] != b[i])
      return false;
  return true;
}

ampc_status stageIn(ampc_context ctx, const void *data, ampc_dtype dtype,
                    int64_t numel, HostTensor &t) {
  t.dtype = dtype;
  t.device = data;
  if (!data) // an absent optional tensor: nothing to stage
    return AMPC_OK;
  t.bytes.resize(size_t(numel) * dtypeSize(dtype));
  if (t.bytes.empty())
    return AMPC_OK;
  // CPU memory is host memory: a plain copy, not a device read (which
  // would count as a host synchronisation, docs/runtime.md).
  if (ctx->backend->kind() == AMPC_BACKEND_CPU) {
    std::memcpy(t.bytes.data(), data, t.bytes.size());
    return AMPC_OK;
  }
  return ampc_memcpy(ctx, t.bytes.data(), data, t.bytes.size(),
                     AMPC_MEMCPY_DEVICE_TO_HOST);
}

ampc_status stageOut(ampc_context ctx, const HostTensor &t) {
  if (t.bytes.empty() || !t.device)
    return AMPC_OK;
  if (ctx->backend->kind() == AMPC_BACKEND_CPU) {
    std::memcpy(const_cast<void *>(t.device), t.bytes.data(), t.bytes.size());
    return AMPC_OK;
  }
  return ampc_memcpy(ctx, const_cast<void *>(t.device), t.bytes.data(),
                     t.bytes.size(), AMPC_MEMCPY_HOST_TO_DEVICE);
}

/// The context the collectives run on: `ctx` on the CPU backend, else one
/// CPU context of the process (host staging).
ampc_status hostContext(ampc_context ctx, ampc_context &host) {
  if (ctx->backend->kind() == AMPC_BACKEND_CPU) {
    host = ctx;
    return AMPC_OK;
  }
  static std::mutex mu;
  static ampc_context shared = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!shared)
    AMPC_TRY(ampc_context_create(AMPC_BACKEND_CPU, 0, &shared));
  host = shared;
  return AMPC_OK;
}

/// The communicator sync batch norm reduces over, or null for one rank.
ampc_comm syncComm(ampc_context ctx) {
  ampc_comm comm = nullptr;
  if (!ctx || ampc_context_get_comm(ctx, &comm) != AMPC_OK || !comm)
    return nullptr;
  int32_t size = 1;
  if (ampc_comm_size(comm, &size) != AMPC_OK || size <= 1)
    return nullptr;
  return comm;
}

/// Replaces each of `values` (this rank's partial sums) by the sum over the
/// ranks, added in rank order: the same bits on every rank.
ampc_status sumOverRanks(ampc_comm comm, ampc_context host,
                         std::vector<double> &values) {
  int32_t rank = 0, size = 1;
  AMPC_TRY(ampc_comm_rank(comm, &rank));
  AMPC_TRY(ampc_comm_size(comm, &size));
  size_t k = values.size();
  // Each double as two i32 words in this rank's slot, zero elsewhere: an
  // i32 sum then delivers every rank's bits unchanged.
  std::vector<int32_t> words(size_t(size) * k * 2, 0);
  std::memcpy(words.data() + size_t(rank) * k * 2, values.data(), k * 8);
  AMPC_TRY(ampc_comm_allreduce(comm, host, words.data(), AMPC_I32,
                               int64_t(words.size()), AMPC_REDUCE_SUM));
  for (size_t i = 0; i < k; ++i) {
    double total = 0.0;
    for (int32_t r = 0; r < size; ++r) {
      double v;
      std::memcpy(&v, words.data() + (size_t(r) * k + i) * 2, 8);
      total += v;
    }
    values[i] = total;
  }
  return AMPC_OK;
}

/// (N, C, inner) of x.
void geometry(const int64_t *shape, int32_t rank, int64_t &n, int64_t &c,
              int64_t &inner) {
  n = shape[0];
  c = shape[1];
  inner = 1;
  for (int32_t i = 2; i < rank; ++i)
    inner *= shape[i];
}

/// The batch mean and biased variance of every channel over every rank's
/// x; `count` is the number of values per channel over every rank. x is
/// read as f64 (an f32 value widened: the same sums as through at()).
ampc_status globalStats(ampc_comm comm, ampc_context host, const HostTensor &x,
                        int64_t n, int64_t c, int64_t inner,
                        std::vector<double> &mean, std::vector<double> &var,
                        double &count) {
  std::vector<double> sums(static_cast<size_t>(c) + 1, 0.0);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < inner; ++j)
        sums[ch] += x.at64((s * c + ch) * inner + j);
  sums[c] = double(n * inner);
  AMPC_TRY(sumOverRanks(comm, host, sums));
  count = sums[c];
  mean.assign(sums.begin(), sums.begin() + c);
  for (double &m : mean)
    m /= count;
  std::vector<double> sq(static_cast<size_t>(c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < inner; ++j) {
        double d = x.at64((s * c + ch) * inner + j) - mean[ch];
        sq[ch] += d * d;
      }
  AMPC_TRY(sumOverRanks(comm, host, sq));
  var.resize(size_t(c));
  for (int64_t ch = 0; ch < c; ++ch)
    var[ch] = sq[ch] / count;
  return AMPC_OK;
}

/// The backward of an f64 synchronised batch norm, in f64 as the one-rank
/// f64 kernel (cpuwide::batchNormBwd) with the statistics and the sums of
/// dy and dy * xhat taken over every rank; dw and db are this rank's own
/// sums (the gradient all-reduce averages them, as the f32 path's).
ampc_status syncBwdWide(ampc_context ctx, ampc_comm comm, ampc_context host,
                        const HostTensor &hx, const HostTensor &hdy,
                        const HostTensor &hw, HostTensor &hdx, HostTensor &hdw,
                        HostTensor &hdb, int64_t n, int64_t c, int64_t inner,
                        const std::vector<double> &mean,
                        const std::vector<double> &var, double count,
                        double eps) {
  std::vector<double> invstd(static_cast<size_t>(c));
  std::vector<double> local(static_cast<size_t>(2 * c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    invstd[ch] = 1.0 / sqrt(var[ch] + eps);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t i = (s * c + ch) * inner + j;
        double d = hdy.at64(i);
        local[ch] += d;
        local[c + ch] += d * ((hx.at64(i) - mean[ch]) * invstd[ch]);
      }
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    if (hdw.device)
      hdw.set64(ch, local[c + ch]);
    if (hdb.device)
      hdb.set64(ch, local[ch]);
  }
  std::vector<double> total = local;
  AMPC_TRY(sumOverRanks(comm, host, total));
  if (hdx.device)
    for (int64_t ch = 0; ch < c; ++ch) {
      double wc = hw.device ? hw.at64(ch) : 1.0;
      double meanDy = total[ch] / count, meanDyX = total[c + ch] / count;
      for (int64_t s = 0; s < n; ++s)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t i = (s * c + ch) * inner + j;
          double xhat = (hx.at64(i) - mean[ch]) * invstd[ch];
          hdx.set64(i, wc * invstd[ch] *
                           (hdy.at64(i) - meanDy - xhat * meanDyX));
        }
    }
  AMPC_TRY(stageOut(ctx, hdx));
  AMPC_TRY(stageOut(ctx, hdw));
  return stageOut(ctx, hdb);
}

} // namespace

extern "C" {

ampc_status ampc_sync_batch_norm_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, const void *running_mean, ampc_dtype running_mean_dtype,
    const int64_t *running_mean_shape, int32_t running_mean_rank,
    const void *running_var, ampc_dtype running_var_dtype,
    const int64_t *running_var_shape, int32_t running_var_rank,
    int32_t training, double eps) {
  // The one-rank entry point validates the arguments in every case; with
  // statistics to synchronise its result is then recomputed below, from x
  // as it was before the call (y may share x's buffer).
  ampc_comm comm = training ? syncComm(ctx) : nullptr;
  bool wide = anyF64({{y, y_dtype}, {x, x_dtype}, {w, w_dtype}, {b, b_dtype},
                      {running_mean, running_mean_dtype},
                      {running_var, running_var_dtype}});
  HostTensor hx;
  if (comm && x && stageable(x_shape, x_rank))
    AMPC_TRY(guard("ampc_sync_batch_norm_fwd", [&] {
      return stageIn(ctx, x, x_dtype, numelOf(x_shape, x_rank), hx);
    }));
  else
    comm = nullptr;
  ampc_status st = ampc_batch_norm_fwd(
      ctx, y, y_dtype, y_shape, y_rank, x, x_dtype, x_shape, x_rank, w,
      w_dtype, w_shape, w_rank, b, b_dtype, b_shape, b_rank, running_mean,
      running_mean_dtype, running_mean_shape, running_mean_rank, running_var,
      running_var_dtype, running_var_shape, running_var_rank, training, eps);
  if (st != AMPC_OK || !comm)
    return st;
  const char *fn = "ampc_sync_batch_norm_fwd";
  return guard(fn, [&] {
    ampc_context host;
    AMPC_TRY(hostContext(ctx, host));
    int64_t n, c, inner;
    geometry(x_shape, x_rank, n, c, inner);
    int64_t numel = numelOf(x_shape, x_rank);
    HostTensor hy, hw, hb;
    AMPC_TRY(stageIn(ctx, y, y_dtype, numel, hy));
    AMPC_TRY(stageIn(ctx, w, w_dtype, c, hw));
    AMPC_TRY(stageIn(ctx, b, b_dtype, c, hb));
    std::vector<double> mean, var;
    double count;
    AMPC_TRY(globalStats(comm, host, hx, n, c, inner, mean, var, count));
    if (wide) {
      // The one-rank f64 kernel's arithmetic (cpuwide::batchNorm), eps as
      // passed (a double: exact).
      for (int64_t ch = 0; ch < c; ++ch) {
        double invstd = 1.0 / sqrt(var[ch] + eps);
        double wc = w ? hw.at64(ch) : 1.0;
        double bc = b ? hb.at64(ch) : 0.0;
        for (int64_t s = 0; s < n; ++s)
          for (int64_t j = 0; j < inner; ++j) {
            int64_t i = (s * c + ch) * inner + j;
            hy.set64(i, (hx.at64(i) - mean[ch]) * invstd * wc + bc);
          }
      }
      return stageOut(ctx, hy);
    }
    // The one-rank kernel's arithmetic (norm_ops.h), in f32.
    for (int64_t ch = 0; ch < c; ++ch) {
      float mu = static_cast<float>(mean[ch]);
      float invstd = static_cast<float>(1.0 / sqrt(var[ch] + eps));
      float scale = invstd * hw.at(ch);
      float shift = hb.at(ch);
      for (int64_t s = 0; s < n; ++s)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t i = (s * c + ch) * inner + j;
          hy.set(i, (hx.at(i) - mu) * scale + shift);
        }
    }
    return stageOut(ctx, hy);
  });
}

ampc_status ampc_sync_batch_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, int32_t training, double eps) {
  // As the forward: x and dy are read before the one-rank call, which
  // validates and may write dx over dy.
  ampc_comm comm = training ? syncComm(ctx) : nullptr;
  bool wide = anyF64({{dx, dx_dtype}, {dw, dw_dtype}, {db, db_dtype},
                      {dy, dy_dtype}, {x, x_dtype}, {w, w_dtype},
                      {running_mean, running_mean_dtype},
                      {running_var, running_var_dtype}});
  HostTensor hx, hdy;
  // dy is read with x's element count: only when it has x's shape.
  if (comm && x && dy && stageable(x_shape, x_rank) &&
      sameShape(dy_shape, dy_rank, x_shape, x_rank)) {
    AMPC_TRY(guard("ampc_sync_batch_norm_bwd", [&] {
      AMPC_TRY(stageIn(ctx, x, x_dtype, numelOf(x_shape, x_rank), hx));
      return stageIn(ctx, dy, dy_dtype, numelOf(x_shape, x_rank), hdy);
    }));
  } else {
    comm = nullptr;
  }
  ampc_status st = ampc_batch_norm_bwd(
      ctx, dx, dx_dtype, dx_shape, dx_rank, dw, dw_dtype, dw_shape, dw_rank,
      db, db_dtype, db_shape, db_rank, dy, dy_dtype, dy_shape, dy_rank, x,
      x_dtype, x_shape, x_rank, w, w_dtype, w_shape, w_rank, running_mean,
      running_mean_dtype, running_mean_shape, running_mean_rank, running_var,
      running_var_dtype, running_var_shape, running_var_rank, training, eps);
  if (st != AMPC_OK || !comm)
    return st;
  const char *fn = "ampc_sync_batch_norm_bwd";
  return guard(fn, [&] {
    ampc_context host;
    AMPC_TRY(hostContext(ctx, host));
    int64_t n, c, inner;
    geometry(x_shape, x_rank, n, c, inner);
    int64_t numel = numelOf(x_shape, x_rank);
    HostTensor hdx, hw, hdw, hdb;
    AMPC_TRY(stageIn(ctx, w, w_dtype, c, hw));
    if (dx)
      AMPC_TRY(stageIn(ctx, dx, dx_dtype, numel, hdx));
    if (dw)
      AMPC_TRY(stageIn(ctx, dw, dw_dtype, c, hdw));
    if (db)
      AMPC_TRY(stageIn(ctx, db, db_dtype, c, hdb));
    std::vector<double> mean, var;
    double count;
    AMPC_TRY(globalStats(comm, host, hx, n, c, inner, mean, var, count));
    if (wide)
      return syncBwdWide(ctx, comm, host, hx, hdy, hw, hdx, hdw, hdb, n, c,
                         inner, mean, var, count, eps);
    std::vector<float> mu(static_cast<size_t>(c)), invstd(static_cast<size_t>(c));
    // This rank's sum(dy) and sum(dy * xhat) per channel, then the sums over
    // every rank: dx depends on every rank's batch through the statistics.
    std::vector<double> local(static_cast<size_t>(2 * c), 0.0);
    for (int64_t ch = 0; ch < c; ++ch) {
      mu[ch] = static_cast<float>(mean[ch]);
      invstd[ch] = static_cast<float>(1.0 / sqrt(var[ch] + eps));
      for (int64_t s = 0; s < n; ++s)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t i = (s * c + ch) * inner + j;
          double d = hdy.at(i);
          local[ch] += d;
          local[c + ch] += d * ((hx.at(i) - mu[ch]) * invstd[ch]);
        }
    }
    // dw and db are this rank's own sums: the gradient all-reduce averages
    // them over the ranks, as every other parameter's gradient.
    for (int64_t ch = 0; ch < c; ++ch) {
      if (dw)
        hdw.set(ch, static_cast<float>(local[c + ch]));
      if (db)
        hdb.set(ch, static_cast<float>(local[ch]));
    }
    std::vector<double> total = local;
    AMPC_TRY(sumOverRanks(comm, host, total));
    if (dx)
      for (int64_t ch = 0; ch < c; ++ch) {
        float wc = hw.at(ch);
        float meanDy = static_cast<float>(total[ch] / count);
        float meanDyX = static_cast<float>(total[c + ch] / count);
        for (int64_t s = 0; s < n; ++s)
          for (int64_t j = 0; j < inner; ++j) {
            int64_t i = (s * c + ch) * inner + j;
            float xhat = (hx.at(i) - mu[ch]) * invstd[ch];
            hdx.set(i, wc * invstd[ch] * (hdy.at(i) - meanDy - xhat * meanDyX));
          }
      }
    AMPC_TRY(stageOut(ctx, hdx));
    AMPC_TRY(stageOut(ctx, hdw));
    return stageOut(ctx, hdb);
  });
}

ampc_status ampc_sync_batch_norm_update(
    ampc_context ctx, void *new_mean, ampc_dtype new_mean_dtype,
    const int64_t *new_mean_shape, int32_t new_mean_rank, void *new_var,
    ampc_dtype new_var_dtype, const int64_t *new_var_shape,
    int32_t new_var_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, double momentum) {
  auto oneRank = [&] {
    return ampc_batch_norm_update(
        ctx, new_mean, new_mean_dtype, new_mean_shape, new_mean_rank, new_var,
        new_var_dtype, new_var_shape, new_var_rank, x, x_dtype, x_shape,
        x_rank, running_mean, running_mean_dtype, running_mean_shape,
        running_mean_rank, running_var, running_var_dtype, running_var_shape,
        running_var_rank, momentum);
  };
  ampc_comm comm = syncComm(ctx);
  if (!comm)
    return oneRank();
  const char *fn = "ampc_sync_batch_norm_update";
  bool wide = anyF64({{new_mean, new_mean_dtype}, {new_var, new_var_dtype},
                      {x, x_dtype}, {running_mean, running_mean_dtype},
                      {running_var, running_var_dtype}});
  // Validation without computing: a rank's own batch may hold a single
  // value per channel when the ranks together hold more.
  if (!x || !stageable(x_shape, x_rank) || !running_mean || !running_var ||
      !new_mean || !new_var)
    return oneRank();
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    ampc_context host;
    AMPC_TRY(hostContext(ctx, host));
    int64_t n, c, inner;
    geometry(x_shape, x_rank, n, c, inner);
    for (const int64_t *s : {new_mean_shape, new_var_shape,
                             running_mean_shape, running_var_shape})
      if (!s || s[0] != c)
        return setError(AMPC_ERROR_SHAPE_MISMATCH,
                        "%s: the running statistics must be [%lld]", fn,
                        (long long)c);
    HostTensor hx, hm, hv, nm, nv;
    AMPC_TRY(stageIn(ctx, x, x_dtype, numelOf(x_shape, x_rank), hx));
    AMPC_TRY(stageIn(ctx, running_mean, running_mean_dtype, c, hm));
    AMPC_TRY(stageIn(ctx, running_var, running_var_dtype, c, hv));
    AMPC_TRY(stageIn(ctx, new_mean, new_mean_dtype, c, nm));
    AMPC_TRY(stageIn(ctx, new_var, new_var_dtype, c, nv));
    std::vector<double> mean, var;
    double count;
    AMPC_TRY(globalStats(comm, host, hx, n, c, inner, mean, var, count));
    if (count < 2)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: needs more than one value per channel", fn);
    double k = momentum;
    if (wide) {
      // The one-rank f64 kernel's arithmetic (cpuwide::batchNormUpdate),
      // momentum as passed (a double: exact).
      for (int64_t ch = 0; ch < c; ++ch) {
        double unbiased = var[ch] * count / (count - 1.0);
        nm.set64(ch, (1.0 - k) * hm.at64(ch) + k * mean[ch]);
        nv.set64(ch, (1.0 - k) * hv.at64(ch) + k * unbiased);
      }
      AMPC_TRY(stageOut(ctx, nm));
      return stageOut(ctx, nv);
    }
    for (int64_t ch = 0; ch < c; ++ch) {
      double unbiased = var[ch] * count / (count - 1.0);
      nm.set(ch, static_cast<float>((1.0 - k) * hm.at(ch) + k * mean[ch]));
      nv.set(ch, static_cast<float>((1.0 - k) * hv.at(ch) + k * unbiased));
    }
    AMPC_TRY(stageOut(ctx, nm));
    return stageOut(ctx, nv);
  });
}

} // extern "C"
