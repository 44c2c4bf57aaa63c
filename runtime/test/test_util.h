//===- test_util.h - Host tensors and references for runtime tests -*- C++
//-*-===//
//
// Tests drive the public C API on the CPU backend (device pointers are host
// pointers there) and compare with straightforward f64 references. The
// conversions of src/half.h are used only to build inputs.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_TEST_UTIL_H
#define AMPC_RUNTIME_TEST_UTIL_H

#include "ampc/runtime.h"
#include "src/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ampc_test {

using Shape = std::vector<int64_t>;
using Vec = std::vector<double>;

inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// An f32's bit pattern, and the f32 of a pattern.
inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline size_t elemSize(ampc_dtype dt) {
  size_t n = 0;
  ampc_dtype_size(dt, &n);
  return n;
}

/// A tensor in host memory (which is device memory for the CPU backend).
struct Tensor {
  Shape shape;
  ampc_dtype dtype = AMPC_F32;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  Tensor(Shape s, ampc_dtype dt) : shape(std::move(s)), dtype(dt) {
    bytes.assign(numel(shape) * elemSize(dtype) + 8, 0);
  }
  int64_t size() const { return numel(shape); }
  void *data() { return bytes.data(); }
  const int64_t *dims() const { return shape.data(); }
  int32_t rank() const { return static_cast<int32_t>(shape.size()); }
  double get(int64_t i) const {
    if (dtype == AMPC_I32 || dtype == AMPC_I64)
      return static_cast<double>(ampc::loadIndex(bytes.data(), dtype, i));
    if (dtype == AMPC_F64) // all its bits (comparisons of f64 results)
      return ampc::loadF64(bytes.data(), dtype, i);
    return ampc::loadF32(bytes.data(), dtype, i);
  }
  void set(int64_t i, double v) {
    if (dtype == AMPC_I64)
      reinterpret_cast<int64_t *>(bytes.data())[i] = static_cast<int64_t>(v);
    else if (dtype == AMPC_I32)
      reinterpret_cast<int32_t *>(bytes.data())[i] = static_cast<int32_t>(v);
    else
      ampc::storeF32(bytes.data(), dtype, i, static_cast<float>(v));
  }
  Vec values() const {
    Vec v(size());
    for (int64_t i = 0; i < size(); ++i)
      v[i] = get(i);
    return v;
  }
};

/// Expands to the four C arguments of a tensor.
#define T(t) (t).data(), (t).dtype, (t).dims(), (t).rank()

inline std::mt19937 &rng() {
  static std::mt19937 gen(1234);
  return gen;
}

/// Uniform values in [lo, hi), rounded to the tensor's dtype.
inline Tensor randomTensor(Shape s, ampc_dtype dt, double lo = -1.0,
                           double hi = 1.0) {
  Tensor t(std::move(s), dt);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i)
    t.set(i, u(rng()));
  return t;
}

/// The CPU backend's sum of squares for the gradient-norm clip, in its
/// documented order: each gradient in blocks of 32768 elements, element k
/// of a block added to lane k % 16 of sixteen f64 sums, the lanes then
/// added in a fixed tree (lane j + lane j + 8, then j + 4, j + 2, j + 1),
/// the block sums added in order.
inline double clipNormSquares(const std::vector<Vec> &grads) {
  const size_t block = 32768;
  double total = 0;
  for (const Vec &g : grads)
    for (size_t lo = 0; lo < g.size(); lo += block) {
      double lanes[16] = {};
      for (size_t i = lo; i < g.size() && i < lo + block; ++i)
        lanes[(i - lo) % 16] += g[i] * g[i];
      for (int w = 8; w >= 1; w /= 2)
        for (int j = 0; j < w; ++j)
          lanes[j] += lanes[j + w];
      total += lanes[0];
    }
  return total;
}

/// The absolute tolerance unit of a dtype (half an ulp at 1 plus slack).
inline double dtypeEps(ampc_dtype dt) {
  switch (dt) {
  case AMPC_F16:
    return 1.0 / 1024;
  case AMPC_BF16:
    return 1.0 / 128;
  default:
    return 2e-6;
  }
}

/// |got - want| <= rtol * |want| + atol * max|want| element-wise.
inline void expectClose(const Vec &got, const Vec &want, double rtol,
                        double atol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  scale = std::max(scale, 1e-3);
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(got[i] - want[i]);
    bool ok = err <= rtol * std::fabs(want[i]) + atol * scale ||
              (std::isnan(got[i]) && std::isnan(want[i]));
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " got " << got[i]
                    << " want " << want[i] << " (err " << err << ")";
  }
  EXPECT_EQ(bad, 0) << what;
}

/// A fixture holding one CPU context.
class CpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), AMPC_OK);
  }
  void TearDown() override { ampc_context_destroy(ctx); }
  ampc_context ctx = nullptr;
};

#define EXPECT_OK(call) EXPECT_EQ((call), AMPC_OK) << ampc_last_error()
#define ASSERT_OK(call) ASSERT_EQ((call), AMPC_OK) << ampc_last_error()

/// Row-major index helpers for references.
inline Shape unravel(int64_t i, const Shape &s) {
  Shape idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

/// Offset into `in` (right-aligned, broadcast) of output index `idx`.
inline int64_t broadcastOffset(const Shape &idx, const Shape &in) {
  int64_t off = 0;
  size_t lead = idx.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    off = off * in[d] + (in[d] == 1 ? 0 : idx[lead + d]);
  return off;
}

/// d/d inputs[k] of sum(w * f(inputs)) by central differences in f64.
inline Vec numericGrad(const std::function<Vec(const std::vector<Vec> &)> &f,
                       std::vector<Vec> inputs, size_t k, const Vec &w) {
  Vec g(inputs[k].size());
  for (size_t i = 0; i < g.size(); ++i) {
    double x = inputs[k][i], h = 1e-5 * std::max(1.0, std::fabs(x));
    inputs[k][i] = x + h;
    Vec fp = f(inputs);
    inputs[k][i] = x - h;
    Vec fm = f(inputs);
    inputs[k][i] = x;
    double s = 0;
    for (size_t j = 0; j < w.size(); ++j)
      s += w[j] * (fp[j] - fm[j]);
    g[i] = s / (2 * h);
  }
  return g;
}

} // namespace ampc_test

#endif // AMPC_RUNTIME_TEST_UTIL_H
