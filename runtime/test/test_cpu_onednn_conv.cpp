//===- test_cpu_onednn_conv.cpp - Convolutions on oneDNN's primitives -----===//
//
// Convolutions on the CPU run on oneDNN's convolution primitives
// (cpu/cpu_onednn_conv.h), bf16 ones on its bf16 kernels where the
// processor has bf16 units and widened to f32 elsewhere:
// forward, backward data and backward weights, 1-, 2- and 3-D, strides,
// padding, dilation and groups, batches that leave a short last chunk.
// bf16 products are exact in f32, so against the definition in double the
// only errors are the f32 accumulation's and the one rounding of the result;
// the bits do not depend on the pool's thread count. With the units capped
// at AVX2, without oneDNN (AMPC_CPU_GEMM=openblas) or with AMPC_CPU_CONV=
// direct the same calls run elsewhere and must meet the same bounds.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "cpu/cpu_pool.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace ampc_test;

namespace {

/// One problem: 3-D geometry (depth 1 and height 1 for 1-D and 2-D ones).
struct Problem {
  const char *what;
  int spatial; // which API: 1, 2 or 3
  int64_t n, c, o, groups;
  int64_t in[3], k[3], stride[3], pad[3], dil[3];
  int64_t out(int i) const {
    return (in[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) / stride[i] + 1;
  }
};

const Problem kProblems[] = {
    {"2-D 3x3 pad 1", 2, 5, 16, 32, 1, {1, 12, 12}, {1, 3, 3}, {1, 1, 1},
     {0, 1, 1}, {1, 1, 1}},
    {"2-D stride 2, odd size", 2, 9, 8, 16, 1, {1, 11, 9}, {1, 3, 3},
     {1, 2, 2}, {0, 1, 1}, {1, 1, 1}},
    {"2-D dilation 2, groups 2", 2, 3, 8, 12, 2, {1, 10, 10}, {1, 3, 3},
     {1, 1, 1}, {0, 2, 2}, {1, 2, 2}},
    {"2-D depthwise", 2, 4, 16, 16, 16, {1, 8, 8}, {1, 3, 3}, {1, 1, 1},
     {0, 1, 1}, {1, 1, 1}},
    {"2-D RGB stem", 2, 17, 3, 16, 1, {1, 16, 16}, {1, 3, 3}, {1, 1, 1},
     {0, 1, 1}, {1, 1, 1}},
    {"1-D", 1, 6, 16, 24, 1, {1, 1, 40}, {1, 1, 5}, {1, 1, 2}, {0, 0, 2},
     {1, 1, 1}},
    {"3-D", 3, 2, 4, 8, 1, {5, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
     {1, 1, 1}},
};

bool cpuHas(const std::string &flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

/// The shapes of x, w and y in the problem's own rank.
Shape imageShape(const Problem &p, int64_t ch, bool output) {
  Shape s = {p.n, ch};
  for (int i = 3 - p.spatial; i < 3; ++i)
    s.push_back(output ? p.out(i) : p.in[i]);
  return s;
}
Shape weightShape(const Problem &p) {
  Shape s = {p.o, p.c / p.groups};
  for (int i = 3 - p.spatial; i < 3; ++i)
    s.push_back(p.k[i]);
  return s;
}

ampc_status forward(ampc_context ctx, const Problem &p, Tensor &y, Tensor &x,
                    Tensor &w, Tensor &b) {
  const int64_t *s = p.stride, *d = p.pad, *l = p.dil;
  switch (p.spatial) {
  case 1:
    return ampc_conv1d_fwd(ctx, T(y), T(x), T(w), T(b), s[2], d[2], l[2],
                           p.groups);
  case 2:
    return ampc_conv2d_fwd(ctx, T(y), T(x), T(w), T(b), s[1], s[2], d[1],
                           d[2], l[1], l[2], p.groups);
  default:
    return ampc_conv3d_fwd(ctx, T(y), T(x), T(w), T(b), s[0], s[1], s[2],
                           d[0], d[1], d[2], l[0], l[1], l[2], p.groups);
  }
}

ampc_status backward(ampc_context ctx, const Problem &p, Tensor &dx,
                     Tensor &dw, Tensor &db, Tensor &dy, Tensor &x,
                     Tensor &w) {
  const int64_t *s = p.stride, *d = p.pad, *l = p.dil;
  switch (p.spatial) {
  case 1:
    return ampc_conv1d_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w), s[2],
                           d[2], l[2], p.groups);
  case 2:
    return ampc_conv2d_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w), s[1],
                           s[2], d[1], d[2], l[1], l[2], p.groups);
  default:
    return ampc_conv3d_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w), s[0],
                           s[1], s[2], d[0], d[1], d[2], l[0], l[1], l[2],
                           p.groups);
  }
}

/// A value in double and the bound of an f32 sum of `terms` products with
/// absolute sum `abs`, then one rounding to `dt` (half an ulp).
struct Ref {
  double v = 0, abs = 0;
  int64_t terms = 0;
  void add(double a, double b) {
    v += a * b;
    abs += std::fabs(a * b);
    ++terms;
  }
  double bound(ampc_dtype dt) const {
    double acc = abs * static_cast<double>(terms + 1) * std::ldexp(1.0, -24);
    int bits = dt == AMPC_BF16 ? 8 : dt == AMPC_F16 ? 11 : 24;
    double out = std::fabs(v) * std::ldexp(1.0, -bits);
    return acc * 1.01 + out + 1e-30;
  }
};

struct Results {
  std::vector<double> y, dx, dw;
};

Results runProblem(ampc_context ctx, const Problem &p, ampc_dtype outDt,
                   Tensor &x, Tensor &w, Tensor &b, Tensor &dy) {
  Tensor y(imageShape(p, p.o, true), outDt);
  EXPECT_OK(forward(ctx, p, y, x, w, b));
  Tensor dx(imageShape(p, p.c, false), outDt), dw(weightShape(p), outDt),
      db({p.o}, outDt);
  EXPECT_OK(backward(ctx, p, dx, dw, db, dy, x, w));
  Results r;
  for (int64_t i = 0; i < y.size(); ++i)
    r.y.push_back(y.get(i));
  for (int64_t i = 0; i < dx.size(); ++i)
    r.dx.push_back(dx.get(i));
  for (int64_t i = 0; i < dw.size(); ++i)
    r.dw.push_back(dw.get(i));
  return r;
}

class CpuConvEngine : public CpuTest {
protected:
  std::string engine() {
    char text[512];
    EXPECT_OK(ampc_context_engine(ctx, text, sizeof text));
    return text;
  }
};

const char *dtName(ampc_dtype dt) {
  return dt == AMPC_BF16 ? "bf16" : dt == AMPC_F16 ? "f16" : "f32";
}

// f32 operands, bf16 ones, and f16 ones (widened to f32: oneDNN 2.6 has no
// f16 convolution on CPUs), results in f32 and in the operands' dtype.
TEST_F(CpuConvEngine, ConvolutionsMatchTheDefinition) {
  for (const Problem &p : kProblems)
    for (ampc_dtype dt : {AMPC_BF16, AMPC_F32, AMPC_F16}) {
    SCOPED_TRACE(std::string(p.what) + ", " + dtName(dt) + " operands");
    Tensor x = randomTensor(imageShape(p, p.c, false), dt);
    Tensor w = randomTensor(weightShape(p), dt);
    Tensor b = randomTensor({p.o}, dt);
    Tensor dy = randomTensor(imageShape(p, p.o, true), dt);
    int64_t cg = p.c / p.groups, og = p.o / p.groups;
    int64_t od = p.out(0), oh = p.out(1), ow = p.out(2);
    std::vector<Ref> ry(p.n * p.o * od * oh * ow), rdx(x.size()), rdw(w.size());
    auto xi = [&](int64_t i, int64_t c, int64_t z, int64_t r, int64_t q) {
      return (((i * p.c + c) * p.in[0] + z) * p.in[1] + r) * p.in[2] + q;
    };
    for (int64_t i = 0; i < p.n; ++i)
      for (int64_t o = 0; o < p.o; ++o)
        for (int64_t z = 0; z < od; ++z)
          for (int64_t r = 0; r < oh; ++r)
            for (int64_t q = 0; q < ow; ++q) {
              int64_t yi = (((i * p.o + o) * od + z) * oh + r) * ow + q;
              int64_t gi = o / og;
              for (int64_t c = 0; c < cg; ++c)
                for (int64_t kz = 0; kz < p.k[0]; ++kz)
                  for (int64_t ky = 0; ky < p.k[1]; ++ky)
                    for (int64_t kx = 0; kx < p.k[2]; ++kx) {
                      int64_t iz = z * p.stride[0] + kz * p.dil[0] - p.pad[0];
                      int64_t iy = r * p.stride[1] + ky * p.dil[1] - p.pad[1];
                      int64_t ix = q * p.stride[2] + kx * p.dil[2] - p.pad[2];
                      if (iz < 0 || iz >= p.in[0] || iy < 0 ||
                          iy >= p.in[1] || ix < 0 || ix >= p.in[2])
                        continue;
                      int64_t wi =
                          (((o * cg + c) * p.k[0] + kz) * p.k[1] + ky) *
                              p.k[2] +
                          kx;
                      int64_t xx = xi(i, gi * cg + c, iz, iy, ix);
                      ry[yi].add(w.get(wi), x.get(xx));
                      rdx[xx].add(w.get(wi), dy.get(yi));
                      rdw[wi].add(dy.get(yi), x.get(xx));
                    }
              // The bias: one more term of the sum.
              ry[yi].add(b.get(o), 1.0);
            }
    for (ampc_dtype outDt : {AMPC_F32, dt}) {
      Results got = runProblem(ctx, p, outDt, x, w, b, dy);
      auto check = [&](const std::vector<double> &g, const std::vector<Ref> &r,
                       const char *name) {
        ASSERT_EQ(g.size(), r.size()) << name;
        int bad = 0;
        for (size_t e = 0; e < g.size(); ++e)
          if (!(std::fabs(g[e] - r[e].v) <= r[e].bound(outDt)) && ++bad <= 3)
            ADD_FAILURE() << name << "[" << e << "] = " << g[e] << ", want "
                          << r[e].v << " within " << r[e].bound(outDt)
                          << " (" << dtName(outDt) << ")";
        EXPECT_EQ(bad, 0) << name;
      };
      check(got.y, ry, "y");
      check(got.dx, rdx, "dx");
      check(got.dw, rdw, "dw");
    }
    }
  // Convolutions run on oneDNN's primitives wherever it loads (bf16 ones
  // on its bf16 kernels where the processor has bf16 units, else widened
  // to f32), and the context says so.
  std::string e = engine();
  SCOPED_TRACE(e);
  if (getenv("AMPC_TEST_SHOW_ENGINE"))
    printf("engine: %s\n", e.c_str());
  const char *cap = getenv("AMPC_CPU_ISA");
  const char *gemm = getenv("AMPC_CPU_GEMM");
  const char *conv = getenv("AMPC_CPU_CONV");
  bool off = (gemm && std::string(gemm) == "openblas") ||
             (conv && (std::string(conv) == "direct" ||
                       std::string(conv) == "gemm"));
  size_t at = e.find("; conv ");
#ifndef AMPC_TEST_EXPECT_ONEDNN
  off = true; // built without oneDNN's header: every convolution is ampc's own
  EXPECT_EQ(e.rfind("openblas (", 0), 0u);
#endif
  // Every call's implementations, as ampc_context_take_engines names them
  // (nothing was taken from this context before).
  char takenText[1024];
  ASSERT_OK(ampc_context_take_engines(ctx, takenText, sizeof takenText));
  std::string taken = takenText;
  SCOPED_TRACE("taken: " + taken);
  if (conv && std::string(conv) == "direct")
    EXPECT_NE(taken.find("direct:"), std::string::npos);
  if (off) {
    EXPECT_EQ(at, std::string::npos);
    return;
  }
  ASSERT_NE(at, std::string::npos);
  // "...; conv A, B)": each of them ran on some call.
  std::string convs = e.substr(at + 7, e.size() - at - 8);
  for (size_t from = 0; from < convs.size();) {
    size_t comma = convs.find(", ", from);
    std::string name = convs.substr(from, comma - from);
    EXPECT_NE(taken.find(name), std::string::npos) << name;
    from = comma == std::string::npos ? convs.size() : comma + 2;
  }
  bool native = cpuHas("avx512_bf16") || cpuHas("amx_bf16");
  bool bf16Kernels = e.find("bf16", at) != std::string::npos;
  // In the plain layouts (AMPC_CPU_CONV_LAYOUT=plain) oneDNN 2.6 runs these
  // problems on its im2col GEMM, in f32.
  const char *layout = getenv("AMPC_CPU_CONV_LAYOUT");
  if (layout && std::string(layout) == "plain") {
    EXPECT_NE(e.find("gemm", at), std::string::npos);
    return;
  }
  if (!cap && native)
    EXPECT_TRUE(bf16Kernels);
  if ((cap && std::string(cap) == "avx2") || !native)
    EXPECT_FALSE(bf16Kernels);
}

// 16-bit images and output gradients of a convolution that runs in f32
// (f16 always, bf16 without bf16 units, and a 16-bit image with f32
// weights) are widened exactly as they enter the primitive's layout: the
// results are those of f32 operands holding the same values, bit for bit;
// 16-bit results are those f32 results rounded once.
TEST_F(CpuConvEngine, WidenedOperandsGiveTheBitsOfF32Ones) {
  const char *cap = getenv("AMPC_CPU_ISA");
  bool bf16Units = (cpuHas("avx512_bf16") || cpuHas("amx_bf16")) &&
                   !(cap && std::string(cap) == "avx2");
  auto asF32 = [](const Tensor &t) {
    Tensor f(t.shape, AMPC_F32);
    for (int64_t i = 0; i < t.size(); ++i)
      f.set(i, t.get(i));
    return f;
  };
  int compared = 0;
  for (const Problem &p : kProblems)
    for (ampc_dtype dt : {AMPC_F16, AMPC_BF16})
      for (bool f32Weights : {false, true}) {
        // Where bf16 runs on bf16 units, a pass whose two operands are bf16
        // runs there, not widened: all of them with bf16 weights, the
        // weight gradient (of bf16 images and gradients) with f32 ones.
        bool native = dt == AMPC_BF16 && bf16Units;
        if (native && !f32Weights)
          continue;
        SCOPED_TRACE(std::string(p.what) + ", " + dtName(dt) +
                     (f32Weights ? " images, f32 weights" : " operands"));
        Tensor x = randomTensor(imageShape(p, p.c, false), dt);
        Tensor w = randomTensor(weightShape(p), f32Weights ? AMPC_F32 : dt);
        Tensor b = randomTensor({p.o}, AMPC_F32);
        Tensor dy = randomTensor(imageShape(p, p.o, true), dt);
        Tensor xf = asF32(x), wf = asF32(w), dyf = asF32(dy);
        Results low = runProblem(ctx, p, AMPC_F32, x, w, b, dy);
        Results wide = runProblem(ctx, p, AMPC_F32, xf, wf, b, dyf);
        EXPECT_EQ(low.y, wide.y);
        EXPECT_EQ(low.dx, wide.dx);
        if (!native)
          EXPECT_EQ(low.dw, wide.dw);
        // Results in the operands' dtype leave the primitive's layout
        // biased and rounded once: the f32 results, rounded.
        Results low16 = runProblem(ctx, p, dt, x, w, b, dy);
        auto rounded = [&](const std::vector<double> &v) {
          Tensor t({static_cast<int64_t>(v.size())}, dt);
          for (size_t i = 0; i < v.size(); ++i)
            t.set(static_cast<int64_t>(i), v[i]);
          return t.values();
        };
        EXPECT_EQ(low16.y, rounded(wide.y));
        EXPECT_EQ(low16.dx, rounded(wide.dx));
        ++compared;
      }
  EXPECT_GE(compared, bf16Units ? 21 : 28);
}

// dx and dw in one call run the two passes together, each chunk's output
// gradient moved into the primitives' layout once where both read it in the
// same layout: the bits of each pass on its own (dw only, then dx only).
TEST_F(CpuConvEngine, BothGradientsTogetherGiveTheBitsOfEachAlone) {
  int compared = 0;
  for (const Problem &p : kProblems)
    for (ampc_dtype dt : {AMPC_F32, AMPC_BF16, AMPC_F16}) {
      SCOPED_TRACE(std::string(p.what) + ", " + dtName(dt));
      Tensor x = randomTensor(imageShape(p, p.c, false), dt);
      Tensor w = randomTensor(weightShape(p), dt == AMPC_F16 ? AMPC_F32 : dt);
      Tensor dy = randomTensor(imageShape(p, p.o, true), dt);
      Tensor dx(imageShape(p, p.c, false), dt), dw(weightShape(p), AMPC_F32);
      Tensor dxAlone = dx, dwAlone = dw, none;
      ASSERT_OK(backward(ctx, p, dx, dw, none, dy, x, w));
      ASSERT_OK(backward(ctx, p, none, dwAlone, none, dy, x, w));
      ASSERT_OK(backward(ctx, p, dxAlone, none, none, dy, x, w));
      EXPECT_EQ(dx.bytes, dxAlone.bytes);
      EXPECT_EQ(dw.bytes, dwAlone.bytes);
      ++compared;
    }
  EXPECT_EQ(compared, 21);
}

TEST_F(CpuConvEngine, SameBitsAtEveryThreadCount) {
  int saved = ampc::cpupool::threadCount();
  const Problem &p = kProblems[1]; // 9 images: chunks of 2, a short last one
  Tensor x = randomTensor(imageShape(p, p.c, false), AMPC_BF16);
  Tensor w = randomTensor(weightShape(p), AMPC_BF16);
  Tensor b = randomTensor({p.o}, AMPC_BF16);
  Tensor dy = randomTensor(imageShape(p, p.o, true), AMPC_BF16);
  ampc::cpupool::setThreadCount(1);
  Results one = runProblem(ctx, p, AMPC_F32, x, w, b, dy);
  for (int t : {2, 3}) {
    ampc::cpupool::setThreadCount(t);
    Results many = runProblem(ctx, p, AMPC_F32, x, w, b, dy);
    EXPECT_EQ(0, memcmp(one.y.data(), many.y.data(), 8 * one.y.size())) << t;
    EXPECT_EQ(0, memcmp(one.dx.data(), many.dx.data(), 8 * one.dx.size()))
        << t;
    EXPECT_EQ(0, memcmp(one.dw.data(), many.dw.data(), 8 * one.dw.size()))
        << t;
  }
  ampc::cpupool::setThreadCount(saved);
}

} // namespace
