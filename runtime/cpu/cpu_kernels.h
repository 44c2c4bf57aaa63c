//===- cpu_kernels.h - Row kernels of the CPU backend -----------*- C++ -*-===//
//
// The CPU backend's elementwise, broadcast, reduction, softmax and norm
// kernels, written over rows instead of elements:
//  - a walk's dimensions are collapsed (size-1 dims dropped, adjacent dims
//    merged where every operand's strides allow it), so a broadcast add of a
//    per-channel bias over [N, C, H, W] runs over N * C rows of H * W;
//  - each row is read once into f32 (f32 rows of stride 1 in place, f16 and
//    bf16 through the vector converters, stride-0 operands as one value) and
//    the op's scalar code runs over the row with the op and dtype switches
//    taken once per row, not per element;
//  - softmax keeps its exponentials instead of computing them twice, and
//    the norms read their rows and their weights once.
// Every output element is computed by the same scalar expression, on the
// same inputs, in the same order of accumulation as the plain element loops
// these replace, so every result has the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_KERNELS_H
#define AMPC_RUNTIME_CPU_CPU_KERNELS_H

#include "../src/backend.h"
#include "cpu_fast.h"

namespace ampc {
namespace cpukern {

/// Contiguous float data moves through f32 chunks of at most this many
/// elements (scratch on the stack): the dtype and op switches are taken
/// once per chunk, not per element.
constexpr int64_t kChunk = 1024;

/// Calls fn(s, len) for the pieces [s, s + len) of [lo, hi), in order, each
/// at most kChunk long: the loop of the kernels that widen 16-bit operands
/// into f32 scratch a chunk at a time.
template <typename Fn> void forPieces(int64_t lo, int64_t hi, Fn &&fn) {
  for (int64_t s = lo; s < hi; s += kChunk)
    fn(s, hi - s < kChunk ? hi - s : kChunk);
}

/// Visits every index of `w` in row-major order with the three operands'
/// element offsets.
template <typename F> void forEach(const Walk &w, F &&f) {
  int64_t n = w.numel();
  if (n == 0)
    return;
  int64_t idx[kMaxRank] = {};
  int64_t o0 = 0, o1 = 0, o2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, o0, o1, o2);
    for (int d = w.rank - 1; d >= 0; --d) {
      if (++idx[d] < w.shape[d]) {
        o0 += w.stride[0][d];
        o1 += w.stride[1][d];
        o2 += w.stride[2][d];
        break;
      }
      o0 -= w.stride[0][d] * (w.shape[d] - 1);
      o1 -= w.stride[1][d] * (w.shape[d] - 1);
      o2 -= w.stride[2][d] * (w.shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// amax's backward over the walks of a reduction (outer: stride 0 y and dy,
/// stride 1 x and dx; inner: stride 1 x and dx) in T, f32 or f64: dy split
/// evenly between the elements equal to the maximum, 0 elsewhere.
template <typename T, typename Load, typename Store>
void reduceMaxBwdAs(Buf dx, Buf dy, Buf x, Buf y, const Walk &outer,
                    const Walk &inner, Load load, Store store) {
  forEach(outer, [&](int64_t, int64_t yo, int64_t xo, int64_t) {
    T m = load(y.data, y.dtype, yo);
    T g = load(dy.data, dy.dtype, yo);
    int64_t ties = 0;
    forEach(inner, [&](int64_t, int64_t, int64_t xi, int64_t) {
      ties += load(x.data, x.dtype, xo + xi) == m;
    });
    T share = ties ? g / static_cast<T>(ties) : static_cast<T>(0);
    forEach(inner, [&](int64_t, int64_t, int64_t xi, int64_t) {
      bool hit = load(x.data, x.dtype, xo + xi) == m;
      store(dx.data, dx.dtype, xo + xi, hit ? share : static_cast<T>(0));
    });
  });
}

/// A GEMM's epilogue on one value (f32 or f64).
template <typename T> T applyEpilogue(ampc_epilogue e, T v) {
  switch (e) {
  case AMPC_EPILOGUE_NONE:
    return v;
  case AMPC_EPILOGUE_RELU:
    return unaryForward(UnaryOp::Relu, v);
  case AMPC_EPILOGUE_GELU:
    return unaryForward(UnaryOp::Gelu, v);
  case AMPC_EPILOGUE_GELU_TANH:
    return unaryForward(UnaryOp::GeluTanh, v);
  }
  return v;
}

/// A GEMM tile row's bias and epilogue in place: row[j] += bias[j] (bias
/// null: none), then applyEpilogue, on the elementwise ops' loops (GELU's
/// erff/tanhf on the vector math): the same bits as the two value by
/// value.
void epilogueRow(ampc_epilogue e, const float *bias, float *row, int64_t n);

/// Reads n contiguous elements of b from element `off` as f32 (vector
/// converters for f16/bf16); storeContig writes them back, rounded once.
/// The CPU backend's one copy of these chunk converters.
void loadContig(Buf b, int64_t off, int64_t n, float *out);
void storeContig(Buf b, int64_t off, int64_t n, const float *in);
/// The same for n elements `stride` apart (0: one element, repeated on
/// load).
void loadRun(Buf b, int64_t off, int64_t stride, int64_t n, float *out);
void storeRun(Buf b, int64_t off, int64_t stride, int64_t n, const float *in);

/// The elementwise kernels below run each op's f32 loop compiled for the
/// widest of AVX-512, AVX2 and the baseline that the conversions use
/// (cpufast::convertIsa(), which AMPC_CPU_ISA caps). With AVX-512, runs
/// whose operands are all bf16 or all f16 and contiguous (a scalar operand
/// of a binary op may be broadcast) take one pass: bf16 each element
/// widened, the op, rounded once; f16 the same on blocks of 256 elements
/// (the vector conversions, the op inlined), instead of the f32 scratch
/// chunks of the other cases. Every instruction set and every form give
/// the same bits (the same operations per element).
///
/// useOpLoopsForTesting switches every later call to `isa`'s loops (it
/// must be supported; tests only, not thread-safe against running kernels).
void useOpLoopsForTesting(cpufast::ConvertIsa isa);

void unary(UnaryOp op, const UnaryAttrs &attrs, Buf y, Buf x, int64_t n);
void unaryBwd(UnaryOp op, const UnaryAttrs &attrs, Buf dx, Buf dy, Buf x,
              int64_t n);
/// y = op(a, b) over the walk (operand 0 y, 1 a, 2 b).
void binary(BinaryOp op, Buf y, Buf a, Buf b, const Walk &w);
/// g = the gradient reaching operand `which` (g and dy at operand 0's
/// offsets, a at operand 1's, b at operand 2's).
void binaryBwd(BinaryOp op, int which, Buf g, Buf dy, Buf a, Buf b,
               const Walk &w);
/// Sum, mean or max of x over `inner` for every index of `outer` (operand 0
/// y, 1 x), adding in row-major order of `inner` in f64 as Backend::reduce
/// specifies.
void reduce(ReduceOp op, Buf y, Buf x, const Walk &outer, const Walk &inner);
void softmax(bool log, Buf y, Buf x, int64_t outer, int64_t dim, int64_t inner);
void softmaxBwd(bool log, Buf dx, Buf dy, Buf y, int64_t outer, int64_t dim,
                int64_t inner);
void norm(bool rms, Buf y, Buf x, Buf w, Buf b, int64_t rows, int64_t cols,
          float eps);
/// Layer / RMS norm backward: dx row by row, and dw and db over fixed
/// blocks of normBwdBlockRows rows, each block's columns summed over its
/// rows in row order in f64, the blocks' sums then added in block order.
void normBwd(bool rms, Buf dx, Buf dw, Buf db, Buf dy, Buf x, Buf w,
             int64_t rows, int64_t cols, float eps);
/// The rows of one of normBwd's blocks, from the shape alone (so its bits do
/// not depend on the thread count): about one pool item's elements, at
/// least 64 rows and at least rows / 64, a multiple of eight.
int64_t normBwdBlockRows(int64_t rows, int64_t cols);

/// The log-sum-exp of each of the rows [r0, r0 + rows) of contiguous rows
/// of `classes` logits, into lse[0, rows): each row's max m, then m +
/// log(sum in f64, in order, of exp(x - m)); up to eight rows summed side
/// by side (the norms' lane sums), with the one-row loop's bits.
void rowLses(Buf logits, int64_t r0, int64_t rows, int64_t classes,
             float *lse);
/// One row of cross-entropy's gradient: (exp(x - lse) - [c == label]) *
/// scale, zeros for label -100.
void crossEntropyBwdRow(Buf dlogits, Buf logits, int64_t base, int64_t classes,
                        int64_t label, float lse, float scale);

/// The walk with size-1 dims dropped and adjacent dims merged where all
/// three operands' strides allow (rank >= 1; numel unchanged).
Walk collapse(const Walk &w);

} // namespace cpukern
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_KERNELS_H
