//===- cuda_fast.cuh - Fast paths of the CUDA backend -----------*- CUDA -*-===//
//
// Included once, by cuda_backend.cu, inside its anonymous namespace (one
// translation unit keeps the build simple). Every kernel here is
// deterministic: fixed-order reductions, no float atomics.
//
//  - collapsed walks: adjacent dims merged on the host, 32-bit offsets when
//    every offset fits;
//  - contiguous elementwise kernels specialised by dtype with vector loads;
//  - two-stage column sums (norm weight/bias gradients, bias gradients,
//    broadcast backward) and a two-stage full reduction;
//  - embedding backward by sorted ids (stable radix sort, one warp per run
//    of equal ids, sums in token order: bit-identical to the CPU backend);
//  - fused single-read layer norm / softmax rows when a row fits in
//    registers, single-pass (online) cross-entropy row statistics;
//  - multi-tensor kernels for unscale, clip, SGD and AdamW.
//
//===----------------------------------------------------------------------===//

// ------------------------------------------------------- collapsed walks --

/// Drops size-1 dims and merges dim d into d+1 where every one of the first
/// `ops` operands is contiguous across the pair.
inline Walk collapseWalk(const Walk &w, int ops) {
  Walk out;
  for (int d = 0; d < w.rank; ++d) {
    if (w.shape[d] == 1)
      continue;
    if (out.rank > 0) {
      int p = out.rank - 1;
      bool merge = true;
      for (int k = 0; k < ops; ++k)
        merge &= out.stride[k][p] == w.stride[k][d] * w.shape[d];
      if (merge) {
        out.shape[p] *= w.shape[d];
        for (int k = 0; k < ops; ++k)
          out.stride[k][p] = w.stride[k][d];
        continue;
      }
    }
    out.shape[out.rank] = w.shape[d];
    for (int k = 0; k < 3; ++k)
      out.stride[k][out.rank] = k < ops ? w.stride[k][d] : 0;
    ++out.rank;
  }
  if (out.rank == 0) { // a single element
    out.rank = 1;
    out.shape[0] = w.numel() == 0 ? 0 : 1;
    for (int k = 0; k < 3; ++k)
      out.stride[k][0] = 1;
  }
  return out;
}

/// Whether the first `ops` operands of a collapsed walk are all contiguous.
inline bool walkContiguous(const Walk &w, int ops) {
  if (w.rank != 1)
    return false;
  for (int k = 0; k < ops; ++k)
    if (w.stride[k][0] != 1)
      return false;
  return true;
}

/// Whether every index and offset of the walk fits in 32 bits.
inline bool walkFits32(const Walk &w, int ops) {
  if (w.numel() >= (int64_t(1) << 31))
    return false;
  for (int k = 0; k < ops; ++k) {
    int64_t span = 0;
    for (int d = 0; d < w.rank; ++d)
      span += (w.shape[d] - 1) * (w.stride[k][d] < 0 ? -w.stride[k][d]
                                                     : w.stride[k][d]);
    if (span >= (int64_t(1) << 31))
      return false;
  }
  return true;
}

/// The walk in 32-bit form: unsigned divisions are far cheaper than 64-bit.
struct Walk32 {
  int rank;
  uint32_t shape[kMaxRank];
  int32_t stride[3][kMaxRank];
};

inline Walk32 toWalk32(const Walk &w) {
  Walk32 o{};
  o.rank = w.rank;
  for (int d = 0; d < w.rank; ++d) {
    o.shape[d] = static_cast<uint32_t>(w.shape[d]);
    for (int k = 0; k < 3; ++k)
      o.stride[k][d] = static_cast<int32_t>(w.stride[k][d]);
  }
  return o;
}

__device__ __forceinline__ void walkOffsets32(const Walk32 &w, uint32_t i,
                                              int32_t &o0, int32_t &o1,
                                              int32_t &o2) {
  o0 = o1 = o2 = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    uint32_t s = w.shape[d];
    uint32_t q = i / s, idx = i - q * s;
    i = q;
    o0 += static_cast<int32_t>(idx) * w.stride[0][d];
    o1 += static_cast<int32_t>(idx) * w.stride[1][d];
    o2 += static_cast<int32_t>(idx) * w.stride[2][d];
  }
}

__global__ void copy32Kernel(Buf dst, Buf src, Walk32 w, float scale,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    int32_t o0, o1, o2;
    walkOffsets32(w, static_cast<uint32_t>(i), o0, o1, o2);
    if (scale == 1.0f)
      convertElement(dst.data, dst.dtype, o0, src.data, src.dtype, o1);
    else
      storeF32(dst.data, dst.dtype, o0,
               scale * loadF32(src.data, src.dtype, o1));
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

// ------------------------------------- contiguous, dtype-specialised, vec4 --

/// Storage of one float dtype: T is the element, V four of them.
template <ampc_dtype DT> struct Elt;
template <> struct Elt<AMPC_F32> {
  using T = float;
  using V = float4;
  static __device__ __forceinline__ float load(T v) { return v; }
  static __device__ __forceinline__ T store(float v) { return v; }
  static __device__ __forceinline__ void split(const V &v, float *f) {
    f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
  }
  static __device__ __forceinline__ V join(const float *f) {
    return make_float4(f[0], f[1], f[2], f[3]);
  }
};
template <ampc_dtype DT> struct EltHalf {
  using T = uint16_t;
  using V = uint2;
  static __device__ __forceinline__ float load(T v) {
    return DT == AMPC_F16 ? f16ToF32(v) : bf16ToF32(v);
  }
  static __device__ __forceinline__ T store(float v) {
    return DT == AMPC_F16 ? f32ToF16(v) : f32ToBf16(v);
  }
  static __device__ __forceinline__ void split(const V &v, float *f) {
    f[0] = load(static_cast<T>(v.x & 0xffffu));
    f[1] = load(static_cast<T>(v.x >> 16));
    f[2] = load(static_cast<T>(v.y & 0xffffu));
    f[3] = load(static_cast<T>(v.y >> 16));
  }
  static __device__ __forceinline__ V join(const float *f) {
    V v;
    v.x = static_cast<uint32_t>(store(f[0])) |
          (static_cast<uint32_t>(store(f[1])) << 16);
    v.y = static_cast<uint32_t>(store(f[2])) |
          (static_cast<uint32_t>(store(f[3])) << 16);
    return v;
  }
};
template <> struct Elt<AMPC_F16> : EltHalf<AMPC_F16> {};
template <> struct Elt<AMPC_BF16> : EltHalf<AMPC_BF16> {};

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

/// Contiguous dtype conversion with scale (src and dst one float dtype each).
template <ampc_dtype DD, ampc_dtype SD>
__global__ void convertContigKernel(void *dst, const void *src, float scale,
                                    int64_t n) {
  GRID_STRIDE(i, n) {
    float v = Elt<SD>::load(static_cast<const typename Elt<SD>::T *>(src)[i]);
    static_cast<typename Elt<DD>::T *>(dst)[i] =
        Elt<DD>::store(scale == 1.0f ? v : scale * v);
  }
}

inline bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}
inline bool aligned8(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 7u) == 0;
}

// ------------------------------------------------------------ column sums --

constexpr int kColTile = 32; // columns per block (one warp wide)
constexpr int kColRows = 8;  // warps per block, each on its own rows

/// How many row chunks a column sum uses: enough blocks to fill the GPU, at
/// least 32 rows per chunk.
inline int64_t colChunks(int64_t rows, int64_t cols) {
  int64_t tiles = (cols + kColTile - 1) / kColTile;
  int64_t want = (1024 + tiles - 1) / tiles; // about 1k blocks in all
  int64_t byRows = (rows + 31) / 32;
  int64_t c = want < byRows ? want : byRows;
  return c < 1 ? 1 : (c > 4096 ? 4096 : c);
}

/// Stage 1 of a column sum over `rows` rows `rowStride` apart: block
/// (tile, chunk) sums its chunk's rows for 32 columns in a fixed order.
/// Mode 0: s0 = sum x. Mode 1 (norm parameter gradients, x is dy, x2 the
/// norm input): s0 = sum dy * xhat, s1 = sum dy.
template <int Mode>
__global__ void colPartialKernel(Buf x, Buf x2, int64_t rows, int64_t cols,
                                 int64_t rowStride, int64_t rowsPerChunk,
                                 const float *mean, const float *rstd,
                                 float *part0, float *part1) {
  __shared__ float sh0[kColRows][kColTile], sh1[kColRows][kColTile];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t j = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  int64_t chunk = blockIdx.y;
  int64_t r0 = chunk * rowsPerChunk;
  int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  float s0 = 0, s1 = 0;
  if (j < cols)
    for (int64_t r = r0 + ty; r < r1; r += kColRows) {
      float v = loadF32(x.data, x.dtype, r * rowStride + j);
      if (Mode == 0) {
        s0 += v;
      } else {
        s0 += v * (loadF32(x2.data, x2.dtype, r * rowStride + j) - mean[r]) *
              rstd[r];
        s1 += v;
      }
    }
  sh0[ty][tx] = s0;
  sh1[ty][tx] = s1;
  __syncthreads();
  if (ty == 0 && j < cols) {
    float t0 = 0, t1 = 0;
    for (int k = 0; k < kColRows; ++k) {
      t0 += sh0[k][tx];
      t1 += sh1[k][tx];
    }
    part0[chunk * cols + j] = t0;
    if (Mode == 1)
      part1[chunk * cols + j] = t1;
  }
}

/// Stage 2: one thread per column adds the chunks in order.
__global__ void colFinishKernel(Buf y0, Buf y1, const float *part0,
                                const float *part1, int64_t chunks,
                                int64_t cols, float div0) {
  GRID_STRIDE(j, cols) {
    float t0 = 0, t1 = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      t0 += part0[c * cols + j];
      if (part1)
        t1 += part1[c * cols + j];
    }
    if (y0.data)
      storeF32(y0.data, y0.dtype, j, div0 != 1.0f ? t0 / div0 : t0);
    if (y1.data)
      storeF32(y1.data, y1.dtype, j, t1);
  }
}

// --------------------------------------------------------- full reduction --

constexpr int kFullBlocks = 512;

/// Stage 1 of a full reduction of contiguous x: one partial per block.
__global__ void fullPartialKernel(bool isMax, Buf x, int64_t n, float *part) {
  __shared__ float sh[kThreads / 32];
  __shared__ int shNan[kThreads / 32];
  float acc = isMax ? -INFINITY : 0.0f;
  bool nan = false;
  GRID_STRIDE(i, n) {
    float v = loadF32(x.data, x.dtype, i);
    if (isMax) {
      nan |= v != v;
      acc = fmaxf(acc, v);
    } else {
      acc += v;
    }
  }
  acc = isMax ? warpMax(acc) : warpSum(acc);
  nan = __any_sync(0xffffffffu, nan);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sh[w] = acc;
    shNan[w] = nan;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = isMax ? -INFINITY : 0.0f;
    bool anyNan = false;
    for (int k = 0; k < kThreads / 32; ++k) {
      t = isMax ? fmaxf(t, sh[k]) : t + sh[k];
      anyNan |= shNan[k] != 0;
    }
    part[blockIdx.x] = isMax && anyNan ? NAN : t;
  }
}

/// Stage 2: one block combines the partials in a fixed tree order.
__global__ void fullFinishKernel(bool isMax, bool isMean, Buf y,
                                 const float *part, int64_t count, int64_t n) {
  __shared__ float sh[kThreads / 32];
  __shared__ int shNan[kThreads / 32];
  float acc = isMax ? -INFINITY : 0.0f;
  bool nan = false;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    float v = part[i];
    if (isMax) {
      nan |= v != v;
      acc = fmaxf(acc, v);
    } else {
      acc += v;
    }
  }
  acc = isMax ? warpMax(acc) : warpSum(acc);
  nan = __any_sync(0xffffffffu, nan);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sh[w] = acc;
    shNan[w] = nan;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = isMax ? -INFINITY : 0.0f;
    bool anyNan = false;
    for (int k = 0; k < kThreads / 32; ++k) {
      t = isMax ? fmaxf(t, sh[k]) : t + sh[k];
      anyNan |= shNan[k] != 0;
    }
    if (isMax && anyNan)
      t = NAN;
    if (isMean)
      t /= static_cast<float>(n);
    storeF32(y.data, y.dtype, 0, t);
  }
}

// ---------------------------------------------------- embedding backward --

/// keys[i] = ids[i] where valid, else vocab (sorted to the end, skipped);
/// vals[i] = i.
__global__ void embeddingKeysKernel(Buf ids, int64_t n, int64_t vocab,
                                    int64_t *keys, int32_t *vals) {
  GRID_STRIDE(i, n) {
    int64_t id = loadIndex(ids.data, ids.dtype, i);
    keys[i] = id >= 0 && id < vocab ? id : vocab;
    vals[i] = static_cast<int32_t>(i);
  }
}

/// One warp per run of equal sorted ids: sums the run's dy rows in token
/// order (the radix sort is stable) and writes the table row once.
__global__ void embeddingSegmentsKernel(Buf dtable, Buf dy,
                                        const int64_t *keys,
                                        const int32_t *pos, int64_t n,
                                        int64_t vocab, int64_t dim) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t s = warp; s < n; s += warps) {
    int64_t id = keys[s];
    if (id >= vocab || (s > 0 && keys[s - 1] == id))
      continue;
    int64_t e = s + 1;
    while (e < n && keys[e] == id)
      ++e;
    for (int64_t c = lane; c < dim; c += 32) {
      float acc = 0.0f;
      for (int64_t t = s; t < e; ++t)
        acc += loadF32(dy.data, dy.dtype, pos[t] * dim + c);
      storeF32(dtable.data, dtable.dtype, id * dim + c, acc);
    }
  }
}

// ------------------------------------------------ rows held in registers --

constexpr int kRowRegs = 32; // values per lane: rows up to 1024 wide

/// Layer / RMS norm forward, one warp per row, x read once: the same
/// two-pass f32 statistics as rowStatsKernel, from registers.
__global__ void normFusedKernel(bool rms, Buf y, Buf x, Buf w, Buf b,
                                int64_t rows, int64_t cols, float eps) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
    float v[kRowRegs];
    float s = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      v[k] = j < cols ? loadF32(x.data, x.dtype, r * cols + j) : 0.0f;
      if (!rms && j < cols)
        s += v[k];
    }
    if (!rms)
      s = warpSum(s) / static_cast<float>(cols);
    float q = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < cols) {
        float d = v[k] - s;
        q += d * d;
      }
    }
    q = warpSum(q) / static_cast<float>(cols);
    float rs = 1.0f / sqrtf(q + eps);
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < cols) {
        float o = (v[k] - s) * rs;
        if (w.data)
          o *= loadF32(w.data, w.dtype, j);
        if (b.data)
          o += loadF32(b.data, b.dtype, j);
        storeF32(y.data, y.dtype, r * cols + j, o);
      }
    }
  }
}

/// Softmax over contiguous rows (inner 1), one warp per row, x read once.
__global__ void softmaxFusedKernel(bool log, Buf y, Buf x, int64_t rows,
                                   int64_t dim) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
    int64_t base = r * dim;
    float v[kRowRegs];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      v[k] = j < dim ? loadF32(x.data, x.dtype, base + j) : -INFINITY;
      m = fmaxf(m, v[k]);
    }
    m = warpMax(m);
    float s = 0;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < dim)
        s += expf(v[k] - m);
    }
    s = warpSum(s);
    float lse = logf(s), inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < kRowRegs; ++k) {
      int64_t j = lane + 32 * k;
      if (j < dim) {
        float d = v[k] - m;
        storeF32(y.data, y.dtype, base + j, log ? d - lse : expf(d) * inv);
      }
    }
  }
}

/// Cross-entropy row statistics in one read of the logits (online max and
/// rescaled sum per lane, merged across the warp).
__global__ void crossEntropyOnlineKernel(Buf logits, Buf labels, int64_t rows,
                                         int64_t classes, float *rowLoss,
                                         float *rowValid, float *rowLse,
                                         uint32_t *checkWord, int32_t site) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = warp; r < rows; r += warps) {
    int64_t base = r * classes;
    float m = -INFINITY, s = 0;
    for (int64_t c = lane; c < classes; c += 32) {
      float v = loadF32(logits.data, logits.dtype, base + c);
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else {
        s += expf(v - m);
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      float om = __shfl_xor_sync(0xffffffffu, m, o);
      float os = __shfl_xor_sync(0xffffffffu, s, o);
      float nm = fmaxf(m, om);
      float a = m == -INFINITY ? 0.0f : s * expf(m - nm);
      float b = om == -INFINITY ? 0.0f : os * expf(om - nm);
      m = nm;
      s = a + b;
    }
    if (lane == 0) {
      int64_t label = loadIndex(labels.data, labels.dtype, r);
      float lse = m + logf(s);
      bool ignored = label == -100;
      bool inRange = label >= 0 && label < classes;
      rowLse[r] = lse;
      rowValid[r] = ignored ? 0.0f : 1.0f;
      // A label outside the classes: the check word names the op.
      if (!ignored && !inRange && site >= 0)
        atomicMin(reinterpret_cast<unsigned int *>(checkWord),
                  static_cast<unsigned int>(site));
      rowLoss[r] = ignored ? 0.0f
                   : inRange
                       ? lse - loadF32(logits.data, logits.dtype, base + label)
                       : NAN;
    }
  }
}

/// out[0..1] = sums of a and b over n, many blocks then one (fixed order).
__global__ void sumTwoPartialKernel(const float *a, const float *b, int64_t n,
                                    double *part) {
  __shared__ double sa[kThreads / 32], sb[kThreads / 32];
  double x = 0, y = 0;
  GRID_STRIDE(i, n) {
    x += a[i];
    if (b)
      y += b[i];
  }
  x = warpSumD(x);
  y = warpSumD(y);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sa[w] = x;
    sb[w] = y;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double tx = 0, ty = 0;
    for (int k = 0; k < kThreads / 32; ++k) {
      tx += sa[k];
      ty += sb[k];
    }
    part[2 * blockIdx.x] = tx;
    part[2 * blockIdx.x + 1] = ty;
  }
}

__global__ void sumTwoFinishKernel(const double *part, int64_t count,
                                   double *out) {
  __shared__ double sa[kThreads / 32], sb[kThreads / 32];
  double x = 0, y = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    x += part[2 * i];
    y += part[2 * i + 1];
  }
  x = warpSumD(x);
  y = warpSumD(y);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) {
    sa[w] = x;
    sb[w] = y;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double tx = 0, ty = 0;
    for (int k = 0; k < kThreads / 32; ++k) {
      tx += sa[k];
      ty += sb[k];
    }
    out[0] = tx;
    out[1] = ty;
  }
}

// ---------------------------------------------------- multi-tensor kernels --

constexpr int kMtMax = 64;          // tensors per launch
constexpr int64_t kMtPerBlock = 4096; // elements per block

/// Up to kMtMax tensors passed by value; block b works on tensor t where
/// blockStart[t] <= b < blockStart[t + 1].
struct MtChunk {
  int count;
  void *data[kMtMax];
  void *aux0[kMtMax]; // grads (SGD/AdamW) or nothing
  void *aux1[kMtMax]; // momentum buffer / exp_avg
  void *aux2[kMtMax]; // exp_avg_sq
  int64_t numel[kMtMax];
  int8_t dtype[kMtMax], auxDtype[kMtMax];
  int32_t blockStart[kMtMax + 1];
};

__device__ __forceinline__ int mtTensor(const MtChunk &c, int32_t b) {
  int lo = 0, hi = c.count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (c.blockStart[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

#define MT_BEGIN(c)                                                            \
  int t_ = mtTensor(c, blockIdx.x);                                            \
  int64_t begin_ =                                                             \
      static_cast<int64_t>(blockIdx.x - (c).blockStart[t_]) * kMtPerBlock;     \
  int64_t end_ = begin_ + kMtPerBlock < (c).numel[t_] ? begin_ + kMtPerBlock   \
                                                      : (c).numel[t_];         \
  Buf p_{(c).data[t_], static_cast<ampc_dtype>((c).dtype[t_])};                \
  for (int64_t i = begin_ + threadIdx.x; i < end_; i += blockDim.x)

__global__ void mtUnscaleKernel(MtChunk c, float *foundInf,
                                const float *scale) {
  float inv = scale ? 1.0f / *scale : 1.0f;
  bool bad = false;
  MT_BEGIN(c) {
    float v = loadF32(p_.data, p_.dtype, i);
    bad |= !isFinite(v);
    if (inv != 1.0f)
      storeF32(p_.data, p_.dtype, i, v * inv);
  }
  if (bad)
    *foundInf = 1.0f; // every writer stores the same value
}

/// One f64 partial sum of squares per block (slot = global block index).
__global__ void mtSumSquaresKernel(MtChunk c, double *partials,
                                   Buf foundInf) {
  __shared__ double warpSums[kThreads / 32];
  if (deviceFlag(foundInf))
    return;
  double s = 0;
  MT_BEGIN(c) {
    double v = loadF32(p_.data, p_.dtype, i);
    s += v * v;
  }
  s = warpSumD(s);
  if ((threadIdx.x & 31) == 0)
    warpSums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      t += warpSums[w];
    partials[blockIdx.x] = t;
  }
}

/// The clip coefficient from all partials: one block, fixed tree order.
__global__ void clipCoefTreeKernel(const double *partials, int64_t count,
                                   float maxNorm, float *coef,
                                   float *totalNorm, Buf foundInf) {
  __shared__ double sh[kThreads / 32];
  if (deviceFlag(foundInf))
    return;
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    s += partials[i];
  s = warpSumD(s);
  if ((threadIdx.x & 31) == 0)
    sh[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      t += sh[w];
    float total = static_cast<float>(sqrt(t));
    *coef = clipCoefficient(total, maxNorm);
    if (totalNorm)
      *totalNorm = total;
  }
}

__global__ void mtScaleKernel(MtChunk c, const float *coef, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  float k = *coef;
  MT_BEGIN(c) {
    storeF32(p_.data, p_.dtype, i, loadF32(p_.data, p_.dtype, i) * k);
  }
}

__global__ void mtSgdKernel(MtChunk c, SgdScalars s, Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  MT_BEGIN(c) {
    float pv = loadF32(p_.data, p_.dtype, i);
    float *buf = c.aux1[t_] ? static_cast<float *>(c.aux1[t_]) + i : nullptr;
    sgdElement(pv,
               loadF32(c.aux0[t_], static_cast<ampc_dtype>(c.auxDtype[t_]), i),
               buf, s);
    storeF32(p_.data, p_.dtype, i, pv);
  }
}

__global__ void mtAdamwKernel(MtChunk c, const AdamwScalars *s,
                              Buf foundInf) {
  if (deviceFlag(foundInf))
    return;
  AdamwScalars sc = *s;
  MT_BEGIN(c) {
    float pv = loadF32(p_.data, p_.dtype, i);
    adamwElement(
        pv, loadF32(c.aux0[t_], static_cast<ampc_dtype>(c.auxDtype[t_]), i),
        static_cast<float *>(c.aux1[t_])[i],
        static_cast<float *>(c.aux2[t_])[i], sc);
    storeF32(p_.data, p_.dtype, i, pv);
  }
}
