//===- cpu_update.h - The optimizer's and loss scaler's CPU loops -*- C++ -*-===//
//
// The element loops of the CPU backend's optimizer steps (scalar_ops.h's
// sgdElement and adamwElement) and of the loss scaler's overflow check,
// compiled for the baseline, AVX2 and AVX-512 (cpu_clones.h) and run in the
// clone of the conversions' instruction set, which AMPC_CPU_ISA caps.
//
// bf16 params, gradients and O2 model copies are widened and rounded inside
// the update loop itself (half.h's conversions, which the compiler
// vectorises; the AVX2 clone's loops are written with intrinsics), in one
// pass over memory instead of three over f32 scratch; the same operations
// per element as widening first, so the same bits. So are f16 params and
// gradients (with f16 or f32 ones, no model copy) in the AVX2 clone, with
// F16C's conversions; elsewhere f16 data is left to the caller, which
// widens it into f32 scratch with the vector conversions and runs the f32
// loop.
//
// Also here: the gradient-norm clip's sum of squares, in sixteen f64 lanes.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_UPDATE_H
#define AMPC_RUNTIME_CPU_CPU_UPDATE_H

#include "../src/backend.h"
#include "../src/scalar_ops.h"
#include "cpu_fast.h"

#include <stdint.h>

namespace ampc {
namespace cpuupdate {

/// Whether sgd / adamw below take a param of dtype `p` with a gradient of
/// dtype `g` and a model copy of dtype `model` (`hasModel`): f32 or bf16
/// params and gradients, bf16 model copies; and, where the loops in use are
/// the AVX2 clone's, f16 params and gradients with f16 or f32 ones and no
/// model copy.
bool fused(ampc_dtype p, ampc_dtype g, bool hasModel, ampc_dtype model);

/// sgdElement over elements [0, n): `p` (rounded back once when bf16), `g`,
/// `buf` the f32 momentum (null without momentum), `model` the low model
/// copy written in the same pass (data null: none). Only for the dtypes
/// fused() accepts.
void sgd(Buf p, Buf g, float *buf, Buf model, int64_t n, const SgdScalars &s);
/// adamwElement over elements [0, n), f32 moments `m` and `v`, the same
/// way.
void adamw(Buf p, Buf g, float *m, float *v, Buf model, int64_t n,
           const AdamwScalars &s);

/// Whether any of n elements of `p` (f32, f16 or bf16) is an inf or a NaN
/// (an all-ones exponent), read as bit patterns.
bool anyNonfinite(Buf p, int64_t n);
/// Multiplies n elements of `p` (f32, or bf16: widened, multiplied in f32
/// and rounded back once) by inv; whether any was an inf or a NaN before.
bool unscale(Buf p, int64_t n, float inv);

/// The lanes of the gradient-norm clip's sum of squares.
constexpr int kSquareLanes = 16;
/// Adds the squares of n elements of `p` (f32, bf16 or f64) into `lanes`:
/// element k to lanes[k % kSquareLanes], each widened to f64, squared and
/// added in f64 (for f32 and bf16 values the square is exact, so only the
/// adds round). Every clone performs the same adds in the same order.
void addSquares(Buf p, int64_t n, double *lanes);

/// Every later call runs `isa`'s clones (it must be supported; tests only,
/// not thread-safe against running updates).
void useUpdateLoopsForTesting(cpufast::ConvertIsa isa);

} // namespace cpuupdate
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_UPDATE_H
