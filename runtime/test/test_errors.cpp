//===- test_errors.cpp - Error paths of the C API
//---------------------------===//
#include "test_util.h"

#include <cstdint>
#include <string>
#include <thread>

using namespace ampc_test;

namespace {

class Errors : public CpuTest {};

TEST(Version, MatchesHeader) {
  EXPECT_EQ(ampc_runtime_version(),
            static_cast<uint32_t>(AMPC_RUNTIME_VERSION));
  EXPECT_STREQ(ampc_status_string(AMPC_OK), "ok");
  EXPECT_STREQ(ampc_status_string(AMPC_ERROR_NO_DEVICE), "no device");
  EXPECT_STREQ(ampc_status_string(static_cast<ampc_status>(99)),
               "unknown status");
}

// 1.4: code outside the runtime (the code --emit=cpp writes) sets the text.
TEST(LastError, SetFromOutside) {
  EXPECT_EQ(ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT,
                                "mlp_load: checkpoint 'a' is truncated"),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ampc_last_error(), "mlp_load: checkpoint 'a' is truncated");
  // '%' is text, not a format.
  EXPECT_EQ(ampc_set_last_error(AMPC_OK, "100% %s %n"), AMPC_OK);
  EXPECT_STREQ(ampc_last_error(), "100% %s %n");
  EXPECT_EQ(ampc_set_last_error(AMPC_ERROR_INTERNAL, nullptr),
            AMPC_ERROR_INTERNAL);
  EXPECT_STREQ(ampc_last_error(), "");
  // Any status passes through; a long message is cut at 1023 bytes.
  EXPECT_EQ(ampc_set_last_error(static_cast<ampc_status>(1234), "x"),
            static_cast<ampc_status>(1234));
  std::string longText(5000, 'y');
  ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, longText.c_str());
  EXPECT_EQ(std::string(ampc_last_error()), longText.substr(0, 1023));
  // Thread-local: another thread's text is its own.
  ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, "main thread");
  std::string other;
  std::thread t([&] {
    ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, "other thread");
    other = ampc_last_error();
  });
  t.join();
  EXPECT_EQ(other, "other thread");
  EXPECT_STREQ(ampc_last_error(), "main thread");
  // The text itself, or a part of it, as the message.
  ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, "mlp_load: checkpoint");
  ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, ampc_last_error() + 10);
  EXPECT_STREQ(ampc_last_error(), "checkpoint");
  ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, ampc_last_error());
  EXPECT_STREQ(ampc_last_error(), "checkpoint");
  // The runtime's own failures replace it.
  EXPECT_EQ(ampc_synchronize(nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_STRNE(ampc_last_error(), "main thread");
}

TEST(Context, CudaWithoutGpuIsACleanError) {
  int32_t available = -1;
  ASSERT_OK(ampc_backend_available(AMPC_BACKEND_CUDA, &available));
  if (available)
    GTEST_SKIP() << "a CUDA device is present";
  ampc_context ctx = reinterpret_cast<ampc_context>(0x1);
  ampc_status s = ampc_context_create(AMPC_BACKEND_CUDA, 0, &ctx);
  EXPECT_TRUE(s == AMPC_ERROR_NO_DEVICE || s == AMPC_ERROR_BACKEND_UNAVAILABLE)
      << ampc_status_string(s);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(ampc_last_error()).find("cuda"), std::string::npos)
      << ampc_last_error();
}

TEST(Context, BadArguments) {
  EXPECT_EQ(ampc_context_create(AMPC_BACKEND_CPU, 0, nullptr),
            AMPC_ERROR_NULL_POINTER);
  ampc_context ctx;
  EXPECT_EQ(ampc_context_create(static_cast<ampc_backend>(5), 0, &ctx),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(ampc_context_destroy(nullptr));
  EXPECT_EQ(ampc_synchronize(nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_NE(std::string(ampc_last_error()), "");
  size_t bytes;
  EXPECT_EQ(ampc_dtype_size(static_cast<ampc_dtype>(42), &bytes),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
}

// A size the 256-byte rounding would wrap to 0 is out of memory, not a
// pointer to a few bytes (the CPU backend returned AMPC_OK for these).
TEST_F(Errors, AllocationSizesThatWrap) {
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 255,
                       static_cast<size_t>(PTRDIFF_MAX)}) {
    void *p = reinterpret_cast<void *>(0x1);
    EXPECT_EQ(ampc_malloc(ctx, bytes, &p), AMPC_ERROR_OUT_OF_MEMORY) << bytes;
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(ampc_last_error()).find("cannot allocate"),
              std::string::npos)
        << ampc_last_error();
    ampc_arena arena = reinterpret_cast<ampc_arena>(0x1);
    EXPECT_EQ(ampc_arena_create(ctx, bytes, &arena), AMPC_ERROR_OUT_OF_MEMORY)
        << bytes;
    EXPECT_EQ(arena, nullptr);
  }
}

TEST_F(Errors, NullPointers) {
  Tensor x({4}, AMPC_F32), y({4}, AMPC_F32);
  EXPECT_EQ(ampc_relu_fwd(nullptr, T(y), T(x)), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_relu_fwd(ctx, nullptr, AMPC_F32, y.dims(), 1, T(x)),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_NE(std::string(ampc_last_error()).find("ampc_relu_fwd"),
            std::string::npos);
  EXPECT_EQ(ampc_relu_fwd(ctx, y.data(), AMPC_F32, nullptr, 1, T(x)),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_malloc(ctx, 8, nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_memcpy(ctx, nullptr, x.data(), 4, AMPC_MEMCPY_HOST_TO_DEVICE),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_arena_base(nullptr, nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_check_finite_unscale(ctx, nullptr, AMPC_F32, nullptr, nullptr,
                                      nullptr, 0, nullptr),
            AMPC_ERROR_NULL_POINTER);
  float flag = 0;
  int64_t n[1] = {4};
  EXPECT_EQ(ampc_sgd_update(ctx, nullptr, nullptr, nullptr, nullptr, nullptr, n,
                            1, 0.1, 0, 0, 0, 0, &flag, AMPC_F32, nullptr),
            AMPC_ERROR_NULL_POINTER);
}

// A shape whose element count (in bytes) does not fit in int64_t: the
// product of its dims wrapped to 0 or a small number and the call succeeded
// (relu of [2^62, 4] returned AMPC_OK having done nothing).
TEST_F(Errors, ShapesTooLargeToAddress) {
  float buf[8] = {};
  const int64_t wraps[2] = {int64_t(1) << 62, 4};      // 2^64 elements
  const int64_t bytesWrap[1] = {int64_t(1) << 62};     // 2^64 bytes of f32
  const int64_t huge[2] = {INT64_MAX, 2};
  for (const int64_t *dims : {wraps, huge}) {
    EXPECT_EQ(ampc_relu_fwd(ctx, buf, AMPC_F32, dims, 2, buf, AMPC_F32, dims, 2),
              AMPC_ERROR_SHAPE_MISMATCH);
    EXPECT_NE(std::string(ampc_last_error()).find("more than 2^63 bytes"),
              std::string::npos)
        << ampc_last_error();
  }
  EXPECT_EQ(ampc_relu_fwd(ctx, buf, AMPC_F32, bytesWrap, 1, buf, AMPC_F32,
                          bytesWrap, 1),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(ampc_last_error(), "ampc_relu_fwd: tensor 'y' of shape "
                                  "[4611686018427387904] has more than 2^63 "
                                  "bytes");
  // An empty tensor with a huge dim elsewhere is still empty.
  const int64_t empty[3] = {0, INT64_MAX, 4};
  EXPECT_OK(ampc_relu_fwd(ctx, buf, AMPC_F32, empty, 3, buf, AMPC_F32, empty,
                          3));
  // Entry points that take an element count: numel * element size wrapped
  // (ampc_fill and ampc_check_nonfinite of INT64_MAX f32 returned AMPC_OK).
  const int64_t tooMany = INT64_MAX / 4 + 1;
  EXPECT_EQ(ampc_fill(ctx, buf, AMPC_F32, tooMany, 0.0),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("more than 2^63 bytes"),
            std::string::npos)
      << ampc_last_error();
  EXPECT_EQ(ampc_init_uniform(ctx, buf, AMPC_F16, INT64_MAX, 1, 0, 0.0, 1.0),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_EQ(ampc_check_nonfinite(ctx, buf, AMPC_F32, INT64_MAX, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("more than 2^63 bytes"),
            std::string::npos)
      << ampc_last_error();
  float found = 0.0f, scale = 1.0f;
  void *grads[1] = {buf};
  ampc_dtype dtypes[1] = {AMPC_F32};
  int64_t numels[1] = {tooMany};
  EXPECT_EQ(ampc_check_finite_unscale(ctx, &found, AMPC_F32, grads, dtypes,
                                      numels, 1, &scale),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("more than 2^63 bytes"),
            std::string::npos)
      << ampc_last_error();
  int32_t micro = 0;
  EXPECT_EQ(ampc_grad_accumulate(ctx, grads, grads, dtypes, numels, 1, &micro,
                                 2),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("more than 2^63 bytes"),
            std::string::npos)
      << ampc_last_error();
}

TEST_F(Errors, ShapeMismatches) {
  Tensor a({2, 3}, AMPC_F32), b({4}, AMPC_F32), y({2, 3}, AMPC_F32);
  EXPECT_EQ(ampc_add_fwd(ctx, T(y), T(a), T(b)), AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("do not broadcast"),
            std::string::npos)
      << ampc_last_error();
  Tensor w({5, 4}, AMPC_F32), out({2, 5}, AMPC_F32);
  EXPECT_EQ(ampc_matmul_fwd(ctx, T(out), T(a), T(w)),
            AMPC_ERROR_SHAPE_MISMATCH);
  Tensor wrong({3, 2}, AMPC_F32);
  EXPECT_EQ(ampc_relu_fwd(ctx, T(wrong), T(a)), AMPC_ERROR_SHAPE_MISMATCH);
  Tensor s(Shape{}, AMPC_F32);
  EXPECT_EQ(ampc_sum_fwd(ctx, T(s), T(a), nullptr, 0, 1),
            AMPC_ERROR_SHAPE_MISMATCH); // keepdim wants [1, 1]
  int64_t dims[2] = {0, 0};
  EXPECT_EQ(ampc_sum_fwd(ctx, T(s), T(a), dims, 2, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_softmax_fwd(ctx, T(y), T(a), 2), AMPC_ERROR_INVALID_ARGUMENT);
  Tensor x4({1, 2, 5, 5}, AMPC_F32), w4({4, 3, 3, 3}, AMPC_F32),
      y4({1, 4, 3, 3}, AMPC_F32);
  EXPECT_EQ(ampc_conv2d_fwd(ctx, T(y4), T(x4), T(w4), nullptr, AMPC_F32,
                            nullptr, 0, 1, 1, 0, 0, 1, 1, 1),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_EQ(ampc_gemm(ctx, y.data(), AMPC_F32, a.data(), AMPC_F32, a.data(),
                      AMPC_F32, nullptr, AMPC_F32, 1, 2, 3, 3, 0, 0, 2, 3, 3, 0,
                      0, 0, 1, 0, AMPC_EPILOGUE_NONE),
            AMPC_ERROR_INVALID_ARGUMENT); // lda 2 < k 3
}

TEST_F(Errors, DtypeErrors) {
  Tensor a({4}, AMPC_F32), y({4}, AMPC_F32), ids({4}, AMPC_I32);
  EXPECT_EQ(ampc_relu_fwd(ctx, y.data(), static_cast<ampc_dtype>(42), y.dims(),
                          1, T(a)),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_NE(std::string(ampc_last_error()).find("unknown dtype"),
            std::string::npos);
  EXPECT_EQ(ampc_exp_fwd(ctx, T(y), T(ids)), AMPC_ERROR_UNSUPPORTED_DTYPE);
  Tensor table({3, 2}, AMPC_F32), emb({4, 2}, AMPC_F32);
  EXPECT_EQ(ampc_embedding_fwd(ctx, T(emb), T(table), T(a), -1),
            AMPC_ERROR_UNSUPPORTED_DTYPE); // float ids
  EXPECT_EQ(ampc_reshape_fwd(ctx, T(ids), T(a)),
            AMPC_ERROR_UNSUPPORTED_DTYPE); // shape ops do not cast to ints
  float scale = 1, tracker = 0;
  int32_t g = 0, h = 1;
  Tensor flag(Shape{}, AMPC_F16);
  EXPECT_EQ(ampc_update_scale(ctx, &scale, &g, &h, flag.data(), AMPC_F16, 2,
                              0.5, 10, 1, 0, 0),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  (void)tracker;
  Tensor bad({2}, AMPC_F32);
  EXPECT_EQ(ampc_relu_fwd(ctx, bad.data(), AMPC_F32, bad.dims(), 9, T(a)),
            AMPC_ERROR_INVALID_ARGUMENT); // rank > AMPC_MAX_RANK
  EXPECT_EQ(
      ampc_gelu_fwd(ctx, T(y), T(a), static_cast<ampc_gelu_approximate>(7)),
      AMPC_ERROR_INVALID_ARGUMENT);
}

} // namespace
