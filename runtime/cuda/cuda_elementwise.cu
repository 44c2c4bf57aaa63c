//===- cuda_elementwise.cu - Elementwise kernels on CUDA -----------------===//
//
// The elementwise family: fill, random initialisation (its kernel is in
// cuda_exact.cu), unary and binary ops and their gradients over the shared
// formulas of src/scalar_ops.h. Broadcasts walk collapsed dims with 32-bit
// offsets when they fit; contiguous operands of one float dtype take kernels
// specialised by dtype with vector loads.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"
#include "cuda_exact.h"
#include "cuda_walk.cuh"

namespace ampc {
namespace cuda {
namespace {

__global__ void fillKernel(Buf y, int64_t n, float v, int64_t iv) {
  GRID_STRIDE(i, n) {
    if (isFloatDtype(y.dtype))
      storeF32(y.data, y.dtype, i, v);
    else if (y.dtype == AMPC_I64)
      static_cast<int64_t *>(y.data)[i] = iv;
    else if (y.dtype == AMPC_I32)
      static_cast<int32_t *>(y.data)[i] = static_cast<int32_t>(iv);
    else
      static_cast<uint8_t *>(y.data)[i] = iv != 0;
  }
}

__global__ void unaryKernel(UnaryOp op, UnaryAttrs a, Buf y, Buf x,
                            int64_t n) {
  GRID_STRIDE(i, n) {
    storeF32(y.data, y.dtype, i,
             unaryForward(op, loadF32(x.data, x.dtype, i), a));
  }
}

__global__ void unaryBwdKernel(UnaryOp op, UnaryAttrs a, Buf dx, Buf dy, Buf x,
                               int64_t n) {
  GRID_STRIDE(i, n) {
    storeF32(dx.data, dx.dtype, i,
             unaryBackward(op, loadF32(x.data, x.dtype, i),
                           loadF32(dy.data, dy.dtype, i), a));
  }
}

__global__ void binaryKernel(BinaryOp op, Buf y, Buf a, Buf b, Walk w,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF32(y.data, y.dtype, o0,
             binaryForward(op, loadF32(a.data, a.dtype, o1),
                           loadF32(b.data, b.dtype, o2)));
  }
}

__global__ void binaryBwdKernel(BinaryOp op, int which, Buf g, Buf dy, Buf a,
                                Buf b, Walk w, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    storeF32(g.data, g.dtype, o0,
             binaryBackward(op, which, loadF32(a.data, a.dtype, o1),
                            loadF32(b.data, b.dtype, o2),
                            loadF32(dy.data, dy.dtype, o0)));
  }
}

__global__ void binary32Kernel(BinaryOp op, Buf y, Buf a, Buf b, Walk32 w,
                               int64_t n) {
  GRID_STRIDE(i, n) {
    int32_t o0, o1, o2;
    walkOffsets32(w, static_cast<uint32_t>(i), o0, o1, o2);
    storeF32(y.data, y.dtype, o0,
             binaryForward(op, loadF32(a.data, a.dtype, o1),
                           loadF32(b.data, b.dtype, o2)));
  }
}

__global__ void binaryBwd32Kernel(BinaryOp op, int which, Buf g, Buf dy, Buf a,
                                  Buf b, Walk32 w, int64_t n) {
  GRID_STRIDE(i, n) {
    int32_t o0, o1, o2;
    walkOffsets32(w, static_cast<uint32_t>(i), o0, o1, o2);
    storeF32(g.data, g.dtype, o0,
             binaryBackward(op, which, loadF32(a.data, a.dtype, o1),
                            loadF32(b.data, b.dtype, o2),
                            loadF32(dy.data, dy.dtype, o0)));
  }
}

/// y = f(x0[, x1]) over n contiguous elements of one dtype; kind 0 unary,
/// 1 unary backward (x0 = x, x1 = dy), 2 binary (x0 = a, x1 = b).
template <ampc_dtype DT, int Kind>
__global__ void contigKernel(int opCode, UnaryAttrs attrs, void *yp,
                             const void *x0p, const void *x1p, int64_t n,
                             bool vec) {
  using E = Elt<DT>;
  using T = typename E::T;
  using V = typename E::V;
  auto f = [&](float u, float v) {
    if (Kind == 0)
      return unaryForward(static_cast<UnaryOp>(opCode), u, attrs);
    if (Kind == 1)
      return unaryBackward(static_cast<UnaryOp>(opCode), u, v, attrs);
    return binaryForward(static_cast<BinaryOp>(opCode), u, v);
  };
  int64_t nv = vec ? n / 4 : 0;
  GRID_STRIDE(i, nv) {
    float a[4], b[4] = {0, 0, 0, 0}, r[4];
    E::split(static_cast<const V *>(x0p)[i], a);
    if (Kind != 0)
      E::split(static_cast<const V *>(x1p)[i], b);
    for (int k = 0; k < 4; ++k)
      r[k] = f(a[k], b[k]);
    static_cast<V *>(yp)[i] = E::join(r);
  }
  GRID_STRIDE(j, n - 4 * nv) {
    int64_t i = 4 * nv + j;
    float a = E::load(static_cast<const T *>(x0p)[i]);
    float b = Kind != 0 ? E::load(static_cast<const T *>(x1p)[i]) : 0.0f;
    static_cast<T *>(yp)[i] = E::store(f(a, b));
  }
}

} // namespace

/// The contiguous single-dtype kernel of `Kind` (see contigKernel); false
/// when the operands are not all one float dtype.
template <int Kind>
bool CudaBackend::launchContig(int opCode, const UnaryAttrs &attrs, Buf y,
                               Buf x0, Buf x1, int64_t n) {
  ampc_dtype dt = y.dtype;
  if (!isFloatDtype(dt) || x0.dtype != dt || (Kind != 0 && x1.dtype != dt))
    return false;
  bool vec = dt == AMPC_F32
                 ? aligned16(y.data) && aligned16(x0.data) &&
                       (Kind == 0 || aligned16(x1.data))
                 : aligned8(y.data) && aligned8(x0.data) &&
                       (Kind == 0 || aligned8(x1.data));
  int blocks = blocksFor(vec ? (n + 3) / 4 : n);
  if (dt == AMPC_F32)
    contigKernel<AMPC_F32, Kind><<<blocks, kThreads, 0, stream_>>>(
        opCode, attrs, y.data, x0.data, x1.data, n, vec);
  else if (dt == AMPC_F16)
    contigKernel<AMPC_F16, Kind><<<blocks, kThreads, 0, stream_>>>(
        opCode, attrs, y.data, x0.data, x1.data, n, vec);
  else
    contigKernel<AMPC_BF16, Kind><<<blocks, kThreads, 0, stream_>>>(
        opCode, attrs, y.data, x0.data, x1.data, n, vec);
  lastLaunch = "elementwise kernel";
  return true;
}

ampc_status CudaBackend::fill(Buf y, int64_t n, double value) {
  ENTER();
  ampc_status st;
  if (fillWide(y, n, value, st))
    return st;
  fillKernel<<<blocksFor(n), kThreads, 0, stream_>>>(
      y, n, static_cast<float>(value), static_cast<int64_t>(value));
  LAUNCH_CHECK("fill kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::random(Buf y, int64_t n, uint64_t seed,
                                uint64_t offset, bool normal, double p0,
                                double p1) {
  ENTER();
  lastLaunch = "random kernel";
  CUDA_TRY(launchRandom(stream_, y, n, seed, offset, normal, p0, p1));
  return AMPC_OK;
}

ampc_status CudaBackend::unary(UnaryOp op, const UnaryAttrs &attrs, Buf y,
                               Buf x, int64_t n) {
  ENTER();
  ampc_status st;
  if (unaryWide(op, attrs, y, x, n, st))
    return st;
  if (n == 0)
    return AMPC_OK;
  if (!launchContig<0>(static_cast<int>(op), attrs, y, x, x, n))
    unaryKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, attrs, y, x, n);
  LAUNCH_CHECK("unary kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx,
                                  Buf dy, Buf x, int64_t n) {
  ENTER();
  ampc_status st;
  if (unaryBwdWide(op, attrs, dx, dy, x, n, st))
    return st;
  if (n == 0)
    return AMPC_OK;
  if (!launchContig<1>(static_cast<int>(op), attrs, dx, x, dy, n))
    unaryBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, attrs, dx, dy,
                                                           x, n);
  LAUNCH_CHECK("unary backward kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::binary(BinaryOp op, Buf y, Buf a, Buf b,
                                const Walk &w0) {
  ENTER();
  // f64 operands in f64; integer operands exactly (cuda_wide.cu), pow
  // included.
  ampc_status st;
  if (binaryWide(op, y, a, b, w0, st))
    return st;
  // What is left reads its operands through f32: an integer result of an
  // op the exact kernels do not take (a power with a float operand) would
  // round there.
  if (op == BinaryOp::Pow && isIntegerDtype(y.dtype))
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "pow into an integer tensor with a float operand has no "
                    "exact kernel on the CUDA backend; cast to a float first");
  int64_t n = w0.numel();
  if (n == 0)
    return AMPC_OK;
  Walk w = collapseWalk(w0, 3);
  if (walkContiguous(w, 3) &&
      launchContig<2>(static_cast<int>(op), UnaryAttrs{}, y, a, b, n))
    ;
  else if (walkFits32(w, 3))
    binary32Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, y, a, b,
                                                           toWalk32(w), n);
  else
    binaryKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, y, a, b, w, n);
  LAUNCH_CHECK("binary kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a,
                                   Buf b, const Walk &w0) {
  ENTER();
  ampc_status st;
  if (binaryBwdWide(op, which, g, dy, a, b, w0, st))
    return st;
  int64_t n = w0.numel();
  if (n == 0)
    return AMPC_OK;
  Walk w = collapseWalk(w0, 3);
  if (walkFits32(w, 3))
    binaryBwd32Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(
        op, which, g, dy, a, b, toWalk32(w), n);
  else
    binaryBwdKernel<<<blocksFor(n), kThreads, 0, stream_>>>(op, which, g, dy,
                                                            a, b, w, n);
  LAUNCH_CHECK("binary backward kernel");
  return AMPC_OK;
}

// geluInPlace (cuda_linalg.cu) launches the unary kind.
template bool CudaBackend::launchContig<0>(int, const UnaryAttrs &, Buf, Buf,
                                           Buf, int64_t);

} // namespace cuda
} // namespace ampc
