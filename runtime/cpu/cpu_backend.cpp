//===- cpu_backend.cpp - The CPU backend
//------------------------------------===//
//
// Plain loops in f32 (f64 for long accumulations), GEMMs through OpenBLAS
// cblas_sgemm on exactly widened inputs. Threads come from the backend's own
// pool (cpu_pool.h): GEMMs run as fixed tiles of C, each one single-threaded
// OpenBLAS call (OpenBLAS itself is set to one thread), and the large
// elementwise, conversion, copy and row kernels run fixed chunks or rows on
// the pool, so results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "../src/common.h"
#include "../src/half.h"
#include "../src/dropout_ops.h"
#include "../src/norm_ops.h"
#include "../src/philox.h"
#include "../src/wide_ops.h"
#include "cpu_conv.h"
#include "cpu_conv_wide.h"
#include "cpu_onednn_conv.h"
#include "cpu_fast.h"
#include "cpu_gemm_tiles.h"
#include "cpu_isa.h"
#include "cpu_kernels.h"
#include "cpu_wide.h"
#include "cpu_onednn.h"
#include "cpu_optimizer.h"
#include "cpu_pool.h"
#include "cpu_pooling.h"

#include <cblas.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <unordered_map>
#include <vector>

namespace ampc {
namespace {

using cpugemm::F32View;
using cpugemm::GemmTiles;
using cpugemm::gemmTiles;
using cpugemm::loadContigPar;
using cpugemm::packRows;
using cpukern::forEach;

/// Whether operand `k` of the walk is laid out contiguously in walk order.
bool contiguous(const Walk &w, int k) {
  int64_t st = 1;
  for (int d = w.rank - 1; d >= 0; --d) {
    if (w.shape[d] != 1 && w.stride[k][d] != st)
      return false;
    st *= w.shape[d];
  }
  return true;
}

// The f32 chunks of contiguous data and their converters (cpu_kernels.h).
using cpukern::forPieces;
using cpukern::kChunk;
using cpukern::loadContig;
using cpukern::storeContig;

/// Element i of b onwards as a buffer of its own (null stays null).
Buf elementOf(Buf b, int64_t i) {
  if (!b.data)
    return b;
  return Buf{static_cast<char *>(b.data) + i * dtypeSize(b.dtype), b.dtype};
}

/// Batch-norm channels [c0, c1) of a tensor of geometry g as f32 scratch,
/// channel-major: channel c's n * inner values, sample by sample, from
/// (c - c0) * n * inner, so each channel is a contiguous f32 tensor of
/// geometry {1, 1, n * inner} whose element order is the channel's (sample,
/// j) order. A sample's values of the block are contiguous in the tensor:
/// they are widened (and rounded back) a piece at a time.
struct BnBlock {
  BnGeom g;
  int64_t c0, c1;
  int64_t perChannel() const { return g.perChannel(); }
  int64_t size() const { return (c1 - c0) * g.perChannel(); }
  BnGeom channelGeom() const { return BnGeom{1, 1, g.perChannel()}; }

  /// Calls move(tensor offset, piece length, scratch element of the
  /// piece's elements in turn) for every piece of every sample.
  template <typename Fn> void walk(Fn &&move) const {
    int64_t m = g.perChannel(), len = (c1 - c0) * g.inner;
    int64_t at[kChunk];
    for (int64_t s0 = 0; s0 < g.n; ++s0)
      forPieces(0, len, [&](int64_t o, int64_t l) {
        int64_t cc = o / g.inner, j = o % g.inner;
        for (int64_t k = 0; k < l; ++k) {
          at[k] = cc * m + s0 * g.inner + j;
          if (++j == g.inner) {
            j = 0;
            ++cc;
          }
        }
        move(g.at(s0, c0, 0) + o, l, at);
      });
  }
  void gather(Buf t, float *scratch) const {
    float tmp[kChunk];
    walk([&](int64_t off, int64_t l, const int64_t *at) {
      loadContig(t, off, l, tmp);
      for (int64_t k = 0; k < l; ++k)
        scratch[at[k]] = tmp[k];
    });
  }
  void scatter(Buf t, const float *scratch) const {
    float tmp[kChunk];
    walk([&](int64_t off, int64_t l, const int64_t *at) {
      for (int64_t k = 0; k < l; ++k)
        tmp[k] = scratch[at[k]];
      storeContig(t, off, l, tmp);
    });
  }
  /// Channel ch's scratch as an f32 buffer.
  Buf channel(float *scratch, int64_t ch) const {
    return Buf{scratch + (ch - c0) * g.perChannel(), AMPC_F32};
  }
};

constexpr int64_t kParChunk = cpupool::kItemElements;

/// im2col of f32 data: for every (channel, ky, kx, output row) the output
/// columns that read inside the image form one interval, copied (contiguous
/// for stride 1); the rest are the zero padding.
/// im2col on the bit patterns of one element type (f32, or f16/bf16 when
/// the columns keep the input's dtype: a copy, and 0 bits are +0.0).
template <typename T>
void im2colChannels(T *__restrict col, const T *__restrict x, const ConvGeom &g,
                    int64_t c0, int64_t c1) {
  int64_t hw = g.oh * g.ow, cols = g.columns();
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t kz = 0; kz < g.kd; ++kz)
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          T *row = col + (((c * g.kd + kz) * g.kh + ky) * g.kw + kx) * cols;
          // ix = ox * sw - pw + kx * dw lies in [0, w) for ox in [lo, hi).
          int64_t off = kx * g.dw - g.pw;
          int64_t lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
          int64_t hi = g.w - off <= 0 ? 0 : (g.w - off + g.sw - 1) / g.sw;
          lo = std::min(lo, g.ow);
          hi = std::max(lo, std::min(hi, g.ow));
          for (int64_t oz = 0; oz < g.od; ++oz) {
            int64_t iz = oz * g.sd - g.pd + kz * g.dd;
            if (iz < 0 || iz >= g.d) {
              std::fill(row + oz * hw, row + (oz + 1) * hw, T(0));
              continue;
            }
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              T *out = row + oz * hw + oy * g.ow;
              int64_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (iy < 0 || iy >= g.h) {
                std::fill(out, out + g.ow, T(0));
                continue;
              }
              const T *in = x + ((c * g.d + iz) * g.h + iy) * g.w;
              std::fill(out, out + lo, T(0));
              if (g.sw == 1)
                cpuconv::copyShort(out + lo, in + lo + off,
                                   (hi - lo) * sizeof(T));
              else
                for (int64_t ox = lo; ox < hi; ++ox)
                  out[ox] = in[ox * g.sw + off];
              std::fill(out + hi, out + g.ow, T(0));
            }
          }
        }
}

/// Channels per pool item of im2col / col2im (each channel writes its own
/// rows of the column matrix, or its own plane of dx).
int64_t channelsPerItem(const ConvGeom &g) {
  int64_t per = g.kd * g.kh * g.kw * g.columns();
  return std::max<int64_t>(1,
                           cpupool::kItemElements / std::max<int64_t>(per, 1));
}

template <typename T>
void im2colTyped(T *__restrict col, const T *__restrict x, const ConvGeom &g) {
  cpupool::forChunks(
      g.channels, channelsPerItem(g),
      [&](int64_t c0, int64_t c1) { im2colChannels(col, x, g, c0, c1); });
}

class CpuBackend final : public Backend {
public:
  ampc_backend kind() const override { return AMPC_BACKEND_CPU; }
  std::string engine() const override {
    std::string line = onednn::engineSummary();
    std::string impls = matmuls.implementations();
    if (usedBlas && onednn::enabled())
      impls += impls.empty() ? "openblas" : ", openblas";
    std::string convImpls = convs.implementations();
    if (impls.empty() && convImpls.empty())
      return line;
    // "isa (oneDNN x.y.z)" -> "isa (oneDNN x.y.z; gemm impl, impl; conv
    // impl)".
    if (!line.empty() && line.back() == ')')
      line.pop_back();
    if (!impls.empty())
      line += "; gemm " + impls;
    if (!convImpls.empty())
      line += "; conv " + convImpls;
    return line + ")";
  }

  void noteEngine(const std::string &name) override { notes.note(name); }
  std::string takeEngines() override { return notes.take(); }

  ampc_status alloc(size_t bytes, void **ptr) override {
    // Rounded up to the alignment; a size within 255 of SIZE_MAX would wrap
    // to 0 (and aligned_alloc give a few bytes for it). No allocation may
    // pass PTRDIFF_MAX (glibc refuses one; ASan aborts on it instead of
    // returning NULL), so such sizes are refused here.
    if (bytes > static_cast<size_t>(PTRDIFF_MAX) - 255)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cpu backend: cannot allocate %zu bytes", bytes);
    size_t rounded = (bytes + 255) & ~static_cast<size_t>(255);
    *ptr = aligned_alloc(256, rounded);
    if (!*ptr)
      return setError(AMPC_ERROR_OUT_OF_MEMORY,
                      "cpu backend: cannot allocate %zu bytes", bytes);
    return AMPC_OK;
  }
  ampc_status release(void *ptr) override {
    free(ptr);
    return AMPC_OK;
  }
  ampc_status copyBytes(void *dst, const void *src, size_t bytes,
                        ampc_memcpy_kind) override {
    memmove(dst, src, bytes);
    return AMPC_OK;
  }
  ampc_status setBytes(void *ptr, int value, size_t bytes) override {
    memset(ptr, value, bytes);
    return AMPC_OK;
  }
  ampc_status synchronize() override { return AMPC_OK; }
  /// Scratch blocks are recycled by size class (powers of two) so repeated
  /// calls do not fault in fresh pages.
  ampc_status tempAlloc(size_t bytes, void **ptr) override {
    size_t cls = 256;
    while (cls < bytes)
      cls *= 2;
    auto &list = freeBlocks[cls];
    if (!list.empty()) {
      *ptr = list.back();
      list.pop_back();
      cachedBytes -= cls;
    } else {
      AMPC_TRY(alloc(cls, ptr));
    }
    blockClass[*ptr] = cls;
    return AMPC_OK;
  }
  void tempFree(void *ptr) override {
    auto it = blockClass.find(ptr);
    size_t cls = it->second;
    blockClass.erase(it);
    if (cachedBytes + cls > kMaxCachedBytes) {
      free(ptr);
      return;
    }
    freeBlocks[cls].push_back(ptr);
    cachedBytes += cls;
  }
  ~CpuBackend() override {
    for (auto &entry : freeBlocks)
      for (void *p : entry.second)
        free(p);
  }

  ampc_status copy(Buf dst, Buf src, const Walk &w, float scale) override {
    if (scale == 1.0f && contiguous(w, 0) && contiguous(w, 1)) {
      int64_t n = w.numel();
      if (dst.dtype == src.dtype) {
        // Overlapping copies (memmove) stay on one thread.
        size_t es = dtypeSize(dst.dtype);
        const char *s0 = static_cast<const char *>(src.data);
        char *d0 = static_cast<char *>(dst.data);
        bool overlap = d0 < s0 + n * es && s0 < d0 + n * es;
        if (overlap) {
          memmove(dst.data, src.data, n * es);
          return AMPC_OK;
        }
        cpupool::forChunks(n, 2 * kParChunk, [&](int64_t lo, int64_t hi) {
          memcpy(d0 + lo * es, s0 + lo * es, (hi - lo) * es);
        });
        return AMPC_OK;
      }
      if (isFloatDtype(dst.dtype) && isFloatDtype(src.dtype)) {
        // An f32 side is converted from or into directly (no copy through
        // the chunk buffer: the same conversions), unless the two overlap.
        const char *s0 = static_cast<const char *>(src.data);
        const char *d0 = static_cast<const char *>(dst.data);
        bool apart = d0 + n * dtypeSize(dst.dtype) <= s0 ||
                     s0 + n * dtypeSize(src.dtype) <= d0;
        if (apart && (src.dtype == AMPC_F32 || dst.dtype == AMPC_F32)) {
          cpupool::forChunks(n, kParChunk, [&](int64_t lo, int64_t hi) {
            if (src.dtype == AMPC_F32)
              storeContig(dst, lo, hi - lo,
                          static_cast<const float *>(src.data) + lo);
            else
              loadContig(src, lo, hi - lo,
                         static_cast<float *>(dst.data) + lo);
          });
          return AMPC_OK;
        }
        cpupool::forChunks(n, kParChunk, [&](int64_t lo, int64_t hi) {
          float buf[kChunk];
          for (int64_t i = lo; i < hi; i += kChunk) {
            int64_t len = hi - i < kChunk ? hi - i : kChunk;
            loadContig(src, i, len, buf);
            storeContig(dst, i, len, buf);
          }
        });
        return AMPC_OK;
      }
    }
    if (scale == 1.0f && dst.dtype == src.dtype &&
        cpufast::stridedCopy(dst.data, src.data, dtypeSize(dst.dtype), w))
      return AMPC_OK;
    if ((scale != 1.0f || dst.dtype != src.dtype) &&
        isFloatDtype(dst.dtype) && isFloatDtype(src.dtype)) {
      // Strided or broadcast float data with a conversion or a scale (the
      // backward of a sum or mean broadcasts an f32 gradient into a 16-bit
      // one): row by row through f32 pieces, each element
      // storeF32(scale * loadF32) as in the element loop below.
      Walk c = cpukern::collapse(w);
      int last = c.rank - 1;
      int64_t cols = c.shape[last], rows = c.numel() / cols;
      int64_t ds = c.stride[0][last], ss = c.stride[1][last];
      int64_t rowsPerItem = std::max<int64_t>(1, kParChunk / cols);
      cpupool::forChunks(rows, rowsPerItem, [&](int64_t lo, int64_t hi) {
        float buf[kChunk];
        for (int64_t r = lo; r < hi; ++r) {
          int64_t o0 = 0, o1 = 0;
          for (int64_t d = last - 1, q = r; d >= 0; --d) {
            int64_t i = q % c.shape[d];
            q /= c.shape[d];
            o0 += i * c.stride[0][d];
            o1 += i * c.stride[1][d];
          }
          for (int64_t j = 0; j < cols; j += kChunk) {
            int64_t len = std::min(kChunk, cols - j);
            cpukern::loadRun(src, o1 + j * ss, ss, len, buf);
            if (scale != 1.0f)
              for (int64_t i = 0; i < len; ++i)
                buf[i] = scale * buf[i];
            cpukern::storeRun(dst, o0 + j * ds, ds, len, buf);
          }
        }
      });
      return AMPC_OK;
    }
    if (scale == 1.0f) {
      forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t) {
        convertElement(dst.data, dst.dtype, o0, src.data, src.dtype, o1);
      });
    } else if (cpuwide::isF64(dst) || cpuwide::isF64(src)) {
      forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t) {
        storeF64(dst.data, dst.dtype, o0,
                 scale * loadF64(src.data, src.dtype, o1));
      });
    } else {
      forEach(w, [&](int64_t, int64_t o0, int64_t o1, int64_t) {
        storeF32(dst.data, dst.dtype, o0,
                 scale * loadF32(src.data, src.dtype, o1));
      });
    }
    return AMPC_OK;
  }

  ampc_status fill(Buf y, int64_t n, double value) override {
    if (isFloatDtype(y.dtype)) {
      // One element's bits, repeated.
      float v = static_cast<float>(value);
      if (y.dtype == AMPC_F32) {
        float *p = static_cast<float *>(y.data);
        cpupool::forChunks(n, 2 * kParChunk, [&](int64_t lo, int64_t hi) {
          std::fill(p + lo, p + hi, v);
        });
      } else {
        uint16_t h;
        storeF32(&h, y.dtype, 0, v);
        uint16_t *p = static_cast<uint16_t *>(y.data);
        cpupool::forChunks(n, 2 * kParChunk, [&](int64_t lo, int64_t hi) {
          std::fill(p + lo, p + hi, h);
        });
      }
      return AMPC_OK;
    }
    if (y.dtype == AMPC_F64 || y.dtype == AMPC_U8 || y.dtype == AMPC_I8 ||
        y.dtype == AMPC_I16) {
      for (int64_t i = 0; i < n; ++i)
        storeF64(y.data, y.dtype, i, value);
      return AMPC_OK;
    }
    int64_t v = static_cast<int64_t>(value);
    for (int64_t i = 0; i < n; ++i) {
      if (y.dtype == AMPC_I64)
        static_cast<int64_t *>(y.data)[i] = v;
      else if (y.dtype == AMPC_I32)
        static_cast<int32_t *>(y.data)[i] = static_cast<int32_t>(v);
      else
        static_cast<uint8_t *>(y.data)[i] = value != 0.0;
    }
    return AMPC_OK;
  }

  ampc_status random(Buf y, int64_t n, uint64_t seed, uint64_t offset,
                     bool normal, double p0, double p1) override {
    // Counter-based: element i's value depends on i alone.
    cpupool::forChunks(n, kParChunk / 8, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        double v = normal ? philoxNormal(seed, offset, i, p0, p1)
                          : philoxUniform(seed, offset, i, p0, p1);
        if (y.dtype == AMPC_F64)
          storeF64(y.data, y.dtype, i, v);
        else
          storeF32(y.data, y.dtype, i, static_cast<float>(v));
      }
    });
    return AMPC_OK;
  }

  ampc_status unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x,
                    int64_t n) override {
    if (!cpuwide::unary(op, attrs, y, x, n))
      cpukern::unary(op, attrs, y, x, n);
    return AMPC_OK;
  }

  ampc_status unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy,
                       Buf x, int64_t n) override {
    if (!cpuwide::unaryBwd(op, attrs, dx, dy, x, n))
      cpukern::unaryBwd(op, attrs, dx, dy, x, n);
    return AMPC_OK;
  }

  ampc_status binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w) override {
    if (!cpuwide::binary(op, y, a, b, w))
      cpukern::binary(op, y, a, b, w);
    return AMPC_OK;
  }

  ampc_status binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
                        const Walk &w) override {
    if (!cpuwide::binaryBwd(op, which, g, dy, a, b, w))
      cpukern::binaryBwd(op, which, g, dy, a, b, w);
    return AMPC_OK;
  }

  ampc_status reduce(ReduceOp op, Buf y, Buf x, const Walk &outer,
                     const Walk &inner) override {
    if (cpuwide::reduce(op, y, x, outer, inner))
      return AMPC_OK;
    if (op != ReduceOp::Max &&
        cpufast::reduceColumns(y, x, outer, inner, op == ReduceOp::Mean))
      return AMPC_OK;
    cpukern::reduce(op, y, x, outer, inner);
    return AMPC_OK;
  }

  ampc_status reduceMaxBwd(Buf dx, Buf dy, Buf x, Buf y, const Walk &outer,
                           const Walk &inner) override {
    // f32 (f64 when a tensor is f64): all of dy to the maxima, split evenly.
    if (cpuwide::isF64(dx) || cpuwide::isF64(dy) || cpuwide::isF64(x))
      cpukern::reduceMaxBwdAs<double>(dx, dy, x, y, outer, inner, loadF64,
                                      storeF64);
    else
      cpukern::reduceMaxBwdAs<float>(dx, dy, x, y, outer, inner, loadF32,
                                     storeF32);
    return AMPC_OK;
  }

  ampc_status argmax(Buf y, Buf x, int64_t outer, int64_t dim,
                     int64_t inner) override {
    if (cpuwide::argmax(y, x, outer, dim, inner))
      return AMPC_OK;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t base = o * dim * inner + i;
        float best = loadF32(x.data, x.dtype, base);
        int32_t at = 0;
        for (int64_t d = 1; d < dim; ++d) {
          float v = loadF32(x.data, x.dtype, base + d * inner);
          if (argmaxTakes(v, best)) {
            best = v;
            at = static_cast<int32_t>(d);
          }
        }
        static_cast<int32_t *>(y.data)[o * inner + i] = at;
      }
    return AMPC_OK;
  }
  bool cumsumWide(Buf y, Buf x, int64_t outer, int64_t len, int64_t inner,
                  bool reverse, ampc_status &st) override {
    st = AMPC_OK;
    return cpuwide::cumsum(y, x, outer, len, inner, reverse);
  }

  ampc_status softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim,
                      int64_t inner) override {
    if (!cpuwide::softmax(log, y, x, outer, dim, inner))
      cpukern::softmax(log, y, x, outer, dim, inner);
    return AMPC_OK;
  }

  ampc_status softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer,
                         int64_t dim, int64_t inner) override {
    if (!cpuwide::softmaxBwd(log, dx, dy, y, outer, dim, inner))
      cpukern::softmaxBwd(log, dx, dy, y, outer, dim, inner);
    return AMPC_OK;
  }

  ampc_status norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows,
                   int64_t cols, float eps) override {
    if (!cpuwide::norm(rms, y, x, w, b, rows, cols, eps))
      cpukern::norm(rms, y, x, w, b, rows, cols, eps);
    return AMPC_OK;
  }

  ampc_status normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                      int64_t rows, int64_t cols, float eps) override {
    if (!cpuwide::normBwd(rms, dx, dw, db, dy, x, w, rows, cols, eps))
      cpukern::normBwd(rms, dx, dw, db, dy, x, w, rows, cols, eps);
    return AMPC_OK;
  }

  /// The offset of the first maximum of a max-pooling window (-1: none);
  /// `load(offset)` reads the plane.
  template <typename Load>
  static int64_t argmax(const PoolGeom &g, Load &&load, int64_t oy,
                        int64_t ox) {
    int64_t best = -1;
    float bv = -INFINITY;
    g.forEachTap(oy, ox, [&](int64_t off) {
      float v = load(off);
      if (best < 0 || v > bv || (v != v && bv == bv)) {
        best = off;
        bv = v;
      }
    });
    return best;
  }

  /// The f32 values of plane `p` of x (h * w elements): x itself when it
  /// is f32, else widened into `buf`.
  static const float *planeOf(Buf x, int64_t p, int64_t hw,
                              std::vector<float> &buf) {
    if (x.dtype == AMPC_F32)
      return static_cast<const float *>(x.data) + p * hw;
    buf.resize(static_cast<size_t>(hw));
    loadContig(x, p * hw, hw, buf.data());
    return buf.data();
  }

  /// Whether every window of output row oy lies inside the plane, and the
  /// number of leading output columns whose windows do.
  static bool rowInside(const PoolGeom &g, int64_t oy) {
    return g.ph == 0 && oy * g.sh + g.kh <= g.h;
  }
  static int64_t colsInside(const PoolGeom &g) {
    if (g.pw != 0 || g.w < g.kw)
      return 0;
    return std::min(g.ow, (g.w - g.kw) / g.sw + 1);
  }

  /// Output row oy of a plane: values (and, for max with idx, the offsets
  /// of the first maxima) -- vector rows for the inside columns where the
  /// CPU has them, the element loop elsewhere; the same bits either way.
  template <typename At>
  static void poolRow(const PoolGeom &g, const float *xp, At &&at, int64_t oy,
                      float div, float *val, int64_t *idx) {
    int64_t ox = 0;
    if (rowInside(g, oy) && cpupooling::vectorRows() &&
        g.h * g.w < (int64_t(1) << 31)) {
      cpupooling::RowWindows r{xp, g.w, oy * g.sh, g.kh, g.kw, g.sw};
      for (int64_t end = colsInside(g); ox < end; ox += 16) {
        int n = static_cast<int>(std::min<int64_t>(16, end - ox));
        if (g.isMax) {
          int32_t at32[16];
          cpupooling::maxRow(r, ox, n, at32, val + ox);
          if (idx)
            std::copy(at32, at32 + n, idx + ox);
        } else
          cpupooling::avgRow(r, ox, n, div, val + ox);
      }
    }
    for (; ox < g.ow; ++ox) {
      if (g.isMax) {
        int64_t a = argmax(g, at, oy, ox);
        val[ox] = a < 0 ? -INFINITY : at(a);
        if (idx)
          idx[ox] = a;
      } else {
        float s = 0.0f;
        g.forEachTap(oy, ox, [&](int64_t off) { s += at(off); });
        val[ox] = s / div;
      }
    }
  }

  // Pooling: planes are independent items on the pool. A 16-bit plane is
  // widened once to f32 and the outputs of a row narrowed together; the
  // arithmetic (window order, first maximum, f32 sums) is the element
  // loop's, so the bits are those of storeF32(v) of the plain loop.
  ampc_status pool(Buf y, Buf x, const PoolGeom &g) override {
    if (cpuwide::pool(y, x, g))
      return AMPC_OK;
    float div = static_cast<float>(g.kh * g.kw);
    int64_t hw = g.h * g.w;
    int64_t per = std::max<int64_t>(1, cpupool::kItemElements /
                                           std::max<int64_t>(hw, 1));
    cpupool::forChunks(g.planes, per, [&](int64_t p0, int64_t p1) {
      std::vector<float> wide, row(static_cast<size_t>(g.ow));
      for (int64_t p = p0; p < p1; ++p) {
        const float *xp = planeOf(x, p, hw, wide);
        auto at = [xp](int64_t off) { return xp[off]; };
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          poolRow(g, xp, at, oy, div, row.data(), nullptr);
          storeContig(y, (p * g.oh + oy) * g.ow, g.ow, row.data());
        }
      }
    });
    return AMPC_OK;
  }

  ampc_status poolBwd(Buf dx, Buf dy, Buf x, const PoolGeom &g) override {
    if (cpuwide::poolBwd(dx, dy, x, g))
      return AMPC_OK;
    float div = static_cast<float>(g.kh * g.kw);
    int64_t hw = g.h * g.w;
    // Threads: planes are independent; each item its own accumulator. The
    // gradients go into it in the element loop's order (outputs row by
    // row, a window's elements in order).
    int64_t per = std::max<int64_t>(1, cpupool::kItemElements /
                                           std::max<int64_t>(hw, 1));
    cpupool::forChunks(g.planes, per, [&](int64_t p0, int64_t p1) {
      std::vector<float> acc(static_cast<size_t>(hw)), wide,
          drow(static_cast<size_t>(g.ow)), val(static_cast<size_t>(g.ow));
      std::vector<int64_t> idx(static_cast<size_t>(g.ow));
      for (int64_t p = p0; p < p1; ++p) {
        const float *xp = g.isMax ? planeOf(x, p, hw, wide) : nullptr;
        auto at = [xp](int64_t off) { return xp[off]; };
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          loadContig(dy, (p * g.oh + oy) * g.ow, g.ow, drow.data());
          if (g.isMax) {
            poolRow(g, xp, at, oy, div, val.data(), idx.data());
            for (int64_t ox = 0; ox < g.ow; ++ox)
              if (idx[ox] >= 0)
                acc[idx[ox]] += drow[ox];
            continue;
          }
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            float d = drow[ox];
            g.forEachTap(oy, ox, [&](int64_t off) { acc[off] += d / div; });
          }
        }
        storeContig(dx, p * hw, hw, acc.data());
      }
    });
    return AMPC_OK;
  }

  /// Records `site` in check word `check` (the smallest site wins).
  void recordCheck(ampc_check check, int32_t site) {
    uint32_t &w = checkWords[check];
    if (site >= 0 && static_cast<uint32_t>(site) < w)
      w = static_cast<uint32_t>(site);
  }

  ampc_status checkNonfinite(Buf x, int64_t n, int32_t site) override {
    // Widened a chunk at a time (exact: the same finiteness).
    bool bad = false;
    float t[kChunk];
    forPieces(0, n, [&](int64_t s, int64_t len) {
      if (bad)
        return;
      loadContig(x, s, len, t);
      for (int64_t i = 0; i < len && !bad; ++i)
        bad = !std::isfinite(t[i]);
    });
    if (bad)
      recordCheck(AMPC_CHECK_NONFINITE, site);
    return AMPC_OK;
  }

  ampc_status embedding(Buf y, Buf table, Buf ids, int64_t n, int64_t vocab,
                        int64_t dim, int32_t site) override {
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = loadIndex(ids.data, ids.dtype, i);
      bool ok = id >= 0 && id < vocab;
      if (!ok)
        recordCheck(AMPC_CHECK_INDEX, site);
      if (cpuwide::isF64(y) || cpuwide::isF64(table)) {
        // f64: the row (or zeros) element by element, exact.
        for (int64_t j = 0; j < dim; ++j)
          storeF64(y.data, y.dtype, i * dim + j,
                   ok ? loadF64(table.data, table.dtype, id * dim + j) : 0.0);
        continue;
      }
      // The row (or zeros) through f32 pieces: storeF32(loadF32) per
      // element, on the vector converters.
      float t[kChunk];
      forPieces(0, dim, [&](int64_t s, int64_t len) {
        if (ok)
          loadContig(table, id * dim + s, len, t);
        else
          std::fill(t, t + len, 0.0f);
        storeContig(y, i * dim + s, len, t);
      });
    }
    return AMPC_OK;
  }

  ampc_status embeddingBwd(Buf dtable, Buf dy, Buf ids, int64_t n,
                           int64_t vocab, int64_t dim) override {
    if (cpuwide::isF64(dtable) || cpuwide::isF64(dy)) {
      // f64 sums in the order of the ids.
      std::vector<double> acc(static_cast<size_t>(vocab * dim), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        int64_t id = loadIndex(ids.data, ids.dtype, i);
        if (id >= 0 && id < vocab)
          for (int64_t j = 0; j < dim; ++j)
            acc[id * dim + j] += loadF64(dy.data, dy.dtype, i * dim + j);
      }
      for (int64_t k = 0; k < vocab * dim; ++k)
        storeF64(dtable.data, dtable.dtype, k, acc[k]);
      return AMPC_OK;
    }
    // f32 sums in the order of the ids, dy's rows widened a piece at a
    // time; rounded once into dtable.
    std::vector<float> acc(static_cast<size_t>(vocab * dim), 0.0f);
    float t[kChunk];
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = loadIndex(ids.data, ids.dtype, i);
      if (id < 0 || id >= vocab)
        continue;
      forPieces(0, dim, [&](int64_t s, int64_t len) {
        loadContig(dy, i * dim + s, len, t);
        float *row = acc.data() + id * dim + s;
        for (int64_t j = 0; j < len; ++j)
          row[j] += t[j];
      });
    }
    forPieces(0, vocab * dim, [&](int64_t s, int64_t len) {
      storeContig(dtable, s, len, acc.data() + s);
    });
    return AMPC_OK;
  }

  ampc_status crossEntropy(Buf loss, Buf logits, Buf labels, int64_t rows,
                           int64_t classes, int32_t site) override {
    // The rows' terms on the pool, then added in row order as before.
    // f64 logits: the same terms and mean, in f64.
    bool f64 = logits.dtype == AMPC_F64;
    std::vector<double> terms(static_cast<size_t>(rows));
    int64_t perItem =
        std::max<int64_t>(1, kParChunk / std::max<int64_t>(classes, 1));
    cpupool::forChunks(rows, perItem, [&](int64_t r0, int64_t r1) {
      // f32: the chunk's rows' log-sum-exps first, eight rows at a time
      // (those of rows with a bad label are not used).
      std::vector<float> lse(f64 ? 0 : static_cast<size_t>(r1 - r0));
      if (!f64)
        cpukern::rowLses(logits, r0, r1 - r0, classes, lse.data());
      for (int64_t r = r0; r < r1; ++r) {
        int64_t label = loadIndex(labels.data, labels.dtype, r);
        if (label < 0 || label >= classes)
          terms[r] = 0.0;
        else if (f64)
          terms[r] = wideRowLse(logits, r * classes, classes) -
                     loadF64(logits.data, logits.dtype, r * classes + label);
        else
          terms[r] = lse[r - r0] -
                     loadF32(logits.data, logits.dtype, r * classes + label);
      }
    });
    bool badLabel;
    double mean =
        crossEntropyMeanOfTerms(labels, rows, classes, terms.data(), badLabel);
    if (badLabel)
      recordCheck(AMPC_CHECK_INDEX, site);
    if (f64)
      storeF64(loss.data, loss.dtype, 0, mean);
    else
      storeF32(loss.data, loss.dtype, 0, static_cast<float>(mean));
    return AMPC_OK;
  }

  ampc_status crossEntropyBwd(Buf dlogits, Buf dloss, Buf logits, Buf labels,
                              int64_t rows, int64_t classes) override {
    int64_t valid = crossEntropyValidRows(labels, rows);
    if (logits.dtype == AMPC_F64) {
      double scale64 =
          loadF64(dloss.data, dloss.dtype, 0) / static_cast<double>(valid);
      for (int64_t r = 0; r < rows; ++r)
        wideCrossEntropyBwdRow(dlogits, logits, r * classes, classes,
                               loadIndex(labels.data, labels.dtype, r),
                               scale64);
      return AMPC_OK;
    }
    float scale =
        loadF32(dloss.data, dloss.dtype, 0) / static_cast<float>(valid);
    int64_t perItem =
        std::max<int64_t>(1, kParChunk / std::max<int64_t>(classes, 1));
    cpupool::forChunks(rows, perItem, [&](int64_t r0, int64_t r1) {
      // The chunk's rows' log-sum-exps first, eight rows at a time (those
      // of ignored rows are not used).
      std::vector<float> lses(static_cast<size_t>(r1 - r0));
      cpukern::rowLses(logits, r0, r1 - r0, classes, lses.data());
      for (int64_t r = r0; r < r1; ++r) {
        int64_t label = loadIndex(labels.data, labels.dtype, r);
        int64_t base = r * classes;
        float lse = label == -100 ? 0.0f : lses[r - r0];
        cpukern::crossEntropyBwdRow(dlogits, logits, base, classes, label, lse,
                                    scale);
      }
    });
    return AMPC_OK;
  }

  ampc_status mse(Buf loss, Buf a, Buf b, int64_t n) override {
    if (cpuwide::mse(loss, a, b, n))
      return AMPC_OK;
    // Widened a piece at a time; the f64 sum in element order.
    double s = 0.0;
    float ta[kChunk], tb[kChunk];
    forPieces(0, n, [&](int64_t o, int64_t len) {
      loadContig(a, o, len, ta);
      loadContig(b, o, len, tb);
      for (int64_t i = 0; i < len; ++i) {
        float d = ta[i] - tb[i];
        s += static_cast<double>(d) * d;
      }
    });
    storeF32(loss.data, loss.dtype, 0,
             static_cast<float>(s / static_cast<double>(n)));
    return AMPC_OK;
  }

  ampc_status mseBwd(Buf da, Buf db, Buf dloss, Buf a, Buf b,
                     int64_t n) override {
    if (cpuwide::mseBwd(da, db, dloss, a, b, n))
      return AMPC_OK;
    float norm = 2.0f / static_cast<float>(n);
    float g = loadF32(dloss.data, dloss.dtype, 0);
    // Each element's f32 expression as before, a piece at a time, rounded
    // once into da and db.
    float ta[kChunk], tb[kChunk];
    forPieces(0, n, [&](int64_t o, int64_t len) {
      loadContig(a, o, len, ta);
      loadContig(b, o, len, tb);
      for (int64_t i = 0; i < len; ++i) {
        ta[i] = norm * (ta[i] - tb[i]) * g;
        tb[i] = -ta[i];
      }
      if (da.data)
        storeContig(da, o, len, ta);
      if (db.data)
        storeContig(db, o, len, tb);
    });
    return AMPC_OK;
  }

  /// How one tile of a GEMM runs on oneDNN: its primitive, and which of its
  /// operands are first copied into dense per-thread buffers.
  struct TilePlan {
    const onednn::Matmul *matmul = nullptr;
    bool packA = false, packB = false;
  };

  /// The oneDNN primitives of the tiles `t` of `d` (made here, before the
  /// pool runs them, and kept by the backend) and the dtype they read;
  /// `plans` is left empty where the GEMM runs on OpenBLAS. oneDNN reads
  /// f32 x f32 and bf16 x bf16 operands as they are; f16 and mixed operands
  /// are widened exactly to f32 first (oneDNN 2.x has no f16 matmul on
  /// CPUs). A bf16 problem oneDNN has no kernel for on these units (2.x
  /// needs AVX-512 for bf16) runs as f32 on widened operands; a problem it
  /// refuses altogether stays on OpenBLAS. Reads no tensor data.
  ///
  /// oneDNN 2.x's brgemm kernels (the AMX and AVX512-BF16 ones among them)
  /// take an operand only when its rows are dense: a block of columns of a
  /// wider matrix (a tile, one attention head of a [tokens, width]
  /// activation) falls back to its gemm:jit kernels, slower on bf16 with
  /// AMX (bench BM_CpuGemmLayout). Where a bf16 problem gets gemm:jit
  /// strided and brgemm dense, a tile whose C is dense has its non-dense A
  /// (untransposed) and B copied into dense buffers (k x cols or rows x k
  /// elements, against a product of rows x cols x k) and runs on brgemm.
  /// The choice comes from the shape alone, so the bits do not depend on
  /// the thread count.
  ampc_dtype gemmPlans(const GemmDesc &d, const GemmTiles &t,
                       std::vector<TilePlan> &plans) {
    bool direct = d.c.dtype == AMPC_F32;
    auto isBrgemm = [](const onednn::Matmul *m) {
      return m && m->impl.compare(0, 3, "brg") == 0;
    };
    auto plan = [&](ampc_dtype type) {
      plans.assign(static_cast<size_t>(t.perMatrix()), TilePlan());
      for (int64_t tile = 0; tile < t.perMatrix(); ++tile) {
        int64_t rows = t.rows(tile, d.m), cols = t.cols(tile, d.n);
        int64_t ldc = direct ? d.ldc : cols;
        onednn::MatmulKey key{rows,     cols,     d.k,  d.lda,   d.ldb,
                              ldc,      d.transA, d.transB, type, d.alpha,
                              d.beta};
        std::string why;
        TilePlan &p = plans[tile];
        if (!(p.matmul = matmuls.get(key, why))) {
          plans.clear();
          return false;
        }
        onednn::MatmulKey dense = key;
        dense.lda = d.transA ? rows : d.k;
        dense.ldb = d.transB ? d.k : cols;
        dense.ldc = cols;
        bool packA = dense.lda != key.lda, packB = dense.ldb != key.ldb;
        // bf16 only, and not where C or a transposed A would be copied:
        // f32 brgemm measured no faster than gemm:jit, and the copies of C
        // and of a transposed A cost more than they saved.
        if (type != AMPC_BF16 || isBrgemm(p.matmul) || !(packA || packB) ||
            dense.ldc != key.ldc || (packA && d.transA))
          continue;
        const onednn::Matmul *m = matmuls.get(dense, why);
        if (isBrgemm(m))
          p = TilePlan{m, packA, packB};
      }
      return true;
    };
    plans.clear();
    bool onBf16Units = d.a.dtype == AMPC_BF16 && d.b.dtype == AMPC_BF16 &&
                       onednn::nativeBf16();
    if (d.k != 0 &&
        onednn::wanted(onBf16Units, t.rows(0, d.m) * t.cols(0, d.n) * d.k)) {
      if (onBf16Units && plan(AMPC_BF16))
        return AMPC_BF16;
      plan(AMPC_F32);
    }
    return AMPC_F32;
  }

  static int64_t kSplitParts(const GemmDesc &d) {
    return cpugemm::kSplitParts(d, cpugemm::tilesOf(d, onednn::nativeBf16()));
  }

  /// Whether `d` runs as an f32 product on oneDNN's gemm:jit kernels.
  bool onGemmJitF32(const GemmDesc &d) {
    std::vector<TilePlan> plans;
    return gemmPlans(d, cpugemm::tilesOf(d, onednn::nativeBf16()), plans) ==
               AMPC_F32 &&
           !plans.empty() && plans[0].matmul->impl == "gemm:jit";
  }

  ampc_status planGemm(const GemmDesc &d) override {
    if (int64_t parts = kSplitParts(d))
      return planGemm(cpugemm::kBlocks(d, parts, nullptr));
    std::vector<TilePlan> plans;
    cpugemm::PadPlan pad = cpugemm::conflictingOperands(d);
    GemmDesc run = pad.any() && onGemmJitF32(d)
                       ? cpugemm::padOperands(d, pad, false, paddedA, paddedB)
                       : d;
    gemmPlans(run, cpugemm::tilesOf(run, onednn::nativeBf16()), plans);
    return AMPC_OK;
  }

  ampc_status gemm(const GemmDesc &d) override {
    if (cpuwide::gemm(d)) {
      noteEngine("f64");
      return AMPC_OK;
    }
    // One tile with a long k: blocks of k as a batch, summed (kSplitParts).
    if (int64_t parts = kSplitParts(d)) {
      thread_local std::vector<float> partials;
      partials.resize(static_cast<size_t>(parts * d.m * d.n));
      AMPC_TRY(gemm(cpugemm::kBlocks(d, parts, partials.data())));
      cpugemm::sumKBlocks(d, parts, partials.data());
      return AMPC_OK;
    }
    // Operands whose rows conflict in the cache, copied (paddedLd).
    cpugemm::PadPlan pad = cpugemm::conflictingOperands(d);
    if (pad.any() && onGemmJitF32(d))
      return gemm(cpugemm::padOperands(d, pad, true, paddedA, paddedB));
    // Extent in elements of a batch of row-major matrices.
    auto extent = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
      return (d.batch - 1) * stride + (rows - 1) * ld + cols;
    };
    int64_t ar = d.transA ? d.k : d.m, ac = d.transA ? d.m : d.k;
    int64_t br = d.transB ? d.n : d.k, bc = d.transB ? d.k : d.n;
    bool emptyK = d.k == 0;
    bool direct = d.c.dtype == AMPC_F32;
    // Threads: fixed tiles of C (from the shape alone), each one
    // single-threaded GEMM call with its own epilogue and store, so every
    // element of C comes from the same call whatever the thread count.
    GemmTiles t = cpugemm::tilesOf(d, onednn::nativeBf16());
    int64_t perMatrix = t.perMatrix();
    auto tileRows = [&](int64_t tile) { return t.rows(tile, d.m); };
    auto tileCols = [&](int64_t tile) { return t.cols(tile, d.n); };
    std::vector<TilePlan> plans;
    ampc_dtype opType = gemmPlans(d, t, plans);
    if (plans.empty() && !emptyK) {
      usedBlas = true;
      noteEngine("openblas");
    }
    for (const TilePlan &p : plans)
      noteEngine(p.matmul->impl);
    const char *aBase, *bBase;
    if (opType == AMPC_F32) {
      F32View a(d.a, emptyK ? 0 : extent(ar, ac, d.lda, d.strideA), scratchA);
      F32View b(d.b, emptyK ? 0 : extent(br, bc, d.ldb, d.strideB), scratchB);
      aBase = reinterpret_cast<const char *>(a.get());
      bBase = reinterpret_cast<const char *>(b.get());
    } else {
      aBase = static_cast<const char *>(d.a.data);
      bBase = static_cast<const char *>(d.b.data);
    }
    size_t opSize = opType == AMPC_F32 ? sizeof(float) : sizeof(uint16_t);
    std::vector<float> bias;
    if (d.bias.data) {
      bias.resize(static_cast<size_t>(d.n));
      for (int64_t j = 0; j < d.n; ++j)
        bias[j] = loadF32(d.bias.data, d.bias.dtype, j);
    }
    std::atomic<bool> failed{false};
    cpupool::parallelFor(d.batch * perMatrix, [&](int64_t item) {
      int64_t i = item / perMatrix, tile = item % perMatrix;
      int64_t r0 = tile / t.colBlocks * t.mb, c0 = tile % t.colBlocks * t.nb;
      int64_t rows = tileRows(tile), cols = tileCols(tile);
      int64_t cOff = i * d.strideC + r0 * d.ldc + c0;
      const TilePlan *plan = plans.empty() ? nullptr : &plans[tile];
      float *c;
      int64_t ldc;
      if (direct) {
        c = static_cast<float *>(d.c.data) + cOff;
        ldc = d.ldc;
      } else {
        // Per-thread scratch: the tile in f32 before its one rounding.
        thread_local std::vector<float> tileScratch;
        if (tileScratch.size() < static_cast<size_t>(rows * cols))
          tileScratch.resize(static_cast<size_t>(rows * cols));
        c = tileScratch.data();
        ldc = cols;
        if (d.beta != 0.0f)
          for (int64_t r = 0; r < rows; ++r)
            loadContig(d.c, cOff + r * d.ldc, cols, c + r * cols);
      }
      if (emptyK) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < cols; ++j)
            c[r * ldc + j] = d.beta == 0.0f ? 0.0f : d.beta * c[r * ldc + j];
      } else {
        const char *ap =
            aBase + (i * d.strideA + (d.transA ? r0 : r0 * d.lda)) * opSize;
        const char *bp =
            bBase + (i * d.strideB + (d.transB ? c0 * d.ldb : c0)) * opSize;
        if (plan) {
          // Dense copies of the operands the primitive wants dense.
          thread_local std::vector<char> packedA, packedB;
          if (plan->packA)
            ap = packRows(packedA, ap, d.transA ? d.k : rows,
                          d.transA ? rows : d.k, d.lda, opSize);
          if (plan->packB)
            bp = packRows(packedB, bp, d.transB ? cols : d.k,
                          d.transB ? d.k : cols, d.ldb, opSize);
          if (!onednn::run(*plan->matmul, ap, bp, c))
            failed = true;
        } else {
          cblas_sgemm(CblasRowMajor, d.transA ? CblasTrans : CblasNoTrans,
                      d.transB ? CblasTrans : CblasNoTrans,
                      static_cast<int>(rows), static_cast<int>(cols),
                      static_cast<int>(d.k), d.alpha,
                      reinterpret_cast<const float *>(ap),
                      static_cast<int>(d.lda),
                      reinterpret_cast<const float *>(bp),
                      static_cast<int>(d.ldb), d.beta, c,
                      static_cast<int>(ldc));
        }
      }
      bool post = d.bias.data || d.epilogue != AMPC_EPILOGUE_NONE;
      for (int64_t r = 0; r < rows && (post || !direct); ++r) {
        float *row = c + r * ldc;
        cpukern::epilogueRow(
            d.epilogue, d.bias.data ? bias.data() + c0 : nullptr, row, cols);
        if (!direct)
          storeContig(d.c, cOff + r * d.ldc, cols, row);
      }
    });
    if (failed)
      return setError(AMPC_ERROR_INTERNAL,
                      "cpu backend: a oneDNN matmul failed (%s)",
                      onednn::engineSummary());
    return AMPC_OK;
  }

  bool planConvolve(const ConvCall &c) override {
    int dt = onednn::convDtype(c.a.dtype, c.b.dtype);
    if (dt < 0)
      return false;
    // The dtypes convolve() hands on; no data is read.
    ConvCall call = c;
    widenedDtypes(call, static_cast<ampc_dtype>(dt));
    return onednn::plan(convs, call, static_cast<ampc_dtype>(dt));
  }

  int64_t primitives() const override {
    return static_cast<int64_t>(matmuls.size() + convs.size());
  }

  /// Whether operand `b` of dtype `t` is widened here before a oneDNN
  /// convolution in dtype `dt`: weights not of dt (once per call; they are
  /// small), and images or output gradients of a dtype oneDNN's path does
  /// not widen itself (it takes f16 and bf16 ones as they are,
  /// cpu_onednn_conv.h).
  static bool widenedHere(ampc_dtype t, ampc_dtype dt, bool weights) {
    return t != dt && (weights || (t != AMPC_F16 && t != AMPC_BF16));
  }
  static void widenedDtypes(ConvCall &call, ampc_dtype dt) {
    bool bWeights = call.pass != ConvCall::BackwardWeights;
    if (widenedHere(call.a.dtype, dt, false))
      call.a.dtype = AMPC_F32;
    if (widenedHere(call.b.dtype, dt, bWeights))
      call.b.dtype = AMPC_F32;
  }

  /// f64 convolutions: im2col / col2im and dgemm in f64 (cpu_conv_wide.h).
  bool convWide(const ConvWideCall &c, ampc_status &status) override {
    status = cpuwide::conv(c);
    return true;
  }

  /// `c` with its operands not of the primitive's dtype `want` (f16, mixed,
  /// or bf16 where oneDNN has no bf16 units) widened exactly to f32 into
  /// `wideA` and `wideB`: weights here, 16-bit images and output gradients
  /// by onednn::convolve as it blocks them.
  static ConvCall widenedCall(const ConvCall &c, ampc_dtype want,
                              std::vector<float> &wideA,
                              std::vector<float> &wideB) {
    ConvCall call = c;
    widenHere(call.a, call.aElems(), want, false, wideA);
    widenHere(call.b, call.bElems(), want,
              call.pass != ConvCall::BackwardWeights, wideB);
    return call;
  }
  /// Operand `b` of `n` elements widened into `to` where widenedHere says.
  static void widenHere(Buf &b, int64_t n, ampc_dtype want, bool weights,
                        std::vector<float> &to) {
    if (!widenedHere(b.dtype, want, weights))
      return;
    to.resize(static_cast<size_t>(n));
    loadContigPar(b, n, to.data());
    b = Buf{to.data(), AMPC_F32};
  }

  bool convolve(const ConvCall &c, ampc_status &status) override {
    int dt = onednn::convDtype(c.a.dtype, c.b.dtype);
    if (dt < 0)
      return false;
    ampc_dtype want = static_cast<ampc_dtype>(dt);
    ConvCall call = widenedCall(c, want, convWideA, convWideB);
    std::string impl;
    if (!onednn::convolve(convs, call, want, status, &impl))
      return false;
    noteEngine(impl);
    return true;
  }

  bool convolveBackward(const ConvCall &data, const ConvCall &weights,
                        ampc_status &status) override {
    // AMPC_CPU_CONV_SHARE=off runs the two passes apart (tests, benchmarks).
    static const bool apart = [] {
      const char *e = getenv("AMPC_CPU_CONV_SHARE");
      return e && !strcmp(e, "off");
    }();
    if (apart)
      return false;
    int dt = onednn::convDtype(data.a.dtype, data.b.dtype);
    if (dt < 0 || dt != onednn::convDtype(weights.a.dtype, weights.b.dtype) ||
        widenedHere(data.a.dtype, static_cast<ampc_dtype>(dt), false))
      return false;
    ampc_dtype want = static_cast<ampc_dtype>(dt);
    ConvCall d = widenedCall(data, want, convWideA, convWideB);
    // The weights pass's images only: its output gradient is the data
    // pass's, which the check above found not widened here.
    ConvCall w = weights;
    widenHere(w.a, w.aElems(), want, false, convWideC);
    std::string impl;
    if (!onednn::convolveBackward(convs, d, w, want, status, &impl))
      return false;
    noteEngine(impl);
    return true;
  }

  ampc_status im2col(Buf col, Buf x, const ConvGeom &g) override {
    if (col.dtype == AMPC_F32 && x.dtype == AMPC_F32) {
      im2colTyped(static_cast<float *>(col.data),
                  static_cast<const float *>(x.data), g);
      return AMPC_OK;
    }
    if (col.dtype == x.dtype &&
        (col.dtype == AMPC_F16 || col.dtype == AMPC_BF16)) {
      im2colTyped(static_cast<uint16_t *>(col.data),
                  static_cast<const uint16_t *>(x.data), g);
      return AMPC_OK;
    }
    if (col.dtype == AMPC_F32 && isFloatDtype(x.dtype)) {
      // Widen the image once (exact), then move f32 columns.
      int64_t n = g.imageSize();
      if (convScratch.size() < static_cast<size_t>(n))
        convScratch.resize(static_cast<size_t>(n));
      loadContigPar(x, n, convScratch.data());
      im2colTyped(static_cast<float *>(col.data), convScratch.data(), g);
      return AMPC_OK;
    }
    int64_t cols = g.columns();
    for (int64_t c = 0; c < g.channels; ++c)
      for (int64_t kz = 0; kz < g.kd; ++kz)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t row = (((c * g.kd + kz) * g.kh + ky) * g.kw + kx) * cols;
            for (int64_t oz = 0; oz < g.od; ++oz) {
              int64_t iz = oz * g.sd - g.pd + kz * g.dd;
              for (int64_t oy = 0; oy < g.oh; ++oy) {
                int64_t iy = oy * g.sh - g.ph + ky * g.dh;
                for (int64_t ox = 0; ox < g.ow; ++ox) {
                  int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                  int64_t out = row + (oz * g.oh + oy) * g.ow + ox;
                  if (iz < 0 || iz >= g.d || iy < 0 || iy >= g.h || ix < 0 ||
                      ix >= g.w)
                    storeF32(col.data, col.dtype, out, 0.0f);
                  else
                    convertElement(col.data, col.dtype, out, x.data, x.dtype,
                                   ((c * g.d + iz) * g.h + iy) * g.w + ix);
                }
              }
            }
          }
    return AMPC_OK;
  }

  std::vector<float> convScratch;
  /// Operands of a oneDNN convolution widened to f32 (convolve()).
  std::vector<float> convWideA, convWideB, convWideC;

  // Convolution bias (cpugemm): f32 in place without the generic walk.
  ampc_status addChannelBias(Buf y, Buf src, Buf bias, int64_t outer,
                             int64_t channels, int64_t inner) override {
    if (y.dtype != AMPC_F32 || src.dtype != AMPC_F32 || bias.dtype != AMPC_F32)
      return Backend::addChannelBias(y, src, bias, outer, channels, inner);
    cpuconv::addChannelBiasF32(
        static_cast<float *>(y.data), static_cast<const float *>(src.data),
        static_cast<const float *>(bias.data), outer, channels, inner);
    return AMPC_OK;
  }

  ampc_status col2im(float *dx, const float *col, const ConvGeom &g) override {
    // Threads: channel c adds into its own plane of dx only.
    cpupool::forChunks(
        g.channels, channelsPerItem(g),
        [&](int64_t c0, int64_t c1) { col2imChannels(dx, col, g, c0, c1); });
    return AMPC_OK;
  }

  static void col2imChannels(float *dx, const float *col, const ConvGeom &g,
                             int64_t c0, int64_t c1) {
    int64_t hw = g.oh * g.ow, cols = g.columns();
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t kz = 0; kz < g.kd; ++kz)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const float *row =
                col + (((c * g.kd + kz) * g.kh + ky) * g.kw + kx) * cols;
            int64_t off = kx * g.dw - g.pw;
            int64_t lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
            int64_t hi = g.w - off <= 0 ? 0 : (g.w - off + g.sw - 1) / g.sw;
            lo = std::min(lo, g.ow);
            hi = std::max(lo, std::min(hi, g.ow));
            for (int64_t oz = 0; oz < g.od; ++oz) {
              int64_t iz = oz * g.sd - g.pd + kz * g.dd;
              if (iz < 0 || iz >= g.d)
                continue;
              for (int64_t oy = 0; oy < g.oh; ++oy) {
                int64_t iy = oy * g.sh - g.ph + ky * g.dh;
                if (iy < 0 || iy >= g.h)
                  continue;
                // The ox whose ix lies in [0, w), as in im2colTyped; the
                // same additions in the same order as testing every ox.
                float *__restrict out = dx + ((c * g.d + iz) * g.h + iy) * g.w;
                const float *__restrict in = row + oz * hw + oy * g.ow;
                if (g.sw == 1)
                  for (int64_t ox = lo; ox < hi; ++ox)
                    out[ox + off] += in[ox];
                else
                  for (int64_t ox = lo; ox < hi; ++ox)
                    out[ox * g.sw + off] += in[ox];
              }
            }
          }
  }

  // Loss scaling, the gradient clip, the optimizers and gradient
  // accumulation: cpu_optimizer.cpp.
  ampc_status checkFiniteUnscale(Buf foundInf, const TensorList &g,
                                 const float *scale) override {
    return cpuopt::checkFiniteUnscale(foundInf, g, scale);
  }
  ampc_status updateScale(float *scale, int32_t *growthTracker,
                          int32_t *hysteresisLeft, Buf foundInf,
                          float growthFactor, float backoffFactor,
                          int32_t growthInterval, int32_t hysteresis,
                          float minScale, float maxScale) override {
    return cpuopt::updateScale(scale, growthTracker, hysteresisLeft, foundInf,
                               growthFactor, backoffFactor, growthInterval,
                               hysteresis, minScale, maxScale);
  }
  ampc_status clipGradNorm(float *totalNorm, const TensorList &g, float maxNorm,
                           Buf foundInf) override {
    return cpuopt::clipGradNorm(totalNorm, g, maxNorm, foundInf);
  }
  ampc_status sgd(const TensorList &params, const TensorList &grads,
                  void *const *bufs, const SgdScalars &scalars,
                  Buf foundInf, const ModelCopies &models,
                  const LowUpdate &low) override {
    return cpuopt::sgd(params, grads, bufs, scalars, foundInf, models, low);
  }
  ampc_status adamw(const TensorList &params, const TensorList &grads,
                    void *const *expAvgs, void *const *expAvgSqs, int32_t *step,
                    double lr, double beta1, double beta2, double eps,
                    double weightDecay, Buf foundInf,
                    const float *lrScale,
                    const ModelCopies &models,
                    const LowUpdate &low) override {
    return cpuopt::adamw(params, grads, expAvgs, expAvgSqs, step, lr, beta1,
                         beta2, eps, weightDecay, foundInf, lrScale, models,
                         low);
  }
  ampc_status lrSchedule(float *factor, int32_t *step, const LrSchedule &s,
                         Buf foundInf) override {
    return cpuopt::lrSchedule(factor, step, s, foundInf);
  }
  ampc_status gradAccumulate(const TensorList &accs, const TensorList &grads,
                             int32_t *micro, int64_t k) override {
    return cpuopt::gradAccumulate(accs, grads, micro, k);
  }

  // Batch norm and dropout (docs/language.md, "batch_norm and dropout"):
  // the shared scalar code, a channel at a time, on f32 scratch (BnBlock).
  static int64_t channelsPerBnItem(const BnGeom &g) {
    return std::max<int64_t>(1, cpupool::kItemElements /
                                    std::max<int64_t>(g.n * g.inner, 1));
  }
  ampc_status batchNorm(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                        bool training, int64_t n, int64_t c, int64_t inner,
                        float eps) override {
    BnGeom g{n, c, inner};
    // Threads: blocks of channels (each channel's sums stay in order), each
    // widened into f32 scratch, normalised by the shared per-channel code
    // and rounded back once.
    cpupool::forChunks(c, channelsPerBnItem(g), [&](int64_t c0, int64_t c1) {
      BnBlock blk{g, c0, c1};
      std::vector<float> xs(blk.size()), ys(blk.size());
      blk.gather(x, xs.data());
      for (int64_t ch = c0; ch < c1; ++ch)
        bnForwardChannel(blk.channel(ys.data(), ch), blk.channel(xs.data(), ch),
                         elementOf(w, ch), elementOf(b, ch), elementOf(rm, ch),
                         elementOf(rv, ch), training, blk.channelGeom(), 0,
                         eps);
      blk.scatter(y, ys.data());
    });
    return AMPC_OK;
  }
  ampc_status batchNormBwd(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
                           Buf rm, Buf rv, bool training, int64_t n,
                           int64_t c, int64_t inner, float eps) override {
    BnGeom g{n, c, inner};
    cpupool::forChunks(c, channelsPerBnItem(g), [&](int64_t c0, int64_t c1) {
      BnBlock blk{g, c0, c1};
      std::vector<float> xs(blk.size()), dys(blk.size()),
          dxs(dx.data ? blk.size() : 0);
      blk.gather(x, xs.data());
      blk.gather(dy, dys.data());
      for (int64_t ch = c0; ch < c1; ++ch)
        bnBackwardChannel(
            dx.data ? blk.channel(dxs.data(), ch) : dx, elementOf(dw, ch),
            elementOf(db, ch), blk.channel(dys.data(), ch),
            blk.channel(xs.data(), ch), elementOf(w, ch), elementOf(rm, ch),
            elementOf(rv, ch), training, blk.channelGeom(), 0, eps);
      if (dx.data)
        blk.scatter(dx, dxs.data());
    });
    return AMPC_OK;
  }
  ampc_status batchNormUpdate(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                              int64_t n, int64_t c, int64_t inner,
                              float momentum) override {
    BnGeom g{n, c, inner};
    cpupool::forChunks(c, channelsPerBnItem(g), [&](int64_t c0, int64_t c1) {
      BnBlock blk{g, c0, c1};
      std::vector<float> xs(blk.size());
      blk.gather(x, xs.data());
      for (int64_t ch = c0; ch < c1; ++ch)
        bnUpdateChannel(elementOf(newMean, ch), elementOf(newVar, ch),
                        blk.channel(xs.data(), ch), elementOf(rm, ch),
                        elementOf(rv, ch), blk.channelGeom(), 0, momentum);
    });
    return AMPC_OK;
  }
  ampc_status dropout(Buf y, Buf x, const int32_t *step, uint64_t seed,
                      uint64_t key, float p, int64_t numel,
                      DropoutShard shard) override {
    uint64_t stream = dropoutStream(key, static_cast<uint32_t>(*step));
    float scale = 1.0f / (1.0f - p);
    cpupool::forChunks(numel, kParChunk / 4, [&](int64_t lo, int64_t hi) {
      // x widened a piece at a time, each product rounded once into y; the
      // four draws of a block of four mask elements computed once.
      float t[kChunk];
      int64_t block = -1;
      Philox4 r{};
      forPieces(lo, hi, [&](int64_t s, int64_t len) {
        loadContig(x, s, len, t);
        for (int64_t i = 0; i < len; ++i) {
          int64_t gi = shard.global(s + i);
          if (gi >> 2 != block) {
            block = gi >> 2;
            r = dropoutDraws(seed, stream, gi);
          }
          t[i] = t[i] * dropoutFactorOf(r, gi, p, scale);
        }
        storeContig(y, s, len, t);
      });
    });
    return AMPC_OK;
  }
  bool batchNormWide(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                     bool training, int64_t n, int64_t c, int64_t inner,
                     double eps, ampc_status &st) override {
    st = AMPC_OK;
    return cpuwide::batchNorm(y, x, w, b, rm, rv, training, n, c, inner, eps);
  }
  bool batchNormBwdWide(Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w, Buf rm,
                        Buf rv, bool training, int64_t n, int64_t c,
                        int64_t inner, double eps, ampc_status &st) override {
    st = AMPC_OK;
    return cpuwide::batchNormBwd(dx, dw, db, dy, x, w, rm, rv, training, n, c,
                                 inner, eps);
  }
  bool batchNormUpdateWide(Buf newMean, Buf newVar, Buf x, Buf rm, Buf rv,
                           int64_t n, int64_t c, int64_t inner,
                           double momentum, ampc_status &st) override {
    st = AMPC_OK;
    return cpuwide::batchNormUpdate(newMean, newVar, x, rm, rv, n, c, inner,
                                    momentum);
  }
  bool dropoutWide(Buf y, Buf x, const int32_t *step, uint64_t seed,
                   uint64_t key, float pMask, double p, int64_t numel,
                   DropoutShard shard, ampc_status &st) override {
    st = AMPC_OK;
    return cpuwide::dropout(y, x, step, seed, key, pMask, p, numel, shard);
  }
  ampc_status counterNext(int32_t *next, const int32_t *counter) override {
    *next = *counter + 1;
    return AMPC_OK;
  }

private:
  static constexpr size_t kMaxCachedBytes = size_t(256) << 20;
  std::vector<float> scratchA, scratchB, scratchC, paddedA, paddedB;
  /// The GEMM primitives made so far (oneDNN), by problem.
  onednn::MatmulCache matmuls;
  /// The convolution primitives made so far (oneDNN), by problem.
  onednn::ConvCache convs;
  /// Whether a GEMM ran on OpenBLAS (named by engine()).
  bool usedBlas = false;
  /// The implementations noted since the last takeEngines.
  onednn::EngineNotes notes;
  std::map<size_t, std::vector<void *>> freeBlocks;
  std::unordered_map<void *, size_t> blockClass;
  size_t cachedBytes = 0;
};

} // namespace
} // namespace ampc

// OpenBLAS's own call to stop its worker threads (exported by its threaded
// builds, not declared in cblas.h; null where the library lacks it).
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace ampc {
namespace {

/// OpenBLAS runs single-threaded inside the runtime whatever
/// OPENBLAS_NUM_THREADS says: its threaded GEMMs split their sums by the
/// thread count; the runtime's own pool runs fixed GEMM tiles instead. Its
/// workers, started when the library loaded, are stopped too: each spins
/// (sched_yield) for about 2^28 cycles before it sleeps, a tenth of a
/// second of a core per process that nothing uses. A single-threaded call
/// never starts them again.
void singleThreadedBlas() {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_)
    blas_thread_shutdown_();
}

} // namespace

bool cpuBf16GemmsOnAmx() {
  return cpuisa::usable(cpuisa::Isa::Amx) &&
         onednn::wanted(true, int64_t(1) << 30);
}

Backend *createCpuBackend() {
  static const bool once = (singleThreadedBlas(), true);
  (void)once;
  return new CpuBackend();
}

} // namespace ampc
