//===- test_enum_values.cpp - Any integer where the ABI takes an enum ----===//
//
// A C caller may pass any int32_t where runtime.h declares an enumerated
// type. For every entry point that takes one (dtypes, also inside arrays;
// backends; memcpy kinds; epilogues; gelu modes; status codes), each
// enumerated argument in turn gets out-of-range values while the others stay
// valid: the call must fail with AMPC_ERROR_UNSUPPORTED_DTYPE (a dtype) or
// AMPC_ERROR_INVALID_ARGUMENT (anything else), never succeed or crash; and
// the same call with every argument valid must succeed, so the failure is
// the bad value's. Run under ASan+UBSan (scripts/sanitize.sh) this is the
// regression test of two findings: api_core.cpp loading an unknown
// ampc_backend and api_elementwise.cpp loading an unknown ampc_dtype as C++
// enums before checking them. The table kernels are enumerated from
// ampc/runtime_kernels.inc, so a new kernel is covered without an edit here.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <climits>
#include <cstdio>
#include <string>
#include <functional>

using namespace ampc_test;

namespace {

const int32_t kBadValues[] = {-1, 10, 42, 1000, INT32_MIN, INT32_MAX};

/// Hands out the arguments of one call: each enumerated argument is valid
/// except the one at position `bad`, which gets `value`.
struct Probe {
  int bad = -1;
  int32_t value = 0;
  std::vector<bool> isDtype; // per position, filled as the call runs

  ampc_dtype dt(ampc_dtype valid) {
    return static_cast<ampc_dtype>(next(true, valid));
  }
  template <typename E> E en(E valid) {
    return static_cast<E>(next(false, static_cast<int32_t>(valid)));
  }

private:
  int32_t next(bool dtype, int32_t valid) {
    int i = static_cast<int>(isDtype.size());
    isDtype.push_back(dtype);
    return i == bad ? value : valid;
  }
};

using Call = std::function<ampc_status(Probe &)>;

/// Runs `call` valid once, then with each enumerated position bad.
void checkEntry(const std::string &name, const Call &call) {
  SCOPED_TRACE(name);
  Probe valid;
  ASSERT_EQ(call(valid), AMPC_OK) << ampc_last_error();
  ASSERT_FALSE(valid.isDtype.empty()) << "no enumerated argument probed";
  for (size_t pos = 0; pos < valid.isDtype.size(); ++pos)
    for (int32_t v : kBadValues) {
      Probe p;
      p.bad = static_cast<int>(pos);
      p.value = v;
      ampc_status want = valid.isDtype[pos] ? AMPC_ERROR_UNSUPPORTED_DTYPE
                                            : AMPC_ERROR_INVALID_ARGUMENT;
      EXPECT_EQ(call(p), want)
          << "argument #" << pos << " = " << v << ": " << ampc_last_error();
    }
}

class EnumValues : public CpuTest {};

void fill(Tensor &t, const Vec &v) {
  for (size_t i = 0; i < v.size(); ++i)
    t.set(static_cast<int64_t>(i), v[i]);
}

// A tensor argument whose dtype goes through the probe.
#define P(t) (t).data(), p.dt((t).dtype), (t).dims(), (t).rank()

TEST(EnumValuesNoContext, StatusStringBackendAndDtypeSize) {
  for (int32_t v : kBadValues) {
    if (v >= AMPC_OK && v <= AMPC_ERROR_INTERNAL)
      continue;
    EXPECT_STREQ(ampc_status_string(static_cast<ampc_status>(v)),
                 "unknown status");
  }
  checkEntry("ampc_dtype_size", [](Probe &p) {
    size_t n = 0;
    return ampc_dtype_size(p.dt(AMPC_BF16), &n);
  });
  checkEntry("ampc_backend_available", [](Probe &p) {
    int32_t available = 0;
    return ampc_backend_available(p.en(AMPC_BACKEND_CPU), &available);
  });
  // Regression (UBSan: "load of value 5, which is not a valid value for
  // type 'ampc_backend'" in api_core.cpp).
  checkEntry("ampc_context_create", [](Probe &p) {
    ampc_context c = nullptr;
    ampc_status s = ampc_context_create(p.en(AMPC_BACKEND_CPU), 0, &c);
    ampc_context_destroy(c);
    return s;
  });
  // The entries' dtypes (1.8); a refused save writes nothing.
  std::string path = ::testing::TempDir() + "ampc_enum_values.ckpt";
  checkEntry("ampc_checkpoint_save", [&](Probe &p) {
    float w[2] = {1, 2};
    int32_t t = 3;
    ampc_checkpoint_header header = {};
    ampc_checkpoint_entry entries[2] = {{"w", p.dt(AMPC_F32), 8, w},
                                        {"t", p.dt(AMPC_I32), 4, &t}};
    return ampc_checkpoint_save(path.c_str(), &header, entries, 2);
  });
  std::remove(path.c_str());
}

TEST_F(EnumValues, MemoryAndInit) {
  Tensor a({4}, AMPC_F32), b({4}, AMPC_F32);
  checkEntry("ampc_memcpy", [&](Probe &p) {
    return ampc_memcpy(ctx, b.data(), a.data(), 16,
                       p.en(AMPC_MEMCPY_HOST_TO_HOST));
  });
  checkEntry("ampc_memcpy (0 bytes)", [&](Probe &p) {
    return ampc_memcpy(ctx, b.data(), a.data(), 0,
                       p.en(AMPC_MEMCPY_DEVICE_TO_DEVICE));
  });
  checkEntry("ampc_fill", [&](Probe &p) {
    return ampc_fill(ctx, a.data(), p.dt(AMPC_F32), 4, 1.0);
  });
  checkEntry("ampc_init_uniform", [&](Probe &p) {
    return ampc_init_uniform(ctx, a.data(), p.dt(AMPC_F32), 4, 1, 0, 0, 1);
  });
  checkEntry("ampc_init_normal", [&](Probe &p) {
    return ampc_init_normal(ctx, a.data(), p.dt(AMPC_F32), 4, 1, 0, 0, 1);
  });
  Tensor h({4}, AMPC_F16);
  checkEntry("ampc_cast_fwd",
             [&](Probe &p) { return ampc_cast_fwd(ctx, P(h), P(a)); });
  checkEntry("ampc_cast_bwd",
             [&](Probe &p) { return ampc_cast_bwd(ctx, P(a), P(h)); });
}

// The table's elementwise kernels, all of them (attributes get 0.5).
#define ATTR_ARGS_0
#define ATTR_ARGS_1 , 0.5f
#define ATTR_ARGS_2 , 0.5f, 0.5f
#define ATTR_ARGS_3 , 0.5f, 0.5f, 0.5f
#define ATTR_ARGS_4 , 0.5f, 0.5f, 0.5f, 0.5f

TEST_F(EnumValues, UnaryKernels) {
  Tensor x({2, 3}, AMPC_F32), y({2, 3}, AMPC_F16), dy({2, 3}, AMPC_BF16),
      dx({2, 3}, AMPC_F32);
  fill(x, {0.5, 1, 1.5, 2, 2.5, 3});
  int kernels = 0;
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  ++kernels;                                                                   \
  checkEntry("ampc_" #NAME "_fwd", [&](Probe &p) {                             \
    return ampc_##NAME##_fwd(ctx, P(y), P(x) AMPC_PP_CAT(ATTR_ARGS_, N));      \
  });                                                                          \
  checkEntry("ampc_" #NAME "_bwd", [&](Probe &p) {                             \
    return ampc_##NAME##_bwd(ctx, P(dx), P(dy),                                \
                             P(x) AMPC_PP_CAT(ATTR_ARGS_, N));                 \
  });
#include "ampc/runtime_kernels.inc"
  EXPECT_GE(kernels, 10);
  // Regression (UBSan: "load of value 42, which is not a valid value for
  // type 'ampc_dtype'" in api_elementwise.cpp).
  EXPECT_EQ(ampc_relu_fwd(ctx, y.data(), static_cast<ampc_dtype>(42),
                          y.dims(), y.rank(), T(x)),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  checkEntry("ampc_gelu_fwd", [&](Probe &p) {
    return ampc_gelu_fwd(ctx, P(y), P(x), p.en(AMPC_GELU_TANH));
  });
  checkEntry("ampc_gelu_bwd", [&](Probe &p) {
    return ampc_gelu_bwd(ctx, P(dx), P(dy), P(x), p.en(AMPC_GELU_NONE));
  });
}

TEST_F(EnumValues, BinaryKernels) {
  Tensor a({2, 3}, AMPC_F32), b({3}, AMPC_F16), y({2, 3}, AMPC_BF16),
      dy({2, 3}, AMPC_F32), da({2, 3}, AMPC_F16), db({3}, AMPC_F32);
  // The comparisons' result is bool (one byte, 0 or 1).
  Tensor mask({2, 3}, AMPC_BOOL);
  fill(a, {0.5, 1, 1.5, 2, 2.5, 3});
  fill(b, {1, 2, 3});
  auto isComparison = [](const char * name) {
    for (const char *c : {"equal", "not_equal", "less", "less_equal",
                          "greater", "greater_equal"})
      if (std::string(name) == c)
        return true;
    return false;
  };
  int kernels = 0;
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  ++kernels;                                                                   \
  checkEntry("ampc_" #NAME "_fwd", [&](Probe &p) {                             \
    return isComparison(#NAME) ? ampc_##NAME##_fwd(ctx, P(mask), P(a), P(b))   \
                               : ampc_##NAME##_fwd(ctx, P(y), P(a), P(b));     \
  });                                                                          \
  checkEntry("ampc_" #NAME "_bwd", [&](Probe &p) {                             \
    return ampc_##NAME##_bwd(ctx, P(da), P(db), P(dy), P(a), P(b));            \
  });
#include "ampc/runtime_kernels.inc"
  EXPECT_GE(kernels, 7);
}

TEST_F(EnumValues, ReductionSoftmaxPoolKernels) {
  Tensor x({2, 3}, AMPC_F32), y({2}, AMPC_F16), dy({2}, AMPC_F32),
      dx({2, 3}, AMPC_BF16);
  fill(x, {0.5, 1, 1.5, 2, 2.5, 3});
  int64_t dims[1] = {1};
#define AMPC_REDUCTION_KERNEL(NAME, OP)                                        \
  checkEntry("ampc_" #NAME "_fwd", [&](Probe &p) {                             \
    return ampc_##NAME##_fwd(ctx, P(y), P(x), dims, 1, 0);                     \
  });                                                                          \
  checkEntry("ampc_" #NAME "_bwd", [&](Probe &p) {                             \
    return ampc_##NAME##_bwd(ctx, P(dx), P(dy), P(x), P(y), dims, 1, 0);       \
  });
#include "ampc/runtime_kernels.inc"
  Tensor s({2, 3}, AMPC_F16), ds({2, 3}, AMPC_F32);
#define AMPC_SOFTMAX_KERNEL(NAME, LOG)                                         \
  checkEntry("ampc_" #NAME "_fwd", [&](Probe &p) {                             \
    return ampc_##NAME##_fwd(ctx, P(s), P(x), 1);                              \
  });                                                                          \
  checkEntry("ampc_" #NAME "_bwd", [&](Probe &p) {                             \
    return ampc_##NAME##_bwd(ctx, P(dx), P(ds), P(s), 1);                      \
  });
#include "ampc/runtime_kernels.inc"
  Tensor img({1, 1, 4, 4}, AMPC_F32), pooled({1, 1, 2, 2}, AMPC_F16),
      dimg({1, 1, 4, 4}, AMPC_BF16);
#define AMPC_POOL_KERNEL(NAME, IS_MAX)                                         \
  checkEntry("ampc_" #NAME "_fwd", [&](Probe &p) {                             \
    return ampc_##NAME##_fwd(ctx, P(pooled), P(img), 2, 2, 2, 2, 0, 0);        \
  });                                                                          \
  checkEntry("ampc_" #NAME "_bwd", [&](Probe &p) {                             \
    return ampc_##NAME##_bwd(ctx, P(dimg), P(pooled), P(img), 2, 2, 2, 2, 0,   \
                             0);                                               \
  });
#include "ampc/runtime_kernels.inc"
}

TEST_F(EnumValues, LinearAlgebra) {
  Tensor a({2, 3}, AMPC_F16), b({3, 4}, AMPC_BF16), c({2, 4}, AMPC_F32),
      bias({4}, AMPC_F32);
  checkEntry("ampc_gemm", [&](Probe &p) {
    return ampc_gemm(ctx, c.data(), p.dt(AMPC_F32), a.data(), p.dt(AMPC_F16),
                     b.data(), p.dt(AMPC_BF16), bias.data(), p.dt(AMPC_F32), 1,
                     2, 4, 3, 0, 0, 3, 4, 4, 0, 0, 0, 1.0f, 0.0f,
                     p.en(AMPC_EPILOGUE_RELU));
  });
  Tensor da({2, 3}, AMPC_F32), db({3, 4}, AMPC_F32), dc({2, 4}, AMPC_F16);
  checkEntry("ampc_matmul_fwd",
             [&](Probe &p) { return ampc_matmul_fwd(ctx, P(c), P(a), P(b)); });
  checkEntry("ampc_matmul_bwd", [&](Probe &p) {
    return ampc_matmul_bwd(ctx, P(da), P(db), P(dc), P(a), P(b));
  });
  Tensor x({2, 3}, AMPC_F32), w({4, 3}, AMPC_F16), y({2, 4}, AMPC_BF16),
      dx({2, 3}, AMPC_F32), dw({4, 3}, AMPC_F32), dbias({4}, AMPC_F32),
      dy({2, 4}, AMPC_F32);
  checkEntry("ampc_linear_fwd", [&](Probe &p) {
    return ampc_linear_fwd(ctx, P(y), P(x), P(w), P(bias),
                           p.en(AMPC_EPILOGUE_GELU_TANH));
  });
  checkEntry("ampc_linear_bwd", [&](Probe &p) {
    return ampc_linear_bwd(ctx, P(dx), P(dw), P(dbias), P(dy), P(x), P(w));
  });
  Tensor img({1, 2, 4, 4}, AMPC_F32), k({3, 2, 3, 3}, AMPC_F16),
      kb({3}, AMPC_F32), out({1, 3, 2, 2}, AMPC_BF16),
      dimg({1, 2, 4, 4}, AMPC_F32), dk({3, 2, 3, 3}, AMPC_F32),
      dkb({3}, AMPC_F32), dout({1, 3, 2, 2}, AMPC_F32);
  checkEntry("ampc_conv2d_fwd", [&](Probe &p) {
    return ampc_conv2d_fwd(ctx, P(out), P(img), P(k), P(kb), 1, 1, 0, 0, 1, 1,
                           1);
  });
  checkEntry("ampc_conv2d_bwd", [&](Probe &p) {
    return ampc_conv2d_bwd(ctx, P(dimg), P(dk), P(dkb), P(dout), P(img), P(k),
                           1, 1, 0, 0, 1, 1, 1);
  });
}

TEST_F(EnumValues, NormShapeAndLossKernels) {
  Tensor x({2, 3}, AMPC_F32), w({3}, AMPC_F16), b({3}, AMPC_BF16),
      y({2, 3}, AMPC_F16), dx({2, 3}, AMPC_F32), dw({3}, AMPC_F32),
      db({3}, AMPC_F32), dy({2, 3}, AMPC_BF16);
  fill(x, {0.5, 1, 1.5, 2, 2.5, 3});
  checkEntry("ampc_layer_norm_fwd", [&](Probe &p) {
    return ampc_layer_norm_fwd(ctx, P(y), P(x), P(w), P(b), 1e-5);
  });
  checkEntry("ampc_layer_norm_bwd", [&](Probe &p) {
    return ampc_layer_norm_bwd(ctx, P(dx), P(dw), P(db), P(dy), P(x), P(w),
                               1e-5);
  });
  checkEntry("ampc_rms_norm_fwd", [&](Probe &p) {
    return ampc_rms_norm_fwd(ctx, P(y), P(x), P(w), 1e-5);
  });
  checkEntry("ampc_rms_norm_bwd", [&](Probe &p) {
    return ampc_rms_norm_bwd(ctx, P(dx), P(dw), P(dy), P(x), P(w), 1e-5);
  });

  Tensor r({3, 2}, AMPC_F16), t({3, 2}, AMPC_F32);
  checkEntry("ampc_reshape_fwd",
             [&](Probe &p) { return ampc_reshape_fwd(ctx, P(r), P(x)); });
  checkEntry("ampc_reshape_bwd",
             [&](Probe &p) { return ampc_reshape_bwd(ctx, P(dx), P(r)); });
  checkEntry("ampc_transpose_fwd", [&](Probe &p) {
    return ampc_transpose_fwd(ctx, P(t), P(x), nullptr, 0);
  });
  checkEntry("ampc_transpose_bwd", [&](Probe &p) {
    return ampc_transpose_bwd(ctx, P(dx), P(t), nullptr, 0);
  });
  Tensor part({2, 1}, AMPC_F16), sl({2, 2}, AMPC_F16);
  checkEntry("ampc_concat_fwd", [&](Probe &p) {
    const void *xs[2] = {x.data(), part.data()};
    ampc_dtype dts[2] = {p.dt(x.dtype), p.dt(part.dtype)};
    const int64_t *shapes[2] = {x.dims(), part.dims()};
    Tensor cat({2, 4}, AMPC_F32);
    return ampc_concat_fwd(ctx, P(cat), xs, dts, shapes, 2, 1);
  });
  checkEntry("ampc_concat_bwd", [&](Probe &p) {
    Tensor cat({2, 4}, AMPC_F32);
    void *dxs[2] = {dx.data(), part.data()};
    ampc_dtype dts[2] = {p.dt(dx.dtype), p.dt(part.dtype)};
    const int64_t *shapes[2] = {dx.dims(), part.dims()};
    return ampc_concat_bwd(ctx, dxs, dts, shapes, 2, P(cat), 1);
  });
  checkEntry("ampc_slice_fwd", [&](Probe &p) {
    return ampc_slice_fwd(ctx, P(sl), P(x), 1, 0, 2);
  });
  checkEntry("ampc_slice_bwd", [&](Probe &p) {
    return ampc_slice_bwd(ctx, P(dx), P(sl), 1, 0, 2);
  });

  Tensor table({5, 3}, AMPC_F32), ids({2}, AMPC_I32), emb({2, 3}, AMPC_F16),
      dtable({5, 3}, AMPC_F32);
  fill(ids, {1, 4});
  checkEntry("ampc_embedding_fwd", [&](Probe &p) {
    return ampc_embedding_fwd(ctx, P(emb), P(table), P(ids), -1);
  });
  checkEntry("ampc_embedding_bwd", [&](Probe &p) {
    return ampc_embedding_bwd(ctx, P(dtable), P(emb), P(ids));
  });

  Tensor loss(Shape{}, AMPC_F32), dloss(Shape{}, AMPC_F16),
      labels({2}, AMPC_I64), dlogits({2, 3}, AMPC_F32);
  fill(labels, {0, 2});
  fill(dloss, {1});
  checkEntry("ampc_cross_entropy_fwd", [&](Probe &p) {
    return ampc_cross_entropy_fwd(ctx, P(loss), P(x), P(labels), -1);
  });
  checkEntry("ampc_cross_entropy_bwd", [&](Probe &p) {
    return ampc_cross_entropy_bwd(ctx, P(dlogits), P(dloss), P(x), P(labels));
  });
  checkEntry("ampc_mse_loss_fwd", [&](Probe &p) {
    return ampc_mse_loss_fwd(ctx, P(loss), P(x), P(y));
  });
  checkEntry("ampc_mse_loss_bwd", [&](Probe &p) {
    return ampc_mse_loss_bwd(ctx, P(dx), P(dy), P(dloss), P(x), P(y));
  });
}

TEST_F(EnumValues, LossScalingAndOptimizers) {
  Tensor g0({4}, AMPC_F32), g1({3}, AMPC_F16), p0({4}, AMPC_F32),
      p1({3}, AMPC_BF16), m0({4}, AMPC_F32), m1({3}, AMPC_F32),
      v0({4}, AMPC_F32), v1({3}, AMPC_F32);
  float flag = 0, scale = 1024, norm = 0;
  int32_t tracker = 0, hysteresis = 1, step = 0;
  int64_t numels[2] = {4, 3};
  void *grads[2] = {g0.data(), g1.data()};
  void *params[2] = {p0.data(), p1.data()};
  void *moms[2] = {m0.data(), m1.data()};
  void *sqs[2] = {v0.data(), v1.data()};
  checkEntry("ampc_check_finite_unscale", [&](Probe &p) {
    ampc_dtype dts[2] = {p.dt(AMPC_F32), p.dt(AMPC_F16)};
    return ampc_check_finite_unscale(ctx, &flag, p.dt(AMPC_F32), grads, dts,
                                     numels, 2, &scale);
  });
  checkEntry("ampc_update_scale", [&](Probe &p) {
    return ampc_update_scale(ctx, &scale, &tracker, &hysteresis, &flag,
                             p.dt(AMPC_F32), 2, 0.5, 2000, 1, 0, 0);
  });
  checkEntry("ampc_clip_grad_norm", [&](Probe &p) {
    ampc_dtype dts[2] = {p.dt(AMPC_F32), p.dt(AMPC_F16)};
    return ampc_clip_grad_norm(ctx, &norm, grads, dts, numels, 2, 1.0, &flag,
                               p.dt(AMPC_F32));
  });
  checkEntry("ampc_sgd_update", [&](Probe &p) {
    ampc_dtype pdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_BF16)};
    ampc_dtype gdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_F16)};
    return ampc_sgd_update(ctx, params, pdts, grads, gdts, moms, numels, 2,
                           0.1, 0.9, 0.0, 0, 0.0, &flag, p.dt(AMPC_F32), nullptr);
  });
  checkEntry("ampc_adamw_update", [&](Probe &p) {
    ampc_dtype pdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_BF16)};
    ampc_dtype gdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_F16)};
    return ampc_adamw_update(ctx, params, pdts, grads, gdts, moms, sqs, &step,
                             numels, 2, 1e-3, 0.9, 0.999, 1e-8, 0.01, 0.0,
                             &flag, p.dt(AMPC_F32), nullptr);
  });
  checkEntry("ampc_lr_schedule", [&](Probe &p) {
    float factor = 0.0f;
    int32_t count = 0;
    return ampc_lr_schedule(ctx, &factor, &count, p.en(AMPC_LR_COSINE), 0.1,
                            2, 10, 0.0, 0, 0.0, &flag, p.dt(AMPC_F32));
  });
  // Opt level O2: the same updates writing a low model copy of param 0.
  Tensor model0({4}, AMPC_F16);
  void *models[1] = {model0.data()};
  int64_t modelParams[1] = {0};
  checkEntry("ampc_sgd_update_model", [&](Probe &p) {
    ampc_dtype pdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_BF16)};
    ampc_dtype gdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_F16)};
    ampc_dtype mdts[1] = {p.dt(AMPC_F16)};
    return ampc_sgd_update_model(ctx, params, pdts, grads, gdts, moms, numels,
                                 2, 0.1, 0.9, 0.0, 0, 0.0, &flag,
                                 p.dt(AMPC_F32), nullptr, models, mdts,
                                 modelParams, 1);
  });
  checkEntry("ampc_adamw_update_model", [&](Probe &p) {
    ampc_dtype pdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_BF16)};
    ampc_dtype gdts[2] = {p.dt(AMPC_F32), p.dt(AMPC_F16)};
    ampc_dtype mdts[1] = {p.dt(AMPC_F16)};
    return ampc_adamw_update_model(ctx, params, pdts, grads, gdts, moms, sqs,
                                   &step, numels, 2, 1e-3, 0.9, 0.999, 1e-8,
                                   0.01, 0.0, &flag, p.dt(AMPC_F32), nullptr, models,
                                   mdts, modelParams, 1);
  });
}

} // namespace
