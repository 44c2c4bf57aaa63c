//===- cpu_unary_tables.h - 16-bit unary ops by table lookup ----*- C++ -*-===//
//
// A unary op on bf16 or f16 operands has 65536 possible inputs. For the ops
// whose f32 code evaluates exp, erf or tanh (exp, sigmoid, silu, gelu,
// gelu_tanh, tanh: the costly ones) the CPU backend computes each op once
// over every input, with its own f32 kernels, and then answers large runs
// by lookup:
//  - forward: y = T[x], T[x] the f32 result rounded once to the dtype, which
//    is what the element loop stores;
//  - backward: dx = round(dy * A[x]) where the op's gradient is dy times a
//    factor of x alone (gelu: cdf + x pdf; tanh: 1 - t^2; exp: e^x), and
//    dx = round(dy * A[x] * B[x]) where it is computed as (dy * s) * (...)
//    (sigmoid: s, 1 - s; silu: s, 1 + x (1 - s)). A and B are the f32
//    values the element loop computes, and the products are the element
//    loop's, in its order, so every result has the element loop's bits
//    (test_cpu_kernels.cpp checks every input, every ISA).
//
// Tables are built on first use (per op, dtype and direction; 128 KiB to
// 512 KiB each, kept for the life of the process). Lookups run with AVX-512
// gathers where the conversions' instruction set is AVX-512, else one
// element at a time.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_UNARY_TABLES_H
#define AMPC_RUNTIME_CPU_CPU_UNARY_TABLES_H

#include "cpu_fast.h"

#include "../src/scalar_ops.h"

#include <stdint.h>

namespace ampc {
namespace cputable {

/// The tables of one op on one 16-bit dtype.
struct Table {
  ampc_dtype dtype;
  const uint16_t *fwd = nullptr; // 65536 results (and one entry of padding)
  const float *a = nullptr;      // the backward's factors (b may be null)
  const float *b = nullptr;
};

/// Runs of at least this many elements use the tables (a table costs the
/// op over 65536 inputs once).
constexpr int64_t kMinElements = int64_t(1) << 15;

/// The forward (bwd false) or backward tables of `op` on `dt` operands,
/// built on the calling thread on first use; null when the op or dtype has
/// none (or useTablesForTesting(false)). Thread-safe.
const Table *forward(UnaryOp op, ampc_dtype dt);
const Table *backward(UnaryOp op, ampc_dtype dt);

/// y[i] = op(x[i]) for n contiguous elements of t's dtype; y may be x.
void lookup(const Table &t, const uint16_t *x, uint16_t *y, int64_t n);
/// g[i] = the gradient at x[i] of dy[i], rounded once; g may be x or dy.
void lookupBwd(const Table &t, const uint16_t *x, const uint16_t *dy,
               uint16_t *g, int64_t n);

/// Tests only (not thread-safe against running kernels): whether
/// forward()/backward() hand out tables, and which instruction set's
/// lookups run.
void useTablesForTesting(bool on);
void useLookupsForTesting(cpufast::ConvertIsa isa);

} // namespace cputable
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_UNARY_TABLES_H
