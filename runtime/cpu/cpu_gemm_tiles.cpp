//===- cpu_gemm_tiles.cpp - How a CPU GEMM is cut for the pool -----------===//
//
// See cpu_gemm_tiles.h.
//
//===----------------------------------------------------------------------===//
#include "cpu_gemm_tiles.h"

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

bool tilesByRows(const GemmDesc &d, bool bf16Units) {
  return d.a.dtype == AMPC_BF16 && d.b.dtype == AMPC_BF16 && !d.transA &&
         bf16Units;
}

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


} // namespace cpugemm
} // namespace ampc
