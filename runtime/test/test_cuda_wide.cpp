//===- test_cuda_wide.cpp - f64 and exact integers on the CUDA backend ---===//
//
// The CUDA backend's f64 and integer kernels (cuda/cuda_wide.cu) against the
// CPU backend's (cpu/cpu_wide.cpp): bytes where both run the same IEEE
// operations in the same order (elementwise + - * / sqrt, row kernels,
// integers), a tight relative tolerance where the order or libm differs
// (tree reductions, cuBLASLt dgemm, exp / log / tanh); each family also
// checks a value f32 cannot hold (1 + 2^-40, integers beyond 2^24 and
// 2^53), so a result computed through f32 fails. The f64 convolutions
// (cuda_conv_wide.cu: CudaWideConv.*) too, and f64 params under a
// low-precision update mode (updated in f64 beside 16-bit ones). Skips
// without a usable GPU.
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

using namespace ampc_test;

namespace {

constexpr double kTiny = 1.0 / (1ull << 40); // 1 + kTiny is no f32

class CudaWide : public CudaVsCpu {
protected:
  const char *skipped() const override {
    return "f64 / exact-integer CUDA-vs-CPU comparison";
  }

  /// Runs `op` on the GPU over copies of `ts` and returns every tensor as
  /// it is afterwards.
  std::vector<Tensor> onGpu(const std::vector<Tensor> &ts, const Op &op) {
    std::vector<void *> dev(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_OK(ampc_malloc(gpu, ts[i].bytes.size(), &dev[i]));
      EXPECT_OK(ampc_memcpy(gpu, dev[i], ts[i].bytes.data(),
                            ts[i].bytes.size(), AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    EXPECT_OK(op(gpu, [&](int i) { return dev[i]; }));
    std::vector<Tensor> out = ts;
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_OK(ampc_memcpy(gpu, out[i].data(), dev[i], ts[i].bytes.size(),
                            AMPC_MEMCPY_DEVICE_TO_HOST));
      ampc_free(gpu, dev[i]);
    }
    return out;
  }

  /// The status of `op` on the GPU over copies of `ts`, and the error text.
  ampc_status gpuStatus(const std::vector<Tensor> &ts, const Op &op,
                        std::string &error) {
    std::vector<void *> dev(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_OK(ampc_malloc(gpu, ts[i].bytes.size(), &dev[i]));
      EXPECT_OK(ampc_memcpy(gpu, dev[i], ts[i].bytes.data(),
                            ts[i].bytes.size(), AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    ampc_status s = op(gpu, [&](int i) { return dev[i]; });
    error = s == AMPC_OK ? "" : ampc_last_error();
    for (void *p : dev)
      ampc_free(gpu, p);
    return s;
  }
};

template <typename E> Tensor make(Shape s, ampc_dtype dt, std::vector<E> v) {
  Tensor t(std::move(s), dt);
  std::memcpy(t.data(), v.data(), v.size() * sizeof(E));
  return t;
}

template <typename E> E at(const Tensor &t, int64_t i) {
  E v;
  std::memcpy(&v, t.bytes.data() + i * sizeof(E), sizeof(E));
  return v;
}

/// f64 values 1 + k 2^-40 (k small) scaled into [lo, hi): every element
/// carries bits below f32's precision.
Tensor wide(Shape s, double lo = -1.0, double hi = 1.0) {
  Tensor t(std::move(s), AMPC_F64);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = u(rng()) + static_cast<double>(i % 7 + 1) * kTiny;
    std::memcpy(t.bytes.data() + i * 8, &v, 8);
  }
  return t;
}

// ------------------------------------------------------------ elementwise --

TEST_F(CudaWide, ElementwiseF64IsBitIdentical) {
  // [3, 1, 5] op [4, 1]: a broadcast walk; + - * / maximum, sqrt, neg,
  // abs and relu are IEEE operations, so the bits are the CPU's.
  std::vector<Tensor> ts = {wide({3, 1, 5}), wide({4, 1}),
                            Tensor({3, 4, 5}, AMPC_F64), wide({3, 4, 5}),
                            Tensor({3, 1, 5}, AMPC_F64), Tensor({4, 1}, AMPC_F64)};
  const Tensor &y = ts[2], &a = ts[0], &b = ts[1];
  compare(ts, {2}, [&](ampc_context c, const PtrFn &p) {
    return ampc_add_fwd(c, A(2, y), A(0, a), A(1, b));
  }, 0, "add broadcast");
  for (auto fwd : {ampc_sub_fwd, ampc_mul_fwd, ampc_div_fwd, ampc_maximum_fwd})
    compare(ts, {2}, [&](ampc_context c, const PtrFn &p) {
      return fwd(c, A(2, y), A(0, a), A(1, b));
    }, 0, "binary f64");
  // The backward of mul and div: reductions over the broadcast dims run
  // in another order, so those are compared to rounding.
  compare(ts, {4, 5}, [&](ampc_context c, const PtrFn &p) {
    return ampc_mul_bwd(c, A(4, a), A(5, b), A(3, y), A(0, a), A(1, b));
  }, 1e-13, "mul backward");
  Tensor x = wide({1000}, 0.5, 4.0), r({1000}, AMPC_F64);
  std::vector<Tensor> us = {x, r, wide({1000})};
  for (auto fwd : {ampc_sqrt_fwd, ampc_neg_fwd, ampc_abs_fwd, ampc_relu_fwd})
    compare(us, {1}, [&](ampc_context c, const PtrFn &p) {
      return fwd(c, A(1, r), A(0, x));
    }, 0, "unary f64");
  compare(us, {1}, [&](ampc_context c, const PtrFn &p) {
    return ampc_sqrt_bwd(c, A(1, r), A(2, x), A(0, x));
  }, 0, "sqrt backward");
}

TEST_F(CudaWide, ElementwiseF64IsNotF32) {
  std::vector<Tensor> ts = {make<double>({2}, AMPC_F64, {1.0, 3.0}),
                            make<double>({2}, AMPC_F64, {kTiny, kTiny}),
                            Tensor({2}, AMPC_F64)};
  auto out = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_add_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
  });
  EXPECT_EQ(at<double>(out[2], 0), 1.0 + kTiny);
  EXPECT_EQ(at<double>(out[2], 1), 3.0 + kTiny);
  // exp in f64: exp(1 + 2^-40) - e is about e * 2^-40.
  Tensor e({2}, AMPC_F64);
  std::vector<Tensor> es = {ts[0], make<double>({2}, AMPC_F64, {1.0 + kTiny, 3.0}), e};
  auto ex = onGpu(es, [&](ampc_context c, const PtrFn &p) {
    return ampc_exp_fwd(c, A(2, e), A(1, es[1]));
  });
  EXPECT_GT(at<double>(ex[2], 0), std::exp(1.0));
  EXPECT_NEAR(at<double>(ex[2], 0), std::exp(1.0 + kTiny), 1e-15);
}

TEST_F(CudaWide, TranscendentalF64AgreesToRounding) {
  Tensor x = wide({4096}, -3.0, 3.0), y({4096}, AMPC_F64), dy = wide({4096});
  std::vector<Tensor> ts = {x, y, dy};
  for (auto fwd : {ampc_exp_fwd, ampc_tanh_fwd, ampc_sigmoid_fwd, ampc_silu_fwd})
    compare(ts, {1}, [&](ampc_context c, const PtrFn &p) {
      return fwd(c, A(1, y), A(0, x));
    }, 1e-14, "transcendental f64");
  for (auto bwd : {ampc_tanh_bwd, ampc_sigmoid_bwd})
    compare(ts, {1}, [&](ampc_context c, const PtrFn &p) {
      return bwd(c, A(1, y), A(2, dy), A(0, x));
    }, 1e-14, "transcendental f64 backward");
  compare(ts, {1}, [&](ampc_context c, const PtrFn &p) {
    return ampc_gelu_fwd(c, A(1, y), A(0, x), AMPC_GELU_NONE);
  }, 1e-14, "gelu f64");
}

TEST_F(CudaWide, IntegerArithmeticIsExactAndWraps) {
  int64_t big = (int64_t(1) << 53) + 1;
  std::vector<Tensor> ts = {
      make<int64_t>({4}, AMPC_I64, {big, INT64_MAX, (int64_t(1) << 40) + 3, -7}),
      make<int64_t>({4}, AMPC_I64, {2, 1, (int64_t(1) << 40) + 5, 3}),
      Tensor({4}, AMPC_I64), Tensor({4}, AMPC_BOOL)};
  const Tensor &a = ts[0], &b = ts[1], &y = ts[2], &m = ts[3];
  for (auto fwd : {ampc_add_fwd, ampc_sub_fwd, ampc_mul_fwd, ampc_maximum_fwd,
                   ampc_minimum_fwd})
    compare(ts, {2}, [&](ampc_context c, const PtrFn &p) {
      return fwd(c, A(2, y), A(0, a), A(1, b));
    }, 0, "i64 arithmetic");
  for (auto fwd : {ampc_less_fwd, ampc_equal_fwd, ampc_greater_equal_fwd})
    compare(ts, {3}, [&](ampc_context c, const PtrFn &p) {
      return fwd(c, A(3, m), A(0, a), A(1, b));
    }, 0, "i64 comparison");
  auto add = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_add_fwd(c, A(2, y), A(0, a), A(1, b));
  });
  EXPECT_EQ(at<int64_t>(add[2], 0), big + 2);
  EXPECT_EQ(at<int64_t>(add[2], 1), INT64_MIN); // wraps
  auto mul = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_mul_fwd(c, A(2, y), A(0, a), A(1, b));
  });
  uint64_t p2 = static_cast<uint64_t>((int64_t(1) << 40) + 3) *
                static_cast<uint64_t>((int64_t(1) << 40) + 5);
  EXPECT_EQ(at<int64_t>(mul[2], 0), 2 * big);
  EXPECT_EQ(at<int64_t>(mul[2], 2), static_cast<int64_t>(p2)); // overflow wraps
  // 2^53 + 1 and 2^53 + 3 differ (f32 and f64 both see them equal).
  std::vector<Tensor> cs = {
      make<int64_t>({2}, AMPC_I64, {big, (int64_t(1) << 24) + 1}),
      make<int64_t>({2}, AMPC_I64, {big + 2, int64_t(1) << 24}),
      Tensor({2}, AMPC_BOOL)};
  auto lt = onGpu(cs, [&](ampc_context c, const PtrFn &p) {
    return ampc_less_fwd(c, A(2, cs[2]), A(0, cs[0]), A(1, cs[1]));
  });
  EXPECT_EQ(at<uint8_t>(lt[2], 0), 1);
  EXPECT_EQ(at<uint8_t>(lt[2], 1), 0);
}

TEST_F(CudaWide, NarrowIntegersWrap) {
  std::vector<Tensor> ts = {make<uint8_t>({2}, AMPC_U8, {200, 7}),
                            make<uint8_t>({2}, AMPC_U8, {100, 9}),
                            Tensor({2}, AMPC_U8),
                            make<int16_t>({2}, AMPC_I16, {-32768, 300}),
                            Tensor({2}, AMPC_I16),
                            make<int8_t>({2}, AMPC_I8, {3, 100}),
                            make<int8_t>({2}, AMPC_I8, {5, 2}),
                            Tensor({2}, AMPC_I8)};
  auto add = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_add_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
  });
  EXPECT_EQ(at<uint8_t>(add[2], 0), 44); // 300 mod 256
  auto sub = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_sub_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
  });
  EXPECT_EQ(at<uint8_t>(sub[2], 1), 254);
  auto neg = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_neg_fwd(c, A(4, ts[4]), A(3, ts[3]));
  });
  EXPECT_EQ(at<int16_t>(neg[4], 0), -32768);
  EXPECT_EQ(at<int16_t>(neg[4], 1), -300);
  auto abs = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_abs_fwd(c, A(4, ts[4]), A(3, ts[3]));
  });
  EXPECT_EQ(at<int16_t>(abs[4], 0), -32768);
  auto mul = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_mul_fwd(c, A(7, ts[7]), A(5, ts[5]), A(6, ts[6]));
  });
  EXPECT_EQ(at<int8_t>(mul[7], 1), -56); // 200 wraps in i8
  compare(ts, {2}, [&](ampc_context c, const PtrFn &p) {
    return ampc_add_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
  }, 0, "u8 add");
  compare(ts, {7}, [&](ampc_context c, const PtrFn &p) {
    return ampc_pow_fwd(c, A(7, ts[7]), A(5, ts[5]), A(6, ts[6]));
  }, 0, "i8 pow");
}

TEST_F(CudaWide, IntegerPowIsExactNotRefused) {
  // 3 ** 39 is above 2^53, 7 ** 40 wraps; negative exponents as torch.
  std::vector<Tensor> ts = {
      make<int64_t>({6}, AMPC_I64, {3, 7, 1, -1, -1, 5}),
      make<int64_t>({6}, AMPC_I64, {39, 40, -9, -3, -4, -1}),
      Tensor({6}, AMPC_I64)};
  auto out = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    return ampc_pow_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
  });
  const int64_t want[] = {4052555153018976267, -6212923193149656639, 1, -1, 1,
                          0};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(at<int64_t>(out[2], i), want[i]) << i;
  compare(ts, {2}, [&](ampc_context c, const PtrFn &p) {
    return ampc_pow_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]));
  }, 0, "i64 pow");
}

TEST_F(CudaWide, WhereKeepsWideValues) {
  int64_t big = (int64_t(1) << 53) + 1;
  std::vector<Tensor> ts = {make<uint8_t>({2}, AMPC_BOOL, {1, 0}),
                            make<int64_t>({2}, AMPC_I64, {big, 1}),
                            make<int64_t>({2}, AMPC_I64, {2, big + 2}),
                            Tensor({2}, AMPC_I64),
                            make<double>({2}, AMPC_F64, {1 + kTiny, 0}),
                            make<double>({2}, AMPC_F64, {0, 3 + kTiny}),
                            Tensor({2}, AMPC_F64)};
  auto out = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_where_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                            A(2, ts[2])));
    return ampc_where_fwd(c, A(6, ts[6]), A(0, ts[0]), A(4, ts[4]),
                          A(5, ts[5]));
  });
  EXPECT_EQ(at<int64_t>(out[3], 0), big);
  EXPECT_EQ(at<int64_t>(out[3], 1), big + 2);
  EXPECT_EQ(at<double>(out[6], 0), 1 + kTiny);
  EXPECT_EQ(at<double>(out[6], 1), 3 + kTiny);
}

TEST_F(CudaWide, CastsAndCopiesAreExact) {
  int64_t big = (int64_t(1) << 53) + 1;
  std::vector<Tensor> ts = {
      make<int64_t>({4}, AMPC_I64, {300, -1, big, -129}),
      Tensor({4}, AMPC_F64), Tensor({4}, AMPC_I8), Tensor({4}, AMPC_U8),
      make<double>({4}, AMPC_F64, {1 + kTiny, -2.75, 1e300, 299.9}),
      Tensor({4}, AMPC_F32), Tensor({4}, AMPC_I32), Tensor({4}, AMPC_F64),
      Tensor({4}, AMPC_I16)};
  Op casts = [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_cast_fwd(c, A(1, ts[1]), A(0, ts[0])));
    AMPC_TRY(ampc_cast_fwd(c, A(2, ts[2]), A(0, ts[0])));
    AMPC_TRY(ampc_cast_fwd(c, A(3, ts[3]), A(0, ts[0])));
    AMPC_TRY(ampc_cast_fwd(c, A(5, ts[5]), A(4, ts[4])));
    AMPC_TRY(ampc_cast_fwd(c, A(6, ts[6]), A(4, ts[4])));
    AMPC_TRY(ampc_cast_fwd(c, A(8, ts[8]), A(4, ts[4])));
    // f64 into f64: the contiguous same-dtype copy (all 8 bytes).
    return ampc_reshape_fwd(c, A(7, ts[7]), A(4, ts[4]));
  };
  compare(ts, {1, 2, 3, 5, 6, 7, 8}, casts, 0, "casts");
  auto out = onGpu(ts, casts);
  EXPECT_EQ(at<double>(out[1], 2), 9007199254740992.0); // nearest even
  EXPECT_EQ(at<int8_t>(out[2], 3), 127);                // -129 wraps
  EXPECT_EQ(at<uint8_t>(out[3], 0), 44);                // 300 mod 256
  EXPECT_EQ(at<float>(out[5], 0), 1.0f);                // rounded once
  EXPECT_EQ(at<int32_t>(out[6], 1), -2);                // toward zero
  EXPECT_EQ(at<double>(out[7], 0), 1 + kTiny);
  EXPECT_EQ(at<double>(out[7], 2), 1e300);
  EXPECT_EQ(at<int16_t>(out[8], 3), 299);
}

TEST_F(CudaWide, FillAndRandomKeepF64) {
  std::vector<Tensor> ts = {Tensor({5}, AMPC_F64), Tensor({5}, AMPC_I16),
                            Tensor({5}, AMPC_U8), Tensor({1000}, AMPC_F64),
                            Tensor({1000}, AMPC_F64)};
  Op fills = [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_fill(c, p(0), AMPC_F64, 5, 1 + kTiny));
    AMPC_TRY(ampc_fill(c, p(1), AMPC_I16, 5, 70000.0));
    AMPC_TRY(ampc_fill(c, p(2), AMPC_U8, 5, 300.0));
    return ampc_init_uniform(c, p(3), AMPC_F64, 1000, 7, 0, -1.0, 1.0 + kTiny);
  };
  compare(ts, {0, 1, 2, 3}, fills, 0, "fill and uniform");
  // Box-Muller in f64 (log, cos: libm and libdevice may differ in a bit).
  Op normal = [&](ampc_context c, const PtrFn &p) {
    return ampc_init_normal(c, p(4), AMPC_F64, 1000, 7, 0, 0.0, 1.0);
  };
  compare(ts, {4}, normal, 1e-13, "normal");
  auto out = onGpu(ts, fills);
  EXPECT_EQ(at<double>(out[0], 4), 1 + kTiny);
  EXPECT_EQ(at<int16_t>(out[1], 0), static_cast<int16_t>(70000 - 65536));
  EXPECT_EQ(at<uint8_t>(out[2], 0), 44);
  auto nout = onGpu(ts, normal);
  int notF32 = 0; // normal doubles keep bits below f32's precision
  for (int64_t i = 0; i < 1000; ++i) {
    double v = at<double>(nout[4], i);
    notF32 += static_cast<double>(static_cast<float>(v)) != v;
  }
  EXPECT_GT(notF32, 900);
}

// ------------------------------------------------------------- reductions --

TEST_F(CudaWide, ReductionsF64) {
  Tensor x = wide({37, 129, 3}), s0({129, 3}, AMPC_F64), s1({37, 3}, AMPC_F64),
         s2({}, AMPC_F64);
  std::vector<Tensor> ts = {x, s0, s1, s2};
  int64_t d0[] = {0}, d1[] = {1}, d01[] = {0, 1, 2};
  for (auto fwd : {ampc_sum_fwd, ampc_mean_fwd, ampc_max_fwd}) {
    double tol = fwd == ampc_max_fwd ? 0 : 1e-12; // a maximum is exact
    compare(ts, {1, 2, 3}, [&](ampc_context c, const PtrFn &p) {
      AMPC_TRY(fwd(c, A(1, s0), A(0, x), d0, 1, 0));
      AMPC_TRY(fwd(c, A(2, s1), A(0, x), d1, 1, 0));
      return fwd(c, A(3, s2), A(0, x), d01, 3, 0);
    }, tol, "reduction f64");
  }
  // The max backward (ties split) runs in the CPU's order: bits.
  Tensor dy = wide({129, 3}), dx({37, 129, 3}, AMPC_F64);
  std::vector<Tensor> bs = {x, s0, dy, dx};
  compare(bs, {3}, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_max_fwd(c, A(1, s0), A(0, x), d0, 1, 0));
    return ampc_max_bwd(c, A(3, dx), A(2, dy), A(0, x), A(1, s0), d0, 1, 0);
  }, 0, "max backward f64");
  // 1 + 2^40 tiny terms: f32 would lose every one.
  std::vector<double> v(1 << 12, kTiny);
  v[0] = 1.0;
  std::vector<Tensor> one = {make<double>({1 << 12}, AMPC_F64, v),
                             Tensor({}, AMPC_F64)};
  int64_t all[] = {0};
  auto out = onGpu(one, [&](ampc_context c, const PtrFn &p) {
    return ampc_sum_fwd(c, A(1, one[1]), A(0, one[0]), all, 1, 0);
  });
  EXPECT_EQ(at<double>(out[1], 0), 1.0 + 4095 * kTiny);
}

TEST_F(CudaWide, IntegerReductionsAreExact) {
  int64_t big = int64_t(1) << 53;
  std::vector<Tensor> ts = {
      make<int64_t>({2, 3}, AMPC_I64, {big, 1, 1, INT64_MAX, 1, 5}),
      Tensor({2}, AMPC_I64),
      make<int32_t>({3}, AMPC_I32, {INT32_MAX, INT32_MAX, 3}),
      Tensor({}, AMPC_I64),
      make<uint8_t>({4}, AMPC_U8, {255, 255, 255, 255}),
      Tensor({}, AMPC_I64), Tensor({2}, AMPC_I64)};
  int64_t d1[] = {1}, d0[] = {0};
  Op op = [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_sum_fwd(c, A(1, ts[1]), A(0, ts[0]), d1, 1, 0));
    AMPC_TRY(ampc_sum_fwd(c, A(3, ts[3]), A(2, ts[2]), d0, 1, 0));
    AMPC_TRY(ampc_sum_fwd(c, A(5, ts[5]), A(4, ts[4]), d0, 1, 0));
    return ampc_max_fwd(c, A(6, ts[6]), A(0, ts[0]), d1, 1, 0);
  };
  compare(ts, {1, 3, 5, 6}, op, 0, "integer reductions");
  auto out = onGpu(ts, op);
  EXPECT_EQ(at<int64_t>(out[1], 0), big + 2);          // f64 would round
  EXPECT_EQ(at<int64_t>(out[1], 1), INT64_MIN + 5);    // wraps
  EXPECT_EQ(at<int64_t>(out[3], 0), 2 * int64_t(INT32_MAX) + 3);
  EXPECT_EQ(at<int64_t>(out[5], 0), 1020);
  EXPECT_EQ(at<int64_t>(out[6], 0), big);
  EXPECT_EQ(at<int64_t>(out[6], 1), INT64_MAX);
}

TEST_F(CudaWide, ArgmaxAndCumsumWide) {
  int64_t big = (int64_t(1) << 53) + 1;
  std::vector<Tensor> ts = {
      make<int64_t>({2, 3}, AMPC_I64, {big - 1, big, big - 1, 5, 7, 7}),
      Tensor({2}, AMPC_I32),
      make<double>({2, 3}, AMPC_F64, {1.0, 1.0 + kTiny, 1.0, NAN, 2.0, 3.0}),
      Tensor({2}, AMPC_I32), Tensor({2, 3}, AMPC_I64), wide({5, 300, 2}),
      Tensor({5, 300, 2}, AMPC_F64)};
  Op op = [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_argmax_fwd(c, A(1, ts[1]), A(0, ts[0]), 1, 0));
    AMPC_TRY(ampc_argmax_fwd(c, A(3, ts[3]), A(2, ts[2]), 1, 0));
    AMPC_TRY(ampc_cumsum_fwd(c, A(4, ts[4]), A(0, ts[0]), 1));
    return ampc_cumsum_fwd(c, A(6, ts[6]), A(5, ts[5]), 1);
  };
  compare(ts, {1, 3, 4, 6}, op, 0, "argmax and cumsum");
  auto out = onGpu(ts, op);
  EXPECT_EQ(at<int32_t>(out[1], 0), 1); // big vs big - 1: f32 sees ties
  EXPECT_EQ(at<int32_t>(out[1], 1), 1); // the first of two maxima
  EXPECT_EQ(at<int32_t>(out[3], 0), 1); // 1 + 2^-40 beats 1
  EXPECT_EQ(at<int32_t>(out[3], 1), 0); // NaN is the maximum
  EXPECT_EQ(at<int64_t>(out[4], 1), 2 * big - 1);
}

TEST_F(CudaWide, SoftmaxF64) {
  Tensor x = wide({7, 33}, -4, 4), y({7, 33}, AMPC_F64), dy = wide({7, 33}),
         dx({7, 33}, AMPC_F64);
  std::vector<Tensor> ts = {x, y, dy, dx};
  for (int64_t dim : {1, 0}) {
    compare(ts, {1, 3}, [&](ampc_context c, const PtrFn &p) {
      AMPC_TRY(ampc_softmax_fwd(c, A(1, y), A(0, x), dim));
      return ampc_softmax_bwd(c, A(3, dx), A(2, dy), A(1, y), dim);
    }, 1e-13, "softmax f64");
    compare(ts, {1, 3}, [&](ampc_context c, const PtrFn &p) {
      AMPC_TRY(ampc_log_softmax_fwd(c, A(1, y), A(0, x), dim));
      return ampc_log_softmax_bwd(c, A(3, dx), A(2, dy), A(1, y), dim);
    }, 1e-13, "log_softmax f64");
  }
  // softmax([0, 2^-40]): f32 would give two equal halves.
  std::vector<Tensor> two = {make<double>({2}, AMPC_F64, {0.0, kTiny}),
                             Tensor({2}, AMPC_F64)};
  auto out = onGpu(two, [&](ampc_context c, const PtrFn &p) {
    return ampc_softmax_fwd(c, A(1, two[1]), A(0, two[0]), 0);
  });
  EXPECT_GT(at<double>(out[1], 1), at<double>(out[1], 0));
  EXPECT_NEAR(at<double>(out[1], 1) - at<double>(out[1], 0), kTiny / 2,
              1e-15);
}

TEST_F(CudaWide, NormsF64) {
  Tensor x = wide({9, 70}, -2, 2), w = wide({70}), b = wide({70}),
         y({9, 70}, AMPC_F64), dy = wide({9, 70}), dx({9, 70}, AMPC_F64),
         dw({70}, AMPC_F64), db({70}, AMPC_F64);
  std::vector<Tensor> ts = {x, w, b, y, dy, dx, dw, db};
  compare(ts, {3, 5, 6, 7}, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_layer_norm_fwd(c, A(3, y), A(0, x), A(1, w), A(2, b), 1e-5));
    return ampc_layer_norm_bwd(c, A(5, dx), A(6, dw), A(7, db), A(4, dy),
                               A(0, x), A(1, w), 1e-5);
  }, 1e-12, "layer_norm f64");
  compare(ts, {3, 5, 6}, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_rms_norm_fwd(c, A(3, y), A(0, x), A(1, w), 1e-6));
    return ampc_rms_norm_bwd(c, A(5, dx), A(6, dw), A(4, dy), A(0, x),
                             A(1, w), 1e-6);
  }, 1e-12, "rms_norm f64");
}

// ------------------------------------------------------------------- GEMM --

TEST_F(CudaWide, GemmF64) {
  Tensor a = wide({33, 47}), b = wide({47, 29}), y({33, 29}, AMPC_F64),
         w = wide({29, 47}), bias = wide({29}), c = wide({33, 29}),
         ba = wide({3, 8, 5}), bb = wide({3, 5, 6}), by({3, 8, 6}, AMPC_F64);
  std::vector<Tensor> ts = {a, b, y, w, bias, c, ba, bb, by};
  compare(ts, {2}, [&](ampc_context cx, const PtrFn &p) {
    return ampc_matmul_fwd(cx, A(2, y), A(0, a), A(1, b));
  }, 1e-12, "matmul f64");
  compare(ts, {8}, [&](ampc_context cx, const PtrFn &p) {
    return ampc_matmul_fwd(cx, A(8, by), A(6, ba), A(7, bb));
  }, 1e-12, "batched matmul f64");
  compare(ts, {2}, [&](ampc_context cx, const PtrFn &p) {
    return ampc_linear_fwd(cx, A(2, y), A(0, a), A(3, w), A(4, bias),
                           AMPC_EPILOGUE_RELU);
  }, 1e-12, "linear + bias + relu f64");
  compare(ts, {2}, [&](ampc_context cx, const PtrFn &p) {
    return ampc_addmm_fwd(cx, A(2, y), A(5, c), A(0, a), A(1, b), 0.5, 1.5);
  }, 1e-12, "addmm f64 (refused on CUDA before)");
  // [1 + 2^-40] @ [1]: f32 operands would give 1.
  std::vector<Tensor> one = {make<double>({1, 1}, AMPC_F64, {1 + kTiny}),
                             make<double>({1, 1}, AMPC_F64, {1.0}),
                             Tensor({1, 1}, AMPC_F64)};
  auto out = onGpu(one, [&](ampc_context cx, const PtrFn &p) {
    return ampc_matmul_fwd(cx, A(2, one[2]), A(0, one[0]), A(1, one[1]));
  });
  EXPECT_EQ(at<double>(out[2], 0), 1 + kTiny);
}

TEST_F(CudaWide, MseF64) {
  Tensor a = wide({1000}), b = wide({1000}), loss({}, AMPC_F64),
         dl = make<double>({}, AMPC_F64, {1 + kTiny}), da({1000}, AMPC_F64),
         db({1000}, AMPC_F64);
  std::vector<Tensor> ts = {a, b, loss, dl, da, db};
  compare(ts, {2}, [&](ampc_context c, const PtrFn &p) {
    return ampc_mse_loss_fwd(c, A(2, loss), A(0, a), A(1, b));
  }, 1e-12, "mse f64");
  compare(ts, {4, 5}, [&](ampc_context c, const PtrFn &p) {
    return ampc_mse_loss_bwd(c, A(4, da), A(5, db), A(3, dl), A(0, a),
                             A(1, b));
  }, 0, "mse backward f64");
}

TEST_F(CudaWide, CrossEntropyAndEmbeddingF64) {
  // Labels with an ignored row (-100); exp / log are CUDA's own, so the
  // loss and its gradient agree to rounding.
  Tensor logits = wide({6, 11}, -3, 3),
         labels = make<int64_t>({6}, AMPC_I64, {0, 10, -100, 3, 3, 7}),
         loss({}, AMPC_F64), dl = make<double>({}, AMPC_F64, {1 + kTiny}),
         dlogits({6, 11}, AMPC_F64);
  std::vector<Tensor> ts = {logits, labels, loss, dl, dlogits};
  compare(ts, {2, 4}, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_cross_entropy_fwd(c, A(2, loss), A(0, logits),
                                    A(1, labels), -1));
    return ampc_cross_entropy_bwd(c, A(4, dlogits), A(3, dl), A(0, logits),
                                  A(1, labels));
  }, 1e-13, "cross-entropy f64");
  // Rows gathered exactly; the backward sums each id's rows in token order
  // (the CPU's order: bits), ids repeated and one never used.
  Tensor table = wide({9, 70}), ids = make<int64_t>({7}, AMPC_I64,
                                                    {4, 1, 4, 8, 0, 4, 1}),
         y({7, 70}, AMPC_F64), dy = wide({7, 70}), dtable({9, 70}, AMPC_F64);
  std::vector<Tensor> es = {table, ids, y, dy, dtable};
  Op emb = [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_embedding_fwd(c, A(2, y), A(0, table), A(1, ids), -1));
    return ampc_embedding_bwd(c, A(4, dtable), A(3, dy), A(1, ids));
  };
  compare(es, {2, 4}, emb, 0, "embedding f64");
  auto out = onGpu(es, emb);
  EXPECT_EQ(at<double>(out[2], 0), at<double>(table, 4 * 70));
  double want = at<double>(dy, 0) + at<double>(dy, 2 * 70) +
                at<double>(dy, 5 * 70); // id 4: tokens 0, 2, 5 in order
  EXPECT_EQ(at<double>(out[4], 4 * 70), want);
  EXPECT_EQ(at<double>(out[4], 2 * 70), 0.0); // id 2 is never used
}

TEST_F(CudaWide, SgdAndAdamwF64) {
  // An f64 param and an f32 one in one list: the f64 one updates in f64
  // (its momentum buffer / moments f64), the f32 one by the f32 kernels.
  // SGD's IEEE operations give the CPU's bits; AdamW's pow agrees to
  // rounding. Three steps, so the buffers carry over.
  std::vector<Tensor> ts = {wide({300}), wide({300}), Tensor({300}, AMPC_F64),
                            randomTensor({70}, AMPC_F32),
                            randomTensor({70}, AMPC_F32),
                            Tensor({70}, AMPC_F32), Tensor({300}, AMPC_F64),
                            Tensor({70}, AMPC_F32), Tensor({1}, AMPC_I32)};
  Op sgd = [&](ampc_context c, const PtrFn &p) {
    void *params[] = {p(0), p(3)}, *grads[] = {p(1), p(4)},
         *bufs[] = {p(2), p(5)};
    ampc_dtype pd[] = {AMPC_F64, AMPC_F32};
    int64_t numels[] = {300, 70};
    for (int step = 0; step < 3; ++step)
      AMPC_TRY(ampc_sgd_update(c, params, pd, grads, pd, bufs, numels, 2,
                               0.1, 0.9, 1e-2, 1, 0.0, nullptr, AMPC_F32,
                               nullptr));
    return AMPC_OK;
  };
  compare(ts, {0, 2, 3, 5}, sgd, 0, "sgd f64 + f32");
  auto out = onGpu(ts, sgd);
  int notF32 = 0;
  for (int64_t i = 0; i < 300; ++i) {
    double v = at<double>(out[0], i);
    notF32 += static_cast<double>(static_cast<float>(v)) != v;
  }
  EXPECT_GT(notF32, 290);
  Op adamw = [&](ampc_context c, const PtrFn &p) {
    void *params[] = {p(0), p(3)}, *grads[] = {p(1), p(4)},
         *m[] = {p(2), p(5)}, *v[] = {p(6), p(7)};
    ampc_dtype pd[] = {AMPC_F64, AMPC_F32};
    int64_t numels[] = {300, 70};
    for (int step = 0; step < 3; ++step)
      AMPC_TRY(ampc_adamw_update(c, params, pd, grads, pd, m, v, p(8), numels,
                                 2, 1e-3, 0.9, 0.999, 1e-8, 1e-2, 0.0, nullptr,
                                 AMPC_F32, nullptr));
    return AMPC_OK;
  };
  compare(ts, {0, 2, 6, 8}, adamw, 1e-13, "adamw f64");
  compare(ts, {3, 5, 7}, adamw, 0, "adamw f32 beside f64");
}

TEST_F(CudaWide, UnscaleF64) {
  // 1e300 is finite in f64 (an f32 check would call it inf); a scale of
  // 3 has an inexact f32 inverse, multiplied in f64 as on the CPU. An inf
  // in the f64 gradient sets found_inf.
  std::vector<Tensor> ts = {
      make<double>({3}, AMPC_F64, {1e300, 1 + kTiny, -3.5}),
      randomTensor({5}, AMPC_F32), make<float>({1}, AMPC_F32, {3.0f}),
      Tensor({1}, AMPC_F32),
      make<double>({2}, AMPC_F64, {1.0, INFINITY}), Tensor({1}, AMPC_F32)};
  Op op = [&](ampc_context c, const PtrFn &p) {
    void *grads[] = {p(0), p(1)};
    ampc_dtype dts[] = {AMPC_F64, AMPC_F32};
    int64_t numels[] = {3, 5};
    AMPC_TRY(ampc_check_finite_unscale(c, p(3), AMPC_F32, grads, dts, numels,
                                       2, p(2)));
    void *bad[] = {p(4)};
    int64_t two[] = {2};
    return ampc_check_finite_unscale(c, p(5), AMPC_F32, bad, dts, two, 1,
                                     nullptr);
  };
  compare(ts, {0, 1, 3, 5}, op, 0, "unscale f64");
  auto out = onGpu(ts, op);
  EXPECT_EQ(at<float>(out[3], 0), 0.0f);
  EXPECT_EQ(at<float>(out[5], 0), 1.0f);
  EXPECT_EQ(at<double>(out[0], 1),
            (1 + kTiny) * static_cast<double>(1.0f / 3.0f));
}

TEST_F(CudaWide, ClipGradNormF64) {
  // An f64 and an f32 gradient: the norm's squares in f64, the coefficient
  // in f64 (max_norm as written), f64 gradients scaled by it in f64, the
  // f32 one by its f32 rounding. Sums run in another order than the CPU's:
  // compared to rounding.
  std::vector<Tensor> ts = {wide({300}), randomTensor({70}, AMPC_F32),
                            Tensor({}, AMPC_F32)};
  for (double maxNorm : {0.5, 1e6}) {
    Op op = [&](ampc_context c, const PtrFn &p) {
      void *grads[] = {p(0), p(1)};
      ampc_dtype dts[] = {AMPC_F64, AMPC_F32};
      int64_t numels[] = {300, 70};
      return ampc_clip_grad_norm(c, p(2), grads, dts, numels, 2, maxNorm,
                                 nullptr, AMPC_F32);
    };
    compare(ts, {0}, op, 1e-13, "clip f64 gradient");
    compare(ts, {1, 2}, op, 1e-6, "clip f32 gradient and total norm");
    auto out = onGpu(ts, op);
    if (maxNorm > 1) { // no clipping: every value as it was
      EXPECT_EQ(out[0].bytes, ts[0].bytes);
      continue;
    }
    double norm = 0;
    for (int64_t i = 0; i < 300; ++i)
      norm += at<double>(out[0], i) * at<double>(out[0], i);
    for (int64_t i = 0; i < 70; ++i)
      norm += static_cast<double>(at<float>(out[1], i)) * at<float>(out[1], i);
    EXPECT_NEAR(std::sqrt(norm), 0.5, 1e-6);
    int notF32 = 0;
    for (int64_t i = 0; i < 300; ++i) {
      double v = at<double>(out[0], i);
      notF32 += static_cast<double>(static_cast<float>(v)) != v;
    }
    EXPECT_GT(notF32, 290);
  }
}

TEST_F(CudaWide, PoolF64) {
  // Overlapping windows with padding (3x3, stride 2, pad 1): the backward
  // adds each input's shares in the CPU's order (bits); a max tie at
  // 1 + 2^-40 vs 1 is no tie in f64.
  Tensor x = wide({2, 3, 9, 9}), y({2, 3, 5, 5}, AMPC_F64),
         dy = wide({2, 3, 5, 5}), dx({2, 3, 9, 9}, AMPC_F64);
  std::vector<Tensor> ts = {x, y, dy, dx};
  compare(ts, {1, 3}, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_max_pool2d_fwd(c, A(1, y), A(0, x), 3, 3, 2, 2, 1, 1));
    return ampc_max_pool2d_bwd(c, A(3, dx), A(2, dy), A(0, x), 3, 3, 2, 2, 1,
                               1);
  }, 0, "max_pool2d f64");
  compare(ts, {1, 3}, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_avg_pool2d_fwd(c, A(1, y), A(0, x), 3, 3, 2, 2, 1, 1));
    return ampc_avg_pool2d_bwd(c, A(3, dx), A(2, dy), A(0, x), 3, 3, 2, 2, 1,
                               1);
  }, 0, "avg_pool2d f64");
  std::vector<Tensor> one = {
      make<double>({1, 1, 2, 2}, AMPC_F64, {1.0, 1 + kTiny, 1.0, -1.0}),
      Tensor({1, 1, 1, 1}, AMPC_F64)};
  auto out = onGpu(one, [&](ampc_context c, const PtrFn &p) {
    return ampc_max_pool2d_fwd(c, A(1, one[1]), A(0, one[0]), 2, 2, 2, 2, 0,
                               0);
  });
  EXPECT_EQ(at<double>(out[1], 0), 1 + kTiny);
}

TEST_F(CudaWide, BatchNormAndDropoutF64) {
  // Batch norm: one thread per channel in the CPU's order (bits), training
  // and eval, forward, backward and the running-statistics update.
  Tensor x = wide({4, 3, 37}), y({4, 3, 37}, AMPC_F64), w = wide({3}),
         b = wide({3}), rm = wide({3}), rv = wide({3}, 0.5, 2.0),
         dy = wide({4, 3, 37}), dx({4, 3, 37}, AMPC_F64), dw({3}, AMPC_F64),
         db({3}, AMPC_F64), nm({3}, AMPC_F64), nv({3}, AMPC_F64);
  std::vector<Tensor> ts = {x, y, w, b, rm, rv, dy, dx, dw, db, nm, nv};
  for (int training : {1, 0})
    compare(ts, {1, 7, 8, 9, 10, 11}, [&](ampc_context c, const PtrFn &p) {
      AMPC_TRY(ampc_batch_norm_fwd(c, A(1, y), A(0, x), A(2, w), A(3, b),
                                   A(4, rm), A(5, rv), training, 1e-5));
      AMPC_TRY(ampc_batch_norm_bwd(c, A(7, dx), A(8, dw), A(9, db), A(6, dy),
                                   A(0, x), A(2, w), A(4, rm), A(5, rv),
                                   training, 1e-5));
      return ampc_batch_norm_update(c, A(10, nm), A(11, nv), A(0, x),
                                    A(4, rm), A(5, rv), 0.1);
    }, 0, training ? "batch norm f64 (training)" : "batch norm f64 (eval)");
  // Dropout: the f32 kernel's mask, 1 / (1 - p) in f64 (bits).
  Tensor dxin = wide({1000}), dyout({1000}, AMPC_F64),
         step = make<int32_t>({1}, AMPC_I32, {3});
  std::vector<Tensor> ds = {dxin, dyout, step};
  Op drop = [&](ampc_context c, const PtrFn &p) {
    return ampc_dropout_fwd(c, A(1, dyout), A(0, dxin), p(2), 11, 0.3, 5);
  };
  compare(ds, {1}, drop, 0, "dropout f64");
  auto out = onGpu(ds, drop);
  int kept = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    double v = at<double>(out[1], i);
    if (v != 0) {
      ++kept;
      EXPECT_EQ(v, at<double>(dxin, i) * (1.0 / (1.0 - 0.3))) << i;
    }
  }
  EXPECT_GT(kept, 600);
  EXPECT_LT(kept, 800);
}

// ------------------------------------------------------------ convolution --

/// conv1d / conv2d / conv3d forward and backward (dx, dw, db) over f64
/// tensors on both backends: y, dx and dw to 1e-12 (the GEMM sums run in
/// cuBLASLt's order; im2col, col2im and the bias are the CPU's operations
/// in its order), db bit for bit (one f64 sum per channel, in order).
struct ConvCase {
  const char *what;
  Shape x, w, y;
  std::vector<int64_t> stride, pad, dil;
  int64_t groups;
};

class CudaWideConv : public CudaWide {
protected:
  /// Runs the forward (bias included) and the backward of `k` with f64
  /// tensors; `yDtype` is y's (and dy's and dx's) dtype.
  void check(const ConvCase &k, ampc_dtype yDtype = AMPC_F64) {
    SCOPED_TRACE(k.what);
    int64_t o = k.w[0];
    Tensor x = wide(k.x), w = wide(k.w), bias = wide({o}),
           y(k.y, yDtype), dy = wide(k.y), dx(k.x, yDtype),
           dw(k.w, AMPC_F64), db({o}, AMPC_F64);
    if (yDtype != AMPC_F64)
      dy = randomTensor(k.y, yDtype);
    std::vector<Tensor> ts = {x, w, bias, y, dy, dx, dw, db};
    size_t dims = k.stride.size();
    auto fwd = [&](ampc_context c, const PtrFn &p) -> ampc_status {
      const int64_t *s = k.stride.data(), *pd = k.pad.data(),
                    *dl = k.dil.data();
      if (dims == 1)
        return ampc_conv1d_fwd(c, A(3, y), A(0, x), A(1, w), A(2, bias), s[0],
                               pd[0], dl[0], k.groups);
      if (dims == 2)
        return ampc_conv2d_fwd(c, A(3, y), A(0, x), A(1, w), A(2, bias), s[0],
                               s[1], pd[0], pd[1], dl[0], dl[1], k.groups);
      return ampc_conv3d_fwd(c, A(3, y), A(0, x), A(1, w), A(2, bias), s[0],
                             s[1], s[2], pd[0], pd[1], pd[2], dl[0], dl[1],
                             dl[2], k.groups);
    };
    auto bwd = [&](ampc_context c, const PtrFn &p) -> ampc_status {
      const int64_t *s = k.stride.data(), *pd = k.pad.data(),
                    *dl = k.dil.data();
      if (dims == 1)
        return ampc_conv1d_bwd(c, A(5, dx), A(6, dw), A(7, db), A(4, dy),
                               A(0, x), A(1, w), s[0], pd[0], dl[0], k.groups);
      if (dims == 2)
        return ampc_conv2d_bwd(c, A(5, dx), A(6, dw), A(7, db), A(4, dy),
                               A(0, x), A(1, w), s[0], s[1], pd[0], pd[1],
                               dl[0], dl[1], k.groups);
      return ampc_conv3d_bwd(c, A(5, dx), A(6, dw), A(7, db), A(4, dy),
                             A(0, x), A(1, w), s[0], s[1], s[2], pd[0], pd[1],
                             pd[2], dl[0], dl[1], dl[2], k.groups);
    };
    // An f32 result is the f64 value rounded once: the backends may round
    // a GEMM result on either side of a tie only by one f32 ulp.
    double tol = yDtype == AMPC_F64 ? 1e-12 : 1e-6;
    compare(ts, {3}, fwd, tol, "forward");
    compare(ts, {5}, bwd, tol, "input gradient");
    compare(ts, {6}, bwd, 1e-12, "weight gradient (f64)");
    if (yDtype == AMPC_F64)
      compare(ts, {7}, bwd, 0, "bias gradient (in order: bits)");
  }
};

TEST_F(CudaWideConv, Conv1dF64) {
  // Depthwise (groups = channels), strided, padded, dilated.
  check({"conv1d depthwise", {3, 3, 11}, {3, 1, 4}, {3, 3, 5}, {2}, {2}, {2},
         3});
  // Two groups of two channels, three outputs each; stride 3, no padding.
  check({"conv1d grouped", {2, 4, 13}, {6, 2, 3}, {2, 6, 4}, {3}, {0}, {1},
         2});
  // Pointwise (the columns are the image itself).
  check({"conv1d pointwise", {2, 3, 7}, {5, 3, 1}, {2, 5, 7}, {1}, {0}, {1},
         1});
  // f64 operands, an f32 result (and dx): the f64 value rounded once.
  check({"conv1d f32 result", {2, 2, 9}, {3, 2, 3}, {2, 3, 9}, {1}, {1}, {1},
         1},
        AMPC_F32);
}

TEST_F(CudaWideConv, Conv2dF64) {
  // H: (7 + 2 - 2 - 1) / 2 + 1 = 4; W: (6 + 2 - 2 - 1) / 1 + 1 = 6.
  check({"conv2d grouped, strided, padded, dilated", {2, 4, 7, 6},
         {6, 2, 3, 2}, {2, 6, 4, 6}, {2, 1}, {1, 1}, {1, 2}, 2});
  check({"conv2d plain", {1, 3, 5, 5}, {4, 3, 3, 3}, {1, 4, 3, 3}, {1, 1},
         {0, 0}, {1, 1}, 1});
  check({"conv2d pointwise", {2, 3, 4, 5}, {4, 3, 1, 1}, {2, 4, 4, 5}, {1, 1},
         {0, 0}, {1, 1}, 1});
}

TEST_F(CudaWideConv, Conv3dF64) {
  // A 2x2x2 kernel padded by 1, stride (1, 2, 1): D = (4 + 2 - 2) / 1 + 1
  // = 5, H = (4 + 2 - 2) / 2 + 1 = 3, W = (3 + 2 - 2) / 1 + 1 = 4.
  check({"conv3d", {1, 2, 4, 4, 3}, {2, 2, 2, 2, 2}, {1, 2, 5, 3, 4},
         {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, 1});
}

TEST_F(CudaWideConv, ConvF64IsNotF32) {
  // conv1d of [1 + 2^-40, -1] with [1, 1]: exactly 2^-40 in f64, 0 through
  // f32. Backward with dy = 1 + 2^-40: dx = w dy, dw = x dy (in f64:
  // 1 + 2^-39 and -(1 + 2^-40)), db = dy.
  const double t = kTiny;
  std::vector<Tensor> ts = {make<double>({1, 1, 2}, AMPC_F64, {1 + t, -1.0}),
                            make<double>({1, 1, 2}, AMPC_F64, {1.0, 1.0}),
                            Tensor({1, 1, 1}, AMPC_F64),
                            make<double>({1, 1, 1}, AMPC_F64, {1 + t}),
                            Tensor({1, 1, 2}, AMPC_F64),
                            Tensor({1, 1, 2}, AMPC_F64),
                            Tensor({1}, AMPC_F64)};
  const Tensor &x = ts[0], &w = ts[1], &y = ts[2], &dy = ts[3], &dx = ts[4],
               &dw = ts[5], &db = ts[6];
  auto out = onGpu(ts, [&](ampc_context c, const PtrFn &p) {
    AMPC_TRY(ampc_conv1d_fwd(c, A(2, y), A(0, x), A(1, w), nullptr, AMPC_F64,
                             nullptr, 0, 1, 0, 1, 1));
    return ampc_conv1d_bwd(c, A(4, dx), A(5, dw), A(6, db), A(3, dy),
                           A(0, x), A(1, w), 1, 0, 1, 1);
  });
  EXPECT_EQ(at<double>(out[2], 0), t);
  EXPECT_EQ(at<double>(out[4], 0), 1 + t);
  EXPECT_EQ(at<double>(out[4], 1), 1 + t);
  EXPECT_EQ(at<double>(out[5], 0), (1 + t) * (1 + t));
  EXPECT_EQ(at<double>(out[5], 1), -(1 + t));
  EXPECT_EQ(at<double>(out[6], 0), 1 + t);
  // The transposed convolution (the input gradient's path): [1 + 2^-40]
  // through a [1, -1] kernel gives [1 + 2^-40, -(1 + 2^-40)].
  std::vector<Tensor> tr = {make<double>({1, 1, 1}, AMPC_F64, {1 + t}),
                            make<double>({1, 1, 2}, AMPC_F64, {1.0, -1.0}),
                            Tensor({1, 1, 2}, AMPC_F64)};
  auto got = onGpu(tr, [&](ampc_context c, const PtrFn &p) {
    return ampc_conv_transpose1d_fwd(c, A(2, tr[2]), A(0, tr[0]),
                                     A(1, tr[1]), nullptr, AMPC_F64, nullptr,
                                     0, 1, 0, 1, 1);
  });
  EXPECT_EQ(at<double>(got[2], 0), 1 + t);
  EXPECT_EQ(at<double>(got[2], 1), -(1 + t));
}

// ------------------------------------------- low-precision update modes --

TEST_F(CudaWide, LowPrecisionUpdatesOfF64ParamsRunInF64) {
  // SGD (momentum) and AdamW under stochastic rounding with an f64 param
  // (f64 state) beside a bf16 one (bf16 state), in one call: the mode
  // rounds 16-bit values only, so the f64 param gets the plain f64 update
  // and the bf16 one the stochastic one; both as the CPU computes them.
  // SGD's IEEE operations give the CPU's bits; AdamW's pow agrees to
  // rounding (f64) and the bf16 param's bits are the CPU's. Three steps.
  std::vector<Tensor> ts = {wide({300}),
                            wide({300}),
                            Tensor({300}, AMPC_F64),
                            randomTensor({70}, AMPC_BF16),
                            randomTensor({70}, AMPC_BF16, -1e-2, 1e-2),
                            Tensor({70}, AMPC_BF16),
                            Tensor({300}, AMPC_F64),
                            Tensor({70}, AMPC_BF16),
                            Tensor({1}, AMPC_I32),
                            Tensor({1}, AMPC_I32)};
  const ampc_dtype pd[] = {AMPC_F64, AMPC_BF16}, sd[] = {AMPC_F64, AMPC_BF16};
  const int64_t numels[] = {300, 70};
  Op sgd = [&](ampc_context c, const PtrFn &p) {
    void *params[] = {p(0), p(3)}, *grads[] = {p(1), p(4)},
         *bufs[] = {p(2), p(5)};
    for (int step = 0; step < 3; ++step)
      AMPC_TRY(ampc_sgd_update_low(c, params, pd, grads, pd, bufs, numels, 2,
                                   0.1, 0.9, 1e-2, 1, 0.0, nullptr, AMPC_F32,
                                   nullptr, nullptr, nullptr, nullptr, 0, sd,
                                   AMPC_LOW_STOCHASTIC, 7, 0, p(9), nullptr,
                                   nullptr, 0));
    return AMPC_OK;
  };
  compare(ts, {0, 2, 3, 5, 9}, sgd, 0, "sgd f64 + bf16, stochastic");
  auto out = onGpu(ts, sgd);
  int notF32 = 0;
  for (int64_t i = 0; i < 300; ++i) {
    double v = at<double>(out[0], i);
    notF32 += static_cast<double>(static_cast<float>(v)) != v;
  }
  EXPECT_GT(notF32, 290);
  Op adamw = [&](ampc_context c, const PtrFn &p) {
    void *params[] = {p(0), p(3)}, *grads[] = {p(1), p(4)},
         *m[] = {p(2), p(5)}, *v[] = {p(6), p(7)};
    for (int step = 0; step < 3; ++step)
      AMPC_TRY(ampc_adamw_update_low(
          c, params, pd, grads, pd, m, v, p(8), numels, 2, 1e-3, 0.9, 0.999,
          1e-8, 1e-2, 0.0, nullptr, AMPC_F32, nullptr, nullptr, nullptr,
          nullptr, 0, sd, AMPC_LOW_STOCHASTIC, 7, 0, nullptr, nullptr, 0));
    return AMPC_OK;
  };
  compare(ts, {0, 2, 6, 8}, adamw, 1e-13, "adamw f64 beside bf16");
  compare(ts, {3, 5, 7}, adamw, 0, "adamw bf16 beside f64, stochastic");
}

TEST_F(CudaWide, GradAccumulateF64) {
  // An f64 param's gradients accumulate into an f64 accumulator (f64
  // additions in micro-batch order: the CPU's bits), beside an f32 one;
  // three micro-batches of k = 3, the index back at 0.
  std::vector<Tensor> ts = {Tensor({300}, AMPC_F64), wide({300}),
                            Tensor({70}, AMPC_F32),
                            randomTensor({70}, AMPC_BF16),
                            Tensor({1}, AMPC_I32)};
  Op acc = [&](ampc_context c, const PtrFn &p) {
    void *accs[] = {p(0), p(2)}, *grads[] = {p(1), p(3)};
    ampc_dtype gd[] = {AMPC_F64, AMPC_BF16};
    int64_t numels[] = {300, 70};
    for (int micro = 0; micro < 3; ++micro)
      AMPC_TRY(ampc_grad_accumulate(c, accs, grads, gd, numels, 2, p(4), 3));
    return AMPC_OK;
  };
  compare(ts, {0, 2, 4}, acc, 0, "grad accumulate f64 + bf16");
  auto out = onGpu(ts, acc);
  EXPECT_EQ(at<double>(out[0], 0), 3 * at<double>(ts[1], 0));
  EXPECT_EQ(at<int32_t>(out[4], 0), 0);
}

TEST_F(CudaWide, F64GradientOfANarrowerParamIsRefused) {
  // An f64 gradient of an f32 param has no CUDA kernel (it would round):
  // refused before anything runs, the param kept.
  Tensor p = randomTensor({4}, AMPC_F32), g = wide({4});
  std::vector<Tensor> ts = {p, g};
  const ampc_dtype pd[] = {AMPC_F32}, gd[] = {AMPC_F64};
  const int64_t numels[] = {4};
  Op sgd = [&](ampc_context c, const PtrFn &ptr) {
    void *ps[] = {ptr(0)}, *gs[] = {ptr(1)};
    return ampc_sgd_update(c, ps, pd, gs, gd, nullptr, numels, 1, 0.1, 0.0,
                           0.0, 0, 0.0, nullptr, AMPC_F32, nullptr);
  };
  std::string error;
  EXPECT_EQ(gpuStatus(ts, sgd, error), AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_NE(error.find("sgd: gradient 0 is f64"), std::string::npos) << error;
  auto kept = onGpu(ts, [&](ampc_context c, const PtrFn &ptr) {
    EXPECT_EQ(sgd(c, ptr), AMPC_ERROR_UNSUPPORTED_DTYPE);
    return AMPC_OK;
  });
  EXPECT_EQ(kept[0].bytes, p.bytes);
}

} // namespace
