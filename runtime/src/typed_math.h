//===- typed_math.h - libm by overload, for f32 and f64 formulas -*- C++
//-*-===//
//
// The scalar formulas (scalar_ops.h and the files it includes) are templates
// over their compute type: f32 for f32, f16 and bf16 tensors, f64 for f64
// ones. These overloads pick the f32 function of libm (or CUDA's) for a
// float argument, so the f32 formulas call exactly what they called before,
// and the f64 function for a double one.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_TYPED_MATH_H
#define AMPC_RUNTIME_SRC_TYPED_MATH_H

#include "hd.h"

#include <math.h>

namespace ampc {

#define AMPC_TYPED_MATH1(NAME, F32, F64)                                       \
  AMPC_HD float NAME(float x) { return F32(x); }                               \
  AMPC_HD double NAME(double x) { return F64(x); }
AMPC_TYPED_MATH1(mExp, expf, exp)
AMPC_TYPED_MATH1(mLog, logf, log)
AMPC_TYPED_MATH1(mSqrt, sqrtf, sqrt)
AMPC_TYPED_MATH1(mLog1p, log1pf, log1p)
AMPC_TYPED_MATH1(mExpm1, expm1f, expm1)
AMPC_TYPED_MATH1(mTanh, tanhf, tanh)
AMPC_TYPED_MATH1(mFabs, fabsf, fabs)
AMPC_TYPED_MATH1(mErf, erff, erf)
#undef AMPC_TYPED_MATH1

AMPC_HD float mPow(float a, float b) { return powf(a, b); }
AMPC_HD double mPow(double a, double b) { return pow(a, b); }
AMPC_HD float mFmax(float a, float b) { return fmaxf(a, b); }
AMPC_HD double mFmax(double a, double b) { return fmax(a, b); }

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_TYPED_MATH_H
