//===- cpu_vmath.h - Vector expf, erff, tanhf with libm's bits --*- C++ -*-===//
//
// expf, erff and tanhf over arrays, sixteen lanes at a time with AVX-512
// (eight with AVX2 and FMA where AVX-512 is absent or AMPC_CPU_ISA caps it).
// expf computes the
// same double-precision steps as the C library's expf (glibc 2.28 and later
// on x86-64 with FMA: x * 32/ln2 split into k + r by one fused multiply-add,
// a 32-entry table of 2^(i/32), a cubic in r, each step rounded as libm
// rounds it), so every result has the bits of libm's expf; lanes libm takes
// down its special-case path (|x| >= 88, NaN) are computed by libm itself,
// except those below log(2^-150) (-inf included), which are +0 there as
// here.
//
// erff likewise: the same f32 operations as libm's erff (the fdlibm
// algorithm glibc uses: rational approximations on |x| < 0.84375, < 1.25,
// < 1/0.35 and < 6, the last two through two expf calls, taken by the
// vector expf above), with its coefficients; lanes with |x| < 2^-28,
// |x| >= 6, inf or NaN are computed by libm.
//
// tanhf likewise: libm's tanhf (fdlibm: 1 - 2 / (expm1f(2|x|) + 2) for
// |x| >= 1, -t / (t + 2) with t = expm1f(-2|x|) below) with fdlibm's expm1f
// (two-part k ln2 reduction, degree-5 correction, the reconstruction of each
// k range) in f32, operation for operation; lanes with |x| < 2^-55,
// |x| >= 22, inf or NaN are computed by libm. All 2^32 inputs were checked
// against glibc 2.36 when this was written (none differ).
//
// Whether a vector path is used is decided once per process: the CPU must
// have AVX2 and FMA, AMPC_CPU_ISA must allow avx2 (sse41 and avx leave
// these functions to libm), AMPC_CPU_SCALAR_MATH must not be set, and a
// self-check
// of 2^17 inputs spread over every exponent must agree bit for bit with the
// libm the process loaded; otherwise expN / erfN / tanhN call libm per
// element. The AVX-512 code (the same operations sixteen lanes at a time;
// expf's table lookup by register permutes instead of a gather) is used where
// the CPU has AVX-512, AMPC_CPU_ISA allows avx512_core, and its own self-checks
// agree. erff and tanhf are written once for both widths
// (cpu_vmath_lanes.inc).
// runtime/test/test_cpu_kernels.cpp checks the agreement densely on every
// width the machine has (one f32 pattern in 61, 70 million inputs, all of
// them); all 2^32 inputs of each function were checked once at each width
// (glibc 2.36, none differ).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_VMATH_H
#define AMPC_RUNTIME_CPU_CPU_VMATH_H

#include <stdint.h>

namespace ampc {
namespace cpukern {

/// y[i] = expf(x[i]) for i < n, with libm's bits (x and y may be equal).
void expN(const float *x, float *y, int64_t n);

/// y[i] = erff(x[i]) for i < n, with libm's bits (x and y may be equal).
void erfN(const float *x, float *y, int64_t n);

/// y[i] = tanhf(x[i]) for i < n, with libm's bits (x and y may be equal).
void tanhN(const float *x, float *y, int64_t n);

/// Whether expN / erfN / tanhN use the vector path in this process.
bool vectorExp();
bool vectorErf();
bool vectorTanh();

/// How many lanes expN, erfN and tanhN compute at once in this process: 16
/// (AVX-512), 8 (AVX2) or 1 (libm per element).
int vectorLanes();

/// Tests only (not thread-safe against running kernels): every later expN,
/// erfN and tanhN compute `lanes` at a time (16, 8 or 1). False, with
/// nothing changed, where that width cannot run here or its expf fails the
/// self-check (its erff or tanhf failing alone leaves that function on
/// libm: vectorErf(), vectorTanh()).
bool useVectorLanes(int lanes);

} // namespace cpukern
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_VMATH_H
