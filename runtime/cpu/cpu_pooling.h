//===- cpu_pooling.h - Vector rows of the CPU backend's 2-D pooling -*- C++ -*-===//
//
// Max and average pooling of one output row's windows that lie inside the
// plane (no padding reaches them), sixteen outputs at a time with AVX-512
// gathers. Each output does what the backend's element loop does, in the
// same order: the windows' elements row by row, the first maximum (a NaN
// wins over a number, the first NaN over later ones), or an f32 sum from
// 0 divided by the window size. So the values, and the offsets the
// backward adds into, are the element loop's bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_POOLING_H
#define AMPC_RUNTIME_CPU_CPU_POOLING_H

#include <stdint.h>

namespace ampc {
namespace cpupooling {

/// One output row's window geometry in an f32 plane of width w: output
/// column ox's window starts at row0 * w + ox * sw and spans kh x kw.
struct RowWindows {
  const float *plane;
  int64_t w, row0, kh, kw, sw;
};

/// Whether the vector rows can run (AVX-512 on this CPU, and
/// AMPC_CPU_SCALAR_POOL not set in the environment).
bool vectorRows();

/// Columns [ox0, ox0 + n) (n <= 16, every window inside): the plane offset
/// of each window's first maximum (into idx, may be null) and its value.
void maxRow(const RowWindows &r, int64_t ox0, int n, int32_t *idx, float *val);

/// Columns [ox0, ox0 + n): the window's sum (f32, in window order from 0)
/// divided by div.
void avgRow(const RowWindows &r, int64_t ox0, int n, float div, float *val);

} // namespace cpupooling
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_POOLING_H
