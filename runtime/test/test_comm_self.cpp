//===- test_comm_self.cpp - The one-rank communicator -----------*- C++ -*-===//
//
// ampc_comm_create_self needs no MPI: rank 0 of 1, every collective is
// local. On the CPU backend an all-reduce over one rank gives back its
// input bit for bit for every dtype and op (the 16-bit widening and single
// rounding, and the mean's division by 1, are exact), which checks the
// conversion path of the collectives without a second process.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

TEST(CommSelf, RankSizeAndLocalRank) {
  ampc_comm comm = nullptr;
  ASSERT_OK(ampc_comm_create_self(&comm));
  int32_t rank = -1, size = -1, local = -1;
  ASSERT_OK(ampc_comm_rank(comm, &rank));
  ASSERT_OK(ampc_comm_size(comm, &size));
  ASSERT_OK(ampc_comm_local_rank(comm, &local));
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(local, 0);
  EXPECT_OK(ampc_comm_barrier(comm));
  EXPECT_OK(ampc_comm_destroy(comm));
  EXPECT_EQ(ampc_comm_create_self(nullptr), AMPC_ERROR_NULL_POINTER);
}

TEST(CommSelf, CpuAllReduceIsTheIdentityOnOneRank) {
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  ampc_comm comm = nullptr;
  ASSERT_OK(ampc_comm_create_self(&comm));
  const int64_t n = 4097;
  uint64_t s = 12345;
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16, AMPC_I32})
    for (ampc_reduce_op op :
         {AMPC_REDUCE_SUM, AMPC_REDUCE_MEAN, AMPC_REDUCE_MAX}) {
      size_t es = dt == AMPC_F16 || dt == AMPC_BF16 ? 2 : 4;
      std::vector<unsigned char> data(n * es);
      for (int64_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t bits = uint32_t(s >> 20);
        // Finite values only (a NaN's payload may change in f32).
        if (dt == AMPC_F32 && ((bits >> 23) & 0xFF) == 0xFF)
          bits &= 0xBFFFFFFF;
        if (dt == AMPC_F16 && ((bits >> 10) & 0x1F) == 0x1F)
          bits &= 0xBFFF;
        if (dt == AMPC_BF16 && ((bits >> 7) & 0xFF) == 0xFF)
          bits &= 0xBFFF;
        std::memcpy(&data[i * es], &bits, es);
      }
      std::vector<unsigned char> got = data;
      ampc_request req = nullptr;
      ASSERT_OK(
          ampc_comm_allreduce_async(comm, ctx, got.data(), dt, n, op, &req));
      ASSERT_OK(ampc_comm_wait(req));
      EXPECT_EQ(std::memcmp(got.data(), data.data(), data.size()), 0)
          << "dtype " << int(dt) << " op " << int(op);
    }
  std::vector<int32_t> b(16, 5);
  EXPECT_OK(ampc_comm_broadcast(comm, ctx, b.data(), 64, 0));
  EXPECT_EQ(b[15], 5);
  EXPECT_EQ(ampc_comm_broadcast(comm, ctx, b.data(), 64, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(ampc_comm_destroy(comm));
  ampc_context_destroy(ctx);
}

// On one rank a gradient bucket skips the collective (the values are the
// sum and the mean), unless AMPC_GRAD_BUCKETS_ONE_RANK=1 asks for the whole
// path, as the one-GPU checks do: then the bucket is staged, all-reduced and
// copied back (a wait is counted), and the gradients come back unchanged.
TEST(CommSelf, OneRankBucketsTakeTheWholePathWhenAsked) {
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  ampc_comm comm = nullptr;
  ASSERT_OK(ampc_comm_create_self(&comm));
  ASSERT_OK(ampc_context_set_comm(ctx, comm));
  std::vector<float> g0 = {1.5f, -2.25f, 3.0f};
  std::vector<uint16_t> g1 = {0x3C00, 0xC000}; // f16 1, -2
  const std::vector<float> want0 = g0;
  const std::vector<uint16_t> want1 = g1;
  void *grads[] = {g0.data(), g1.data()};
  ampc_dtype dtypes[] = {AMPC_F32, AMPC_F16};
  int64_t numels[] = {3, 2};
  auto step = [&] {
    EXPECT_OK(ampc_grad_allreduce_start(ctx, grads, dtypes, numels, 2, 0, 1, 1));
    EXPECT_OK(ampc_grad_allreduce_wait(ctx, grads, dtypes, numels, 2, 0));
  };
  auto waits = [&] {
    int64_t n = -1;
    EXPECT_OK(ampc_grad_allreduce_stats(ctx, &n, nullptr, nullptr, nullptr,
                                        nullptr));
    return n;
  };
  unsetenv("AMPC_GRAD_BUCKETS_ONE_RANK");
  step();
  EXPECT_EQ(waits(), 0);
  setenv("AMPC_GRAD_BUCKETS_ONE_RANK", "1", 1);
  step();
  step();
  // A second start before the wait is refused: the bucket is in flight.
  EXPECT_OK(ampc_grad_allreduce_start(ctx, grads, dtypes, numels, 2, 0, 1, 1));
  EXPECT_EQ(ampc_grad_allreduce_start(ctx, grads, dtypes, numels, 2, 0, 1, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(ampc_grad_allreduce_wait(ctx, grads, dtypes, numels, 2, 0));
  unsetenv("AMPC_GRAD_BUCKETS_ONE_RANK");
  EXPECT_EQ(waits(), 3);
  EXPECT_EQ(g0, want0);
  EXPECT_EQ(g1, want1);
  ASSERT_OK(ampc_context_set_comm(ctx, nullptr));
  EXPECT_OK(ampc_comm_destroy(comm));
  ampc_context_destroy(ctx);
}

// Without a GPU the device query fails cleanly (the NCCL module's CUDA
// runtime finds no device); with one, a single rank uses device 0.
TEST(CommSelf, CudaDeviceOfTheRank) {
  ampc_comm comm = nullptr;
  ASSERT_OK(ampc_comm_create_self(&comm));
  int32_t available = 0, device = -1;
  ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  ampc_status st = ampc_comm_cuda_device(comm, &device);
  if (available) {
    EXPECT_OK(st);
    EXPECT_EQ(device, 0);
  } else {
    EXPECT_EQ(st, AMPC_ERROR_BACKEND_UNAVAILABLE);
    std::string why = ampc_last_error();
    EXPECT_NE(why.find("ampc_comm_cuda_device"), std::string::npos) << why;
  }
  EXPECT_OK(ampc_comm_destroy(comm));
}

} // namespace

namespace {

std::string lastError() { return ampc_last_error(); }

// Each bad argument of a collective is named in ampc_last_error() (the texts
// were "ampc_comm_rank: null", "...: null argument", and a negative byte
// count of a broadcast was reported as "root 0 of 1").
TEST(CommSelf, ErrorsNameTheArgument) {
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  ampc_comm comm = nullptr;
  ASSERT_OK(ampc_comm_create_self(&comm));
  int32_t v = 0;
  float buf[4] = {1, 2, 3, 4};
  ampc_request req = nullptr;
  EXPECT_EQ(ampc_comm_create_self(nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_create_self: comm is NULL");
  EXPECT_EQ(ampc_comm_rank(nullptr, &v), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_rank: comm is NULL");
  EXPECT_EQ(ampc_comm_rank(comm, nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_rank: rank is NULL");
  EXPECT_EQ(ampc_comm_size(comm, nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_size: size is NULL");
  EXPECT_EQ(ampc_comm_local_rank(comm, nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_local_rank: local_rank is NULL");
  EXPECT_EQ(ampc_comm_barrier(nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_barrier: comm is NULL");
  EXPECT_EQ(ampc_comm_allreduce_async(comm, ctx, nullptr, AMPC_F32, 4,
                                      AMPC_REDUCE_SUM, &req),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_allreduce_async: buf is NULL");
  EXPECT_EQ(ampc_comm_allreduce_async(comm, ctx, buf, AMPC_F32, 4,
                                      AMPC_REDUCE_SUM, nullptr),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_allreduce_async: request is NULL");
  EXPECT_EQ(ampc_comm_allreduce_async(comm, nullptr, buf, AMPC_F32, 4,
                                      AMPC_REDUCE_SUM, &req),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_allreduce_async: context is NULL");
  EXPECT_EQ(ampc_comm_allreduce_async(comm, ctx, buf, AMPC_F32, -4,
                                      AMPC_REDUCE_SUM, &req),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "ampc_comm_allreduce_async: count -4 is negative");
  int32_t done = 0;
  EXPECT_EQ(ampc_comm_test(nullptr, &done), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_test: request is NULL");
  EXPECT_EQ(ampc_comm_wait(nullptr), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_wait: request is NULL");
  EXPECT_EQ(ampc_comm_broadcast(comm, ctx, buf, -4, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "ampc_comm_broadcast: bytes -4 is negative");
  EXPECT_EQ(ampc_comm_broadcast(comm, ctx, buf, 16, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "ampc_comm_broadcast: root 1 is not a rank of the "
                         "communicator (0 to 0)");
  EXPECT_EQ(ampc_comm_broadcast(nullptr, ctx, buf, 16, 0),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_broadcast: comm is NULL");
  ampc_comm got = nullptr;
  EXPECT_EQ(ampc_context_get_comm(nullptr, &got), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_context_get_comm: ctx is NULL");
  EXPECT_EQ(ampc_comm_abort(nullptr, 3), AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(lastError(), "ampc_comm_abort: comm is NULL");
  EXPECT_OK(ampc_comm_destroy(comm));
  EXPECT_OK(ampc_context_destroy(ctx));
}

} // namespace
