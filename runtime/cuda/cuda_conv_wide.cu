//===- cuda_conv_wide.cu - f64 convolutions on CUDA ----------------------===//
//
// CudaBackend::convWide, the counterpart of the CPU's cpu_conv_wide.cpp: a
// convolution pass with an f64 tensor among its operands (forward, input
// gradient, weight and bias gradient; 1-, 2- and 3-D geometries with any
// stride, padding, dilation and groups) computed in f64 whatever the other
// operands' dtypes. Operands of another dtype are widened exactly to f64
// first; each (image, group) then runs as im2col / col2im in f64 and the
// f64 GEMM of cuda_wide.cu (gemmF64: cuBLASLt with CUBLAS_COMPUTE_64F, a
// plain kernel where it has no algorithm); each result element is rounded
// once to its tensor's dtype.
//
// Order of operations against the CPU: im2col and the bias are copies and
// one addition (the CPU's bits given the same GEMM result); col2im gathers
// an image element's column entries in the CPU's scatter order (kernel
// taps ascending, from 0); the bias gradient sums (image, pixel) in order,
// one thread per channel (the CPU's bits); the weight gradient adds the
// images in order (C = dy col^T + C, image by image, as the CPU's dgemm
// with beta 1). Only the GEMMs' inner sums run in cuBLASLt's order, so the
// results agree with the CPU's to f64 rounding.
//
// Compiled with --fmad=false, as cuda_wide.cu.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"

namespace ampc {
namespace cuda {
namespace {

/// dst[i] = src[i] as f64 (exact for every float dtype).
__global__ void widenConvKernel(double *dst, Buf src, int64_t n) {
  GRID_STRIDE(i, n) { dst[i] = loadF64(src.data, src.dtype, i); }
}

/// col [C * kd * kh * kw, od * oh * ow] of one image x [C, d, h, w], in f64
/// (zeros for the padding).
__global__ void im2colF64Kernel(double *col, const double *x, ConvGeom g) {
  GRID_STRIDE(i, g.rows() * g.columns()) {
    int64_t src = g.imageElementOf(i);
    col[i] = src < 0 ? 0.0 : x[src];
  }
}

/// img [C, d, h, w] = col2im(col), overwritten: one thread per image
/// element adds its column entries from 0 in the order the CPU's scatter
/// reaches it (rows, i.e. kernel taps, ascending).
__global__ void col2imF64Kernel(double *img, const double *col, ConvGeom g) {
  GRID_STRIDE(i, g.imageSize()) {
    double acc = 0.0;
    g.forEachColumnOf(i, [&](int64_t k) { acc += col[k]; });
    img[i] = acc;
  }
}

/// out [n, o, hw] (its own dtype) = acc + bias[channel] (no bias: acc),
/// each element rounded once. out may be acc itself (an f64 output).
__global__ void biasStoreF64Kernel(Buf out, const double *acc, Buf bias,
                                   int64_t total, int64_t o, int64_t hw) {
  GRID_STRIDE(i, total) {
    double v = acc[i];
    if (bias.data)
      v += loadF64(bias.data, bias.dtype, (i / hw) % o);
    storeF64(out.data, out.dtype, i, v);
  }
}

/// db[ch] = the sum of dy [n, o, hw] over images and pixels, in that order
/// (the CPU's), one thread per channel.
__global__ void biasGradF64Kernel(Buf db, const double *dy, int64_t n,
                                  int64_t o, int64_t hw) {
  GRID_STRIDE(ch, o) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double *row = dy + (i * o + ch) * hw;
      for (int64_t p = 0; p < hw; ++p)
        s += row[p];
    }
    storeF64(db.data, db.dtype, ch, s);
  }
}

/// Whether the column matrix is the image itself (a 1x1x1 kernel, stride
/// 1, no padding): the CPU's test.
bool pointwise(const ConvGeom &g) {
  return g.kd == 1 && g.kh == 1 && g.kw == 1 && g.sd == 1 && g.sh == 1 &&
         g.sw == 1 && g.pd == 0 && g.ph == 0 && g.pw == 0;
}

/// One pass of an f64 convolution on the backend's stream.
class WideConv {
public:
  WideConv(CudaBackend &be, const ConvWideCall &c)
      : be(be), c(c), g(c.g), s(static_cast<cudaStream_t>(be.stream())), n(c.n),
        groups(c.groups), o(c.outChannels), og(o / c.groups), ckk(c.g.rows()),
        hw(c.g.columns()), gimg(c.g.imageSize()) {}

  ampc_status run() {
    return c.pass == ConvCall::Forward        ? forward()
           : c.pass == ConvCall::BackwardData ? backwardData()
                                              : backwardWeights();
  }

private:
  CudaBackend &be;
  const ConvWideCall &c;
  const ConvGeom &g;
  cudaStream_t s;
  int64_t n, groups, o, og, ckk, hw, gimg;

  int64_t imageElems() const { return n * groups * gimg; }
  int64_t outputElems() const { return n * o * hw; }
  int64_t weightElems() const { return o * ckk; }

  /// b's first `count` elements as f64: b itself, or widened into t.
  ampc_status asF64(Buf b, int64_t count, Temp &t, const double *&out) {
    if (b.dtype == AMPC_F64) {
      out = static_cast<const double *>(b.data);
      return AMPC_OK;
    }
    AMPC_TRY(t.alloc(count * sizeof(double)));
    out = static_cast<const double *>(t.get());
    if (count == 0)
      return AMPC_OK;
    widenConvKernel<<<blocksFor(count), kThreads, 0, s>>>(
        static_cast<double *>(t.get()), b, count);
    return be.launchStatusOf("convolution widen kernel (f64)");
  }

  /// Where an f64 result of `count` elements is computed: the output
  /// tensor itself when it is f64, else scratch in t.
  ampc_status result(Buf out, int64_t count, Temp &t, double *&at) {
    if (out.dtype == AMPC_F64) {
      at = static_cast<double *>(out.data);
      return AMPC_OK;
    }
    AMPC_TRY(t.alloc(count * sizeof(double)));
    at = static_cast<double *>(t.get());
    return AMPC_OK;
  }

  /// The column matrix of one (image, group) in t: none for a pointwise
  /// convolution (its columns are the image).
  ampc_status columns(bool pw, Temp &t, double *&col) {
    col = nullptr;
    if (pw)
      return AMPC_OK;
    AMPC_TRY(t.alloc(ckk * hw * sizeof(double)));
    col = static_cast<double *>(t.get());
    return AMPC_OK;
  }

  /// C [m, n] = op(A) op(B) + beta C, row-major, in f64 (gemmF64; k = 0
  /// gives beta C).
  ampc_status gemm(bool transA, bool transB, int64_t m, int64_t nn, int64_t k,
                   const double *a, int64_t lda, const double *b, int64_t ldb,
                   float beta, double *cc, int64_t ldc) {
    GemmDesc d;
    d.c = Buf{cc, AMPC_F64};
    d.a = Buf{const_cast<double *>(a), AMPC_F64};
    d.b = Buf{const_cast<double *>(b), AMPC_F64};
    d.bias = Buf{nullptr, AMPC_F64};
    d.m = m;
    d.n = nn;
    d.k = k;
    d.transA = transA;
    d.transB = transB;
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = ldc;
    d.alpha = 1.0f;
    d.beta = beta;
    return be.gemmF64(d);
  }

  ampc_status im2col(double *col, const double *img) {
    if (ckk * hw == 0)
      return AMPC_OK;
    im2colF64Kernel<<<blocksFor(ckk * hw), kThreads, 0, s>>>(col, img, g);
    return be.launchStatusOf("im2col kernel (f64)");
  }

  /// y = conv(x, w) + bias, one (image, group) at a time.
  ampc_status forward() {
    Temp xt(be), wt(be), acct(be), colt(be);
    const double *x = nullptr, *w = nullptr;
    AMPC_TRY(asF64(c.a, imageElems(), xt, x));
    AMPC_TRY(asF64(c.b, weightElems(), wt, w));
    double *acc = nullptr;
    AMPC_TRY(result(c.out, outputElems(), acct, acc));
    bool pw = pointwise(g);
    double *col = nullptr;
    AMPC_TRY(columns(pw, colt, col));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t gi = 0; gi < groups; ++gi) {
        const double *xg = x + (i * groups + gi) * gimg;
        if (!pw)
          AMPC_TRY(im2col(col, xg));
        AMPC_TRY(gemm(false, false, og, hw, ckk, w + gi * og * ckk, ckk,
                      pw ? xg : col, hw, 0.0f, acc + (i * o + gi * og) * hw,
                      hw));
      }
    if (c.out.dtype == AMPC_F64 && !c.bias.data)
      return AMPC_OK;
    int64_t total = outputElems();
    if (total == 0)
      return AMPC_OK;
    biasStoreF64Kernel<<<blocksFor(total), kThreads, 0, s>>>(c.out, acc, c.bias,
                                                             total, o, hw);
    return be.launchStatusOf("convolution bias kernel (f64)");
  }

  /// dx = the input gradient for dy: per (image, group) dcol = w_g^T dy_g,
  /// then col2im (a pointwise convolution's columns are the image).
  ampc_status backwardData() {
    Temp dyt(be), wt(be), imgt(be), colt(be);
    const double *dy = nullptr, *w = nullptr;
    AMPC_TRY(asF64(c.a, outputElems(), dyt, dy));
    AMPC_TRY(asF64(c.b, weightElems(), wt, w));
    double *img = nullptr;
    AMPC_TRY(result(c.out, imageElems(), imgt, img));
    bool pw = pointwise(g);
    double *col = nullptr;
    AMPC_TRY(columns(pw, colt, col));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t gi = 0; gi < groups; ++gi) {
        double *ig = img + (i * groups + gi) * gimg;
        const double *wg = w + gi * og * ckk,
                     *dyg = dy + (i * o + gi * og) * hw;
        AMPC_TRY(gemm(true, false, ckk, hw, og, wg, ckk, dyg, hw, 0.0f,
                      pw ? ig : col, hw));
        if (!pw && gimg > 0) {
          col2imF64Kernel<<<blocksFor(gimg), kThreads, 0, s>>>(ig, col, g);
          AMPC_TRY(be.launchStatusOf("col2im kernel (f64)"));
        }
      }
    if (c.out.dtype == AMPC_F64 || imageElems() == 0)
      return AMPC_OK;
    biasStoreF64Kernel<<<blocksFor(imageElems()), kThreads, 0, s>>>(
        c.out, img, Buf{nullptr, AMPC_F64}, imageElems(), 1, 1);
    return be.launchStatusOf("convolution store kernel (f64)");
  }

  /// dw (when wanted): per group, dw_g = sum over images in order of
  /// dy_g col^T; db (when wanted): dy summed per channel.
  ampc_status backwardWeights() {
    Temp xt(be), dyt(be), acct(be), colt(be);
    const double *x = nullptr, *dy = nullptr;
    AMPC_TRY(asF64(c.b, outputElems(), dyt, dy));
    if (c.out.data) {
      AMPC_TRY(asF64(c.a, imageElems(), xt, x));
      double *acc = nullptr;
      AMPC_TRY(result(c.out, weightElems(), acct, acc));
      bool pw = pointwise(g);
      double *col = nullptr;
      AMPC_TRY(columns(pw, colt, col));
      if (n == 0)
        AMPC_TRY(be.fill(Buf{acc, AMPC_F64}, weightElems(), 0.0));
      for (int64_t gi = 0; gi < groups; ++gi)
        for (int64_t i = 0; i < n; ++i) {
          const double *xg = x + (i * groups + gi) * gimg;
          if (!pw)
            AMPC_TRY(im2col(col, xg));
          AMPC_TRY(gemm(false, true, og, ckk, hw, dy + (i * o + gi * og) * hw,
                        hw, pw ? xg : col, hw, i == 0 ? 0.0f : 1.0f,
                        acc + gi * og * ckk, ckk));
        }
      if (c.out.dtype != AMPC_F64 && weightElems() > 0) {
        biasStoreF64Kernel<<<blocksFor(weightElems()), kThreads, 0, s>>>(
            c.out, acc, Buf{nullptr, AMPC_F64}, weightElems(), 1, 1);
        AMPC_TRY(be.launchStatusOf("convolution store kernel (f64)"));
      }
    }
    if (!c.bias.data || o == 0)
      return AMPC_OK;
    biasGradF64Kernel<<<blocksFor(o), kThreads, 0, s>>>(c.bias, dy, n, o, hw);
    return be.launchStatusOf("convolution bias gradient kernel (f64)");
  }
};

} // namespace

bool CudaBackend::convWide(const ConvWideCall &c, ampc_status &st) {
  st = enter();
  if (st == AMPC_OK)
    st = WideConv(*this, c).run();
  return true;
}

} // namespace cuda
} // namespace ampc
