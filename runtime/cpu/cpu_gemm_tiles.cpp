//===- cpu_gemm_tiles.cpp - How a CPU GEMM is cut for the pool -----------===//
//
// See cpu_gemm_tiles.h.
//
//===----------------------------------------------------------------------===//
#include "cpu_gemm_tiles.h"

#include "cpu_kernels.h"
#include "cpu_pool.h"

#include <stdlib.h>
#include <string.h>

namespace ampc {
namespace cpugemm {

GemmTiles gemmTiles(int64_t m, int64_t n, int64_t k, bool byRows) {
  constexpr int64_t kTileWork = int64_t(1) << 22, kMinBlock = 384,
                    kMaxTiles = 8;
  GemmTiles t{std::max<int64_t>(m, 1), std::max<int64_t>(n, 1), 1, 1};
  bool rows = m >= n || (byRows && m >= 256);
  int64_t longer = std::max(m, n), dim = rows ? m : n;
  int64_t bySize =
      std::max<int64_t>(longer / kMinBlock, longer >= 256 ? 2 : 1);
  if (rows) // blocks of at least 128 rows
    bySize = std::min(bySize, std::max<int64_t>(m / 128, 1));
  int64_t tiles = std::min(
      {kMaxTiles, bySize, m * n * std::max<int64_t>(k, 1) / kTileWork});
  if (tiles < 2)
    return t;
  int64_t block = ((dim + tiles - 1) / tiles + 15) / 16 * 16;
  int64_t count = (dim + block - 1) / block;
  if (rows) {
    t.mb = block;
    t.rowBlocks = count;
  } else {
    t.nb = block;
    t.colBlocks = count;
  }
  return t;
}

namespace {
/// Whether `d`'s tiles are blocks of rows (gemmTiles' byRows): bf16
/// products on oneDNN's bf16 units (`bf16Units`) with an untransposed A,
/// whose blocks of rows are dense. f32 products and a transposed A keep
/// the blocks of the longer side: there oneDNN's brgemm kernels on dense
/// tiles measured no faster (f32) or slower (A transposed) than its
/// gemm:jit ones on strided tiles (BM_CpuGemmLayout, on a Xeon with AMX).
bool tilesByRows(const GemmDesc &d, bool bf16Units) {
  return d.a.dtype == AMPC_BF16 && d.b.dtype == AMPC_BF16 && !d.transA &&
         bf16Units;
}
} // namespace

GemmTiles tilesOf(const GemmDesc &d, bool bf16Units) {
  bool byRows = tilesByRows(d, bf16Units);
  GemmTiles t = gemmTiles(d.m, d.n, d.k, byRows);
  constexpr int64_t kScratchElements = int64_t(1) << 16, kMinRows = 64;
  if (byRows && d.c.dtype != AMPC_F32 && t.colBlocks == 1 &&
      t.mb * t.nb > kScratchElements) {
    int64_t mb = std::max(kMinRows, kScratchElements / t.nb / 16 * 16);
    if (mb < t.mb) {
      t.mb = mb;
      t.rowBlocks = (d.m + mb - 1) / mb;
    }
  }
  return t;
}

const char *packRows(std::vector<char> &buf, const char *src, int64_t rows,
                     int64_t rowElems, int64_t ld, size_t elemSize) {
  size_t rowBytes = static_cast<size_t>(rowElems) * elemSize;
  if (buf.size() < rowBytes * static_cast<size_t>(rows))
    buf.resize(rowBytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    memcpy(buf.data() + r * rowBytes, src + r * ld * elemSize, rowBytes);
  return buf.data();
}

void loadContigPar(Buf b, int64_t n, float *out) {
  constexpr int64_t kChunk = cpupool::kItemElements;
  if (b.dtype == AMPC_F32) {
    cpupool::forChunks(n, kChunk, [&](int64_t lo, int64_t hi) {
      memcpy(out + lo, static_cast<const float *>(b.data) + lo,
             (hi - lo) * sizeof(float));
    });
    return;
  }
  cpupool::forChunks(n, kChunk, [&](int64_t lo, int64_t hi) {
    cpukern::loadContig(b, lo, hi - lo, out + lo);
  });
}

int64_t paddedLd(int64_t ld, int64_t cols) {
  constexpr int64_t kConflict = 512; // f32 elements: 2 KiB
  if (ld % kConflict != 0)
    return 0;
  // Rows stay 64-byte aligned and are not a multiple of 512 bytes apart.
  int64_t padded = (cols + 15) / 16 * 16;
  return padded % 128 == 0 ? padded + 16 : padded;
}

namespace {
// Large products only (about 4M multiply-adds, as for tiles), and only
// operands each of whose elements is used at least 64 times: the copy
// reads and writes each element once. What conflicts is an operand read
// along k across its rows (a transposed A, an untransposed B) over 512
// rows or more: k = 256 measured no slower as it is, and operands whose
// rows run along k no faster padded. The copy is kept by the backend for
// its next call: at most 64 MiB.
constexpr int64_t kMinWork = int64_t(1) << 22, kMinReuse = 64, kMinK = 512,
                  kMaxCopy = int64_t(1) << 24;

/// Whether an operand of `rows` rows of `cols` elements, `ld` apart, one
/// matrix for the batch when `stride` is 0, each element used `reuse`
/// times, is worth a padded copy.
bool worthPadding(const GemmDesc &d, int64_t ld, int64_t stride, int64_t rows,
                  int64_t cols, int64_t reuse) {
  int64_t padded = paddedLd(ld, cols);
  int64_t matrices = stride == 0 ? 1 : d.batch;
  return padded != 0 && reuse >= kMinReuse &&
         matrices * rows * padded <= kMaxCopy;
}
} // namespace

PadPlan conflictingOperands(const GemmDesc &d) {
  const char *knob = getenv("AMPC_CPU_GEMM_PAD"); // read per call: tests
  if ((knob && strcmp(knob, "off") == 0) || d.batch < 1 || d.k < kMinK ||
      d.m * d.n * d.k < kMinWork)
    return PadPlan();
  PadPlan p;
  p.a = d.transA && worthPadding(d, d.lda, d.strideA, d.k, d.m, d.n);
  p.b = !d.transB && worthPadding(d, d.ldb, d.strideB, d.k, d.n, d.m);
  return p;
}

GemmDesc padOperands(const GemmDesc &d, PadPlan plan, bool copy,
                     std::vector<float> &a, std::vector<float> &b) {
  GemmDesc p = d;
  // One operand of k rows of `cols` elements (see worthPadding).
  auto pad = [&](Buf &buf, int64_t &ld, int64_t &stride, int64_t cols,
                 std::vector<float> &to) {
    int64_t rows = d.k, padded = paddedLd(ld, cols);
    int64_t matrices = stride == 0 ? 1 : d.batch, per = rows * padded;
    float *dst = nullptr;
    if (copy) {
      to.resize(static_cast<size_t>(matrices * per));
      dst = to.data();
      Buf src = buf;
      int64_t from = ld, apart = stride;
      cpupool::forChunks(matrices * rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t i = r / rows, row = r % rows;
          cpukern::loadContig(src, i * apart + row * from, cols,
                              dst + i * per + row * padded);
        }
      });
    }
    buf = Buf{dst, AMPC_F32};
    ld = padded;
    stride = stride == 0 ? 0 : per;
  };
  if (plan.a)
    pad(p.a, p.lda, p.strideA, d.m, a);
  if (plan.b)
    pad(p.b, p.ldb, p.strideB, d.n, b);
  return p;
}

int64_t kSplitParts(const GemmDesc &d, const GemmTiles &t) {
  // Blocks of at least 512 along k and 2^23 multiply-adds: each block's
  // call costs its fixed overhead once more at one thread.
  constexpr int64_t kMinBlockK = 512, kMaxParts = 8,
                    kMinBlockWork = int64_t(1) << 23,
                    kMaxC = int64_t(1) << 18;
  const char *knob = getenv("AMPC_CPU_GEMM_SPLIT"); // read per call: tests
  if ((knob && strcmp(knob, "off") == 0) || d.batch != 1 ||
      t.perMatrix() != 1 || d.m * d.n > kMaxC)
    return 0;
  int64_t most = std::min({kMaxParts, d.k / kMinBlockK,
                           d.m * d.n * d.k / kMinBlockWork});
  for (int64_t parts = most; parts >= 2; --parts)
    if (d.k % parts == 0)
      return parts;
  return 0;
}

GemmDesc kBlocks(const GemmDesc &d, int64_t parts, float *partials) {
  GemmDesc b = d;
  int64_t kb = d.k / parts;
  b.batch = parts;
  b.k = kb;
  // Block p of A is its columns [p kb, (p + 1) kb) (rows, when A is stored
  // transposed), of B its rows (columns, when transposed).
  b.strideA = d.transA ? kb * d.lda : kb;
  b.strideB = d.transB ? kb : kb * d.ldb;
  b.c = Buf{partials, AMPC_F32};
  b.ldc = d.n;
  b.strideC = d.m * d.n;
  b.alpha = 1.0f;
  b.beta = 0.0f;
  b.bias = Buf{nullptr, AMPC_F32};
  b.epilogue = AMPC_EPILOGUE_NONE;
  return b;
}

void sumKBlocks(const GemmDesc &d, int64_t parts, const float *partials) {
  std::vector<float> bias(d.bias.data ? static_cast<size_t>(d.n) : 0);
  if (d.bias.data)
    cpukern::loadContig(d.bias, 0, d.n, bias.data());
  int64_t n = d.n, mn = d.m * d.n;
  int64_t perItem =
      std::max<int64_t>(1, cpupool::kItemElements / std::max<int64_t>(n, 1));
  cpupool::forChunks(d.m, perItem, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> row, old;
    row.resize(static_cast<size_t>(n));
    old.resize(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      const float *first = partials + r * n;
      for (int64_t j = 0; j < n; ++j)
        row[j] = first[j];
      for (int64_t p = 1; p < parts; ++p) {
        const float *part = partials + p * mn + r * n;
        for (int64_t j = 0; j < n; ++j)
          row[j] += part[j];
      }
      if (d.alpha != 1.0f)
        for (int64_t j = 0; j < n; ++j)
          row[j] *= d.alpha;
      if (d.beta != 0.0f) {
        cpukern::loadContig(d.c, r * d.ldc, n, old.data());
        for (int64_t j = 0; j < n; ++j)
          row[j] += d.beta * old[j];
      }
      cpukern::epilogueRow(d.epilogue, d.bias.data ? bias.data() : nullptr,
                           row.data(), n);
      cpukern::storeContig(d.c, r * d.ldc, n, row.data());
    }
  });
}

} // namespace cpugemm
} // namespace ampc
