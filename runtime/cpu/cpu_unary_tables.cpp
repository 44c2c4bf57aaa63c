//===- cpu_unary_tables.cpp - 16-bit unary ops by table lookup -----------===//
//
// See cpu_unary_tables.h.
//
//===----------------------------------------------------------------------===//
#include "cpu_unary_tables.h"
#include "cpu_clones.h"
#include "cpu_kernels.h"

#include "../src/half.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#if AMPC_CPU_CLONES
#include <immintrin.h>
#endif

namespace ampc {
namespace cputable {
namespace {

constexpr int64_t kCodes = 65536;

/// How an op's backward is written: dy * A (one factor) or (dy * A) * B.
enum class Factors { None, One, Two };

Factors factorsOf(UnaryOp op) {
  switch (op) {
  case UnaryOp::Exp:      // dy * exp(x)
  case UnaryOp::Gelu:     // dy * (cdf + x pdf)
  case UnaryOp::GeluTanh: // dy * (0.5 (1 + t) + ...)
  case UnaryOp::Tanh:     // dy * (1 - t^2)
    return Factors::One;
  case UnaryOp::Sigmoid: // dy * s * (1 - s)
  case UnaryOp::Silu:    // dy * s * (1 + x (1 - s))
    return Factors::Two;
  default:
    return Factors::None;
  }
}

/// The tables of one op and dtype, and their storage.
struct Built {
  Table table;
  std::vector<uint16_t> fwd;
  std::vector<float> a, b;
};

/// Every code of `dt`, widened exactly.
std::vector<float> allInputs(ampc_dtype dt) {
  std::vector<float> xs(kCodes);
  for (int64_t c = 0; c < kCodes; ++c)
    xs[c] = dt == AMPC_BF16 ? bf16ToF32(static_cast<uint16_t>(c))
                            : f16ToF32(static_cast<uint16_t>(c));
  return xs;
}

Buf f32Buf(std::vector<float> &v) { return Buf{v.data(), AMPC_F32}; }

std::unique_ptr<Built> buildForward(UnaryOp op, ampc_dtype dt) {
  auto t = std::make_unique<Built>();
  std::vector<float> xs = allInputs(dt), ys(kCodes);
  UnaryAttrs none{};
  // The op's f32 kernel over every input, then the element loop's rounding.
  cpukern::unary(op, none, f32Buf(ys), f32Buf(xs), kCodes);
  t->fwd.assign(kCodes + 1, 0); // + 1: the 4-byte gathers' last read
  cpukern::storeContig(Buf{t->fwd.data(), dt}, 0, kCodes, ys.data());
  t->table = Table{dt, t->fwd.data(), nullptr, nullptr};
  return t;
}

std::unique_ptr<Built> buildBackward(UnaryOp op, ampc_dtype dt) {
  auto t = std::make_unique<Built>();
  std::vector<float> xs = allInputs(dt);
  UnaryAttrs none{};
  t->a.assign(kCodes, 0.0f);
  if (factorsOf(op) == Factors::One) {
    // The factor is the gradient of dy = 1: 1 * A is A, bit for bit.
    std::vector<float> ones(kCodes, 1.0f);
    cpukern::unaryBwd(op, none, f32Buf(t->a), f32Buf(ones), f32Buf(xs),
                      kCodes);
  } else {
    // s = sigmoid(x) as the op's kernels compute it, then the second
    // factor's expression.
    cpukern::unary(UnaryOp::Sigmoid, none, f32Buf(t->a), f32Buf(xs), kCodes);
    t->b.resize(kCodes);
    for (int64_t c = 0; c < kCodes; ++c) {
      float s = t->a[c];
      t->b[c] = op == UnaryOp::Sigmoid ? 1.0f - s : 1.0f + xs[c] * (1.0f - s);
    }
  }
  t->table = Table{dt, nullptr, t->a.data(), t->b.empty() ? nullptr
                                                          : t->b.data()};
  return t;
}

std::atomic<bool> tablesOn{true};

/// The tables built so far, by op, dtype and direction.
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<Built>> slots;
  std::atomic<const Table *> ready[2][2][64] = {};

  const Table *get(UnaryOp op, ampc_dtype dt, bool bwd) {
    if (!tablesOn.load(std::memory_order_relaxed) ||
        factorsOf(op) == Factors::None ||
        (dt != AMPC_BF16 && dt != AMPC_F16))
      return nullptr;
    size_t o = static_cast<size_t>(op);
    if (o >= 64)
      return nullptr;
    std::atomic<const Table *> &slot = ready[dt == AMPC_F16][bwd][o];
    if (const Table *t = slot.load(std::memory_order_acquire))
      return t;
    std::lock_guard<std::mutex> lock(mutex);
    if (const Table *t = slot.load(std::memory_order_acquire))
      return t;
    slots.push_back(bwd ? buildBackward(op, dt) : buildForward(op, dt));
    slot.store(&slots.back()->table, std::memory_order_release);
    return &slots.back()->table;
  }
};

Registry &registry() {
  static Registry r;
  return r;
}

/// Gradients are formed a block at a time in f32, then rounded by the
/// contiguous conversions (the element loop's rounding).
constexpr int64_t kBlock = 256;

void storeBlock(ampc_dtype dt, const float *v, uint16_t *g, int64_t k) {
  cpukern::storeContig(Buf{g, dt}, 0, k, v);
}

struct Lookups {
  void (*fwd)(const Table &, const uint16_t *, uint16_t *, int64_t);
  void (*bwd)(const Table &, const uint16_t *, const uint16_t *, uint16_t *,
              int64_t);
};

AMPC_ALWAYS_INLINE inline void fwdElements(const Table &t, const uint16_t *x,
                                           uint16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = t.fwd[x[i]];
}

/// v[j] = the unrounded gradient of element j (no restrict: g may alias).
AMPC_ALWAYS_INLINE inline void bwdElements(const Table &t, const uint16_t *x,
                                           const uint16_t *dy, float *v,
                                           int64_t n) {
  if (t.b)
    for (int64_t j = 0; j < n; ++j)
      v[j] = loadF32(dy, t.dtype, j) * t.a[x[j]] * t.b[x[j]];
  else
    for (int64_t j = 0; j < n; ++j)
      v[j] = loadF32(dy, t.dtype, j) * t.a[x[j]];
}

#define AMPC_TABLE_LOOKUPS(SUFFIX, TARGET)                                     \
  TARGET AMPC_FLATTEN void fwd##SUFFIX(const Table &t, const uint16_t *x,     \
                                       uint16_t *y, int64_t n) {               \
    fwdElements(t, x, y, n);                                                   \
  }                                                                            \
  TARGET AMPC_FLATTEN void bwd##SUFFIX(const Table &t, const uint16_t *x,     \
                                       const uint16_t *dy, uint16_t *g,        \
                                       int64_t n) {                            \
    float v[kBlock];                                                           \
    for (int64_t i = 0; i < n; i += kBlock) {                                  \
      int64_t k = n - i < kBlock ? n - i : kBlock;                             \
      bwdElements(t, x + i, dy + i, v, k);                                     \
      storeBlock(t.dtype, v, g + i, k);                                        \
    }                                                                          \
  }

AMPC_TABLE_LOOKUPS(Base, )
const Lookups lookupsBase = {fwdBase, bwdBase};

#if AMPC_CPU_CLONES
AMPC_TABLE_LOOKUPS(AVX2, AMPC_AVX2_TARGET)
const Lookups lookupsAVX2 = {fwdAVX2, bwdAVX2};

// GCC 12's AVX-512 intrinsics start some results from a self-initialised
// "undefined" vector, which -Wmaybe-uninitialized reports (as in
// cpu_fast.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Sixteen lanes a gather: the indices are the 16-bit codes, zero-extended.
// The forward gathers 4 bytes at 2 * code and keeps the low 16 bits (the
// table's padding entry covers the last code's upper half).
AMPC_AVX512_TARGET void fwdAVX512(const Table &t, const uint16_t *x,
                                  uint16_t *y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i idx = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + i)));
    __m512i v = _mm512_i32gather_epi32(idx, t.fwd, 2);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(y + i),
                        _mm512_cvtepi32_epi16(v));
  }
  fwdElements(t, x + i, y + i, n - i);
}

AMPC_AVX512_TARGET void bwdAVX512(const Table &t, const uint16_t *x,
                                  const uint16_t *dy, uint16_t *g,
                                  int64_t n) {
  float v[kBlock];
  bool bf16 = t.dtype == AMPC_BF16;
  for (int64_t i = 0; i < n; i += kBlock) {
    int64_t k = n - i < kBlock ? n - i : kBlock, j = 0;
    for (; j + 16 <= k; j += 16) {
      __m512i idx = _mm512_cvtepu16_epi32(
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + i + j)));
      __m256i d16 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(dy + i + j));
      // Both widenings are exact.
      __m512 d = bf16 ? _mm512_castsi512_ps(
                            _mm512_slli_epi32(_mm512_cvtepu16_epi32(d16), 16))
                      : _mm512_cvtph_ps(d16);
      __m512 r = _mm512_mul_ps(d, _mm512_i32gather_ps(idx, t.a, 4));
      if (t.b)
        r = _mm512_mul_ps(r, _mm512_i32gather_ps(idx, t.b, 4));
      _mm512_storeu_ps(v + j, r);
    }
    bwdElements(t, x + i + j, dy + i + j, v + j, k - j);
    storeBlock(t.dtype, v, g + i, k);
  }
}
const Lookups lookupsAVX512 = {fwdAVX512, bwdAVX512};
#pragma GCC diagnostic pop
#endif

AMPC_CLONE_SET(Lookups, lookups, lookupClones)

} // namespace

const Table *forward(UnaryOp op, ampc_dtype dt) {
  return registry().get(op, dt, false);
}
const Table *backward(UnaryOp op, ampc_dtype dt) {
  return registry().get(op, dt, true);
}

void lookup(const Table &t, const uint16_t *x, uint16_t *y, int64_t n) {
  lookupClones().get().fwd(t, x, y, n);
}
void lookupBwd(const Table &t, const uint16_t *x, const uint16_t *dy,
               uint16_t *g, int64_t n) {
  lookupClones().get().bwd(t, x, dy, g, n);
}

void useTablesForTesting(bool on) { tablesOn.store(on); }
void useLookupsForTesting(cpufast::ConvertIsa isa) {
  lookupClones().use(isa);
}

} // namespace cputable
} // namespace ampc
