//===- int_ops.h - Exact integer arithmetic of the wide kernels -*- C++ -*-===//
//
// The integer formulas of the CPU's cpu_wide.cpp and the CUDA backend's
// cuda_wide.cu: operands read exactly as int64 (loadInt), add, sub, mul and
// pow wrapping as uint64, results stored to their width with two's-
// complement wrap-around (storeInt), as PyTorch's integer arithmetic. One
// definition, host and device, so both backends give the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_INT_OPS_H
#define AMPC_RUNTIME_SRC_INT_OPS_H

#include "half.h"
#include "scalar_ops.h"

namespace ampc {

/// a ** b as PyTorch's integer pow: repeated squaring, wrapping as uint64
/// (the low bits of a product depend only on the low bits of its factors,
/// so wrapping to a narrower result afterwards gives that width's
/// wrap-around). A negative exponent gives 1 for a base of 1, +-1 for -1
/// and 0 for any other base, 0 included.
AMPC_HD int64_t intPow(int64_t a, int64_t b) {
  if (b < 0)
    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t base = static_cast<uint64_t>(a), r = 1;
  for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1) {
    if (e & 1)
      r *= base;
    base *= base;
  }
  return static_cast<int64_t>(r);
}

/// a op b exactly in int64 (add, sub, mul and pow wrap as uint64); false
/// for an op without an integer meaning here (division, the loss terms).
AMPC_HD bool intBinary(BinaryOp op, int64_t a, int64_t b, int64_t &r) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
  case BinaryOp::Add:
    r = static_cast<int64_t>(ua + ub);
    return true;
  case BinaryOp::Sub:
    r = static_cast<int64_t>(ua - ub);
    return true;
  case BinaryOp::Mul:
    r = static_cast<int64_t>(ua * ub);
    return true;
  case BinaryOp::Pow:
    r = intPow(a, b);
    return true;
  case BinaryOp::Maximum:
    r = a > b ? a : b;
    return true;
  case BinaryOp::Minimum:
    r = a < b ? a : b;
    return true;
  case BinaryOp::WhereTrue:
    r = a != 0 ? b : 0;
    return true;
  case BinaryOp::WhereFalse:
    r = a != 0 ? 0 : b;
    return true;
  case BinaryOp::Equal:
    r = a == b;
    return true;
  case BinaryOp::NotEqual:
    r = a != b;
    return true;
  case BinaryOp::Less:
    r = a < b;
    return true;
  case BinaryOp::LessEqual:
    r = a <= b;
    return true;
  case BinaryOp::Greater:
    r = a > b;
    return true;
  case BinaryOp::GreaterEqual:
    r = a >= b;
    return true;
  default:
    return false;
  }
}

/// neg or abs of an integer, wrapping (-INT64_MIN is INT64_MIN).
AMPC_HD int64_t intNegAbs(bool neg, int64_t v) {
  uint64_t n = 0 - static_cast<uint64_t>(v);
  return neg || v < 0 ? static_cast<int64_t>(n) : v;
}

/// Whether dt holds integers or bools (read exactly by loadInt).
AMPC_HD bool isIntOrBoolDtype(ampc_dtype dt) {
  return isIntegerDtype(dt) || dt == AMPC_BOOL;
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_INT_OPS_H
