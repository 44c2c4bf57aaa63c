//===- common.h - Helpers shared by the API implementation ------*- C++ -*-===//
#ifndef AMPC_RUNTIME_SRC_COMMON_H
#define AMPC_RUNTIME_SRC_COMMON_H

#include "backend.h"
#include "half.h"

#include <initializer_list>
#include <memory>
#include <new>
#include <string>

struct ampc_context_impl {
  std::unique_ptr<ampc::Backend> backend;
  /// The data-parallel communicator (ampc_context_set_comm); not owned.
  ampc_comm comm = nullptr;
  /// While planning (ampc_plan_begin): the context's own backend, and
  /// `backend` is the stand-in that plans (api_plan.cpp).
  std::unique_ptr<ampc::Backend> planned;
};

struct ampc_arena_impl {
  ampc_context ctx;
  void *base;
  size_t bytes;
};

namespace ampc {

/// The directory of the runtime library (with its trailing '/'), where the
/// modules it loads on demand (CUDA, MPI, NCCL) are installed; "" if unknown.
std::string runtimeDirectory();

/// Records `fmt` as this thread's last error and returns `status`.
ampc_status setError(ampc_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define AMPC_TRY(expr)                                                         \
  do {                                                                         \
    ampc_status ampcTryStatus_ = (expr);                                       \
    if (ampcTryStatus_ != AMPC_OK)                                             \
      return ampcTryStatus_;                                                   \
  } while (0)

/// How many guard()ed entry points this thread is inside: an entry point
/// another calls (conv_transpose's bias add) is nested (depth > 1).
inline thread_local int tEntryDepth = 0;

/// Every public entry point runs its body through guard() so no exception
/// crosses the C boundary.
template <typename F> ampc_status guard(const char *fn, F &&body) {
  struct Depth {
    Depth() { ++tEntryDepth; }
    ~Depth() { --tEntryDepth; }
  } depth;
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return setError(AMPC_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  } catch (...) {
    return setError(AMPC_ERROR_INTERNAL, "%s: unexpected exception", fn);
  }
}

size_t dtypeSize(ampc_dtype dt);
const char *dtypeName(ampc_dtype dt);
bool isValidDtype(ampc_dtype dt);

/// The buffer `elems` elements into b.
inline Buf offsetBuf(Buf b, int64_t elems) {
  return Buf{static_cast<char *>(b.data) + elems * dtypeSize(b.dtype), b.dtype};
}

/// A validated shape.
struct Shape {
  int rank = 0;
  int64_t d[kMaxRank] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= d[i];
    return n;
  }
  bool operator==(const Shape &o) const {
    if (rank != o.rank)
      return false;
    for (int i = 0; i < rank; ++i)
      if (d[i] != o.d[i])
        return false;
    return true;
  }
  bool operator!=(const Shape &o) const { return !(*this == o); }
  std::string str() const;
};

/// The arguments of one tensor of a public call.
struct TensorArg {
  const char *name;
  const void *data;
  ampc_dtype dtype;
  const int64_t *shape;
  int32_t rank;
  Buf buf() const { return Buf{const_cast<void *>(data), dtype}; }
};

#define AMPC_TENSOR(t)                                                         \
  ::ampc::TensorArg { #t, t, t##_dtype, t##_shape, t##_rank }

enum DtypeClass { kAnyDtype, kFloatDtype, kIndexDtype };

/// Checks one tensor argument and fills `shape`. An optional tensor with null
/// data is accepted (its shape is still parsed if given).
ampc_status parseTensor(const char *fn, const TensorArg &t, DtypeClass cls,
                        bool required, Shape &shape);
/// Fails on a NULL context, and while it plans on an entry point called
/// from outside the runtime (not nested in another) that isPlannedEntry
/// refuses.
ampc_status checkContext(const char *fn, ampc_context ctx);
/// Whether `fn` ("ampc_linear_fwd") is an AMPC_PLANNED_ENTRY or one of the
/// memory entry points (ampc_malloc, ampc_free, ampc_arena_*): what a
/// context accepts while it plans.
bool isPlannedEntry(const char *fn);
/// Ends planning if the context plans (ampc_context_destroy).
void endPlanning(ampc_context ctx);
/// The check words of a context (api_checks.cpp): made with it, freed
/// before it.
ampc_status createCheckWords(Backend &be);
void destroyCheckWords(Backend &be);
/// The staging buffers of a context's gradient all-reduce
/// (api_grad_allreduce.cpp): freed before it.
void releaseGradBuckets(ampc_context ctx);
ampc_status shapeError(const char *fn, const char *what, const Shape &got,
                       const Shape &want);
/// parseTensor of `t`, then, when `t` has data, the check that its shape is
/// `want` (shapeError naming `t`).
ampc_status parseShaped(const char *fn, const TensorArg &t, DtypeClass cls,
                        bool required, const Shape &want);
/// The layout checks of a strided-batched GEMM call (ampc_gemm,
/// ampc_matmul_strided): every value of `sizes` (sizes and strides) >= 0,
/// and leading dimensions that hold a row of op(A) / op(B) / C; `cName`
/// names C's leading dimension in the message.
ampc_status checkGemmLayout(const char *fn, const char *cName,
                            std::initializer_list<int64_t> sizes, int64_t m,
                            int64_t n, int64_t k, bool transA, bool transB,
                            int64_t lda, int64_t ldb, int64_t ldc);
/// Normalises a possibly negative dim for `rank`.
ampc_status normaliseDim(const char *fn, int64_t dim, int rank, int &out);

/// Scratch memory from the backend, freed on scope exit (stream-ordered).
class Temp {
public:
  Temp(Backend &be) : be(be) {}
  ~Temp() {
    if (ptr)
      be.tempFree(ptr);
  }
  Temp(const Temp &) = delete;
  Temp &operator=(const Temp &) = delete;
  ampc_status alloc(size_t bytes) {
    ampc_status s = be.tempAlloc(bytes ? bytes : 1, &ptr);
    return s;
  }
  void *get() const { return ptr; }
  float *f32() const { return static_cast<float *>(ptr); }

private:
  Backend &be;
  void *ptr = nullptr;
};

/// Contiguous element strides of a shape.
void contiguousStrides(const Shape &s, int64_t *strides);
/// A walk over `s` with operand 0 and 1 contiguous.
Walk contiguousWalk(const Shape &s);
/// A one-dim walk over `n` elements with operands 0 and 1 contiguous (the
/// backends' contiguous copy).
Walk flatWalk(int64_t n);
/// Contiguous element strides of `s` broadcast against `full`
/// (right-aligned; 0 on broadcast and leading dims).
void broadcastStrides(const Shape &s, const Shape &full, int64_t *out);
/// The walks of a reduction of contiguous `xs` over the flagged dims: outer
/// over the kept dims (stride 0: contiguous output, 1: x), inner over the
/// reduced dims (stride 1: x).
void reduceWalks(const Shape &xs, const bool *reduced, Walk &outer,
                 Walk &inner);
/// Reduces `x` (contiguous, shape xs) over the dims flagged in `reduced` into
/// `y` (contiguous over the kept dims).
ampc_status reduceDims(Backend &be, ReduceOp op, Buf y, Buf x, const Shape &xs,
                       const bool *reduced);
/// Sums `g` (contiguous, shape `full`) into `out` of shape `target`, which
/// broadcasts to `full` (right-aligned). A plain copy when shapes are equal.
ampc_status sumToShape(Backend &be, Buf out, const Shape &target, Buf g,
                       const Shape &full);
/// Copies `src` (contiguous, shape `target` right-aligned and broadcast to
/// `full`) into `dst` (contiguous, shape full), times `scale`.
ampc_status broadcastTo(Backend &be, Buf dst, const Shape &full, Buf src,
                        const Shape &target, float scale);

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_COMMON_H
