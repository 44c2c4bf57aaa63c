//===- cpu_kernels.cpp - Row-wise elementwise and row kernels of the CPU --===//
//
// See cpu_kernels.h.
//
//===----------------------------------------------------------------------===//
#include "cpu_kernels.h"
#include "cpu_unary_tables.h"

#include "../src/half.h"
#include "cpu_clones.h"
#include "cpu_fast.h"
#include "cpu_pool.h"
#include "cpu_vmath.h"

#include <math.h>
#include <string.h>

#include <algorithm>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif


namespace ampc {
namespace cpukern {

/// Reads n contiguous elements from `off` as f32.
void loadContig(Buf b, int64_t off, int64_t n, float *out) {
  switch (b.dtype) {
  case AMPC_F32:
    memcpy(out, static_cast<const float *>(b.data) + off, n * sizeof(float));
    return;
  case AMPC_F16:
    cpufast::f16ToF32N(static_cast<const uint16_t *>(b.data) + off, out, n);
    return;
  case AMPC_BF16:
    cpufast::bf16ToF32N(static_cast<const uint16_t *>(b.data) + off, out, n);
    return;
  default:
    for (int64_t i = 0; i < n; ++i)
      out[i] = loadF32(b.data, b.dtype, off + i);
  }
}

void storeContig(Buf b, int64_t off, int64_t n, const float *in) {
  switch (b.dtype) {
  case AMPC_F32:
    memcpy(static_cast<float *>(b.data) + off, in, n * sizeof(float));
    return;
  case AMPC_F16:
    cpufast::f32ToF16N(in, static_cast<uint16_t *>(b.data) + off, n);
    return;
  case AMPC_BF16:
    cpufast::f32ToBf16N(in, static_cast<uint16_t *>(b.data) + off, n);
    return;
  default:
    for (int64_t i = 0; i < n; ++i)
      storeF32(b.data, b.dtype, off + i, in[i]);
  }
}

/// Reads n elements from `off` with `stride` as f32.
void loadRun(Buf b, int64_t off, int64_t stride, int64_t n, float *out) {
  if (stride == 1)
    return loadContig(b, off, n, out);
  if (stride == 0) {
    float v = loadF32(b.data, b.dtype, off);
    for (int64_t i = 0; i < n; ++i)
      out[i] = v;
    return;
  }
  if (b.dtype == AMPC_F32) {
    const float *p = static_cast<const float *>(b.data) + off;
    for (int64_t i = 0; i < n; ++i)
      out[i] = p[i * stride];
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = loadF32(b.data, b.dtype, off + i * stride);
}

void storeRun(Buf b, int64_t off, int64_t stride, int64_t n, const float *in) {
  if (stride == 1)
    return storeContig(b, off, n, in);
  if (b.dtype == AMPC_F32) {
    float *p = static_cast<float *>(b.data) + off;
    for (int64_t i = 0; i < n; ++i)
      p[i * stride] = in[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    storeF32(b.data, b.dtype, off + i * stride, in[i]);
}

namespace {

/// The run as f32: in place when it is f32 and contiguous, else read into
/// `scratch`.
const float *view(Buf b, int64_t off, int64_t stride, int64_t n,
                  float *scratch) {
  if (b.dtype == AMPC_F32 && stride == 1)
    return static_cast<const float *>(b.data) + off;
  loadRun(b, off, stride, n, scratch);
  return scratch;
}

/// Where to compute an output run: in place when it is f32 and contiguous,
/// else `scratch` (then stored by finish()).
float *target(Buf b, int64_t off, int64_t stride, float *scratch) {
  if (b.dtype == AMPC_F32 && stride == 1)
    return static_cast<float *>(b.data) + off;
  return scratch;
}

void finish(Buf b, int64_t off, int64_t stride, int64_t n, const float *out,
            const float *scratch) {
  if (out == scratch)
    storeRun(b, off, stride, n, scratch);
}

/// The operands' offsets at the start of row `r` of the collapsed walk `c`.
void rowOffsets(const Walk &c, int64_t r, int64_t &o0, int64_t &o1,
                int64_t &o2) {
  o0 = o1 = o2 = 0;
  for (int d = c.rank - 2; d >= 0; --d) {
    int64_t i = r % c.shape[d];
    r /= c.shape[d];
    o0 += i * c.stride[0][d];
    o1 += i * c.stride[1][d];
    o2 += i * c.stride[2][d];
  }
}

/// Calls f(o0, o1, o2) with the operands' offsets at the start of rows
/// [r0, r1) (of the last dim of the collapsed walk `c`), in row-major order.
template <typename F>
void forRowRange(const Walk &c, int64_t r0, int64_t r1, F &&f) {
  int last = c.rank - 1;
  int64_t idx[kMaxRank] = {};
  int64_t o0, o1, o2, r = r0;
  rowOffsets(c, r0, o0, o1, o2);
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = r % c.shape[d];
    r /= c.shape[d];
  }
  for (int64_t row = r0; row < r1; ++row) {
    f(o0, o1, o2);
    for (int d = last - 1; d >= 0; --d) {
      if (++idx[d] < c.shape[d]) {
        o0 += c.stride[0][d];
        o1 += c.stride[1][d];
        o2 += c.stride[2][d];
        break;
      }
      o0 -= c.stride[0][d] * (c.shape[d] - 1);
      o1 -= c.stride[1][d] * (c.shape[d] - 1);
      o2 -= c.stride[2][d] * (c.shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// Calls f(o0, o1, o2) with the operands' offsets at the start of every row
/// (the last dim of the collapsed walk `c`), in row-major order.
template <typename F> void forEachRow(const Walk &c, F &&f) {
  int64_t rows = 1;
  for (int d = 0; d < c.rank - 1; ++d)
    rows *= c.shape[d];
  forRowRange(c, 0, rows, f);
}

/// Calls f(o0, o1, o2, begin, end) for pieces [begin, end) of the rows of
/// the collapsed walk `c` (its last dim), covering every element once, in
/// items of about `per` elements on the pool: several whole rows per item,
/// or pieces of `per` elements (a multiple of kChunk) of a longer row. The
/// items depend on the walk only.
template <typename F> void forRowPieces(const Walk &c, int64_t per, F &&f) {
  int last = c.rank - 1;
  int64_t len = c.shape[last];
  int64_t rows = 1;
  for (int d = 0; d < last; ++d)
    rows *= c.shape[d];
  if (rows * len <= per) {
    forEachRow(c, [&](int64_t o0, int64_t o1, int64_t o2) {
      f(o0, o1, o2, int64_t(0), len);
    });
    return;
  }
  if (len >= per) {
    int64_t pieces = (len + per - 1) / per;
    cpupool::parallelFor(rows * pieces, [&](int64_t item) {
      int64_t o0, o1, o2, b = item % pieces * per;
      rowOffsets(c, item / pieces, o0, o1, o2);
      f(o0, o1, o2, b, std::min(len, b + per));
    });
    return;
  }
  int64_t perItem = std::max<int64_t>(1, per / std::max<int64_t>(len, 1));
  cpupool::parallelFor((rows + perItem - 1) / perItem, [&](int64_t item) {
    int64_t r0 = item * perItem, r1 = std::min(rows, r0 + perItem);
    forRowRange(c, r0, r1, [&](int64_t o0, int64_t o1, int64_t o2) {
      f(o0, o1, o2, int64_t(0), len);
    });
  });
}

/// Rows [0, rows) in fixed items of about kItemElements elements (rows of
/// `cols` elements each): f(r0, r1).
template <typename F> void forRows(int64_t rows, int64_t cols, F &&f) {
  int64_t perItem =
      std::max<int64_t>(1, cpupool::kItemElements / std::max<int64_t>(cols, 1));
  cpupool::forChunks(rows, perItem, f);
}

// One loop per table row (the op's struct inlined), chosen once per run.
template <typename Fn>
void unaryRun(const float *x, float *y, int64_t n, const UnaryAttrs &a) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = Fn::fwd(x[i], a);
}

template <typename Fn>
void unaryBwdRun(const float *x, const float *dy, float *g, int64_t n,
                 const UnaryAttrs &a) {
  for (int64_t i = 0; i < n; ++i)
    g[i] = Fn::bwd(x[i], dy[i], a);
}

template <typename Fn>
void binaryRun(const float *a, const float *b, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = Fn::fwd(a[i], b[i]);
}

template <typename Fn>
void binaryBwdRun(int which, const float *a, const float *b, const float *dy,
                  float *g, int64_t n) {
  if (which == 0)
    for (int64_t i = 0; i < n; ++i)
      g[i] = Fn::bwd(0, a[i], b[i], dy[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      g[i] = Fn::bwd(1, a[i], b[i], dy[i]);
}

// The rows whose scalar code calls expf / erff, split into the expression
// around them and one expN / erfN over the run (n <= kChunk). Each line is the
// struct's expression in scalar_ops.h, operation for operation;
// test_cpu_kernels.cpp checks them against the structs bit for bit.
bool unaryExpOp(UnaryOp op, const float *x, float *y, int64_t n) {
  float t[kChunk];
  switch (op) {
  case UnaryOp::Exp:
    expN(x, y, n);
    return true;
  case UnaryOp::Sigmoid: // 1 / (1 + exp(-x))
    for (int64_t i = 0; i < n; ++i)
      t[i] = -x[i];
    expN(t, t, n);
    for (int64_t i = 0; i < n; ++i)
      y[i] = 1.0f / (1.0f + t[i]);
    return true;
  case UnaryOp::Silu: // x * sigmoid(x)
    for (int64_t i = 0; i < n; ++i)
      t[i] = -x[i];
    expN(t, t, n);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] * (1.0f / (1.0f + t[i]));
    return true;
  case UnaryOp::Gelu: // x / 2 * (1 + erf(x / sqrt(2)))
    if (!vectorErf())
      return false;
    for (int64_t i = 0; i < n; ++i)
      t[i] = x[i] * kSqrt1_2;
    erfN(t, t, n);
    for (int64_t i = 0; i < n; ++i)
      y[i] = 0.5f * x[i] * (1.0f + t[i]);
    return true;
  case UnaryOp::Tanh:
    if (!vectorTanh())
      return false;
    tanhN(x, y, n);
    return true;
  case UnaryOp::GeluTanh: // x / 2 * (1 + tanh(sqrt(2 / pi) (x + c x^3)))
    if (!vectorTanh())
      return false;
    for (int64_t i = 0; i < n; ++i)
      t[i] = kSqrt2OverPi * (x[i] + kGeluCoef * x[i] * x[i] * x[i]);
    tanhN(t, t, n);
    for (int64_t i = 0; i < n; ++i)
      y[i] = 0.5f * x[i] * (1.0f + t[i]);
    return true;
  default:
    return false;
  }
}

bool unaryBwdExpOp(UnaryOp op, const float *x, const float *dy, float *g,
                   int64_t n) {
  float t[kChunk];
  switch (op) {
  case UnaryOp::Exp: // dy * exp(x)
    expN(x, t, n);
    for (int64_t i = 0; i < n; ++i)
      g[i] = dy[i] * t[i];
    return true;
  case UnaryOp::Sigmoid: // dy * s * (1 - s)
    for (int64_t i = 0; i < n; ++i)
      t[i] = -x[i];
    expN(t, t, n);
    for (int64_t i = 0; i < n; ++i) {
      float s = 1.0f / (1.0f + t[i]);
      g[i] = dy[i] * s * (1.0f - s);
    }
    return true;
  case UnaryOp::Silu: // dy * s * (1 + x (1 - s))
    for (int64_t i = 0; i < n; ++i)
      t[i] = -x[i];
    expN(t, t, n);
    for (int64_t i = 0; i < n; ++i) {
      float s = 1.0f / (1.0f + t[i]);
      g[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
    }
    return true;
  case UnaryOp::Gelu: { // dy * (cdf + x pdf), pdf = exp(-x^2 / 2) / sqrt(2 pi)
    float e[kChunk];
    for (int64_t i = 0; i < n; ++i)
      e[i] = x[i] * kSqrt1_2;
    erfN(e, e, n);
    for (int64_t i = 0; i < n; ++i)
      t[i] = -0.5f * x[i] * x[i];
    expN(t, t, n);
    for (int64_t i = 0; i < n; ++i) {
      float cdf = 0.5f * (1.0f + e[i]);
      float pdf = kInvSqrt2Pi * t[i];
      g[i] = dy[i] * (cdf + x[i] * pdf);
    }
    return true;
  }
  case UnaryOp::Tanh: // dy * (1 - t^2)
    if (!vectorTanh())
      return false;
    tanhN(x, t, n);
    for (int64_t i = 0; i < n; ++i)
      g[i] = dy[i] * (1.0f - t[i] * t[i]);
    return true;
  case UnaryOp::GeluTanh: {
    if (!vectorTanh())
      return false;
    for (int64_t i = 0; i < n; ++i)
      t[i] = kSqrt2OverPi * (x[i] + kGeluCoef * x[i] * x[i] * x[i]);
    tanhN(t, t, n);
    for (int64_t i = 0; i < n; ++i) {
      float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoef * x[i] * x[i]);
      g[i] = dy[i] * (0.5f * (1.0f + t[i]) +
                      0.5f * x[i] * (1.0f - t[i] * t[i]) * dinner);
    }
    return true;
  }
  default:
    return false;
  }
}

// The op loops below are compiled three times (baseline, AVX2, AVX-512:
// opLoops()), with everything they call inlined, so that the compiler
// vectorises each op's f32 loop as wide as the processor allows. They are
// the same IEEE operations in every width (no contraction: the runtime is
// built with -ffp-contract=off), so every clone gives the same bits;
// test_cpu_kernels.cpp checks it op by op.
#define AMPC_OP_LOOP AMPC_ALWAYS_INLINE inline
AMPC_OP_LOOP void unaryOpLoop(UnaryOp op, const UnaryAttrs &a, const float *x,
                              float *y, int64_t n) {
  if (vectorExp() && unaryExpOp(op, x, y, n))
    return;
  switch (op) {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  case UnaryOp::OP:                                                            \
    return unaryRun<OP##Fn>(x, y, n, a);
#define AMPC_UNARY_VARIANT(OP)                                                 \
  case UnaryOp::OP:                                                            \
    return unaryRun<OP##Fn>(x, y, n, a);
#include "ampc/runtime_kernels.inc"
  }
  __builtin_unreachable();
}

AMPC_OP_LOOP void unaryBwdOpLoop(UnaryOp op, const UnaryAttrs &a,
                                 const float *x, const float *dy, float *g,
                                 int64_t n) {
  if (vectorExp() && unaryBwdExpOp(op, x, dy, g, n))
    return;
  switch (op) {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  case UnaryOp::OP:                                                            \
    return unaryBwdRun<OP##Fn>(x, dy, g, n, a);
#define AMPC_UNARY_VARIANT(OP)                                                 \
  case UnaryOp::OP:                                                            \
    return unaryBwdRun<OP##Fn>(x, dy, g, n, a);
#include "ampc/runtime_kernels.inc"
  }
  __builtin_unreachable();
}

AMPC_OP_LOOP void binaryOpLoop(BinaryOp op, const float *a, const float *b,
                               float *y, int64_t n) {
  switch (op) {
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  case BinaryOp::OP:                                                           \
    return binaryRun<OP##Fn>(a, b, y, n);
#define AMPC_BINARY_VARIANT(OP)                                                \
  case BinaryOp::OP:                                                           \
    return binaryRun<OP##Fn>(a, b, y, n);
#include "ampc/runtime_kernels.inc"
  }
  __builtin_unreachable();
}

AMPC_OP_LOOP void binaryBwdOpLoop(BinaryOp op, int which, const float *a,
                                  const float *b, const float *dy, float *g,
                                  int64_t n) {
  switch (op) {
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  case BinaryOp::OP:                                                           \
    return binaryBwdRun<OP##Fn>(which, a, b, dy, g, n);
#define AMPC_BINARY_VARIANT(OP)                                                \
  case BinaryOp::OP:                                                           \
    return binaryBwdRun<OP##Fn>(which, a, b, dy, g, n);
#include "ampc/runtime_kernels.inc"
  }
  __builtin_unreachable();
}

// bf16 operands and result, contiguous: each element widened, the op's f32
// expression, rounded once, in one pass instead of three over f32 scratch.
// These are the chunked path's three steps element by element (half.h's
// conversions, the same structs), so the same bits; what changes is that the
// compiler can keep everything in registers and vectorise the whole loop.
// No restrict: an output may be one of its inputs (the same elements).
struct Bf16Runs {
  template <typename Fn>
  static AMPC_OP_LOOP void unary(const uint16_t *x, uint16_t *y, int64_t n,
                                 const UnaryAttrs &a) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = f32ToBf16(Fn::fwd(bf16ToF32(x[i]), a));
  }

  template <typename Fn>
  static AMPC_OP_LOOP void unaryBwd(const uint16_t *x, const uint16_t *dy,
                                    uint16_t *g, int64_t n,
                                    const UnaryAttrs &a) {
    for (int64_t i = 0; i < n; ++i)
      g[i] = f32ToBf16(Fn::bwd(bf16ToF32(x[i]), bf16ToF32(dy[i]), a));
  }

  /// sa, sb: 1 (contiguous) or 0 (one element for the whole run).
  template <typename Fn>
  static AMPC_OP_LOOP void binary(const uint16_t *a, int64_t sa,
                                  const uint16_t *b, int64_t sb, uint16_t *y,
                                  int64_t n) {
    if (sa && sb) {
      for (int64_t i = 0; i < n; ++i)
        y[i] = f32ToBf16(Fn::fwd(bf16ToF32(a[i]), bf16ToF32(b[i])));
    } else if (sa) {
      float bv = bf16ToF32(b[0]);
      for (int64_t i = 0; i < n; ++i)
        y[i] = f32ToBf16(Fn::fwd(bf16ToF32(a[i]), bv));
    } else {
      float av = bf16ToF32(a[0]);
      for (int64_t i = 0; i < n; ++i)
        y[i] = f32ToBf16(Fn::fwd(av, bf16ToF32(b[i])));
    }
  }

  template <typename Fn>
  static AMPC_OP_LOOP void binaryBwd(int which, const uint16_t *a,
                                     const uint16_t *b, const uint16_t *dy,
                                     uint16_t *g, int64_t n) {
    if (which == 0)
      for (int64_t i = 0; i < n; ++i)
        g[i] = f32ToBf16(
            Fn::bwd(0, bf16ToF32(a[i]), bf16ToF32(b[i]), bf16ToF32(dy[i])));
    else
      for (int64_t i = 0; i < n; ++i)
        g[i] = f32ToBf16(
            Fn::bwd(1, bf16ToF32(a[i]), bf16ToF32(b[i]), bf16ToF32(dy[i])));
  }
};

/// The unary rows the chunked path computes with the vector exp / erf /
/// tanh (unaryExpOp): they stay there, since their structs call libm one
/// element at a time.
bool usesVectorMath(UnaryOp op) {
  switch (op) {
  case UnaryOp::Exp:
  case UnaryOp::Sigmoid:
  case UnaryOp::Silu:
  case UnaryOp::Gelu:
  case UnaryOp::Tanh:
  case UnaryOp::GeluTanh:
    return true;
  default:
    return false;
  }
}

// f16 operands and result, contiguous, AVX-512 only: blocks of kF16Block
// elements widened into f32 (cpufast's conversions: VCVTPH2PS, exact), the
// op's f32 loop (unaryRun etc.) over the block, rounded once (VCVTPS2PH, with f32ToF16's
// NaNs): the chunked path's three steps, so the same bits, on blocks that
// stay in registers and L1 with the op inlined. No restrict: an output may
// be one of its inputs (the same elements; a block is read before it is
// written).
constexpr int64_t kF16Block = 256;

struct F16Runs {
  template <typename Fn>
  static AMPC_OP_LOOP void unary(const uint16_t *x, uint16_t *y, int64_t n,
                                 const UnaryAttrs &a) {
    float v[kF16Block];
    for (int64_t i = 0; i < n; i += kF16Block) {
      int64_t k = n - i < kF16Block ? n - i : kF16Block;
      cpufast::f16ToF32N(x + i, v, k);
      unaryRun<Fn>(v, v, k, a);
      cpufast::f32ToF16N(v, y + i, k);
    }
  }

  template <typename Fn>
  static AMPC_OP_LOOP void unaryBwd(const uint16_t *x, const uint16_t *dy,
                                    uint16_t *g, int64_t n,
                                    const UnaryAttrs &a) {
    float v[kF16Block], d[kF16Block];
    for (int64_t i = 0; i < n; i += kF16Block) {
      int64_t k = n - i < kF16Block ? n - i : kF16Block;
      cpufast::f16ToF32N(x + i, v, k);
      cpufast::f16ToF32N(dy + i, d, k);
      unaryBwdRun<Fn>(v, d, v, k, a);
      cpufast::f32ToF16N(v, g + i, k);
    }
  }

  /// sa, sb: 1 (contiguous) or 0 (one element for the whole run, widened
  /// into a whole block once).
  template <typename Fn>
  static AMPC_OP_LOOP void binary(const uint16_t *a, int64_t sa,
                                  const uint16_t *b, int64_t sb, uint16_t *y,
                                  int64_t n) {
    float av[kF16Block], bv[kF16Block], yv[kF16Block];
    if (!sa)
      std::fill(av, av + kF16Block, f16ToF32(a[0]));
    if (!sb)
      std::fill(bv, bv + kF16Block, f16ToF32(b[0]));
    for (int64_t i = 0; i < n; i += kF16Block) {
      int64_t k = n - i < kF16Block ? n - i : kF16Block;
      if (sa)
        cpufast::f16ToF32N(a + i, av, k);
      if (sb)
        cpufast::f16ToF32N(b + i, bv, k);
      binaryRun<Fn>(av, bv, yv, k);
      cpufast::f32ToF16N(yv, y + i, k);
    }
  }

  template <typename Fn>
  static AMPC_OP_LOOP void binaryBwd(int which, const uint16_t *a,
                                     const uint16_t *b, const uint16_t *dy,
                                     uint16_t *g, int64_t n) {
    float av[kF16Block], bv[kF16Block], d[kF16Block];
    for (int64_t i = 0; i < n; i += kF16Block) {
      int64_t k = n - i < kF16Block ? n - i : kF16Block;
      cpufast::f16ToF32N(a + i, av, k);
      cpufast::f16ToF32N(b + i, bv, k);
      cpufast::f16ToF32N(dy + i, d, k);
      binaryBwdRun<Fn>(which, av, bv, d, av, k);
      cpufast::f32ToF16N(av, g + i, k);
    }
  }
};

template <typename Runs>
AMPC_OP_LOOP bool unary16Loop(UnaryOp op, const UnaryAttrs &a,
                              const uint16_t *x, uint16_t *y, int64_t n) {
  if (usesVectorMath(op))
    return false;
  switch (op) {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  case UnaryOp::OP:                                                            \
    Runs::template unary<OP##Fn>(x, y, n, a);                                  \
    return true;
#define AMPC_UNARY_VARIANT(OP)                                                 \
  case UnaryOp::OP:                                                            \
    Runs::template unary<OP##Fn>(x, y, n, a);                                  \
    return true;
#include "ampc/runtime_kernels.inc"
  }
  return false;
}

template <typename Runs>
AMPC_OP_LOOP bool unaryBwd16Loop(UnaryOp op, const UnaryAttrs &a,
                                 const uint16_t *x, const uint16_t *dy,
                                 uint16_t *g, int64_t n) {
  if (usesVectorMath(op))
    return false;
  switch (op) {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  case UnaryOp::OP:                                                            \
    Runs::template unaryBwd<OP##Fn>(x, dy, g, n, a);                           \
    return true;
#define AMPC_UNARY_VARIANT(OP)                                                 \
  case UnaryOp::OP:                                                            \
    Runs::template unaryBwd<OP##Fn>(x, dy, g, n, a);                           \
    return true;
#include "ampc/runtime_kernels.inc"
  }
  return false;
}

template <typename Runs>
AMPC_OP_LOOP bool binary16Loop(BinaryOp op, const uint16_t *a, int64_t sa,
                               const uint16_t *b, int64_t sb, uint16_t *y,
                               int64_t n) {
  switch (op) {
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  case BinaryOp::OP:                                                           \
    Runs::template binary<OP##Fn>(a, sa, b, sb, y, n);                         \
    return true;
#define AMPC_BINARY_VARIANT(OP)                                                \
  case BinaryOp::OP:                                                           \
    Runs::template binary<OP##Fn>(a, sa, b, sb, y, n);                         \
    return true;
#include "ampc/runtime_kernels.inc"
  }
  return false;
}

template <typename Runs>
AMPC_OP_LOOP bool binaryBwd16Loop(BinaryOp op, int which, const uint16_t *a,
                                  const uint16_t *b, const uint16_t *dy,
                                  uint16_t *g, int64_t n) {
  switch (op) {
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  case BinaryOp::OP:                                                           \
    Runs::template binaryBwd<OP##Fn>(which, a, b, dy, g, n);                   \
    return true;
#define AMPC_BINARY_VARIANT(OP)                                                \
  case BinaryOp::OP:                                                           \
    Runs::template binaryBwd<OP##Fn>(which, a, b, dy, g, n);                   \
    return true;
#include "ampc/runtime_kernels.inc"
  }
  return false;
}

/// Row sums of up to kLanes rows at once, for the norms: for each row k <
/// rows, s[k] += the sum of a[k][j] and p[k] += the sum of a[k][j] b[k][j]
/// over j in [0, cols), in f64, each a sum in column order continuing from
/// s[k] and p[k]'s values on entry (the mean and mean square of a norm's
/// rows: b = a, from 0; the backward's sums of g and g x-hat; a reduction's
/// sums, chunk after chunk). A sum in order cannot be vectorised along its
/// row; the rows' sums can be, side by side, one row per lane, with the
/// bits of the one-row loop (laneSumsBase, the baseline's). Row k's columns
/// are a[k][0, cols). With p null, only the sums s (softmax, cross-entropy
/// and reductions need no products; b is not read).
constexpr int kLanes = 8;
void laneSumsBase(const float *const *a, const float *const *b, int rows,
                  int64_t cols, double *s, double *p) {
  for (int k = 0; k < rows; ++k) {
    double sk = s[k], pk = p ? p[k] : 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      double va = a[k][j];
      sk += va;
      if (p)
        pk += va * static_cast<double>(b[k][j]);
    }
    s[k] = sk;
    if (p)
      p[k] = pk;
  }
}

#if AMPC_CPU_CLONES
/// Eight rows of eight f32 (r[k]: row k) into eight columns (r[j]: column
/// j, row k in lane k).
AMPC_AVX2_TARGET inline void transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/// Columns [j, j + 8) of rows m[0, rows) (zero past them), as columns.
AMPC_AVX2_TARGET inline void loadColumns8(const float *const *m, int rows,
                                          int64_t j, __m256 r[8]) {
  for (int k = 0; k < kLanes; ++k)
    r[k] = k < rows ? _mm256_loadu_ps(m[k] + j) : _mm256_setzero_ps();
  transpose8x8(r);
}

/// laneSumsBase eight columns at a time: the rows' 8x8 blocks transposed
/// in registers, each column widened and added to every row's sums (lanes
/// 0-3 and 4-7 in two registers), so each row's sum runs in column order.
/// kProducts: whether the products are summed too (p not null).
template <bool kProducts>
AMPC_AVX2_TARGET void laneSumsAVX2Of(const float *const *a,
                                     const float *const *b, int rows,
                                     int64_t cols, double *s, double *p) {
  // Each lane starts from its row's s and p (0 past the rows).
  alignas(32) double sv[kLanes] = {}, pv[kLanes] = {};
  for (int k = 0; k < rows; ++k) {
    sv[k] = s[k];
    if (kProducts)
      pv[k] = p[k];
  }
  __m256d s0 = _mm256_load_pd(sv), s1 = _mm256_load_pd(sv + 4);
  __m256d p0 = _mm256_load_pd(pv), p1 = _mm256_load_pd(pv + 4);
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 ra[8], rb[8];
    loadColumns8(a, rows, j, ra);
    if (kProducts && b != a)
      loadColumns8(b, rows, j, rb);
    for (int c = 0; c < 8; ++c) {
      __m256d a0 = _mm256_cvtps_pd(_mm256_castps256_ps128(ra[c]));
      __m256d a1 = _mm256_cvtps_pd(_mm256_extractf128_ps(ra[c], 1));
      s0 = _mm256_add_pd(s0, a0);
      s1 = _mm256_add_pd(s1, a1);
      if (!kProducts)
        continue;
      __m256d b0 = a0, b1 = a1;
      if (b != a) {
        b0 = _mm256_cvtps_pd(_mm256_castps256_ps128(rb[c]));
        b1 = _mm256_cvtps_pd(_mm256_extractf128_ps(rb[c], 1));
      }
      p0 = _mm256_add_pd(p0, _mm256_mul_pd(a0, b0));
      p1 = _mm256_add_pd(p1, _mm256_mul_pd(a1, b1));
    }
  }
  _mm256_store_pd(sv, s0);
  _mm256_store_pd(sv + 4, s1);
  _mm256_store_pd(pv, p0);
  _mm256_store_pd(pv + 4, p1);
  for (int k = 0; k < rows; ++k) {
    for (int64_t t = j; t < cols; ++t) {
      double va = a[k][t];
      sv[k] += va;
      if (kProducts)
        pv[k] += va * static_cast<double>(b[k][t]);
    }
    s[k] = sv[k];
    if (kProducts)
      p[k] = pv[k];
  }
}

AMPC_AVX2_TARGET void laneSumsAVX2(const float *const *a,
                                   const float *const *b, int rows,
                                   int64_t cols, double *s, double *p) {
  if (p)
    laneSumsAVX2Of<true>(a, b, rows, cols, s, p);
  else
    laneSumsAVX2Of<false>(a, b, rows, cols, s, nullptr);
}
#endif

/// The norms' element loops (norm, NormBwdLanes, normDxRow and the dw/db
/// sums below), each column on its own, so every width gives the same
/// bits. y = (x - mean) * rstd, times w[j] and plus b[j] where they are
/// given (null: not); y may be x itself.
template <bool kW, bool kB>
AMPC_OP_LOOP void normOutRun(const float *x, float mean, float rstd,
                             const float *__restrict w,
                             const float *__restrict b, float *y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    float v = (x[j] - mean) * rstd;
    if (kW)
      v *= w[j];
    if (kB)
      v += b[j];
    y[j] = v;
  }
}

AMPC_OP_LOOP void normOutLoop(const float *x, float mean, float rstd,
                              const float *w, const float *b, float *y,
                              int64_t n) {
  if (w && b)
    normOutRun<true, true>(x, mean, rstd, w, b, y, n);
  else if (w)
    normOutRun<true, false>(x, mean, rstd, w, b, y, n);
  else if (b)
    normOutRun<false, true>(x, mean, rstd, w, b, y, n);
  else
    normOutRun<false, false>(x, mean, rstd, w, b, y, n);
}

/// The backward's x-hat = (x - mean) * rstd and g = dy * w (w null: dy).
AMPC_OP_LOOP void normPrepLoop(const float *__restrict x,
                               const float *__restrict dy, float mean,
                               float rstd, const float *__restrict w,
                               float *__restrict xhat, float *__restrict g,
                               int64_t n) {
  normOutLoop(x, mean, rstd, nullptr, nullptr, xhat, n);
  if (w)
    for (int64_t j = 0; j < n; ++j)
      g[j] = dy[j] * w[j];
  else
    for (int64_t j = 0; j < n; ++j)
      g[j] = dy[j];
}

/// A row's dx = rstd (g - meanG - x-hat meanGX).
AMPC_OP_LOOP void normDxLoop(const float *__restrict g,
                             const float *__restrict xhat, float rstd,
                             float meanG, float meanGX, float *__restrict dx,
                             int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    dx[j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
}

/// One row's terms of dw and db, each column's f64 sum continued: dw[j] +=
/// dy[j] x-hat[j] (exact in f64), db[j] += dy[j] (either null: not
/// summed).
AMPC_OP_LOOP void normAccLoop(const float *__restrict dy,
                              const float *__restrict xhat,
                              double *__restrict dw, double *__restrict db,
                              int64_t n) {
  if (dw)
    for (int64_t j = 0; j < n; ++j)
      dw[j] += static_cast<double>(dy[j]) * xhat[j];
  if (db)
    for (int64_t j = 0; j < n; ++j)
      db[j] += dy[j];
}

/// Softmax's and cross-entropy's element loops (y = x - s, y = x * s and
/// the two backward rows below), one rounding per operation as written,
/// so every width gives the same bits. Their outputs may be their inputs
/// (each element is read before it is written, in the same iteration).
AMPC_OP_LOOP void shiftLoop(const float *x, float s, float *y, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = x[j] - s;
}

AMPC_OP_LOOP void scaleLoop(const float *x, float s, float *y, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = x[j] * s;
}

/// Softmax's backward row: dx = y (g - s), s the row's sum of g y.
AMPC_OP_LOOP void softmaxDxLoop(const float *y, const float *g, float s,
                                float *dx, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    dx[j] = y[j] * (g[j] - s);
}

/// Log-softmax's backward row: dx = g - e s, e = exp(y), s the row's sum
/// of g.
AMPC_OP_LOOP void logSoftmaxDxLoop(const float *g, const float *e, float s,
                                   float *dx, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    dx[j] = g[j] - e[j] * s;
}

/// One 16-bit dtype's one-pass loops (all null where an instruction set
/// has none): false, with nothing done, for a row they leave to the
/// chunked path.
struct Loops16 {
  bool (*unary)(UnaryOp, const UnaryAttrs &, const uint16_t *, uint16_t *,
                int64_t);
  bool (*unaryBwd)(UnaryOp, const UnaryAttrs &, const uint16_t *,
                   const uint16_t *, uint16_t *, int64_t);
  bool (*binary)(BinaryOp, const uint16_t *, int64_t, const uint16_t *,
                 int64_t, uint16_t *, int64_t);
  bool (*binaryBwd)(BinaryOp, int, const uint16_t *, const uint16_t *,
                    const uint16_t *, uint16_t *, int64_t);
};

/// The loops of one instruction set.
struct OpLoops {
  void (*unary)(UnaryOp, const UnaryAttrs &, const float *, float *, int64_t);
  void (*unaryBwd)(UnaryOp, const UnaryAttrs &, const float *, const float *,
                   float *, int64_t);
  void (*binary)(BinaryOp, const float *, const float *, float *, int64_t);
  void (*binaryBwd)(BinaryOp, int, const float *, const float *,
                    const float *, float *, int64_t);
  // The one-pass bf16 and f16 loops.
  Loops16 bf16, f16;
  // The row sums of the norms, softmax, cross-entropy and reductions
  // (laneSumsBase).
  void (*laneSums)(const float *const *, const float *const *, int, int64_t,
                   double *, double *);
  // The norms' element loops.
  void (*normOut)(const float *, float, float, const float *, const float *,
                  float *, int64_t);
  void (*normPrep)(const float *, const float *, float, float, const float *,
                   float *, float *, int64_t);
  void (*normDx)(const float *, const float *, float, float, float, float *,
                 int64_t);
  void (*normAcc)(const float *, const float *, double *, double *, int64_t);
  // Softmax's and cross-entropy's element loops.
  void (*shift)(const float *, float, float *, int64_t);
  void (*scale)(const float *, float, float *, int64_t);
  void (*softmaxDx)(const float *, const float *, float, float *, int64_t);
  void (*logSoftmaxDx)(const float *, const float *, float, float *, int64_t);
};

#define AMPC_OP_LOOP_CLONES(SUFFIX, TARGET, ...)                               \
  TARGET AMPC_FLATTEN void unaryOp##SUFFIX(UnaryOp op, const UnaryAttrs &a,   \
                                           const float *x, float *y,          \
                                           int64_t n) {                       \
    unaryOpLoop(op, a, x, y, n);                                               \
  }                                                                            \
  TARGET AMPC_FLATTEN void unaryBwdOp##SUFFIX(                                \
      UnaryOp op, const UnaryAttrs &a, const float *x, const float *dy,       \
      float *g, int64_t n) {                                                   \
    unaryBwdOpLoop(op, a, x, dy, g, n);                                        \
  }                                                                            \
  TARGET AMPC_FLATTEN void binaryOp##SUFFIX(BinaryOp op, const float *a,      \
                                            const float *b, float *y,         \
                                            int64_t n) {                      \
    binaryOpLoop(op, a, b, y, n);                                              \
  }                                                                            \
  TARGET AMPC_FLATTEN void binaryBwdOp##SUFFIX(                               \
      BinaryOp op, int which, const float *a, const float *b,                 \
      const float *dy, float *g, int64_t n) {                                  \
    binaryBwdOpLoop(op, which, a, b, dy, g, n);                                \
  }                                                                            \
  TARGET AMPC_FLATTEN void normOut##SUFFIX(                                    \
      const float *x, float mean, float rstd, const float *w, const float *b,  \
      float *y, int64_t n) {                                                   \
    normOutLoop(x, mean, rstd, w, b, y, n);                                    \
  }                                                                            \
  TARGET AMPC_FLATTEN void normPrep##SUFFIX(                                   \
      const float *x, const float *dy, float mean, float rstd, const float *w, \
      float *xhat, float *g, int64_t n) {                                      \
    normPrepLoop(x, dy, mean, rstd, w, xhat, g, n);                            \
  }                                                                            \
  TARGET AMPC_FLATTEN void normDx##SUFFIX(                                     \
      const float *g, const float *xhat, float rstd, float meanG,              \
      float meanGX, float *dx, int64_t n) {                                    \
    normDxLoop(g, xhat, rstd, meanG, meanGX, dx, n);                           \
  }                                                                            \
  TARGET AMPC_FLATTEN void normAcc##SUFFIX(                                    \
      const float *dy, const float *xhat, double *dw, double *db, int64_t n) { \
    normAccLoop(dy, xhat, dw, db, n);                                          \
  }                                                                            \
  TARGET AMPC_FLATTEN void shift##SUFFIX(const float *x, float s, float *y,    \
                                         int64_t n) {                          \
    shiftLoop(x, s, y, n);                                                     \
  }                                                                            \
  TARGET AMPC_FLATTEN void scale##SUFFIX(const float *x, float s, float *y,    \
                                         int64_t n) {                          \
    scaleLoop(x, s, y, n);                                                     \
  }                                                                            \
  TARGET AMPC_FLATTEN void softmaxDx##SUFFIX(const float *y, const float *g,   \
                                             float s, float *dx, int64_t n) {  \
    softmaxDxLoop(y, g, s, dx, n);                                             \
  }                                                                            \
  TARGET AMPC_FLATTEN void logSoftmaxDx##SUFFIX(                               \
      const float *g, const float *e, float s, float *dx, int64_t n) {         \
    logSoftmaxDxLoop(g, e, s, dx, n);                                          \
  }                                                                            \
  const OpLoops opLoops##SUFFIX = {                                            \
      unaryOp##SUFFIX,     unaryBwdOp##SUFFIX, binaryOp##SUFFIX,               \
      binaryBwdOp##SUFFIX, __VA_ARGS__,        normOut##SUFFIX,                \
      normPrep##SUFFIX,    normDx##SUFFIX,     normAcc##SUFFIX,                \
      shift##SUFFIX,       scale##SUFFIX,      softmaxDx##SUFFIX,              \
      logSoftmaxDx##SUFFIX};

// The one-pass loops of one 16-bit dtype (RUNS: Bf16Runs, F16Runs) and
// one instruction set, as a Loops16 named loops16##NAME##SUFFIX.
#define AMPC_16BIT_LOOP_CLONES(NAME, SUFFIX, TARGET, RUNS)                     \
  TARGET AMPC_FLATTEN bool unary##NAME##SUFFIX(                               \
      UnaryOp op, const UnaryAttrs &a, const uint16_t *x, uint16_t *y,        \
      int64_t n) {                                                             \
    return unary16Loop<RUNS>(op, a, x, y, n);                                  \
  }                                                                            \
  TARGET AMPC_FLATTEN bool unaryBwd##NAME##SUFFIX(                            \
      UnaryOp op, const UnaryAttrs &a, const uint16_t *x, const uint16_t *dy, \
      uint16_t *g, int64_t n) {                                                \
    return unaryBwd16Loop<RUNS>(op, a, x, dy, g, n);                           \
  }                                                                            \
  TARGET AMPC_FLATTEN bool binary##NAME##SUFFIX(                              \
      BinaryOp op, const uint16_t *a, int64_t sa, const uint16_t *b,          \
      int64_t sb, uint16_t *y, int64_t n) {                                    \
    return binary16Loop<RUNS>(op, a, sa, b, sb, y, n);                         \
  }                                                                            \
  TARGET AMPC_FLATTEN bool binaryBwd##NAME##SUFFIX(                           \
      BinaryOp op, int which, const uint16_t *a, const uint16_t *b,           \
      const uint16_t *dy, uint16_t *g, int64_t n) {                            \
    return binaryBwd16Loop<RUNS>(op, which, a, b, dy, g, n);                   \
  }                                                                            \
  const Loops16 loops16##NAME##SUFFIX = {                                      \
      unary##NAME##SUFFIX, unaryBwd##NAME##SUFFIX, binary##NAME##SUFFIX,       \
      binaryBwd##NAME##SUFFIX};

#define AMPC_NO_16BIT_LOOPS                                                    \
  Loops16 { nullptr, nullptr, nullptr, nullptr }
AMPC_OP_LOOP_CLONES(Base, , AMPC_NO_16BIT_LOOPS, AMPC_NO_16BIT_LOOPS,
                    laneSumsBase)
#if AMPC_CPU_CLONES
// The one-pass 16-bit loops only with AVX-512: measured with
// bench/runtime's BM_CpuElementwise (2^21 bf16 elements, one thread, AMD
// EPYC), relu / relu's backward / add took 300 / 319 / 344 us against the
// chunked path's 419 / 456 / 552; with AVX2 alone the compiler's
// 8-lane rounding is long enough that they were no faster (544 / 555 / 505
// against 424 / 628 / 521), so AVX2 and the baseline keep the chunked path.
AMPC_16BIT_LOOP_CLONES(Bf16, AVX512, AMPC_AVX512_TARGET, Bf16Runs)
AMPC_16BIT_LOOP_CLONES(F16, AVX512, AMPC_AVX512_TARGET, F16Runs)
AMPC_OP_LOOP_CLONES(AVX2, AMPC_AVX2_TARGET, AMPC_NO_16BIT_LOOPS,
                    AMPC_NO_16BIT_LOOPS, laneSumsAVX2)
AMPC_OP_LOOP_CLONES(AVX512, AMPC_AVX512_TARGET, loops16Bf16AVX512,
                    loops16F16AVX512, laneSumsAVX2)
#endif

/// The op loops in use: those of the conversions' instruction set, or
/// what useOpLoopsForTesting chose.
AMPC_CLONE_SET(OpLoops, opLoops, opClones)

const OpLoops &opLoops() { return opClones().get(); }

void unaryOp(UnaryOp op, const UnaryAttrs &a, const float *x, float *y,
             int64_t n) {
  opLoops().unary(op, a, x, y, n);
}
void unaryBwdOp(UnaryOp op, const UnaryAttrs &a, const float *x,
                const float *dy, float *g, int64_t n) {
  opLoops().unaryBwd(op, a, x, dy, g, n);
}
void binaryOp(BinaryOp op, const float *a, const float *b, float *y,
              int64_t n) {
  opLoops().binary(op, a, b, y, n);
}
void binaryBwdOp(BinaryOp op, int which, const float *a, const float *b,
                 const float *dy, float *g, int64_t n) {
  opLoops().binaryBwd(op, which, a, b, dy, g, n);
}
} // namespace

void useOpLoopsForTesting(cpufast::ConvertIsa isa) {
  opClones().use(isa);
}

Walk collapse(const Walk &w) {
  Walk c;
  c.rank = 0;
  for (int d = 0; d < w.rank; ++d) {
    if (w.shape[d] == 1)
      continue;
    if (c.rank > 0) {
      int p = c.rank - 1;
      bool merge = true;
      for (int k = 0; k < 3; ++k)
        merge &= c.stride[k][p] == w.stride[k][d] * w.shape[d];
      if (merge) {
        c.shape[p] *= w.shape[d];
        for (int k = 0; k < 3; ++k)
          c.stride[k][p] = w.stride[k][d];
        continue;
      }
    }
    c.shape[c.rank] = w.shape[d];
    for (int k = 0; k < 3; ++k)
      c.stride[k][c.rank] = w.stride[k][d];
    ++c.rank;
  }
  if (c.rank == 0) {
    c.rank = 1;
    c.shape[0] = w.numel();
    for (int k = 0; k < 3; ++k)
      c.stride[k][0] = 0;
  }
  return c;
}

/// The one-pass loops of `loops` for dtype dt (bf16, f16), or null.
const Loops16 *loops16(const OpLoops &loops, ampc_dtype dt) {
  return dt == AMPC_BF16 ? &loops.bf16 : dt == AMPC_F16 ? &loops.f16 : nullptr;
}

void epilogueRow(ampc_epilogue e, const float *bias, float *row, int64_t n) {
  if (bias)
    opLoops().binary(BinaryOp::Add, row, bias, row, n);
  UnaryOp op;
  switch (e) {
  case AMPC_EPILOGUE_RELU:
    op = UnaryOp::Relu;
    break;
  case AMPC_EPILOGUE_GELU:
    op = UnaryOp::Gelu;
    break;
  case AMPC_EPILOGUE_GELU_TANH:
    op = UnaryOp::GeluTanh;
    break;
  default:
    return;
  }
  UnaryAttrs attrs{};
  // The vector math's scratch holds kChunk values.
  for (int64_t i = 0; i < n; i += kChunk)
    unaryOp(op, attrs, row + i, row + i, std::min(kChunk, n - i));
}

void unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x, int64_t n) {
  if (n >= cputable::kMinElements && y.dtype == x.dtype)
    if (const cputable::Table *t = cputable::forward(op, x.dtype)) {
      const uint16_t *px = static_cast<const uint16_t *>(x.data);
      uint16_t *py = static_cast<uint16_t *>(y.data);
      cpupool::forChunks(n, cpupool::kItemElements,
                         [&](int64_t lo, int64_t hi) {
                           cputable::lookup(*t, px + lo, py + lo, hi - lo);
                         });
      return;
    }
  const OpLoops &loops = opLoops();
  const Loops16 *one = loops16(loops, x.dtype);
  if (one && one->unary && y.dtype == x.dtype && n > 0 &&
      !usesVectorMath(op)) {
    const uint16_t *px = static_cast<const uint16_t *>(x.data);
    uint16_t *py = static_cast<uint16_t *>(y.data);
    cpupool::forChunks(n, cpupool::kItemElements, [&](int64_t lo, int64_t hi) {
      one->unary(op, attrs, px + lo, py + lo, hi - lo);
    });
    return;
  }
  cpupool::forChunks(n, cpupool::kItemElements, [&](int64_t lo, int64_t hi) {
    float xs[kChunk], ys[kChunk];
    for (int64_t i = lo; i < hi; i += kChunk) {
      int64_t len = hi - i < kChunk ? hi - i : kChunk;
      const float *px = view(x, i, 1, len, xs);
      float *py = target(y, i, 1, ys);
      unaryOp(op, attrs, px, py, len);
      finish(y, i, 1, len, py, ys);
    }
  });
}

void unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy, Buf x,
              int64_t n) {
  if (n >= cputable::kMinElements && dy.dtype == x.dtype &&
      dx.dtype == x.dtype)
    if (const cputable::Table *t = cputable::backward(op, x.dtype)) {
      const uint16_t *px = static_cast<const uint16_t *>(x.data),
                     *pd = static_cast<const uint16_t *>(dy.data);
      uint16_t *pg = static_cast<uint16_t *>(dx.data);
      cpupool::forChunks(n, cpupool::kItemElements,
                         [&](int64_t lo, int64_t hi) {
                           cputable::lookupBwd(*t, px + lo, pd + lo, pg + lo,
                                               hi - lo);
                         });
      return;
    }
  const OpLoops &loops = opLoops();
  const Loops16 *one = loops16(loops, x.dtype);
  if (one && one->unaryBwd && dy.dtype == x.dtype && dx.dtype == x.dtype &&
      n > 0 && !usesVectorMath(op)) {
    const uint16_t *px = static_cast<const uint16_t *>(x.data),
                   *pd = static_cast<const uint16_t *>(dy.data);
    uint16_t *pg = static_cast<uint16_t *>(dx.data);
    cpupool::forChunks(n, cpupool::kItemElements, [&](int64_t lo, int64_t hi) {
      one->unaryBwd(op, attrs, px + lo, pd + lo, pg + lo, hi - lo);
    });
    return;
  }
  cpupool::forChunks(n, cpupool::kItemElements, [&](int64_t lo, int64_t hi) {
    float xs[kChunk], ds[kChunk], gs[kChunk];
    for (int64_t i = lo; i < hi; i += kChunk) {
      int64_t len = hi - i < kChunk ? hi - i : kChunk;
      const float *px = view(x, i, 1, len, xs);
      const float *pd = view(dy, i, 1, len, ds);
      float *pg = target(dx, i, 1, gs);
      unaryBwdOp(op, attrs, px, pd, pg, len);
      finish(dx, i, 1, len, pg, gs);
    }
  });
}

void binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w) {
  if (w.numel() == 0)
    return;
  Walk c = collapse(w);
  int last = c.rank - 1;
  int64_t s0 = c.stride[0][last], s1 = c.stride[1][last],
          s2 = c.stride[2][last];
  const OpLoops &loops = opLoops();
  const Loops16 *one = loops16(loops, y.dtype);
  bool onePass = one && one->binary && a.dtype == y.dtype &&
                 b.dtype == y.dtype && s0 == 1 && (s1 == 0 || s1 == 1) &&
                 (s2 == 0 || s2 == 1) && (s1 || s2);
  forRowPieces(c, cpupool::kItemElements,
               [&](int64_t o0, int64_t o1, int64_t o2, int64_t lo, int64_t hi) {
                 const uint16_t *ah = static_cast<const uint16_t *>(a.data),
                                *bh = static_cast<const uint16_t *>(b.data);
                 if (onePass && one->binary(op, ah + o1 + lo * s1, s1,
                                            bh + o2 + lo * s2, s2,
                                            static_cast<uint16_t *>(y.data) +
                                                o0 + lo,
                                            hi - lo))
                   return;
                 float as[kChunk], bs[kChunk], ys[kChunk];
                 for (int64_t i = lo; i < hi; i += kChunk) {
                   int64_t n = hi - i < kChunk ? hi - i : kChunk;
                   const float *pa = view(a, o1 + i * s1, s1, n, as);
                   const float *pb = view(b, o2 + i * s2, s2, n, bs);
                   float *py = target(y, o0 + i * s0, s0, ys);
                   binaryOp(op, pa, pb, py, n);
                   finish(y, o0 + i * s0, s0, n, py, ys);
                 }
               });
}

void binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
               const Walk &w) {
  if (w.numel() == 0)
    return;
  Walk c = collapse(w);
  int last = c.rank - 1;
  int64_t s0 = c.stride[0][last], s1 = c.stride[1][last],
          s2 = c.stride[2][last];
  const OpLoops &loops = opLoops();
  const Loops16 *one = loops16(loops, g.dtype);
  bool onePass = one && one->binaryBwd && dy.dtype == g.dtype &&
                 a.dtype == g.dtype && b.dtype == g.dtype && s0 == 1 &&
                 s1 == 1 && s2 == 1;
  forRowPieces(c, cpupool::kItemElements,
               [&](int64_t o0, int64_t o1, int64_t o2, int64_t lo, int64_t hi) {
                 if (onePass &&
                     one->binaryBwd(
                         op, which,
                         static_cast<const uint16_t *>(a.data) + o1 + lo,
                         static_cast<const uint16_t *>(b.data) + o2 + lo,
                         static_cast<const uint16_t *>(dy.data) + o0 + lo,
                         static_cast<uint16_t *>(g.data) + o0 + lo, hi - lo))
                   return;
                 float as[kChunk], bs[kChunk], ds[kChunk], gs[kChunk];
                 for (int64_t i = lo; i < hi; i += kChunk) {
                   int64_t n = hi - i < kChunk ? hi - i : kChunk;
                   const float *pa = view(a, o1 + i * s1, s1, n, as);
                   const float *pb = view(b, o2 + i * s2, s2, n, bs);
                   const float *pd = view(dy, o0 + i * s0, s0, n, ds);
                   float *pg = target(g, o0 + i * s0, s0, gs);
                   binaryBwdOp(op, which, pa, pb, pd, pg, n);
                   finish(g, o0 + i * s0, s0, n, pg, gs);
                 }
               });
}

void reduce(ReduceOp op, Buf y, Buf x, const Walk &outer, const Walk &inner) {
  int64_t count = inner.numel();
  if (outer.numel() == 0)
    return;
  // The inner walk's x strides (operand 1), collapsed on their own.
  Walk in;
  in.rank = inner.rank;
  for (int d = 0; d < inner.rank; ++d) {
    in.shape[d] = inner.shape[d];
    in.stride[1][d] = inner.stride[1][d];
  }
  Walk ci = collapse(in);
  int il = ci.rank - 1;
  int64_t len = count == 0 ? 0 : ci.shape[il];
  int64_t sx = ci.stride[1][il];
  Walk co = collapse(outer);
  int ol = co.rank - 1;
  // Outputs go in blocks of eight adjacent ones of the outer row: each
  // keeps its own f64 accumulator and adds its elements in the plain loop's
  // order, the eight side by side (laneSums: one output per lane).
  constexpr int kB = kLanes;
  static thread_local float buf[kB][kChunk];
  // Threads: pieces of the outputs (each output's sum is the same wherever
  // it runs), about kItemElements input elements per item.
  int64_t per = cpupool::kItemElements / std::max<int64_t>(count, 1);
  per = std::max<int64_t>(kB, (per + kB - 1) / kB * kB);
  forRowPieces(
      co, per,
      [&](int64_t yRow, int64_t xRow, int64_t, int64_t lo, int64_t hi) {
        for (int64_t k0 = lo; k0 < hi; k0 += kB) {
          int nb = hi - k0 < kB ? static_cast<int>(hi - k0) : kB;
          int64_t xo[kB];
          double acc[kB] = {};
          float m[kB];
          std::fill(m, m + kB, -INFINITY);
          for (int b = 0; b < nb; ++b)
            xo[b] = xRow + (k0 + b) * co.stride[1][ol];
          if (count > 0)
            forEachRow(ci, [&](int64_t, int64_t xi, int64_t) {
              for (int64_t i = 0; i < len; i += kChunk) {
                int64_t n = len - i < kChunk ? len - i : kChunk;
                const float *p[kB];
                for (int b = 0; b < nb; ++b)
                  p[b] = view(x, xo[b] + xi + i * sx, sx, n, buf[b]);
                if (op == ReduceOp::Max) {
                  for (int b = 0; b < nb; ++b) {
                    float mb = m[b];
                    for (int64_t j = 0; j < n; ++j) {
                      float v = p[b][j];
                      if (v > mb || v != v)
                        mb = (mb != mb) ? mb : v;
                    }
                    m[b] = mb;
                  }
                } else {
                  opLoops().laneSums(p, p, nb, n, acc, nullptr);
                }
              }
            });
          for (int b = 0; b < nb; ++b) {
            int64_t yo = yRow + (k0 + b) * co.stride[0][ol];
            if (op == ReduceOp::Max) {
              storeF32(y.data, y.dtype, yo, m[b]);
              continue;
            }
            double a = acc[b];
            if (op == ReduceOp::Mean)
              a /= static_cast<double>(count);
            storeF32(y.data, y.dtype, yo, static_cast<float>(a));
          }
        }
      });
}

namespace {

/// The value `m = x[j] > m ? x[j] : m` leaves after j = 0..n-1 from -inf:
/// the largest non-NaN element (which is order-independent except for the
/// sign of a zero maximum; that case takes the plain loop).
float rowMaxPlain(const float *x, int64_t n) {
  float m = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    m = x[j] > m ? x[j] : m;
  return m;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx"))) float rowMaxAVX(const float *x, int64_t n) {
  // _mm256_max_ps(a, b) is a > b ? a : b lane by lane (b where a is NaN);
  // four running maxima, so that the loop is not one chain of maxes.
  __m256 m8 = _mm256_set1_ps(-INFINITY), m8b = m8, m8c = m8, m8d = m8;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    m8 = _mm256_max_ps(_mm256_loadu_ps(x + j), m8);
    m8b = _mm256_max_ps(_mm256_loadu_ps(x + j + 8), m8b);
    m8c = _mm256_max_ps(_mm256_loadu_ps(x + j + 16), m8c);
    m8d = _mm256_max_ps(_mm256_loadu_ps(x + j + 24), m8d);
  }
  m8 = _mm256_max_ps(_mm256_max_ps(m8b, m8), _mm256_max_ps(m8d, m8c));
  for (; j + 8 <= n; j += 8)
    m8 = _mm256_max_ps(_mm256_loadu_ps(x + j), m8);
  float lanes[8];
  _mm256_storeu_ps(lanes, m8);
  float m = -INFINITY;
  for (int l = 0; l < 8; ++l)
    m = lanes[l] > m ? lanes[l] : m;
  for (; j < n; ++j)
    m = x[j] > m ? x[j] : m;
  return m;
}
#endif

float rowMax(const float *x, int64_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (cpufast::haveAVX2()) {
    float m = rowMaxAVX(x, n);
    if (m != 0.0f)
      return m;
  }
#endif
  return rowMaxPlain(x, n);
}

} // namespace

namespace {

/// Where row `ri` of a softmax over `dim` elements `inner` apart starts
/// (rows numbered outer index major, inner index minor).
int64_t rowBase(int64_t ri, int64_t dim, int64_t inner) {
  return ri / inner * dim * inner + ri % inner;
}

/// Up to kLanes rows of a kernel's operand, read as f32 (in place where
/// they are f32), with the scratch to do so; view() reads consecutive
/// contiguous rows.
struct LaneRows {
  int64_t cols = 0;
  std::vector<float> scratch;
  const float *row[kLanes] = {};
  void reset(int64_t c) {
    cols = c;
    scratch.resize(static_cast<size_t>(c) * kLanes);
  }
  float *lane(int k) { return scratch.data() + k * cols; }
  void view(Buf b, int64_t r0, int rows) {
    for (int k = 0; k < rows; ++k)
      row[k] = cpukern::view(b, (r0 + k) * cols, 1, cols, lane(k));
  }
};

} // namespace

void softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
             int64_t inner) {
  size_t n = static_cast<size_t>(dim);
  // Threads: whole rows per item; the rows' sums eight at a time (laneSums).
  forRows(outer * inner, dim, [&](int64_t r0, int64_t r1) {
    const OpLoops &loops = opLoops();
    thread_local LaneRows rows, es;
    thread_local std::vector<float> out;
    rows.reset(dim);
    es.reset(dim);
    out.resize(n);
    for (int64_t g0 = r0; g0 < r1; g0 += kLanes) {
      int nr = static_cast<int>(std::min<int64_t>(kLanes, r1 - g0));
      float m[kLanes];
      for (int k = 0; k < nr; ++k) {
        int64_t base = rowBase(g0 + k, dim, inner);
        const float *r = view(x, base, inner, dim, rows.lane(k));
        rows.row[k] = r;
        m[k] = rowMax(r, dim);
        // The exponentials, kept for the output (the values the sum adds).
        float *e = es.lane(k);
        loops.shift(r, m[k], e, dim);
        expN(e, e, dim);
        es.row[k] = e;
      }
      double sum[kLanes] = {};
      loops.laneSums(es.row, es.row, nr, dim, sum, nullptr);
      for (int k = 0; k < nr; ++k) {
        int64_t base = rowBase(g0 + k, dim, inner);
        const float *r = rows.row[k], *e = es.row[k];
        // y may be x itself: each output element is written after its
        // input element's last read.
        float *yr = target(y, base, inner, out.data());
        if (log) {
          // (x - max) - lse, rounded after each subtraction.
          float lse = logf(static_cast<float>(sum[k]));
          loops.shift(r, m[k], yr, dim);
          loops.shift(yr, lse, yr, dim);
        } else {
          loops.scale(e, static_cast<float>(1.0 / sum[k]), yr, dim);
        }
        finish(y, base, inner, dim, yr, out.data());
      }
    }
  });
}

void rowLses(Buf logits, int64_t r0, int64_t rows, int64_t classes,
             float *lse) {
  const OpLoops &loops = opLoops();
  thread_local LaneRows xs, es;
  xs.reset(classes);
  es.reset(classes);
  for (int64_t g0 = r0; g0 < r0 + rows; g0 += kLanes) {
    int nr = static_cast<int>(std::min<int64_t>(kLanes, r0 + rows - g0));
    float m[kLanes];
    xs.view(logits, g0, nr);
    for (int k = 0; k < nr; ++k) {
      m[k] = rowMax(xs.row[k], classes);
      float *e = es.lane(k);
      loops.shift(xs.row[k], m[k], e, classes);
      expN(e, e, classes);
      es.row[k] = e;
    }
    double s[kLanes] = {};
    loops.laneSums(es.row, es.row, nr, classes, s, nullptr);
    for (int k = 0; k < nr; ++k)
      lse[g0 - r0 + k] = m[k] + logf(static_cast<float>(s[k]));
  }
}

void crossEntropyBwdRow(Buf dlogits, Buf logits, int64_t base, int64_t classes,
                        int64_t label, float lse, float scale) {
  // Computed in dlogits' row itself where it is f32 (it may be the logits'
  // row: each element is read before it is written), else in scratch.
  thread_local std::vector<float> in, out;
  in.resize(static_cast<size_t>(classes));
  out.resize(static_cast<size_t>(classes));
  float *d = target(dlogits, base, 1, out.data());
  if (label == -100) {
    std::fill(d, d + classes, 0.0f);
    finish(dlogits, base, 1, classes, d, out.data());
    return;
  }
  // (softmax - one-hot) * scale: (p - 0) * scale is p * scale bit for bit
  // (p = exp(...) is never -0), so every class but the label's is scaled
  // and the label's term is computed on its own (none for a label out of
  // range, which counts as no class).
  const OpLoops &loops = opLoops();
  loops.shift(view(logits, base, 1, classes, in.data()), lse, d, classes);
  expN(d, d, classes);
  bool inRange = label >= 0 && label < classes;
  float atLabel = inRange ? d[label] : 0.0f;
  loops.scale(d, scale, d, classes);
  if (inRange)
    d[label] = (atLabel - 1.0f) * scale;
  finish(dlogits, base, 1, classes, d, out.data());
}

void softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer, int64_t dim,
                int64_t inner) {
  size_t n = static_cast<size_t>(dim);
  forRows(outer * inner, dim, [&](int64_t r0, int64_t r1) {
    const OpLoops &loops = opLoops();
    thread_local LaneRows gs, ys, gy;
    thread_local std::vector<float> e, out;
    gs.reset(dim);
    ys.reset(dim);
    gy.reset(log ? 0 : dim);
    e.resize(n);
    out.resize(n);
    for (int64_t g0 = r0; g0 < r1; g0 += kLanes) {
      int nr = static_cast<int>(std::min<int64_t>(kLanes, r1 - g0));
      for (int k = 0; k < nr; ++k) {
        int64_t base = rowBase(g0 + k, dim, inner);
        const float *g = view(dy, base, inner, dim, gs.lane(k));
        const float *yv = view(y, base, inner, dim, ys.lane(k));
        gs.row[k] = g;
        ys.row[k] = yv;
        if (log)
          continue;
        // The f32 products g y, which the sum adds.
        float *p = gy.lane(k);
        loops.binary(BinaryOp::Mul, g, yv, p, dim);
        gy.row[k] = p;
      }
      // Each row's f64 sum in order, eight rows at a time: of g
      // (log-softmax), of the products g y (softmax).
      double dot[kLanes] = {};
      const LaneRows &summed = log ? gs : gy;
      loops.laneSums(summed.row, summed.row, nr, dim, dot, nullptr);
      for (int k = 0; k < nr; ++k) {
        int64_t base = rowBase(g0 + k, dim, inner);
        const float *g = gs.row[k], *yv = ys.row[k];
        float s = static_cast<float>(dot[k]);
        // dx may be dy or y: each element is written after its last read.
        float *d = target(dx, base, inner, out.data());
        if (log) {
          expN(yv, e.data(), dim);
          loops.logSoftmaxDx(g, e.data(), s, d, dim);
        } else {
          loops.softmaxDx(yv, g, s, d, dim);
        }
        finish(dx, base, inner, dim, d, out.data());
      }
    }
  });
}

namespace {

/// Mean (0 for rms) and reciprocal std of a row from its f64 sums of x and
/// x^2 (laneSums).
void statsFromSums(bool rms, double s, double s2, int64_t cols, float eps,
                   float &mean, float &rstd) {
  double mu = rms ? 0.0 : s / cols;
  double var = rms ? s2 / cols : s2 / cols - mu * mu;
  if (var < 0)
    var = 0;
  mean = static_cast<float>(mu);
  rstd = static_cast<float>(1.0 / sqrt(var + eps));
}

/// Each row's mean and rstd of rows [r0, r0 + rows) of x (rows <= kLanes).
void laneStats(bool rms, LaneRows &x, Buf xb, int64_t r0, int rows, float eps,
               float *mean, float *rstd) {
  double s[kLanes] = {}, s2[kLanes] = {};
  x.view(xb, r0, rows);
  opLoops().laneSums(x.row, x.row, rows, x.cols, s, s2);
  for (int k = 0; k < rows; ++k)
    statsFromSums(rms, s[k], s2[k], x.cols, eps, mean[k], rstd[k]);
}

} // namespace

void norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows, int64_t cols,
          float eps) {
  size_t n = static_cast<size_t>(cols);
  std::vector<float> wv(w.data ? n : 0), bv(b.data ? n : 0);
  if (w.data)
    loadContig(w, 0, cols, wv.data());
  if (b.data)
    loadContig(b, 0, cols, bv.data());
  forRows(rows, cols, [&](int64_t r0, int64_t r1) {
    thread_local LaneRows xs;
    thread_local std::vector<float> out;
    xs.reset(cols);
    out.resize(n);
    for (int64_t g0 = r0; g0 < r1; g0 += kLanes) {
      int nr = static_cast<int>(std::min<int64_t>(kLanes, r1 - g0));
      float mean[kLanes], rstd[kLanes];
      laneStats(rms, xs, x, g0, nr, eps, mean, rstd);
      for (int k = 0; k < nr; ++k) {
        int64_t r = g0 + k;
        float *yr = target(y, r * cols, 1, out.data());
        opLoops().normOut(xs.row[k], mean[k], rstd[k],
                          w.data ? wv.data() : nullptr,
                          b.data ? bv.data() : nullptr, yr, cols);
        finish(y, r * cols, 1, cols, yr, out.data());
      }
    }
  });
}

namespace {

/// One row of the norm backward's dx: rstd (g - mean(g) - xhat mean(g xhat))
/// (RMS norm: no mean(g)), from the row's f64 sums of g and g xhat.
void normDxRow(Buf dx, int64_t base, int64_t cols, bool rms, float rstd,
               double sumG, double sumGX, const float *g, const float *xhat,
               float *scratch) {
  float meanG = rms ? 0.0f : static_cast<float>(sumG / cols);
  float meanGX = static_cast<float>(sumGX / cols);
  float *o = target(dx, base, 1, scratch);
  opLoops().normDx(g, xhat, rstd, meanG, meanGX, o, cols);
  finish(dx, base, 1, cols, o, scratch);
}

/// The backward's rows [r0, r0 + rows) (rows <= kLanes): their statistics
/// (into mean, rstd), and x-hat, g = dy w and the f64 sums of g and g x-hat
/// of each row, every row's in column order.
struct NormBwdLanes {
  LaneRows xs, ds, xhat, g;
  double sumG[kLanes], sumGX[kLanes];
  void reset(int64_t c) {
    for (LaneRows *l : {&xs, &ds, &xhat, &g})
      l->reset(c);
  }
  void compute(bool rms, Buf x, Buf dy, const std::vector<float> &wv,
               bool hasW, int64_t r0, int rows, float eps, float *mean,
               float *rstd) {
    laneStats(rms, xs, x, r0, rows, eps, mean, rstd);
    ds.view(dy, r0, rows);
    int64_t cols = xs.cols;
    for (int k = 0; k < rows; ++k) {
      float *xh = xhat.lane(k), *gk = g.lane(k);
      opLoops().normPrep(xs.row[k], ds.row[k], mean[k], rstd[k],
                         hasW ? wv.data() : nullptr, xh, gk, cols);
      xhat.row[k] = xh;
      g.row[k] = gk;
    }
    std::fill(sumG, sumG + kLanes, 0.0);
    std::fill(sumGX, sumGX + kLanes, 0.0);
    opLoops().laneSums(g.row, xhat.row, rows, cols, sumG, sumGX);
  }
};

/// normBwd over rows [r0, r1): the rows' statistics, dx row by row (written
/// after the row's last read, so dx may be dy or x), and dw and db (null:
/// not wanted) summed column by column over the rows in row order.
void normBwdRows(bool rms, Buf dx, Buf dy, Buf x, const std::vector<float> &wv,
                 bool hasW, int64_t r0, int64_t r1, int64_t cols, float eps,
                 double *dwAcc, double *dbAcc) {
  thread_local NormBwdLanes l;
  thread_local std::vector<float> out;
  l.reset(cols);
  out.resize(static_cast<size_t>(cols));
  for (int64_t g0 = r0; g0 < r1; g0 += kLanes) {
    int nr = static_cast<int>(std::min<int64_t>(kLanes, r1 - g0));
    float mean[kLanes], rstd[kLanes];
    l.compute(rms, x, dy, wv, hasW, g0, nr, eps, mean, rstd);
    for (int k = 0; k < nr; ++k) {
      const float *xh = l.xhat.row[k];
      if (dwAcc || dbAcc)
        opLoops().normAcc(l.ds.row[k], xh, dwAcc, dbAcc, cols);
      if (dx.data)
        normDxRow(dx, (g0 + k) * cols, cols, rms, rstd[k], l.sumG[k],
                  l.sumGX[k], l.g.row[k], xh, out.data());
    }
  }
}

} // namespace

int64_t normBwdBlockRows(int64_t rows, int64_t cols) {
  int64_t r = std::max<int64_t>(
      {cpupool::kItemElements / std::max<int64_t>(cols, 1), 64, rows / 64});
  return (r + kLanes - 1) / kLanes * kLanes;
}

void normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
             int64_t rows, int64_t cols, float eps) {
  size_t n = static_cast<size_t>(cols);
  std::vector<float> wv(w.data ? n : 0);
  if (w.data)
    loadContig(w, 0, cols, wv.data());
  // Threads: the blocks of rows, each in one pass over its x and dy rows
  // (dx, and the block's own column sums of dw and db); then the blocks'
  // sums added in block order, columns in chunks. The same blocks at every
  // thread count, so the same bits.
  int64_t per = normBwdBlockRows(rows, cols);
  // At least one block: with no rows, dw and db are sums of nothing (0).
  int64_t blocks = std::max<int64_t>(1, (rows + per - 1) / per);
  bool sums = dw.data || db.data;
  std::vector<double> acc(sums ? 2 * n * static_cast<size_t>(blocks) : 0, 0.0);
  auto block = [&](int64_t b) {
    double *a = sums ? acc.data() + 2 * b * cols : nullptr;
    normBwdRows(rms, dx, dy, x, wv, w.data != nullptr, b * per,
                std::min(rows, (b + 1) * per), cols, eps,
                dw.data ? a : nullptr, db.data ? a + cols : nullptr);
  };
  if (blocks == 1)
    block(0);
  else
    cpupool::parallelFor(blocks, block);
  if (!sums)
    return;
  int64_t perItem =
      std::max<int64_t>(16, cpupool::kItemElements / blocks);
  cpupool::forChunks(cols, perItem, [&](int64_t c0, int64_t c1) {
    for (int64_t j = c0; j < c1; ++j) {
      double sw = acc[j], sb = acc[cols + j];
      for (int64_t b = 1; b < blocks; ++b) {
        sw += acc[2 * b * cols + j];
        sb += acc[2 * b * cols + cols + j];
      }
      if (dw.data)
        storeF32(dw.data, dw.dtype, j, static_cast<float>(sw));
      if (db.data)
        storeF32(db.data, db.dtype, j, static_cast<float>(sb));
    }
  });
}

} // namespace cpukern
} // namespace ampc
