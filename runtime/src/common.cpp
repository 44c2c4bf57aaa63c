//===- common.cpp - Errors, validation and shape helpers
//--------------------===//
#include "common.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

namespace ampc {

std::string runtimeDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&runtimeDirectory), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

static thread_local char lastError[1024] = "";

ampc_status setError(ampc_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(lastError, sizeof(lastError), fmt, args);
  va_end(args);
  return status;
}

bool isValidDtype(ampc_dtype dt) {
  return static_cast<int>(dt) >= AMPC_F32 && static_cast<int>(dt) <= AMPC_I16;
}

size_t dtypeSize(ampc_dtype dt) {
  switch (dt) {
  case AMPC_F32:
  case AMPC_I32:
    return 4;
  case AMPC_F16:
  case AMPC_BF16:
    return 2;
  case AMPC_I64:
  case AMPC_F64:
    return 8;
  case AMPC_I16:
    return 2;
  case AMPC_BOOL:
  case AMPC_U8:
  case AMPC_I8:
    return 1;
  }
  return 0;
}

const char *dtypeName(ampc_dtype dt) {
  static const char *names[] = {"f32", "f16", "bf16", "i32", "i64",
                                "bool", "f64", "u8",   "i8",  "i16"};
  return isValidDtype(dt) ? names[dt] : "unknown";
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(d[i]);
  }
  return s + "]";
}

// Here, not in api_plan.cpp, so that what links common.cpp alone (the
// checkpoint fuzz target) has it.
bool isPlannedEntry(const char *fn) {
  static const char *const kPlanned[] = {
#define AMPC_PLANNED_ENTRY(NAME) "ampc_" #NAME,
#include "ampc/runtime_kernels.inc"
      // Memory (no tensor data): what a caller frees after a failed call.
      "ampc_malloc", "ampc_free", "ampc_arena_create"};
  for (const char *name : kPlanned)
    if (!strcmp(name, fn))
      return true;
  return false;
}

ampc_status checkContext(const char *fn, ampc_context ctx) {
  if (!ctx || !ctx->backend)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: context is NULL", fn);
  if (ctx->planned && tEntryDepth <= 1 && !isPlannedEntry(fn))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: not callable while the context plans (between "
                    "ampc_plan_begin and ampc_plan_end)",
                    fn);
  return AMPC_OK;
}

/// Whether the elements of `s` of `elem` bytes each fit in INT64_MAX bytes
/// (no product of dims is allowed to wrap).
static bool fitsInBytes(const Shape &s, size_t elem) {
  for (int i = 0; i < s.rank; ++i)
    if (s.d[i] == 0)
      return true;
  int64_t bytes = static_cast<int64_t>(elem);
  for (int i = 0; i < s.rank; ++i)
    if (__builtin_mul_overflow(bytes, s.d[i], &bytes))
      return false;
  return true;
}

ampc_status parseTensor(const char *fn, const TensorArg &t, DtypeClass cls,
                        bool required, Shape &shape) {
  if (!t.data && required)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: tensor '%s' is NULL", fn,
                    t.name);
  if (!t.data && !t.shape)
    return AMPC_OK; // an absent optional tensor
  if (!isValidDtype(t.dtype))
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: tensor '%s' has unknown dtype %d", fn, t.name,
                    static_cast<int>(t.dtype));
  if (cls == kFloatDtype && !isFloatDtype(t.dtype) && t.dtype != AMPC_F64)
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: tensor '%s' must be f64, f32, f16 or bf16, got %s",
                    fn, t.name, dtypeName(t.dtype));
  if (cls == kIndexDtype && !isIntegerDtype(t.dtype))
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: tensor '%s' must be an integer type, got %s", fn,
                    t.name, dtypeName(t.dtype));
  if (t.rank < 0 || t.rank > kMaxRank)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: tensor '%s' has rank %d (0..%d supported)", fn, t.name,
                    t.rank, kMaxRank);
  if (t.rank > 0 && !t.shape)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: shape of '%s' is NULL", fn,
                    t.name);
  shape.rank = t.rank;
  for (int i = 0; i < t.rank; ++i) {
    if (t.shape[i] < 0)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: tensor '%s' has negative dim %lld", fn, t.name,
                      static_cast<long long>(t.shape[i]));
    shape.d[i] = t.shape[i];
  }
  // Its size in bytes must be an int64_t: a product of dims that wraps
  // (say [2^62, 4]) would otherwise pass for a small or empty tensor.
  if (!fitsInBytes(shape, dtypeSize(t.dtype)))
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: tensor '%s' of shape %s has more than 2^63 bytes", fn,
                    t.name, shape.str().c_str());
  return AMPC_OK;
}

ampc_status shapeError(const char *fn, const char *what, const Shape &got,
                       const Shape &want) {
  return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: %s has shape %s, expected %s",
                  fn, what, got.str().c_str(), want.str().c_str());
}

ampc_status parseShaped(const char *fn, const TensorArg &t, DtypeClass cls,
                        bool required, const Shape &want) {
  Shape s;
  AMPC_TRY(parseTensor(fn, t, cls, required, s));
  if (t.data && s != want)
    return shapeError(fn, t.name, s, want);
  return AMPC_OK;
}

ampc_status normaliseDim(const char *fn, int64_t dim, int rank, int &out) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: dim %lld is out of range for rank %d", fn,
                    static_cast<long long>(dim), rank);
  out = static_cast<int>(d);
  return AMPC_OK;
}

void contiguousStrides(const Shape &s, int64_t *strides) {
  int64_t st = 1;
  for (int i = s.rank - 1; i >= 0; --i) {
    strides[i] = st;
    st *= s.d[i];
  }
}

Walk contiguousWalk(const Shape &s) {
  Walk w;
  w.rank = s.rank;
  for (int i = 0; i < s.rank; ++i)
    w.shape[i] = s.d[i];
  contiguousStrides(s, w.stride[0]);
  contiguousStrides(s, w.stride[1]);
  contiguousStrides(s, w.stride[2]);
  return w;
}

Walk flatWalk(int64_t n) {
  Walk w;
  w.rank = 1;
  w.shape[0] = n;
  w.stride[0][0] = w.stride[1][0] = 1;
  return w;
}

void broadcastStrides(const Shape &s, const Shape &full, int64_t *out) {
  int64_t st[kMaxRank];
  contiguousStrides(s, st);
  int lead = full.rank - s.rank;
  for (int i = 0; i < full.rank; ++i)
    out[i] = (i < lead || s.d[i - lead] != full.d[i]) ? 0 : st[i - lead];
}

void reduceWalks(const Shape &xs, const bool *reduced, Walk &outer,
                 Walk &inner) {
  int64_t xstr[kMaxRank];
  contiguousStrides(xs, xstr);
  outer = Walk();
  inner = Walk();
  for (int i = 0; i < xs.rank; ++i) {
    Walk &w = reduced[i] ? inner : outer;
    w.shape[w.rank] = xs.d[i];
    w.stride[1][w.rank] = xstr[i];
    ++w.rank;
  }
  int64_t st = 1; // y is contiguous over the kept dims
  for (int i = outer.rank - 1; i >= 0; --i) {
    outer.stride[0][i] = st;
    st *= outer.shape[i];
  }
}

ampc_status reduceDims(Backend &be, ReduceOp op, Buf y, Buf x, const Shape &xs,
                       const bool *reduced) {
  Walk outer, inner;
  reduceWalks(xs, reduced, outer, inner);
  return be.reduce(op, y, x, outer, inner);
}

ampc_status sumToShape(Backend &be, Buf out, const Shape &target, Buf g,
                       const Shape &full) {
  if (target.numel() == full.numel())
    return be.copy(out, g, flatWalk(full.numel()), 1.0f);
  bool reduced[kMaxRank];
  int lead = full.rank - target.rank;
  for (int i = 0; i < full.rank; ++i)
    reduced[i] = i < lead || (target.d[i - lead] == 1 && full.d[i] != 1);
  return reduceDims(be, ReduceOp::Sum, out, g, full, reduced);
}

ampc_status broadcastTo(Backend &be, Buf dst, const Shape &full, Buf src,
                        const Shape &target, float scale) {
  Walk w = contiguousWalk(full);
  broadcastStrides(target, full, w.stride[1]);
  return be.copy(dst, src, w, scale);
}

ampc_status checkGemmLayout(const char *fn, const char *cName,
                            std::initializer_list<int64_t> sizes, int64_t m,
                            int64_t n, int64_t k, bool transA, bool transB,
                            int64_t lda, int64_t ldb, int64_t ldc) {
  for (int64_t v : sizes)
    if (v < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: negative size or stride", fn);
  if (lda < (transA ? m : k) || ldb < (transB ? k : n) || ldc < n || lda < 1 ||
      ldb < 1 || ldc < 1)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: leading dimension too small (lda %lld, ldb %lld, "
                    "%s %lld for m %lld n %lld k %lld)",
                    fn, static_cast<long long>(lda),
                    static_cast<long long>(ldb), cName,
                    static_cast<long long>(ldc), static_cast<long long>(m),
                    static_cast<long long>(n), static_cast<long long>(k));
  return AMPC_OK;
}

} // namespace ampc

extern "C" const char *ampc_last_error(void) { return ampc::lastError; }

extern "C" ampc_status ampc_set_last_error(ampc_status status,
                                           const char *message) {
  // The message may be (a part of) the text it replaces, as in
  // ampc_set_last_error(st, ampc_last_error()): copied aside first, since
  // vsnprintf's source and destination must not overlap.
  char copy[sizeof(ampc::lastError)];
  size_t n = 0;
  if (message)
    for (; n + 1 < sizeof(copy) && message[n]; ++n)
      copy[n] = message[n];
  copy[n] = '\0';
  return ampc::setError(status, "%s", copy);
}
