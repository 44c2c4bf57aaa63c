//===- cpu_vmath.h - Vector expf with libm's bits -----------------*- C++ -*-===//
//
// expf over arrays, eight lanes at a time with AVX2 and FMA, computing the
// same double-precision steps as the C library's expf (glibc 2.28 and later
// on x86-64 with FMA: x * 32/ln2 split into k + r by one fused multiply-add,
// a 32-entry table of 2^(i/32), a cubic in r, each step rounded as libm
// rounds it), so every result has the bits of libm's expf; lanes libm takes
// down its special-case path (|x| >= 88, NaN) are computed by libm itself,
// except those below log(2^-150) (-inf included), which are +0 there as
// here.
//
// Whether the vector path is used is decided once per process: the CPU must
// have AVX2 and FMA, AMPC_CPU_SCALAR_MATH must not be set, and a self-check
// of 2^17 inputs spread over every exponent must agree bit for bit with the
// libm the process loaded; otherwise expN calls libm's expf per element.
// runtime/test/test_cpu_kernels.cpp checks the agreement densely (one f32
// pattern in 61, 70 million inputs, all of them).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_VMATH_H
#define AMPC_RUNTIME_CPU_CPU_VMATH_H

#include <stdint.h>

namespace ampc {
namespace cpukern {

/// y[i] = expf(x[i]) for i < n, with libm's bits (x and y may be equal).
void expN(const float *x, float *y, int64_t n);

/// Whether expN uses the vector path in this process.
bool vectorExp();

} // namespace cpukern
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_VMATH_H
