//===- cpu_gemm_tiles.h - How a CPU GEMM is cut for the pool ----*- C++ -*-===//
//
// The fixed tiles of C a CPU GEMM is split into for the thread pool (chosen
// from the shape alone, so no result depends on the thread count), the
// blocks of k of a one-tile product with a long k (kSplitParts), the
// dense copies of strided operand blocks that oneDNN's brgemm kernels need
// (cpu_backend.cpp's gemmPlans decides when), f32 views of 16-bit
// operands, and the padded copies of operands whose rows conflict in the
// cache (padOperands).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_GEMM_TILES_H
#define AMPC_RUNTIME_CPU_CPU_GEMM_TILES_H

#include "../src/backend.h"

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <vector>

namespace ampc {
namespace cpugemm {

/// The fixed tiles a GEMM's C is split into for the thread pool: chosen
/// from (m, n, k) alone, never from the thread count. Products below about
/// 4M multiply-adds are one tile; larger ones are split along the longer of
/// m and n into blocks (multiples of 16) of at least 384 rows or columns,
/// at most 8, except that a longer side of 256-767 is cut in two (blocks of
/// 128-384). OpenBLAS repacks the other operand for every block, which
/// measured 0-3% slower for blocks of 384-512 and 5-9% for blocks of 128 on
/// transformer-sized products at one thread (alone, without the pool).
/// With `byRows` (the GEMM runs on oneDNN), a C of 256 rows or more is
/// split along m, into as many blocks as above but of at least 128 rows: a
/// block of rows of a row-major A and C is itself dense, which oneDNN's
/// brgemm kernels need (a block of columns would be copied: cpu_backend.cpp,
/// gemmPlans).
struct GemmTiles {
  int64_t mb, nb, rowBlocks, colBlocks;
  int64_t perMatrix() const { return rowBlocks * colBlocks; }
  /// The rows and columns of tile `tile` of an m x n C.
  int64_t rows(int64_t tile, int64_t m) const {
    return std::min(mb, m - tile / colBlocks * mb);
  }
  int64_t cols(int64_t tile, int64_t n) const {
    return std::min(nb, n - tile % colBlocks * nb);
  }
};

GemmTiles gemmTiles(int64_t m, int64_t n, int64_t k, bool byRows);

/// `d`'s tiles. A 16-bit C is computed a tile at a time in f32 scratch,
/// then rounded into C with the epilogue; with blocks of rows, a tile of
/// more than 2^16 elements is cut into blocks of at least 64 rows that keep
/// the scratch within 256 KiB (in L2 when the epilogue reads it): measured
/// on the Xeon with AMX, bf16 steps of bench/models' encoder and llama ran
/// 2-4% faster at one thread and 2-5% at two.
GemmTiles tilesOf(const GemmDesc &d, bool bf16Units);

/// `rows` rows of `rowElems` elements of `elemSize` bytes, `ld` elements
/// apart from `src`, copied one after another into `buf` (grown as needed);
/// returns the copy.
const char *packRows(std::vector<char> &buf, const char *src, int64_t rows,
                     int64_t rowElems, int64_t ld, size_t elemSize);

/// cpukern::loadContig of `n` elements in fixed chunks on the pool (a
/// conversion per element: the same bits however the chunks are shared
/// out); a plain copy for f32.
void loadContigPar(Buf b, int64_t n, float *out);

/// f32 view of `count` elements: the data itself when already f32, else a
/// widened copy in `scratch` (kept by the backend: fresh pages cost more than
/// the widening on small VMs).
class F32View {
public:
  F32View(Buf b, int64_t count, std::vector<float> &scratch) {
    if (b.dtype == AMPC_F32) {
      ptr = static_cast<const float *>(b.data);
      return;
    }
    if (scratch.size() < static_cast<size_t>(count))
      scratch.resize(static_cast<size_t>(count));
    loadContigPar(b, count, scratch.data());
    ptr = scratch.data();
  }
  const float *get() const { return ptr; }

private:
  const float *ptr;
};

/// oneDNN 2.6's f32 gemm:jit kernels run up to 2x slower on an operand
/// they read along k across rows a multiple of 2 KiB apart (cache-set
/// conflicts as they pack it; a transposed A, an untransposed B): measured
/// on an AMD EPYC with AVX2 only, one thread (bench BM_CpuGemmPadded,
/// medians of 5), 1024 x 256 x 1024 with A transposed (a weight gradient
/// Xᵀ dY) 14.8 ms against 6.9 ms with rows padded, 256 x 1024 x 1024 (A
/// transposed) 12.4 against 7.6 ms, 512³ 4.3 against 3.1 ms. Rows 1 KiB
/// apart, or k = 256, measured within the runs' noise either way. The
/// leading dimension of an f32 copy of an operand with rows `ld` elements
/// apart and `cols` elements long that reads well: 0 when its rows are
/// fine where they are.
int64_t paddedLd(int64_t ld, int64_t cols);

/// Which operands of `d` are read along k (k >= 512) across rows that
/// conflict (paddedLd; a transposed A, an untransposed B) in a product
/// large enough for a copy to pay: at least 2^22 multiply-adds, each
/// element of the operand used at least 64 times, a copy of at most 2^24
/// elements (64 MiB; the backend keeps the buffers for its next call).
/// From the shape alone. AMPC_CPU_GEMM_PAD=off: none (benchmarks, tests).
struct PadPlan {
  bool a = false, b = false;
  bool any() const { return a || b; }
};
PadPlan conflictingOperands(const GemmDesc &d);

/// `d` with the operands `plan` names copied (widened when 16-bit) into
/// `a` and `b`, f32 with padded rows: the same values, so where oneDNN's
/// f32 gemm:jit runs both (the caller checks) the same products, bit for
/// bit. With `copy` false (planning) nothing is copied and the copies'
/// pointers are null.
GemmDesc padOperands(const GemmDesc &d, PadPlan plan, bool copy,
                     std::vector<float> &a, std::vector<float> &b);

/// Products whose C is a single tile but whose k is long (the weight
/// gradients Xᵀ dY of narrow layers over many tokens: 64 x 192 x 8192 in
/// bench/models' MobileViT) would run on one thread. Their k is cut into
/// `parts` equal blocks instead, run as a strided batch of partial
/// products in f32 (kBlocks), then summed in block order (sumKBlocks): the
/// same operations whatever the thread count. The number of parts comes
/// from the shape alone: the largest of 2-8 that divides k into blocks of
/// at least 512 and 2^23 multiply-adds each, for a batch of one, one tile
/// (`t`) and a C of at most 2^18 elements; 0 for any other product, and
/// for every product under AMPC_CPU_GEMM_SPLIT=off (benchmarks, tests).
int64_t kSplitParts(const GemmDesc &d, const GemmTiles &t);

/// The batch of `parts` partial products of `d` (alpha 1, beta 0, no bias,
/// no epilogue) into `partials`: parts f32 matrices of m x n, one after
/// another (null when only planning; at most 2^21 floats, 8 MiB).
GemmDesc kBlocks(const GemmDesc &d, int64_t parts, float *partials);

/// C = epilogue(alpha * (the partials' sum, in block order) + beta * C +
/// bias), rounded once into C's dtype, on the pool by rows.
void sumKBlocks(const GemmDesc &d, int64_t parts, const float *partials);

} // namespace cpugemm
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_GEMM_TILES_H
