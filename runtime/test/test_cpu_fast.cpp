//===- test_cpu_fast.cpp - The CPU backend's fast paths -------------------===//
//
// The vector conversions give the bits of the scalar conversions in half.h
// (which test_convert.cpp checks against arithmetic), NaN payloads included;
// the strided copy and the column reduction give the plain loops' results.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "cpu/cpu_fast.h"

using namespace ampc_test;
using namespace ampc;

namespace {



/// Every f32 whose top 20 bits take all values, with low 12 bits from a set
/// that covers exact, just-below, halfway and just-above rounding cases of
/// both 16-bit formats (their rounding bits sit at bit 12 and bit 15), plus
/// a million random patterns.
std::vector<float> f32Patterns() {
  std::vector<float> v;
  const uint32_t lows[] = {0x000, 0x001, 0x3ff, 0x400, 0x7ff, 0x800, 0x801,
                           0xfff};
  v.reserve((1u << 20) * 8 + (1u << 20));
  for (uint32_t hi = 0; hi < (1u << 20); ++hi)
    for (uint32_t lo : lows)
      v.push_back(fromBits((hi << 12) | lo));
  std::mt19937 rng(15);
  for (int i = 0; i < (1 << 20); ++i)
    v.push_back(fromBits(static_cast<uint32_t>(rng())));
  return v;
}

} // namespace

TEST(CpuFast, ReportsVectorPaths) {
  // Not an assertion on the machine: records which paths the other tests
  // exercised.
  std::printf("F16C %s, AVX2 %s, conversions %s\n",
              cpufast::haveF16C() ? "yes" : "no",
              cpufast::haveAVX2() ? "yes" : "no",
              cpufast::convertIsaName(cpufast::convertIsa()));
  for (cpufast::ConvertIsa isa :
       {cpufast::ConvertIsa::AVX2, cpufast::ConvertIsa::AVX512,
        cpufast::ConvertIsa::AVX512BF16})
    if (!cpufast::convertSupported(isa))
      std::printf("%s conversions not on this CPU: not tested\n",
                  cpufast::convertIsaName(isa));
}

/// The conversions' instruction sets this CPU runs, each tested against
/// the scalar conversions of half.h.
std::vector<cpufast::ConvertIsa> convertIsas() {
  std::vector<cpufast::ConvertIsa> v;
  for (cpufast::ConvertIsa isa :
       {cpufast::ConvertIsa::Scalar, cpufast::ConvertIsa::AVX2,
        cpufast::ConvertIsa::AVX512, cpufast::ConvertIsa::AVX512BF16})
    if (cpufast::convertSupported(isa))
      v.push_back(isa);
  return v;
}

TEST(CpuFast, F16AndBf16ToF32AllPatternsBitExact) {
  std::vector<uint16_t> in(65536 + 7);
  for (uint32_t h = 0; h < in.size(); ++h)
    in[h] = static_cast<uint16_t>(h);
  std::vector<float> out(in.size());
  for (cpufast::ConvertIsa isa : convertIsas()) {
    SCOPED_TRACE(cpufast::convertIsaName(isa));
    // Odd offsets and lengths run the vector body and the tail.
    for (int64_t off : {0, 3}) {
      int64_t n = static_cast<int64_t>(in.size()) - off;
      cpufast::f16ToF32With(isa, in.data() + off, out.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(bitsOf(out[i]), bitsOf(f16ToF32(in[off + i])))
            << "f16 " << in[off + i];
      cpufast::bf16ToF32With(isa, in.data() + off, out.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(bitsOf(out[i]), bitsOf(bf16ToF32(in[off + i])))
            << "bf16 " << in[off + i];
    }
  }
  // The default path is one of them.
  cpufast::f16ToF32N(in.data(), out.data(), 5);
  EXPECT_EQ(bitsOf(out[4]), bitsOf(f16ToF32(in[4])));
}

TEST(CpuFast, F32ToF16AndBf16BitExact) {
  std::vector<float> in = f32Patterns();
  std::vector<uint16_t> out(in.size());
  int64_t n = static_cast<int64_t>(in.size()) - 5; // a tail too
  for (cpufast::ConvertIsa isa : convertIsas()) {
    SCOPED_TRACE(cpufast::convertIsaName(isa));
    cpufast::f32ToF16With(isa, in.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], f32ToF16(in[i])) << std::hex << bitsOf(in[i]);
    cpufast::f32ToBf16With(isa, in.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], f32ToBf16(in[i])) << std::hex << bitsOf(in[i]);
  }
}

TEST(CpuFast, ShortRunsWriteOnlyTheirElements) {
  // Every length 0..40 (the vector tails), with guard elements after the
  // run that must stay untouched.
  std::vector<float> f(48);
  std::vector<uint16_t> h(48);
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = 0.37f * static_cast<float>(i) - 3.0f;
    h[i] = f32ToF16(f[i]);
  }
  for (cpufast::ConvertIsa isa : convertIsas()) {
    SCOPED_TRACE(cpufast::convertIsaName(isa));
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<float> fo(48, -7.0f);
      std::vector<uint16_t> ho(48, 0xabcd);
      cpufast::f16ToF32With(isa, h.data(), fo.data(), n);
      cpufast::f32ToF16With(isa, f.data(), ho.data(), n);
      for (int64_t i = 0; i < 48; ++i) {
        ASSERT_EQ(bitsOf(fo[i]), bitsOf(i < n ? f16ToF32(h[i]) : -7.0f))
            << "n " << n << " i " << i;
        ASSERT_EQ(ho[i], i < n ? f32ToF16(f[i]) : 0xabcd)
            << "n " << n << " i " << i;
      }
      cpufast::bf16ToF32With(isa, h.data(), fo.data(), n);
      cpufast::f32ToBf16With(isa, f.data(), ho.data(), n);
      for (int64_t i = 0; i < 48; ++i) {
        ASSERT_EQ(bitsOf(fo[i]), bitsOf(i < n ? bf16ToF32(h[i]) : -7.0f))
            << "n " << n << " i " << i;
        ASSERT_EQ(ho[i], i < n ? f32ToBf16(f[i]) : 0xabcd)
            << "n " << n << " i " << i;
      }
    }
  }
}

TEST(CpuFast, F32ToF16NaNsGetTheScalarPayload) {
  // Signalling and quiet NaNs of both signs with payload bits everywhere:
  // the hardware conversion would keep the payload's top bits. 16 + 5
  // values: a full AVX-512 vector and a tail.
  std::vector<float> in;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t m : {0x1u, 0x2000u, 0x3fffffu, 0x400000u, 0x400001u,
                       0x7fffffu, 0x155555u, 0x2aaaaau})
      in.push_back(fromBits(sign | 0x7f800000u | m));
  for (float v : {1.0f, -2.5f, 65504.0f})
    in.push_back(v);
  in.push_back(fromBits(0xffc00000u));
  in.push_back(fromBits(0x7f800001u));
  std::vector<uint16_t> f16(in.size()), bf(in.size());
  for (cpufast::ConvertIsa isa : convertIsas()) {
    SCOPED_TRACE(cpufast::convertIsaName(isa));
    cpufast::f32ToF16With(isa, in.data(), f16.data(),
                          static_cast<int64_t>(in.size()));
    cpufast::f32ToBf16With(isa, in.data(), bf.data(),
                           static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      uint16_t sign = (bitsOf(in[i]) >> 16) & 0x8000;
      bool nan = std::isnan(in[i]);
      EXPECT_EQ(f16[i], nan ? (sign | 0x7e00) : f32ToF16(in[i]))
          << std::hex << bitsOf(in[i]);
      EXPECT_EQ(bf[i], f32ToBf16(in[i])) << std::hex << bitsOf(in[i]);
    }
  }
}

TEST(CpuFast, StridedCopyMatchesElementLoop) {
  // A [5, 37, 45] source permuted to [45, 5, 37] (a transpose whose source
  // is strided in the destination's last dim, so the tiled path runs), and
  // a permute that keeps the last dim (the row path).
  const int64_t A = 5, B = 37, C = 45;
  std::vector<uint32_t> src(A * B * C);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<uint32_t>(i * 2654435761u);
  for (int variant = 0; variant < 2; ++variant) {
    Walk w;
    w.rank = 3;
    if (variant == 0) { // dst[c][a][b] = src[a][b][c]
      int64_t shape[3] = {C, A, B}, ss[3] = {1, B * C, C};
      for (int d = 0; d < 3; ++d)
        w.shape[d] = shape[d], w.stride[1][d] = ss[d];
    } else { // dst[b][a][c] = src[a][b][c]
      int64_t shape[3] = {B, A, C}, ss[3] = {C, B * C, 1};
      for (int d = 0; d < 3; ++d)
        w.shape[d] = shape[d], w.stride[1][d] = ss[d];
    }
    w.stride[0][2] = 1;
    w.stride[0][1] = w.shape[2];
    w.stride[0][0] = w.shape[1] * w.shape[2];
    std::vector<uint32_t> got(src.size(), 0), want(src.size(), 1);
    ASSERT_TRUE(cpufast::stridedCopy(got.data(), src.data(), 4, w));
    for (int64_t i = 0; i < w.shape[0]; ++i)
      for (int64_t j = 0; j < w.shape[1]; ++j)
        for (int64_t k = 0; k < w.shape[2]; ++k)
          want[i * w.stride[0][0] + j * w.stride[0][1] + k] =
              src[i * w.stride[1][0] + j * w.stride[1][1] +
                  k * w.stride[1][2]];
    EXPECT_EQ(got, want) << "variant " << variant;
  }
}

namespace {

/// 2-D transposes dst[c][r] = src[r][c] of E elements through stridedCopy
/// (the 8x8 register blocks, their edges and tile edges), with NaN
/// patterns, which move as they are.
template <typename E> void checkStridedTranspose(E nanBits) {
  for (auto [R, C] : {std::pair<int64_t, int64_t>{130, 77},
                      {64, 256},
                      {7, 9},
                      {8, 8},
                      {16, 1000}}) {
    std::vector<E> src(R * C);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = static_cast<E>(i * 2654435761u) | (i % 5 ? E(0) : nanBits);
    Walk w;
    w.rank = 2;
    w.shape[0] = C, w.shape[1] = R;
    w.stride[0][0] = R, w.stride[0][1] = 1;
    w.stride[1][0] = 1, w.stride[1][1] = C;
    std::vector<E> got(src.size(), 0), want(src.size(), 1);
    ASSERT_TRUE(cpufast::stridedCopy(got.data(), src.data(), sizeof(E), w));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < R; ++r)
        want[c * R + r] = src[r * C + c];
    EXPECT_EQ(got, want) << sizeof(E) << "-byte elements, " << R << "x" << C;
  }
}

} // namespace

TEST(CpuFast, StridedTransposeMatchesElementLoop) {
  checkStridedTranspose<uint32_t>(0x7f800001u); // AVX 8x8 blocks
  checkStridedTranspose<uint16_t>(0x7f81u);     // SSE 8x8 blocks
}

namespace {

/// Runs f with each instruction set's clone of the column sums' loop the
/// processor has, then goes back to the default; the number tried.
template <typename F> int onEveryColumnLoop(F f) {
  using cpufast::ConvertIsa;
  int tested = 0;
  for (ConvertIsa isa :
       {ConvertIsa::Scalar, ConvertIsa::AVX2, ConvertIsa::AVX512}) {
    if (!cpufast::convertSupported(isa))
      continue;
    ++tested;
    SCOPED_TRACE(cpufast::convertIsaName(isa));
    cpufast::useColumnLoopsForTesting(isa);
    f();
  }
  cpufast::useColumnLoopsForTesting(cpufast::convertIsa());
  return tested;
}

void checkColumnReductionF32() {
  // Sum and mean of a [3, 300, 301] tensor over dim 1 (outputs [3, 301]):
  // every output sums its 300 inputs in order, in double, as the plain loop.
  const int64_t A = 3, R = 300, C = 301;
  std::vector<float> x(A * R * C);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (float &v : x)
    v = dist(rng);
  Walk outer, inner;
  outer.rank = 2;
  outer.shape[0] = A, outer.shape[1] = C;
  outer.stride[0][0] = C, outer.stride[0][1] = 1;
  outer.stride[1][0] = R * C, outer.stride[1][1] = 1;
  inner.rank = 1;
  inner.shape[0] = R;
  inner.stride[1][0] = C;
  for (bool mean : {false, true}) {
    std::vector<float> y(A * C);
    ASSERT_TRUE(cpufast::reduceColumns({y.data(), AMPC_F32},
                                       {x.data(), AMPC_F32}, outer, inner,
                                       mean));
    for (int64_t a = 0; a < A; ++a)
      for (int64_t c = 0; c < C; ++c) {
        double acc = 0.0;
        for (int64_t r = 0; r < R; ++r)
          acc += x[a * R * C + r * C + c];
        if (mean)
          acc /= static_cast<double>(R);
        ASSERT_EQ(bitsOf(y[a * C + c]), bitsOf(static_cast<float>(acc)))
            << a << "," << c;
      }
  }
  // A reduction over the contiguous last dim is left to the plain loop.
  inner.stride[1][0] = 1;
  std::vector<float> y(A * C);
  EXPECT_FALSE(cpufast::reduceColumns({y.data(), AMPC_F32},
                                      {x.data(), AMPC_F32}, outer, inner,
                                      false));
}

} // namespace

// Every instruction set's clone of the column loop gives the plain loop's
// bits.
TEST(CpuFast, ColumnReductionBitIdenticalToPlainLoop) {
  EXPECT_GE(onEveryColumnLoop(checkColumnReductionF32), 1);
}

namespace {

void checkColumnReductionF16() {
  // f16 in, f16 out: each input widened exactly, summed in double in order,
  // rounded once to f16.
  const int64_t R = 130, C = 270;
  std::vector<uint16_t> x(R * C);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (uint16_t &v : x)
    v = f32ToF16(dist(rng));
  Walk outer, inner;
  outer.rank = 1;
  outer.shape[0] = C;
  outer.stride[0][0] = 1, outer.stride[1][0] = 1;
  inner.rank = 1;
  inner.shape[0] = R;
  inner.stride[1][0] = C;
  std::vector<uint16_t> y(C);
  ASSERT_TRUE(cpufast::reduceColumns({y.data(), AMPC_F16}, {x.data(), AMPC_F16},
                                     outer, inner, false));
  for (int64_t c = 0; c < C; ++c) {
    double acc = 0.0;
    for (int64_t r = 0; r < R; ++r)
      acc += f16ToF32(x[r * C + c]);
    ASSERT_EQ(y[c], f32ToF16(static_cast<float>(acc))) << c;
  }
}

} // namespace

TEST(CpuFast, ColumnReductionOfF16GivesThePlainLoopsBits) {
  EXPECT_GE(onEveryColumnLoop(checkColumnReductionF16), 1);
}

namespace {

/// The channel-blocked layout written out: dst[cb][s][k] = the value of
/// channel cb * block + k at position s, 0 past the channels.
template <typename E>
std::vector<E> blockedRef(const std::vector<E> &plain, int64_t channels,
                          int64_t spatial, int64_t block) {
  int64_t blocks = (channels + block - 1) / block;
  std::vector<E> out(blocks * spatial * block, E(0));
  for (int64_t cb = 0; cb < blocks; ++cb)
    for (int64_t s = 0; s < spatial; ++s)
      for (int64_t k = 0; k < block; ++k) {
        int64_t c = cb * block + k;
        if (c < channels)
          out[(cb * spatial + s) * block + k] = plain[c * spatial + s];
      }
  return out;
}

/// (channels, spatial, block): 8c and 16c blocks, channels-last (block =
/// channels), channels that fill no block, positions that fill no 8x8.
const int64_t kBlockCases[][3] = {{16, 64, 16}, {24, 37, 16}, {5, 19, 8},
                                  {32, 50, 32}, {24, 9, 24},  {48, 256, 48},
                                  {8, 1, 8},    {40, 300, 16}};

} // namespace

TEST(CpuFast, ChannelBlocksMatchTheLayoutWrittenOut) {
  std::mt19937 rng(5);
  for (const auto &k : kBlockCases) {
    int64_t channels = k[0], spatial = k[1], block = k[2];
    SCOPED_TRACE(::testing::Message() << channels << " channels, " << spatial
                                      << " positions, block " << block);
    int64_t n = channels * spatial;
    int64_t blocked = (channels + block - 1) / block * spatial * block;
    // bf16 kept as it is.
    std::vector<uint16_t> h(n);
    for (auto &e : h)
      e = static_cast<uint16_t>(rng());
    std::vector<uint16_t> got16(blocked, 0xabcd);
    cpufast::toChannelBlocks16(h.data(), channels, spatial,
                               static_cast<int>(block), got16.data());
    EXPECT_EQ(got16, blockedRef(h, channels, spatial, block));
    // bf16 and f16 widened, and f32.
    for (ampc_dtype dt : {AMPC_BF16, AMPC_F16, AMPC_F32}) {
      std::vector<float> values(n);
      for (auto &v : values)
        v = std::normal_distribution<float>(0.0f, 2.0f)(rng);
      std::vector<uint8_t> bytes(n * 4);
      for (int64_t i = 0; i < n; ++i)
        storeF32(bytes.data(), dt, i, values[i]);
      std::vector<float> widened(n);
      for (int64_t i = 0; i < n; ++i)
        widened[i] = loadF32(bytes.data(), dt, i);
      std::vector<float> got(blocked, -7.0f);
      cpufast::toChannelBlocks(Buf{bytes.data(), dt}, channels, spatial,
                               static_cast<int>(block), got.data());
      std::vector<float> want = blockedRef(widened, channels, spatial, block);
      EXPECT_EQ(0, memcmp(got.data(), want.data(), want.size() * 4))
          << "dtype " << dt;
      // And back: + bias, rounded once to each dtype.
      std::vector<float> bias(channels);
      for (auto &b : bias)
        b = std::normal_distribution<float>(0.0f, 1.0f)(rng);
      for (ampc_dtype to : {AMPC_BF16, AMPC_F16, AMPC_F32}) {
        for (const float *bp : {static_cast<const float *>(nullptr),
                                static_cast<const float *>(bias.data())}) {
          std::vector<uint8_t> back(n * 4, 0xee), ref(n * 4, 0xee);
          cpufast::fromChannelBlocks(want.data(), channels, spatial,
                                     static_cast<int>(block), bp,
                                     Buf{back.data(), to});
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t s = 0; s < spatial; ++s)
              storeF32(ref.data(), to, c * spatial + s,
                       widened[c * spatial + s] + (bp ? bp[c] : 0.0f));
          EXPECT_EQ(back, ref) << "dtype " << dt << " to " << to
                               << (bp ? " with bias" : "");
        }
      }
    }
  }
}
