//===- test_checks.cpp - the context's check words --------------------------===//
//
// Kernels record the site they were given in a check word (smallest wins);
// ampc_check_read reads and clears it. CPU backend; test_cuda.cpp's CUDA
// comparisons pass -1 (no site).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

using namespace ampc_test;

namespace {
class Checks : public CpuTest {
protected:
  int32_t read(ampc_check check, int32_t clear = 1) {
    int32_t site = -2;
    EXPECT_OK(ampc_check_read(ctx, check, clear, &site));
    return site;
  }
};

TEST_F(Checks, FreshContextHasNoSite) {
  EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);
  EXPECT_EQ(read(AMPC_CHECK_NONFINITE), -1);
}

TEST_F(Checks, CrossEntropyLabelsOutOfRange) {
  Tensor logits = randomTensor({3, 4}, AMPC_F32);
  Tensor labels({3}, AMPC_I32), loss(Shape{}, AMPC_F32);
  for (int64_t bad : {4, -1, 100}) {
    labels.set(0, 1);
    labels.set(1, bad);
    labels.set(2, 2);
    EXPECT_OK(ampc_cross_entropy_fwd(ctx, T(loss), T(logits), T(labels), 7));
    EXPECT_TRUE(std::isnan(loss.get(0)));
    EXPECT_EQ(read(AMPC_CHECK_INDEX), 7) << "label " << bad;
    EXPECT_EQ(read(AMPC_CHECK_INDEX), -1) << "cleared";
  }
  // -100 is ignored; labels in range record nothing; site -1 checks nothing.
  labels.set(1, -100);
  EXPECT_OK(ampc_cross_entropy_fwd(ctx, T(loss), T(logits), T(labels), 7));
  EXPECT_TRUE(std::isfinite(loss.get(0)));
  EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);
  labels.set(1, 9);
  EXPECT_OK(ampc_cross_entropy_fwd(ctx, T(loss), T(logits), T(labels), -1));
  EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);
}

TEST_F(Checks, SmallestSiteWinsUntilCleared) {
  Tensor table = randomTensor({5, 2}, AMPC_F32);
  Tensor ids({2}, AMPC_I64), y({2, 2}, AMPC_F32);
  ids.set(0, 5);
  ids.set(1, 0);
  EXPECT_OK(ampc_embedding_fwd(ctx, T(y), T(table), T(ids), 9));
  EXPECT_EQ(y.get(0), 0.0); // out-of-range ids give zeros
  EXPECT_EQ(read(AMPC_CHECK_INDEX, 0), 9);
  EXPECT_OK(ampc_embedding_fwd(ctx, T(y), T(table), T(ids), 3));
  EXPECT_OK(ampc_embedding_fwd(ctx, T(y), T(table), T(ids), 12));
  EXPECT_EQ(read(AMPC_CHECK_INDEX, 0), 3) << "not cleared: the minimum";
  EXPECT_EQ(read(AMPC_CHECK_INDEX, 1), 3);
  EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);
  // The words are separate.
  EXPECT_EQ(read(AMPC_CHECK_NONFINITE), -1);
}

TEST_F(Checks, NonfiniteEveryFloatDtype) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    Tensor x({6}, dt);
    for (int64_t i = 0; i < 6; ++i)
      x.set(i, 1000.0 * i);
    EXPECT_OK(ampc_check_nonfinite(ctx, x.data(), dt, 6, 4));
    EXPECT_EQ(read(AMPC_CHECK_NONFINITE), -1);
    for (double bad : {INFINITY, -INFINITY, NAN}) {
      x.set(5, bad);
      EXPECT_OK(ampc_check_nonfinite(ctx, x.data(), dt, 6, 4));
      EXPECT_OK(ampc_check_nonfinite(ctx, x.data(), dt, 5, 2)); // not x[5]
      EXPECT_EQ(read(AMPC_CHECK_NONFINITE), 4);
      x.set(5, 0.0);
    }
    EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);
  }
}

TEST_F(Checks, BadArguments) {
  int32_t site;
  EXPECT_EQ(ampc_check_read(ctx, static_cast<ampc_check>(2), 0, &site),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_check_read(ctx, AMPC_CHECK_INDEX, 0, nullptr),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_check_read(nullptr, AMPC_CHECK_INDEX, 0, &site),
            AMPC_ERROR_NULL_POINTER);
  float x = 1;
  EXPECT_EQ(ampc_check_nonfinite(ctx, &x, AMPC_F32, 1, -1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_check_nonfinite(ctx, &x, AMPC_I32, 1, 0),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_EQ(ampc_check_nonfinite(ctx, nullptr, AMPC_F32, 1, 0),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_OK(ampc_check_nonfinite(ctx, nullptr, AMPC_F32, 0, 0));
}
} // namespace

namespace {
/// The same words on the CUDA backend (skipped without a GPU).
class CudaChecks : public ::testing::Test {
protected:
  void SetUp() override {
    int32_t available = 0;
    ampc_backend_available(AMPC_BACKEND_CUDA, &available);
    if (!available)
      GTEST_SKIP() << "no usable CUDA device (or the runtime was built "
                      "without CUDA): CUDA check words not tested";
    ASSERT_OK(ampc_context_create(AMPC_BACKEND_CUDA, 0, &ctx));
  }
  void TearDown() override {
    for (void *p : owned)
      ampc_free(ctx, p);
    ampc_context_destroy(ctx);
  }
  void *upload(Tensor &t) {
    void *p = nullptr;
    EXPECT_OK(ampc_malloc(ctx, t.bytes.size(), &p));
    EXPECT_OK(ampc_memcpy(ctx, p, t.data(), t.bytes.size(),
                          AMPC_MEMCPY_HOST_TO_DEVICE));
    owned.push_back(p);
    return p;
  }
  int32_t read(ampc_check check) {
    int32_t site = -2;
    EXPECT_OK(ampc_check_read(ctx, check, 1, &site));
    return site;
  }
  ampc_context ctx = nullptr;
  std::vector<void *> owned;
};

#define D(t, p) (p), (t).dtype, (t).dims(), (t).rank()

TEST_F(CudaChecks, LabelsIdsAndNonfinite) {
  EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);
  Tensor logits = randomTensor({70, 5}, AMPC_F16);
  Tensor labels({70}, AMPC_I32), loss(Shape{}, AMPC_F32);
  for (int64_t i = 0; i < 70; ++i)
    labels.set(i, i % 5);
  labels.set(69, 5);
  void *dl = upload(logits), *dlab = upload(labels), *dloss = upload(loss);
  EXPECT_OK(ampc_cross_entropy_fwd(ctx, D(loss, dloss), D(logits, dl),
                                   D(labels, dlab), 11));
  EXPECT_OK(ampc_cross_entropy_fwd(ctx, D(loss, dloss), D(logits, dl),
                                   D(labels, dlab), 6));
  EXPECT_EQ(read(AMPC_CHECK_INDEX), 6);
  EXPECT_EQ(read(AMPC_CHECK_INDEX), -1);

  Tensor table = randomTensor({4, 3}, AMPC_F32), ids({8}, AMPC_I64),
         y({8, 3}, AMPC_F32);
  for (int64_t i = 0; i < 8; ++i)
    ids.set(i, i == 3 ? -7 : i % 4);
  void *dt = upload(table), *di = upload(ids), *dy = upload(y);
  EXPECT_OK(ampc_embedding_fwd(ctx, D(y, dy), D(table, dt), D(ids, di), 2));
  EXPECT_EQ(read(AMPC_CHECK_INDEX), 2);

  Tensor x = randomTensor({100000}, AMPC_BF16);
  void *dx = upload(x);
  EXPECT_OK(ampc_check_nonfinite(ctx, dx, AMPC_BF16, 100000, 1));
  EXPECT_EQ(read(AMPC_CHECK_NONFINITE), -1);
  x.set(99999, NAN);
  void *dx2 = upload(x);
  EXPECT_OK(ampc_check_nonfinite(ctx, dx2, AMPC_BF16, 100000, 5));
  EXPECT_OK(ampc_check_nonfinite(ctx, dx2, AMPC_BF16, 100000, 8));
  EXPECT_EQ(read(AMPC_CHECK_NONFINITE), 5);
}
} // namespace
