//===- test_cpu_kernels.cpp - The CPU backend's row kernels ---------------===//
//
// The row-wise kernels of runtime/cpu/cpu_kernels.cpp, the optimizer and
// overflow-check loops of runtime/cpu/cpu_update.cpp and the vector expf,
// erff and tanhf of runtime/cpu/cpu_vmath.cpp (at each vector width) give
// the bits of the plain element loops they replaced (written out here as
// the references) and of libm.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "cpu/cpu_isa.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_pool.h"
#include "cpu/cpu_unary_tables.h"
#include "cpu/cpu_update.h"
#include "cpu/cpu_vmath.h"

#include <math.h>

using namespace ampc;
using ampc_test::bitsOf;
using ampc_test::clipNormSquares;
using ampc_test::fromBits;
using ampc_test::randomTensor;
using ampc_test::rng;

namespace {



/// Bit equality of two f32 arrays: every element the same bits (with
/// `anyNaN`, a NaN equals any NaN: where two NaNs meet in an addition or a
/// product, which one's sign and payload survive depends on the operand
/// order the compiler picked for the commutative operation, in the
/// reference as in the kernel, and differs between optimisation levels).
::testing::AssertionResult sameBits(const std::vector<float> &a,
                                    const std::vector<float> &b,
                                    bool anyNaN = false) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (bitsOf(a[i]) != bitsOf(b[i]) &&
        !(anyNaN && std::isnan(a[i]) && std::isnan(b[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " (0x" << std::hex
             << bitsOf(a[i]) << ") vs " << b[i] << " (0x" << bitsOf(b[i])
             << ")";
  return ::testing::AssertionSuccess();
}

/// The plain element walk (cpukern::forEach) the row kernels replace.
template <typename F> void forEachRef(const Walk &w, F &&f) {
  cpukern::forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t o2) {
    f(o0, o1, o2);
  });
}

/// Values with zeros of both signs, infinities, NaN, ties and a spread of
/// magnitudes.
std::vector<float> mixedValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(n);
  const float specials[] = {0.0f,      -0.0f, 1.0f, -1.0f, INFINITY,
                            -INFINITY, NAN,   2.0f, 0.5f,  100.0f};
  for (size_t i = 0; i < n; ++i)
    v[i] = (rng() % 16 == 0) ? specials[rng() % 10] : normal(rng);
  return v;
}

/// Storage of `values` in dtype dt (the conversions of half.h).
std::vector<uint8_t> store(const std::vector<float> &values, ampc_dtype dt) {
  std::vector<uint8_t> out(values.size() * ampc_test::elemSize(dt) + 8);
  for (size_t i = 0; i < values.size(); ++i)
    storeF32(out.data(), dt, static_cast<int64_t>(i), values[i]);
  return out;
}

std::vector<float> loadAll(const std::vector<uint8_t> &bytes, ampc_dtype dt,
                           size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = loadF32(bytes.data(), dt, static_cast<int64_t>(i));
  return v;
}

Walk makeWalk(std::vector<int64_t> shape,
              std::vector<std::vector<int64_t>> strides) {
  Walk w;
  w.rank = static_cast<int>(shape.size());
  for (int d = 0; d < w.rank; ++d) {
    w.shape[d] = shape[d];
    for (size_t k = 0; k < strides.size(); ++k)
      w.stride[k][d] = strides[k][d];
  }
  return w;
}

/// Contiguous row-major strides of a shape; 0 where `bcast` marks a dim.
std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape,
                              std::vector<bool> bcast = {}) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    bool b = !bcast.empty() && bcast[d];
    st[d] = b ? 0 : s;
    if (!b)
      s *= shape[d];
  }
  return st;
}

int64_t span(const Walk &w, int k) {
  int64_t m = 0;
  for (int d = 0; d < w.rank; ++d)
    m += w.stride[k][d] * (w.shape[d] - 1);
  return m + 1;
}

} // namespace

namespace {

/// Runs `check` with expN, erfN and tanhN on each width this machine has (16
/// lanes, 8 lanes, libm), then restores the width in use; the vector widths
/// the machine lacks are reported as skipped.
template <typename F> void onEveryVectorWidth(F &&check) {
  const int inUse = cpukern::vectorLanes();
  std::printf("vector expf, erff and tanhf in use: %d lanes\n", inUse);
  for (int lanes : {16, 8, 1}) {
    if (!cpukern::useVectorLanes(lanes)) {
      // Where the CPU (and AMPC_CPU_ISA) allow the width, only a failed
      // self-check refuses it: a wrong vector path would otherwise pass
      // these tests by falling back.
      const bool allowed =
          !getenv("AMPC_CPU_SCALAR_MATH") &&
          cpuisa::usable(lanes == 16 ? cpuisa::Isa::Avx512 : cpuisa::Isa::Avx2);
      EXPECT_FALSE(allowed)
          << "expf on " << lanes << " lanes fails its self-check";
      std::printf("  %d lanes: not usable here (CPU, AMPC_CPU_ISA or "
                  "AMPC_CPU_SCALAR_MATH), skipped\n",
                  lanes);
      continue;
    }
    SCOPED_TRACE(::testing::Message() << lanes << " lanes");
    check();
  }
  ASSERT_TRUE(cpukern::useVectorLanes(inUse));
}

using ArrayFn = void (*)(const float *, float *, int64_t);

/// Checks fn (expN, erfN or tanhN at the width in use) against libm's ref
/// on the f32 patterns start, start + step, ... below 2^32: every 61st with
/// a vector width, every 610th with libm itself (whose check against itself
/// only guards the driver loop).
void checkPatterns(ArrayFn fn, float (*ref)(float), uint64_t start) {
  const uint64_t step = cpukern::vectorLanes() > 1 ? 61 : 610;
  constexpr int64_t kBlock = 1 << 16;
  std::vector<float> in(kBlock), out(kBlock);
  int64_t checked = 0, differing = 0;
  uint64_t u = start;
  while (u < (1ull << 32)) {
    int64_t n = 0;
    for (; n < kBlock && u < (1ull << 32); ++n, u += step)
      in[n] = fromBits(static_cast<uint32_t>(u));
    fn(in.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i)
      differing += bitsOf(out[i]) != bitsOf(ref(in[i]));
    checked += n;
  }
  EXPECT_EQ(differing, 0) << "of " << checked;
  EXPECT_GT(checked, static_cast<int64_t>((1ull << 32) / step) - 1);
}

/// Checks fn on all of `in` (libm's results `want`), then on every length
/// to 40 from `at` (each tail of both widths), poisoned past the end so
/// that a tail that stores too much shows.
void checkRunAndTails(ArrayFn fn, const std::vector<float> &in,
                      const std::vector<float> &want, int64_t at) {
  std::vector<float> got(in.size());
  fn(in.data(), got.data(), static_cast<int64_t>(in.size()));
  EXPECT_TRUE(sameBits(got, want));
  for (int64_t len = 0; len <= 40; ++len) {
    std::vector<float> g(len + 17, 123.0f);
    fn(in.data() + at, g.data(), len);
    std::vector<float> w(want.begin() + at, want.begin() + at + len);
    w.resize(len + 17, 123.0f);
    EXPECT_TRUE(sameBits(g, w)) << "length " << len << " at " << at;
  }
}

/// Every pattern within 2048 of each of `bounds`, both signs.
std::vector<float> around(std::initializer_list<uint32_t> bounds) {
  std::vector<float> edge;
  for (uint32_t b : bounds)
    for (uint32_t d = 0; d < 4096; ++d) {
      edge.push_back(fromBits(b - 2048 + d));
      edge.push_back(fromBits((b - 2048 + d) | 0x80000000u));
    }
  return edge;
}

} // namespace

TEST(CpuKernels, ExpMatchesLibmOnEvery61stPattern) {
  onEveryVectorWidth([] { checkPatterns(cpukern::expN, expf, 0); });
}

TEST(CpuKernels, ErfMatchesLibmOnEvery61stPattern) {
  // Every pattern at the boundaries of its ranges (0.84375, 1.25, 1/0.35,
  // 6, 2^-28).
  std::vector<float> edge =
      around({0x3f580000u, 0x3fa00000u, 0x4036db6eu, 0x40c00000u, 0x31800000u});
  // The same values shuffled, so that the lanes of one vector lie in
  // different ranges (the vector code skips the ranges no lane lies in).
  const size_t half = edge.size();
  uint32_t h = 0x2545f491u;
  for (size_t i = 0; i < half; ++i) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    edge.push_back(edge[h % half]);
  }
  std::vector<float> want(edge.size());
  for (size_t i = 0; i < edge.size(); ++i)
    want[i] = erff(edge[i]);
  onEveryVectorWidth([&] {
    // A width whose expf agrees but whose erff fails its self-check would
    // leave erfN on libm and pass the checks below.
    EXPECT_EQ(cpukern::vectorErf(), cpukern::vectorLanes() > 1);
    checkPatterns(cpukern::erfN, erff, 7);
    // The tails in the shuffled half, with lanes in several ranges.
    checkRunAndTails(cpukern::erfN, edge, want, int64_t(half) + 8191);
  });
}

TEST(CpuKernels, TanhMatchesLibmOnEvery61stPattern) {
  // Every pattern at the boundaries of tanhf's ranges (2^-55, 1, 22) and of
  // expm1f's reconstruction ranges for the arguments tanhf passes (|x| =
  // ln2 / 4, 1.5 ln2 / 2, where k = +-1, and 2^-26).
  std::vector<float> edge = around({0x24000000u, 0x3f800000u, 0x41b00000u,
                                    0x3e317218u, 0x3f051592u, 0x32800000u});
  std::vector<float> want(edge.size());
  for (size_t i = 0; i < edge.size(); ++i)
    want[i] = tanhf(edge[i]);
  onEveryVectorWidth([&] {
    // As for erff: a failed self-check would leave tanhN on libm.
    EXPECT_EQ(cpukern::vectorTanh(), cpukern::vectorLanes() > 1);
    checkPatterns(cpukern::tanhN, tanhf, 11);
    checkRunAndTails(cpukern::tanhN, edge, want, 2043);
  });
}

TEST(CpuKernels, ExpMatchesLibmAroundItsSpecialCases) {
  // Every pattern from 87 to 89 and from -88 to -105, where libm switches
  // paths, and odd lengths for the tails.
  std::vector<float> in;
  for (uint32_t b = bitsOf(87.0f); b <= bitsOf(89.0f); b += 3)
    in.push_back(fromBits(b));
  for (uint32_t b = bitsOf(-88.0f); b <= bitsOf(-105.0f); b += 3)
    in.push_back(fromBits(b));
  in.push_back(INFINITY);
  in.push_back(-INFINITY);
  in.push_back(NAN);
  in.push_back(-NAN);
  in.push_back(fromBits(0x7f800001u));
  std::vector<float> want(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    want[i] = expf(in[i]);
  // Every length to 40 (each tail of both vector widths, from 0), then the
  // whole run and one that ends 3 short; each starting at an odd offset, so
  // that the special lanes fall in masked tails too.
  std::vector<int64_t> lens;
  for (int64_t len = 0; len <= 40; ++len)
    lens.push_back(len);
  lens.push_back(int64_t(in.size()));
  lens.push_back(int64_t(in.size()) - 3);
  onEveryVectorWidth([&] {
    for (int64_t len : lens)
      for (int64_t at : {int64_t(0), int64_t(in.size()) - len,
                         (int64_t(in.size()) - len) / 3}) {
        // Poison past the end: a tail that stores too much shows.
        std::vector<float> got(len + 17, 123.0f);
        cpukern::expN(in.data() + at, got.data(), len);
        std::vector<float> w(want.begin() + at, want.begin() + at + len);
        w.resize(len + 17, 123.0f);
        EXPECT_TRUE(sameBits(got, w)) << "length " << len << " at " << at;
      }
  });
}

TEST(CpuKernels, ExpOpsMatchTheScalarStructs) {
  std::vector<float> x;
  for (uint32_t u = 0; u < (1u << 20); ++u)
    x.push_back(fromBits(u * 4093u));
  for (int i = 0; i < 200000; ++i)
    x.push_back(-30.0f + 60.0f * static_cast<float>(i) / 200000);
  std::vector<float> dy = mixedValues(x.size(), 3);
  for (size_t i = 0; i < dy.size(); ++i)
    if (std::isnan(dy[i]))
      dy[i] = 1.5f;
  int64_t n = static_cast<int64_t>(x.size());
  UnaryAttrs attrs{};
  for (UnaryOp op : {UnaryOp::Exp, UnaryOp::Sigmoid, UnaryOp::Silu,
                     UnaryOp::Gelu, UnaryOp::Tanh, UnaryOp::GeluTanh,
                     UnaryOp::Relu}) {
    std::vector<float> want(n), got(n), gWant(n), gGot(n);
    for (int64_t i = 0; i < n; ++i) {
      want[i] = unaryForward(op, x[i], attrs);
      gWant[i] = unaryBackward(op, x[i], dy[i], attrs);
    }
    cpukern::unary(op, attrs, Buf{got.data(), AMPC_F32},
                   Buf{x.data(), AMPC_F32}, n);
    cpukern::unaryBwd(op, attrs, Buf{gGot.data(), AMPC_F32},
                      Buf{dy.data(), AMPC_F32}, Buf{x.data(), AMPC_F32}, n);
    // NaN inputs give NaN; which NaN operand of a product survives depends
    // on the operand order the compiler picks (see sameBits).
    EXPECT_TRUE(sameBits(got, want, /*anyNaN=*/true))
        << "op " << static_cast<int>(op);
    EXPECT_TRUE(sameBits(gGot, gWant, /*anyNaN=*/true))
        << "op " << static_cast<int>(op);
  }
}

TEST(CpuKernels, CollapseMergesContiguousDims) {
  // [2, 3, 4, 5] + a per-channel [1, 3, 1, 1] bias: H and W merge.
  std::vector<int64_t> shape = {2, 3, 4, 5};
  Walk w = makeWalk(shape, {rowMajor(shape), rowMajor(shape),
                            rowMajor(shape, {true, false, true, true})});
  Walk c = cpukern::collapse(w);
  ASSERT_EQ(c.rank, 3);
  EXPECT_EQ(c.shape[0], 2);
  EXPECT_EQ(c.shape[1], 3);
  EXPECT_EQ(c.shape[2], 20);
  EXPECT_EQ(c.stride[2][2], 0);
  EXPECT_EQ(c.stride[2][1], 1);
  // Fully contiguous: one dim.
  Walk f = cpukern::collapse(
      makeWalk(shape, {rowMajor(shape), rowMajor(shape), rowMajor(shape)}));
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.shape[0], 120);
}

namespace {

struct WalkCase {
  const char *name;
  Walk w;
};

std::vector<WalkCase> walkCases() {
  std::vector<WalkCase> cs;
  std::vector<int64_t> s4 = {3, 5, 7, 9};
  cs.push_back(
      {"contiguous", makeWalk(s4, {rowMajor(s4), rowMajor(s4), rowMajor(s4)})});
  cs.push_back({"channel bias",
                makeWalk(s4, {rowMajor(s4), rowMajor(s4),
                              rowMajor(s4, {true, false, true, true})})});
  cs.push_back(
      {"row scalar",
       makeWalk(s4, {rowMajor(s4), rowMajor(s4, {false, false, false, true}),
                     rowMajor(s4)})});
  cs.push_back(
      {"both broadcast",
       makeWalk(s4, {rowMajor(s4), rowMajor(s4, {true, true, false, false}),
                     rowMajor(s4, {false, false, true, true})})});
  // a transposed (strided last dim), b a scalar.
  std::vector<int64_t> s2 = {37, 1500};
  cs.push_back({"transposed", makeWalk(s2, {{1500, 1}, {1, 37}, {0, 0}})});
  std::vector<int64_t> s1 = {2500};
  cs.push_back({"long row", makeWalk(s1, {{1}, {1}, {0}})});
  return cs;
}

} // namespace

TEST(CpuKernels, BinaryMatchesTheElementLoop) {
  for (const WalkCase &c : walkCases())
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16, AMPC_I32})
      for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div,
                          BinaryOp::Maximum, BinaryOp::Pow, BinaryOp::Less}) {
        // i32 results of / and ** can be out of int32's range (a cast
        // without a defined result): the integer runs use the other ops.
        if (dt == AMPC_I32 && (op == BinaryOp::Div || op == BinaryOp::Pow))
          continue;
        const Walk &w = c.w;
        size_t na = span(w, 1), nb = span(w, 2), ny = span(w, 0);
        std::vector<float> av = mixedValues(na, 1), bv = mixedValues(nb, 2);
        if (dt == AMPC_I32)
          for (std::vector<float> *v : {&av, &bv})
            for (float &e : *v)
              e = std::isfinite(e) ? e : 3.0f;
        auto ab = store(av, dt);
        auto bb = store(bv, dt);
        ampc_dtype yt = op == BinaryOp::Less ? AMPC_BOOL : dt;
        std::vector<uint8_t> yWant(ny * 8 + 8, 0xcd), yGot(ny * 8 + 8, 0xcd);
        forEachRef(w, [&](int64_t o0, int64_t o1, int64_t o2) {
          storeF32(yWant.data(), yt, o0,
                   binaryForward(op, loadF32(ab.data(), dt, o1),
                                 loadF32(bb.data(), dt, o2)));
        });
        cpukern::binary(op, Buf{yGot.data(), yt}, Buf{ab.data(), dt},
                        Buf{bb.data(), dt}, w);
        EXPECT_EQ(yWant, yGot)
            << c.name << " dtype " << dt << " op " << static_cast<int>(op);
      }
}

TEST(CpuKernels, BinaryBwdMatchesTheElementLoop) {
  for (const WalkCase &c : walkCases())
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16})
      for (BinaryOp op :
           {BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Minimum})
        for (int which : {0, 1}) {
          const Walk &w = c.w;
          size_t na = span(w, 1), nb = span(w, 2), ny = span(w, 0);
          auto ab = store(mixedValues(na, 4), dt);
          auto bb = store(mixedValues(nb, 5), dt);
          auto db = store(mixedValues(ny, 6), dt);
          std::vector<uint8_t> gWant(ny * 4 + 8, 0xcd), gGot(ny * 4 + 8, 0xcd);
          forEachRef(w, [&](int64_t o0, int64_t o1, int64_t o2) {
            storeF32(gWant.data(), dt, o0,
                     binaryBackward(op, which, loadF32(ab.data(), dt, o1),
                                    loadF32(bb.data(), dt, o2),
                                    loadF32(db.data(), dt, o0)));
          });
          cpukern::binaryBwd(op, which, Buf{gGot.data(), dt},
                             Buf{db.data(), dt}, Buf{ab.data(), dt},
                             Buf{bb.data(), dt}, w);
          EXPECT_EQ(gWant, gGot) << c.name << " dtype " << dt << " op "
                                 << static_cast<int>(op) << " which " << which;
        }
}

namespace {

void softmaxRef(bool log, float *y, const float *x, int64_t outer, int64_t dim,
                int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * dim * inner + in;
      float m = -INFINITY;
      for (int64_t j = 0; j < dim; ++j)
        m = x[base + j * inner] > m ? x[base + j * inner] : m;
      double sum = 0.0;
      for (int64_t j = 0; j < dim; ++j)
        sum += expf(x[base + j * inner] - m);
      float lse = logf(static_cast<float>(sum));
      float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < dim; ++j) {
        float v = x[base + j * inner];
        y[base + j * inner] = log ? v - m - lse : expf(v - m) * inv;
      }
    }
}

void softmaxBwdRef(bool log, float *dx, const float *dy, const float *y,
                   int64_t outer, int64_t dim, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * dim * inner + in;
      double dot = 0.0;
      for (int64_t j = 0; j < dim; ++j) {
        float g = dy[base + j * inner];
        dot += log ? g : g * y[base + j * inner];
      }
      float s = static_cast<float>(dot);
      for (int64_t j = 0; j < dim; ++j) {
        int64_t i = base + j * inner;
        dx[i] = log ? dy[i] - expf(y[i]) * s : y[i] * (dy[i] - s);
      }
    }
}

/// Runs f with the loops of each instruction set the processor has
/// (cpukern::useOpLoopsForTesting, cpuupdate::useUpdateLoopsForTesting),
/// then goes back to the default; the number of instruction sets tried.
template <typename F> int onEveryIsasLoops(F f) {
  using cpufast::ConvertIsa;
  int tested = 0;
  for (ConvertIsa isa : {ConvertIsa::Scalar, ConvertIsa::AVX2,
                         ConvertIsa::AVX512, ConvertIsa::AVX512BF16}) {
    if (!cpufast::convertSupported(isa))
      continue;
    ++tested;
    cpukern::useOpLoopsForTesting(isa);
    cpuupdate::useUpdateLoopsForTesting(isa);
    SCOPED_TRACE(cpufast::convertIsaName(isa));
    f();
  }
  cpukern::useOpLoopsForTesting(cpufast::convertIsa());
  cpuupdate::useUpdateLoopsForTesting(cpufast::convertIsa());
  return tested;
}

} // namespace

// The gradient-norm clip sums its squares in one documented order
// (clipNormSquares): the same bits with every instruction set's loops and
// at 1, 2 and 3 threads. An f64 gradient makes the f64 sum itself visible:
// the f64 gradients are scaled by max_norm / (sqrt(sum) + 1e-6) in f64, the
// others by that coefficient's f32 rounding, each rounded once to its type.
TEST(CpuKernels, ClipGradNormSumsInTheDocumentedOrder) {
  ampc_context ctx = nullptr;
  ASSERT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), AMPC_OK);
  // 70001 f32 values (three blocks, the last of one element), 40000 f16
  // (two blocks, widened a piece at a time), 33 bf16 (two groups of lanes
  // and one value) and 1000 f64 with all 53 bits in use.
  ampc_test::Tensor a = randomTensor({70001}, AMPC_F32, -1, 1),
                    b = randomTensor({40000}, AMPC_F16, -3, 3),
                    c = randomTensor({33}, AMPC_BF16, -2, 2),
                    d({1000}, AMPC_F64);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (int64_t i = 0; i < d.size(); ++i)
    reinterpret_cast<double *>(d.data())[i] = u(rng());
  double sq = clipNormSquares({a.values(), b.values(), c.values(), d.values()});
  float norm = static_cast<float>(std::sqrt(sq));
  double coef64 = 0.5 / (std::sqrt(sq) + 1e-6);
  float coef = static_cast<float>(coef64);
  int saved = cpupool::threadCount();
  int isas = onEveryIsasLoops([&] {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(threads);
      cpupool::setThreadCount(threads);
      ampc_test::Tensor a1 = a, b1 = b, c1 = c, d1 = d;
      void *gs[4] = {a1.data(), b1.data(), c1.data(), d1.data()};
      ampc_dtype dts[4] = {a.dtype, b.dtype, c.dtype, d.dtype};
      int64_t n[4] = {a.size(), b.size(), c.size(), d.size()};
      float got = 0;
      ASSERT_EQ(
          ampc_clip_grad_norm(ctx, &got, gs, dts, n, 4, 0.5, nullptr, AMPC_F32),
          AMPC_OK)
          << ampc_last_error();
      EXPECT_EQ(got, norm);
      for (int64_t i = 0; i < d.size(); ++i)
        ASSERT_EQ(d1.get(i), d.get(i) * coef64) << "f64 element " << i;
      for (int64_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(a1.get(i), static_cast<float>(a.get(i)) * coef)
            << "f32 element " << i;
      for (int64_t i = 0; i < b.size(); ++i)
        ASSERT_EQ(b1.get(i),
                  f16ToF32(f32ToF16(static_cast<float>(b.get(i)) * coef)))
            << "f16 element " << i;
      for (int64_t i = 0; i < c.size(); ++i)
        ASSERT_EQ(c1.get(i),
                  bf16ToF32(f32ToBf16(static_cast<float>(c.get(i)) * coef)))
            << "bf16 element " << i;
    }
  });
  cpupool::setThreadCount(saved);
  EXPECT_GE(isas, 1);

  // Data on which other orders give other sums: 2^27 (square 2^54, whose
  // ulp is 4) then fifteen 1s, at the start of each of two blocks. In the
  // documented order each block sums to 2^54 + 12 and the total is
  // 2^55 + 24; a sequential sum (over the elements or over the lanes) loses
  // every 1 (2^55), and one block instead of two gives 2^55 + 8.
  ampc_test::Tensor e({32768 + 16}, AMPC_F64);
  double *ep = reinterpret_cast<double *>(e.data());
  for (int64_t at : {int64_t(0), int64_t(32768)}) {
    ep[at] = 134217728.0; // 2^27
    for (int k = 1; k < 16; ++k)
      ep[at + k] = 1.0;
  }
  double esq = clipNormSquares({e.values()});
  ASSERT_EQ(esq, 36028797018963968.0 + 24); // 2^55 + 24
  double ecoef = 1.0 / (std::sqrt(esq) + 1e-6);
  ASSERT_NE(ecoef, 1.0 / (std::sqrt(36028797018963968.0) + 1e-6));
  ASSERT_NE(ecoef, 1.0 / (std::sqrt(36028797018963968.0 + 8) + 1e-6));
  ampc_test::Tensor e1 = e;
  void *eg[1] = {e1.data()};
  ampc_dtype edt[1] = {AMPC_F64};
  int64_t en[1] = {e.size()};
  ASSERT_EQ(
      ampc_clip_grad_norm(ctx, nullptr, eg, edt, en, 1, 1.0, nullptr, AMPC_F32),
      AMPC_OK);
  EXPECT_EQ(e1.get(0), ep[0] * ecoef);
  ampc_context_destroy(ctx);
}

TEST(CpuKernels, ReduceMatchesTheElementLoop) {
  // Per-channel sums (the bias gradient of a per-channel add: reduce over
  // dims 0, 2 and 3), sums over the last dim and over the middle two, on
  // x [4, 6, 5, 7] and on x [3, 13, 37, 41], whose channels fill one group
  // of eight outputs and part of another and whose rows (37 * 41 = 1517
  // elements) span two of the kernel's chunks.
  struct Case {
    std::vector<int64_t> xs;
    Walk outer, inner;
  };
  std::vector<Case> cases;
  for (std::vector<int64_t> xs : {std::vector<int64_t>{4, 6, 5, 7},
                                  std::vector<int64_t>{3, 13, 37, 41}}) {
    std::vector<int64_t> st = rowMajor(xs);
    cases.push_back(
        {xs, makeWalk({xs[1]}, {{1}, {st[1]}}),
         makeWalk({xs[0], xs[2], xs[3]}, {{0, 0, 0}, {st[0], st[2], st[3]}})});
    cases.push_back({xs,
                     makeWalk({xs[0], xs[1], xs[2]}, {{xs[1] * xs[2], xs[2], 1},
                                                      {st[0], st[1], st[2]}}),
                     makeWalk({xs[3]}, {{0}, {1}})});
    cases.push_back({xs, makeWalk({xs[0], xs[3]}, {{xs[3], 1}, {st[0], st[3]}}),
                     makeWalk({xs[1], xs[2]}, {{0, 0}, {st[1], st[2]}})});
  }
  int isas = onEveryIsasLoops([&] {
    for (ampc_dtype dt : {AMPC_F32, AMPC_BF16})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max})
        for (const Case &c : cases) {
          auto xb = store(mixedValues(ampc_test::numel(c.xs), 7), dt);
          int64_t ny = c.outer.numel();
          std::vector<float> want(ny), got(ny);
          int64_t count = c.inner.numel();
          forEachRef(c.outer, [&](int64_t yo, int64_t xo, int64_t) {
            double acc = 0.0;
            float m = -INFINITY;
            forEachRef(c.inner, [&](int64_t, int64_t xi, int64_t) {
              float v = loadF32(xb.data(), dt, xo + xi);
              acc += v;
              if (v > m || v != v)
                m = (m != m) ? m : v;
            });
            if (op == ReduceOp::Mean)
              acc /= static_cast<double>(count);
            want[yo] = op == ReduceOp::Max ? m : static_cast<float>(acc);
          });
          cpukern::reduce(op, Buf{got.data(), AMPC_F32}, Buf{xb.data(), dt},
                          c.outer, c.inner);
          EXPECT_TRUE(sameBits(got, want, /*anyNaN=*/true))
              << static_cast<int>(op) << " case " << (&c - cases.data())
              << " dtype " << dt;
        }
  });
  EXPECT_GE(isas, 1);
}

// The rows' sums run eight rows at a time (laneSums): every instruction
// set's loops, with row counts that fill no group of eight.
TEST(CpuKernels, SoftmaxMatchesTheElementLoop) {
  struct Shape3 {
    int64_t outer, dim, inner;
  };
  int tested = onEveryIsasLoops([] {
    for (Shape3 s : {Shape3{64, 257, 1}, Shape3{5, 33, 7}, Shape3{3, 1, 1},
                     Shape3{8, 12, 1}, Shape3{13, 128, 1}})
      for (bool log : {false, true}) {
        int64_t n = s.outer * s.dim * s.inner;
        std::mt19937 rng(11);
        std::normal_distribution<float> normal(0.0f, 4.0f);
        std::vector<float> x(n);
        for (int64_t i = 0; i < n; ++i)
          x[i] = normal(rng);
        // Causal-style masks, a row of equal zeros of both signs, NaN.
        for (int64_t i = 0; i < n; i += 3)
          x[i] = -INFINITY;
        for (int64_t i = 0; i < s.dim && s.inner == 1 && s.outer > 2; ++i)
          x[s.dim + i] = (i % 2) ? 0.0f : -0.0f;
        if (n > 40)
          x[40] = NAN;
        std::vector<float> want(n), got(n);
        softmaxRef(log, want.data(), x.data(), s.outer, s.dim, s.inner);
        cpukern::softmax(log, Buf{got.data(), AMPC_F32},
                         Buf{x.data(), AMPC_F32}, s.outer, s.dim, s.inner);
        EXPECT_TRUE(sameBits(got, want)) << "log " << log << " dim " << s.dim;
        // In place (y = x).
        std::vector<float> inPlace = x;
        cpukern::softmax(log, Buf{inPlace.data(), AMPC_F32},
                         Buf{inPlace.data(), AMPC_F32}, s.outer, s.dim,
                         s.inner);
        EXPECT_TRUE(sameBits(inPlace, want)) << "in place, log " << log;
        std::vector<float> dy(n), dxWant(n), dxGot(n);
        for (int64_t i = 0; i < n; ++i)
          dy[i] = normal(rng);
        softmaxBwdRef(log, dxWant.data(), dy.data(), want.data(), s.outer,
                      s.dim, s.inner);
        cpukern::softmaxBwd(
            log, Buf{dxGot.data(), AMPC_F32}, Buf{dy.data(), AMPC_F32},
            Buf{want.data(), AMPC_F32}, s.outer, s.dim, s.inner);
        EXPECT_TRUE(sameBits(dxGot, dxWant)) << "log " << log;
        // dx over dy, and dx over y.
        std::vector<float> overDy = dy, overY = want;
        cpukern::softmaxBwd(
            log, Buf{overDy.data(), AMPC_F32}, Buf{overDy.data(), AMPC_F32},
            Buf{want.data(), AMPC_F32}, s.outer, s.dim, s.inner);
        EXPECT_TRUE(sameBits(overDy, dxWant)) << "dx = dy, log " << log;
        cpukern::softmaxBwd(
            log, Buf{overY.data(), AMPC_F32}, Buf{dy.data(), AMPC_F32},
            Buf{overY.data(), AMPC_F32}, s.outer, s.dim, s.inner);
        EXPECT_TRUE(sameBits(overY, dxWant)) << "dx = y, log " << log;
      }
  });
  EXPECT_GE(tested, 1);
}

namespace {

/// `affine` false: no w and no b (y = x-hat, g = dy).
void checkNormAgainstTheElementLoop(int64_t rows, int64_t cols, bool affine) {
  SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) +
               (affine ? "" : ", no w or b"));
  float eps = 1e-5f;
  std::vector<float> xv = mixedValues(rows * cols, 21);
  for (float &v : xv)
    if (!std::isfinite(v))
      v = 0.25f;
  std::vector<float> wv = mixedValues(cols, 22), bv = mixedValues(cols, 23),
                     dyv = mixedValues(rows * cols, 24);
  for (float &v : wv)
    if (!std::isfinite(v))
      v = 1.0f;
  for (float &v : dyv)
    if (!std::isfinite(v))
      v = -0.5f;
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16})
    for (bool rms : {false, true}) {
      auto xb = store(xv, dt), wb = store(wv, dt), bb = store(bv, dt),
           db = store(dyv, dt);
      std::vector<float> x = loadAll(xb, dt, rows * cols),
                         w = loadAll(wb, dt, cols), b = loadAll(bb, dt, cols),
                         dy = loadAll(db, dt, rows * cols);
      std::vector<float> yWant(rows * cols), dxWant(rows * cols), dwWant(cols),
          dbWant(cols);
      // dw and db: each block of normBwdBlockRows rows sums its columns in
      // row order, the blocks' sums are added in block order.
      int64_t per = cpukern::normBwdBlockRows(rows, cols);
      std::vector<double> dwAcc(cols), dbAcc(cols), dwBlock(cols),
          dbBlock(cols);
      for (int64_t r = 0; r < rows; ++r) {
        const float *xr = &x[r * cols];
        double s = 0.0, s2 = 0.0;
        for (int64_t j = 0; j < cols; ++j) {
          double v = xr[j];
          s += v;
          s2 += v * v;
        }
        double mu = rms ? 0.0 : s / cols;
        double var = rms ? s2 / cols : s2 / cols - mu * mu;
        if (var < 0)
          var = 0;
        float mean = static_cast<float>(mu);
        float rstd = static_cast<float>(1.0 / sqrt(var + eps));
        double sumG = 0.0, sumGX = 0.0;
        std::vector<float> xhat(cols), g(cols);
        for (int64_t j = 0; j < cols; ++j) {
          yWant[r * cols + j] = affine ? (xr[j] - mean) * rstd * w[j] + b[j]
                                       : (xr[j] - mean) * rstd;
          float d = dy[r * cols + j];
          xhat[j] = (xr[j] - mean) * rstd;
          g[j] = affine ? d * w[j] : d;
          sumG += g[j];
          sumGX += static_cast<double>(g[j]) * xhat[j];
          dwBlock[j] += static_cast<double>(d) * xhat[j];
          dbBlock[j] += d;
        }
        if ((r + 1) % per == 0 || r + 1 == rows)
          for (int64_t j = 0; j < cols; ++j) {
            dwAcc[j] += dwBlock[j];
            dbAcc[j] += dbBlock[j];
            dwBlock[j] = dbBlock[j] = 0.0;
          }
        float meanG = rms ? 0.0f : static_cast<float>(sumG / cols);
        float meanGX = static_cast<float>(sumGX / cols);
        for (int64_t j = 0; j < cols; ++j)
          dxWant[r * cols + j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
      }
      for (int64_t j = 0; j < cols; ++j) {
        dwWant[j] = static_cast<float>(dwAcc[j]);
        dbWant[j] = static_cast<float>(dbAcc[j]);
      }
      // Rounded to dt as the kernel stores them.
      auto roundTo = [&](std::vector<float> v) {
        return loadAll(store(v, dt), dt, v.size());
      };
      std::vector<uint8_t> yb(rows * cols * 4), dxb(rows * cols * 4),
          dwb(cols * 4), dbb(cols * 4);
      Buf wBuf{affine ? wb.data() : nullptr, dt},
          bBuf{affine ? bb.data() : nullptr, dt};
      cpukern::norm(rms, Buf{yb.data(), dt}, Buf{xb.data(), dt}, wBuf, bBuf,
                    rows, cols, eps);
      cpukern::normBwd(rms, Buf{dxb.data(), dt}, Buf{dwb.data(), dt},
                       Buf{dbb.data(), dt}, Buf{db.data(), dt},
                       Buf{xb.data(), dt}, wBuf, rows, cols, eps);
      EXPECT_TRUE(sameBits(loadAll(yb, dt, rows * cols), roundTo(yWant)));
      EXPECT_TRUE(sameBits(loadAll(dxb, dt, rows * cols), roundTo(dxWant)));
      EXPECT_TRUE(sameBits(loadAll(dwb, dt, cols), roundTo(dwWant)));
      EXPECT_TRUE(sameBits(loadAll(dbb, dt, cols), roundTo(dbWant)));
    }
}

} // namespace

// The norms sum up to eight rows side by side (one row per lane, each in
// column order) and run their element loops per instruction set; every
// instruction set's loops, row counts that fill no group and column counts
// that fill no block give the one-row loop's bits, with and without w and
// b; the backward's dw and db over one, two (600 x 100) and three (300 x
// 300) blocks of rows.
TEST(CpuKernels, NormMatchesTheElementLoop) {
  int tested = onEveryIsasLoops([] {
    for (auto [rows, cols] :
         {std::pair<int64_t, int64_t>{13, 300}, {1, 64}, {8, 129}, {21, 7},
          {300, 300}, {600, 100}})
      for (bool affine : {true, false})
        checkNormAgainstTheElementLoop(rows, cols, affine);
  });
  EXPECT_GE(tested, 1);
}

// normBwd's db (and dw): each block of normBwdBlockRows rows sums its
// columns in row order, then the blocks' sums are added in block order. The
// data tell the orders apart: dy is +2^40 in the first row of the first
// block and -2^40 in the first row of the second, small elsewhere, so the
// f64 partial sums lose different low bits in row order and in blocks.
TEST(CpuKernels, NormBwdSumsItsBlocksInOrder) {
  const int64_t rows = 256, cols = 256;
  const int64_t per = cpukern::normBwdBlockRows(rows, cols);
  ASSERT_EQ(per, 128);
  std::vector<float> x(rows * cols), dy(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      x[r * cols + j] = static_cast<float>((r + j) % 7) * 0.37f - 1.0f;
      dy[r * cols + j] = 0.3f + 0.001f * static_cast<float>((r + j) % 13);
    }
  for (int64_t j = 0; j < cols; ++j) {
    dy[j] = 0x1p40f;
    dy[per * cols + j] = -0x1p40f;
  }
  std::vector<float> dx(rows * cols), dw(cols), db(cols);
  cpukern::normBwd(false, Buf{dx.data(), AMPC_F32}, Buf{dw.data(), AMPC_F32},
                   Buf{db.data(), AMPC_F32}, Buf{dy.data(), AMPC_F32},
                   Buf{x.data(), AMPC_F32}, Buf{nullptr, AMPC_F32}, rows,
                   cols, 1e-5f);
  int differ = 0;
  for (int64_t j = 0; j < cols; ++j) {
    double inOrder = 0.0, blocks = 0.0;
    for (int64_t b = 0; b < rows / per; ++b) {
      double block = 0.0;
      for (int64_t r = b * per; r < (b + 1) * per; ++r) {
        inOrder += dy[r * cols + j];
        block += dy[r * cols + j];
      }
      blocks += block;
    }
    EXPECT_EQ(bitsOf(db[j]), bitsOf(static_cast<float>(blocks))) << j;
    differ += static_cast<float>(inOrder) != static_cast<float>(blocks);
  }
  // The test tells the orders apart in most columns.
  EXPECT_GT(differ, cols / 2);
}

// With no rows, dw and db are sums of nothing: zeros, nothing read.
TEST(CpuKernels, NormBwdOfNoRowsGivesZeroGradients) {
  std::vector<float> dw(5, 7.0f), db(5, 7.0f), w(5, 1.0f);
  cpukern::normBwd(false, Buf{nullptr, AMPC_F32}, Buf{dw.data(), AMPC_F32},
                   Buf{db.data(), AMPC_F32}, Buf{nullptr, AMPC_F32},
                   Buf{nullptr, AMPC_F32}, Buf{w.data(), AMPC_F32}, 0, 5,
                   1e-5f);
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(bitsOf(dw[j]), 0u);
    EXPECT_EQ(bitsOf(db[j]), 0u);
  }
}

/// A param, gradient or model copy as the update loops see it: dtype,
/// storage, and the values it holds.
struct Tensor {
  ampc_dtype dt;
  std::vector<uint8_t> bytes;
  Buf buf() { return Buf{bytes.data(), dt}; }
  std::vector<float> values(size_t n) const { return loadAll(bytes, dt, n); }
};

Tensor tensorOf(const std::vector<float> &v, ampc_dtype dt) {
  return Tensor{dt, store(v, dt)};
}

// The optimizer's loops (cpu_update.h) on every instruction set, every
// dtype combination they take (f32 or bf16 param and gradient, with and
// without a bf16 model copy; f16 with f16 or f32 and no model copy where
// the loops in use take f16), against the element code on widened values
// rounded once: lengths around the vector widths, specials among the
// values.
TEST(CpuUpdate, SgdAndAdamwMatchTheElementCode) {
  int f16Tested = 0;
  int tested = onEveryIsasLoops([&f16Tested] {
    bool f16 = cpuupdate::fused(AMPC_F16, AMPC_F16, false, AMPC_F32);
    f16Tested += f16;
    for (ampc_dtype pdt : {AMPC_F32, AMPC_BF16, AMPC_F16})
      for (ampc_dtype gdt : {AMPC_F32, AMPC_BF16, AMPC_F16})
        for (bool model : {false, true})
          for (int64_t n : {int64_t(1), int64_t(15), int64_t(16),
                            int64_t(33), int64_t(1003)}) {
            SCOPED_TRACE(::testing::Message()
                         << "param " << pdt << " grad " << gdt << " model "
                         << model << " n " << n);
            bool half = pdt == AMPC_F16 || gdt == AMPC_F16;
            bool takes = !half || (f16 && !model && pdt != AMPC_BF16 &&
                                   gdt != AMPC_BF16);
            ASSERT_EQ(cpuupdate::fused(pdt, gdt, model, AMPC_BF16), takes);
            if (!takes)
              continue;
            // Among the values, NaNs whose payload fills the low bits: a
            // bf16 rounding of them (the model copy of an f32 param) that
            // does not keep NaNs apart carries into the sign (-0), and an
            // f16 one keeps a payload f32ToF16 does not (below).
            std::vector<float> pv0 = mixedValues(n, 31);
            pv0[n / 2] = bitsFloat(0x7fffffffu);
            pv0[n - 1] = bitsFloat(0xffffffffu);
            Tensor p0 = tensorOf(pv0, pdt);
            std::vector<float> gv0 = mixedValues(n, 32);
            gv0[n / 3] = bitsFloat(0x7fffffffu);
            Tensor g = tensorOf(gv0, gdt);
            std::vector<float> m0 = mixedValues(n, 33),
                               v0 = mixedValues(n, 34);
            for (float &e : v0)
              e = std::fabs(e);
            std::vector<float> gv = g.values(n);
            for (int variant = 0; variant < 5; ++variant) {
              // sgd: momentum and weight decay, nesterov, plain; adamw
              // with beta1 0.9 and 0.2 (the two forms of its lerp).
              std::vector<float> pw = p0.values(n), mw = m0, vw = v0;
              SgdScalars ss{1e-2f, 0.9f, 1e-3f, variant == 1, variant < 2,
                            variant < 2};
              AdamwScalars as = adamwScalars(1e-3, variant == 4 ? 0.2 : 0.9,
                                             0.999, 1e-8, 0.01, 7);
              for (int64_t i = 0; i < n; ++i) {
                if (variant < 3)
                  sgdElement(pw[i], gv[i], ss.hasMomentum ? &mw[i] : nullptr,
                             ss);
                else
                  adamwElement(pw[i], gv[i], mw[i], vw[i], as);
              }
              Tensor pWant = tensorOf(pw, pdt), mcWant = tensorOf(pw, AMPC_BF16);
              Tensor p = p0, mc = tensorOf(std::vector<float>(n), AMPC_BF16);
              std::vector<float> m = m0, v = v0;
              Buf mcBuf = model ? mc.buf() : Buf{nullptr, AMPC_F32};
              if (variant < 3)
                cpuupdate::sgd(p.buf(), g.buf(),
                               ss.hasMomentum ? m.data() : nullptr, mcBuf, n,
                               ss);
              else
                cpuupdate::adamw(p.buf(), g.buf(), m.data(), v.data(), mcBuf,
                                 n, as);
              EXPECT_TRUE(sameBits(p.values(n), pWant.values(n), true)) << variant;
              // Whichever NaN survives, f16 rounding gives it f32ToF16's
              // one payload (0x200), as the element code's store does.
              if (pdt == AMPC_F16)
                for (int64_t i = 0; i < n; ++i) {
                  uint16_t h;
                  memcpy(&h, p.bytes.data() + 2 * i, 2);
                  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
                    EXPECT_EQ(h & 0x7fff, 0x7e00) << variant << " at " << i;
                }
              EXPECT_TRUE(sameBits(m, mw, true)) << variant;
              EXPECT_TRUE(sameBits(v, vw, true)) << variant;
              if (model)
                EXPECT_TRUE(sameBits(mc.values(n), mcWant.values(n), true))
                    << variant;
            }
          }
  });
  EXPECT_GE(tested, 1);
  // The AVX2 loops take f16 (wherever the processor has them).
  EXPECT_EQ(f16Tested, cpufast::convertSupported(cpufast::ConvertIsa::AVX2));
  EXPECT_FALSE(cpuupdate::fused(AMPC_F16, AMPC_F16, true, AMPC_F16));
  EXPECT_FALSE(cpuupdate::fused(AMPC_F16, AMPC_BF16, false, AMPC_F32));
  EXPECT_FALSE(cpuupdate::fused(AMPC_F32, AMPC_F32, true, AMPC_F16));
}

// The overflow check: an inf or a NaN of either sign at every position of
// a run longer than two vectors is found, the largest finite values are
// not; the unscale multiplies as the element code does.
TEST(CpuUpdate, NonfiniteCheckAndUnscale) {
  int tested = onEveryIsasLoops([] {
    const int64_t n = 77;
    for (ampc_dtype dt : {AMPC_F32, AMPC_BF16, AMPC_F16}) {
      SCOPED_TRACE(::testing::Message() << "dtype " << dt);
      float big = dt == AMPC_F32 ? 3.4028235e38f
                  : dt == AMPC_F16 ? 65504.0f
                                   : 3.3895314e38f;
      std::vector<float> vals = mixedValues(n, 5);
      for (float &e : vals)
        e = std::isfinite(e) ? e : 1.0f;
      vals[3] = big;
      vals[n - 1] = -big;
      Tensor t = tensorOf(vals, dt);
      EXPECT_FALSE(cpuupdate::anyNonfinite(t.buf(), n));
      for (int64_t at = 0; at < n; ++at)
        for (float bad : {INFINITY, -INFINITY, NAN, -NAN}) {
          std::vector<float> w = vals;
          w[at] = bad;
          Tensor b = tensorOf(w, dt);
          ASSERT_TRUE(cpuupdate::anyNonfinite(b.buf(), n)) << at;
          if (dt == AMPC_F16)
            continue; // f16 is unscaled by the caller, on f32 scratch
          std::vector<float> want = b.values(n);
          for (float &e : want)
            e = e * 0.125f;
          Tensor wantT = tensorOf(want, dt);
          ASSERT_TRUE(cpuupdate::unscale(b.buf(), n, 0.125f)) << at;
          ASSERT_TRUE(sameBits(b.values(n), wantT.values(n))) << at;
        }
      if (dt != AMPC_F16) {
        Tensor u = tensorOf(vals, dt);
        std::vector<float> want = u.values(n);
        for (float &e : want)
          e = e * 3.0f; // big overflows to inf: found next time, not now
        Tensor wantT = tensorOf(want, dt);
        EXPECT_FALSE(cpuupdate::unscale(u.buf(), n, 3.0f));
        EXPECT_TRUE(sameBits(u.values(n), wantT.values(n)));
        EXPECT_TRUE(cpuupdate::anyNonfinite(u.buf(), n));
      }
    }
  });
  EXPECT_GE(tested, 1);
}

// rowLses sums up to eight rows side by side: every instruction set's
// loops, eleven rows (a group of eight and one of three), every third row
// without NaN.
TEST(CpuKernels, CrossEntropyRowsMatchTheElementLoop) {
  int tested = onEveryIsasLoops([] {
    int64_t classes = 517, rows = 11;
    std::vector<float> x = mixedValues(rows * classes, 41);
    for (int64_t r = 2; r < rows; r += 3)
      for (int64_t c = 0; c < classes; ++c)
        x[r * classes + c] =
            std::isnan(x[r * classes + c]) ? 1.0f : x[r * classes + c];
    std::vector<float> lses(rows);
    cpukern::rowLses(Buf{x.data(), AMPC_F32}, 0, rows, classes, lses.data());
    for (int64_t r = 0; r < rows; ++r) {
      int64_t base = r * classes;
      float m = -INFINITY;
      for (int64_t c = 0; c < classes; ++c)
        m = x[base + c] > m ? x[base + c] : m;
      double s = 0.0;
      for (int64_t c = 0; c < classes; ++c)
        s += expf(x[base + c] - m);
      float want = m + logf(static_cast<float>(s));
      float got = lses[r];
      // (NaN signs: see sameBits.)
      EXPECT_TRUE(bitsOf(got) == bitsOf(want) ||
                  (std::isnan(got) && std::isnan(want)))
          << r << ": " << got << " vs " << want;
      // A label in range (the first and last classes too), an ignored
      // row, and labels out of range (no class is the label's).
      for (int64_t label : {int64_t(5), int64_t(0), classes - 1, int64_t(-100),
                            int64_t(-1), classes}) {
        float lse = std::isfinite(want) ? want : 0.5f, scale = 0.3f;
        std::vector<float> dWant(classes), dAll(rows * classes, 7.0f);
        for (int64_t c = 0; c < classes; ++c)
          dWant[c] =
              label == -100
                  ? 0.0f
                  : (expf(x[base + c] - lse) - (c == label ? 1.0f : 0.0f)) *
                        scale;
        cpukern::crossEntropyBwdRow(Buf{dAll.data(), AMPC_F32},
                                    Buf{x.data(), AMPC_F32}, base, classes,
                                    label, lse, scale);
        std::vector<float> dGot(dAll.begin() + base,
                                dAll.begin() + base + classes);
        EXPECT_TRUE(sameBits(dGot, dWant, /*anyNaN=*/true))
            << r << " label " << label;
        // Over the logits themselves, and into bf16 (computed in scratch,
        // rounded once).
        std::vector<float> over = x;
        cpukern::crossEntropyBwdRow(Buf{over.data(), AMPC_F32},
                                    Buf{over.data(), AMPC_F32}, base, classes,
                                    label, lse, scale);
        EXPECT_TRUE(sameBits(std::vector<float>(over.begin() + base,
                                                over.begin() + base + classes),
                             dWant, /*anyNaN=*/true))
            << r << " label " << label << " in place";
        std::vector<uint8_t> d16 =
            store(std::vector<float>(rows * classes, 7.0f), AMPC_BF16);
        cpukern::crossEntropyBwdRow(Buf{d16.data(), AMPC_BF16},
                                    Buf{x.data(), AMPC_F32}, base, classes,
                                    label, lse, scale);
        std::vector<float> got16 = loadAll(d16, AMPC_BF16, rows * classes);
        std::vector<float> want16 =
            loadAll(store(dWant, AMPC_BF16), AMPC_BF16, classes);
        EXPECT_TRUE(sameBits(std::vector<float>(got16.begin() + base,
                                                got16.begin() + base + classes),
                             want16, /*anyNaN=*/true))
            << r << " label " << label << " bf16";
      }
    }
  });
  EXPECT_GE(tested, 1);
}

namespace {

const UnaryOp kAllUnary[] = {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS) UnaryOp::OP,
#define AMPC_UNARY_VARIANT(OP) UnaryOp::OP,
#include "ampc/runtime_kernels.inc"
};

const BinaryOp kAllBinary[] = {
#define AMPC_BINARY_KERNEL(NAME, OP) BinaryOp::OP,
#define AMPC_BINARY_VARIANT(OP) BinaryOp::OP,
#include "ampc/runtime_kernels.inc"
};

/// Elements [0, n) of two buffers of dtype dt hold the same values, bit
/// for bit, a NaN equal to any NaN (see sameBits).
::testing::AssertionResult sameElements(const std::vector<uint8_t> &a,
                                        const std::vector<uint8_t> &b,
                                        ampc_dtype dt, size_t n) {
  if (dt == AMPC_BOOL)
    return sameBits(std::vector<float>(a.begin(), a.begin() + n),
                    std::vector<float>(b.begin(), b.begin() + n));
  return sameBits(loadAll(a, dt, n), loadAll(b, dt, n), /*anyNaN=*/true);
}

/// mixedValues in dt, with bf16's (or f16's) own specials spliced in:
/// signalling and negative NaNs with payloads, subnormals, the largest
/// finite values.
std::vector<uint8_t> mixedStorage(size_t n, uint32_t seed, ampc_dtype dt) {
  std::vector<uint8_t> s = store(mixedValues(n, seed), dt);
  if (dt == AMPC_F32)
    return s;
  const uint16_t bf16[] = {0x7f81, 0xffc1, 0x0001, 0x8001, 0x7f7f, 0xff7f};
  const uint16_t f16[] = {0x7c01, 0xfe01, 0x0001, 0x8001, 0x7bff, 0xfbff};
  uint16_t *h = reinterpret_cast<uint16_t *>(s.data());
  for (size_t i = 0; i < 6 && 5 * i < n; ++i)
    h[5 * i] = dt == AMPC_BF16 ? bf16[i] : f16[i];
  return s;
}

} // namespace

// Every instruction set's op loops, and the one-pass bf16 loops, against
// the element loop: every unary and binary row, forward and backward, in
// f32, f16 and bf16 (the binary ones over the broadcast and strided walks
// of walkCases, which also reach the chunked path).
TEST(CpuKernels, ElementwiseLoopsOfEveryIsaMatchTheElementLoop) {
  UnaryAttrs attrs{};
  attrs.v[0] = 0.5f; // leaky_relu's slope, softplus's beta, the Huber beta,
  attrs.v[1] = 3.0f; // the clamp; softplus's threshold
  int tested = onEveryIsasLoops([&] {
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
      // Odd lengths: vector bodies and their scalar tails.
      for (int64_t n : {int64_t(1), int64_t(37), int64_t(3001)}) {
        auto xb = mixedStorage(n, 7, dt), db = mixedStorage(n, 8, dt);
        for (UnaryOp op : kAllUnary) {
          std::vector<uint8_t> want(n * 4 + 8, 0xcd), got = want, gWant = want,
                                                      gGot = want;
          for (int64_t i = 0; i < n; ++i) {
            float x = loadF32(xb.data(), dt, i), d = loadF32(db.data(), dt, i);
            storeF32(want.data(), dt, i, unaryForward(op, x, attrs));
            storeF32(gWant.data(), dt, i, unaryBackward(op, x, d, attrs));
          }
          cpukern::unary(op, attrs, Buf{got.data(), dt}, Buf{xb.data(), dt}, n);
          cpukern::unaryBwd(op, attrs, Buf{gGot.data(), dt}, Buf{db.data(), dt},
                            Buf{xb.data(), dt}, n);
          EXPECT_TRUE(sameElements(want, got, dt, n))
              << "unary op " << static_cast<int>(op) << " dtype " << dt << " n "
              << n;
          EXPECT_TRUE(sameElements(gWant, gGot, dt, n))
              << "unary bwd op " << static_cast<int>(op) << " dtype " << dt
              << " n " << n;
        }
      }
      for (const WalkCase &c : walkCases())
        for (BinaryOp op : kAllBinary) {
          const Walk &w = c.w;
          size_t na = span(w, 1), nb = span(w, 2), ny = span(w, 0);
          auto ab = mixedStorage(na, 1, dt), bb = mixedStorage(nb, 2, dt),
               db = mixedStorage(ny, 3, dt);
          ampc_dtype yt = isComparison(op) ? AMPC_BOOL : dt;
          std::vector<uint8_t> want(ny * 4 + 8, 0xcd), got = want, gWant = want,
                                                       gGot = want;
          forEachRef(w, [&](int64_t o0, int64_t o1, int64_t o2) {
            float a = loadF32(ab.data(), dt, o1),
                  b = loadF32(bb.data(), dt, o2);
            storeF32(want.data(), yt, o0, binaryForward(op, a, b));
            storeF32(
                gWant.data(), dt, o0,
                binaryBackward(op, o0 % 2, a, b, loadF32(db.data(), dt, o0)));
          });
          cpukern::binary(op, Buf{got.data(), yt}, Buf{ab.data(), dt},
                          Buf{bb.data(), dt}, w);
          // The gradient of each operand in turn: `which` alternates by
          // element in the reference, so run both and interleave.
          std::vector<uint8_t> g0 = gGot, g1 = gGot;
          cpukern::binaryBwd(op, 0, Buf{g0.data(), dt}, Buf{db.data(), dt},
                             Buf{ab.data(), dt}, Buf{bb.data(), dt}, w);
          cpukern::binaryBwd(op, 1, Buf{g1.data(), dt}, Buf{db.data(), dt},
                             Buf{ab.data(), dt}, Buf{bb.data(), dt}, w);
          forEachRef(w, [&](int64_t o0, int64_t, int64_t) {
            storeF32(gGot.data(), dt, o0,
                     loadF32((o0 % 2 ? g1 : g0).data(), dt, o0));
          });
          EXPECT_TRUE(sameElements(want, got, yt, ny))
              << c.name << " binary op " << static_cast<int>(op) << " dtype "
              << dt;
          EXPECT_TRUE(sameElements(gWant, gGot, dt, ny))
              << c.name << " binary bwd op " << static_cast<int>(op)
              << " dtype " << dt;
        }
    }
  });
  EXPECT_GE(tested, 1);
}

// The 16-bit unary ops answered by table (cpu_unary_tables.h) give the bits
// of the element loops they replace, on every input: the table of each op
// is the op over all 65536 codes, and the backward's products are the
// element loop's, in its order (where two NaNs meet, either may survive, as
// between the loops' clones). Checked against the loops with the tables
// off, on every code of x (each with a random dy, NaNs and infinities
// among them, and with dy = x reversed), with each instruction set's
// lookups and loops, in place too.
TEST(CpuKernels, UnaryTablesGiveTheElementLoopsBits) {
  const int64_t n = 65536;
  static_assert(65536 >= cputable::kMinElements, "runs must use the tables");
  std::vector<uint16_t> x(n), dyRandom(n), dyReversed(n);
  std::uniform_int_distribution<int> code(0, 65535);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<uint16_t>(i);
    dyRandom[i] = static_cast<uint16_t>(code(rng()));
    dyReversed[i] = static_cast<uint16_t>(n - 1 - i);
  }
  UnaryAttrs none{};
  // Elements whose codes differ; with `anyNaN`, a NaN equals any NaN (where
  // two NaNs meet in the backward's product, which one survives depends on
  // the operand order the compiler picked, as between the loops' clones:
  // sameBits above).
  auto differences = [&](const std::vector<uint16_t> &a,
                         const std::vector<uint16_t> &b, ampc_dtype dt,
                         bool anyNaN) {
    int64_t d = 0;
    for (int64_t i = 0; i < n; ++i)
      d += a[i] != b[i] && !(anyNaN && std::isnan(loadF32(a.data(), dt, i)) &&
                             std::isnan(loadF32(b.data(), dt, i)));
    return d;
  };
  int tested = onEveryIsasLoops([&] {
    for (cpufast::ConvertIsa isa :
         {cpufast::ConvertIsa::Scalar, cpufast::ConvertIsa::AVX2,
          cpufast::ConvertIsa::AVX512})
      if (cpufast::convertSupported(isa) && isa <= cpufast::convertIsa()) {
        SCOPED_TRACE(std::string("lookups ") + cpufast::convertIsaName(isa));
        cputable::useLookupsForTesting(isa);
        for (ampc_dtype dt : {AMPC_BF16, AMPC_F16})
          for (UnaryOp op : {UnaryOp::Exp, UnaryOp::Sigmoid, UnaryOp::Silu,
                             UnaryOp::Gelu, UnaryOp::GeluTanh, UnaryOp::Tanh}) {
            SCOPED_TRACE("op " + std::to_string(static_cast<int>(op)) +
                         " dtype " + std::to_string(dt));
            ASSERT_NE(cputable::forward(op, dt), nullptr);
            ASSERT_NE(cputable::backward(op, dt), nullptr);
            for (const std::vector<uint16_t> *dy : {&dyRandom, &dyReversed}) {
              std::vector<uint16_t> y(n), g(n), yRef(n), gRef(n);
              cputable::useTablesForTesting(false);
              cpukern::unary(op, none, Buf{yRef.data(), dt}, Buf{x.data(), dt},
                             n);
              cpukern::unaryBwd(op, none, Buf{gRef.data(), dt},
                                Buf{const_cast<uint16_t *>(dy->data()), dt},
                                Buf{x.data(), dt}, n);
              cputable::useTablesForTesting(true);
              cpukern::unary(op, none, Buf{y.data(), dt}, Buf{x.data(), dt}, n);
              cpukern::unaryBwd(op, none, Buf{g.data(), dt},
                                Buf{const_cast<uint16_t *>(dy->data()), dt},
                                Buf{x.data(), dt}, n);
              EXPECT_EQ(differences(y, yRef, dt, false), 0);
              EXPECT_EQ(differences(g, gRef, dt, true), 0);
              // In place: y over x, dx over dy.
              std::vector<uint16_t> inPlace = x, dInPlace = *dy;
              cpukern::unary(op, none, Buf{inPlace.data(), dt},
                             Buf{inPlace.data(), dt}, n);
              cpukern::unaryBwd(op, none, Buf{dInPlace.data(), dt},
                                Buf{dInPlace.data(), dt}, Buf{x.data(), dt}, n);
              EXPECT_EQ(differences(inPlace, yRef, dt, false), 0);
              EXPECT_EQ(differences(dInPlace, gRef, dt, true), 0);
            }
          }
      }
  });
  cputable::useLookupsForTesting(cpufast::convertIsa());
  EXPECT_GE(tested, 1);
}
