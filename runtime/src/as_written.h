//===- as_written.h - The double a float argument was written as -*- C++ -*-===//
//
// Host code shared by the CPU and CUDA backends' f64 kernels: an f32 eps or
// max_norm (1e-5f) stands for the decimal the program wrote (1e-05), which
// the f64 formulas take as a double, as PyTorch's f64 ops do.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_AS_WRITTEN_H
#define AMPC_RUNTIME_SRC_AS_WRITTEN_H

#include <charconv>

namespace ampc {

/// The double of the shortest decimal of float v (1e-05 for 1e-5f); a
/// value that is no float is returned as is.
inline double asWrittenDouble(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) != v)
    return v; // not a float value: already the double
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f);
  double d = v;
  std::from_chars(buf, res.ptr, d);
  return d;
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_AS_WRITTEN_H
