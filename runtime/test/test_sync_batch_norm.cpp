//===- test_sync_batch_norm.cpp - batch norm over ranks, one rank ---------===//
//
// ampc_sync_batch_norm_fwd/_bwd/_update on a context with no communicator
// attached are the one-rank entry points bit for bit (training and not).
// Their results over several ranks are tested end to end under mpirun
// (test/Distributed/sync-batchnorm.test).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cstring>

using namespace ampc_test;

namespace {

using SyncBatchNormTest = CpuTest;

bool sameBits(Tensor &a, Tensor &b) {
  return a.bytes.size() == b.bytes.size() &&
         std::memcmp(a.data(), b.data(), a.bytes.size()) == 0;
}

TEST_F(SyncBatchNormTest, WithoutACommunicatorIsTheOneRankKernel) {
  ampc_comm comm = reinterpret_cast<ampc_comm>(0x1);
  ASSERT_OK(ampc_context_get_comm(ctx, &comm));
  ASSERT_EQ(comm, nullptr);
  const int64_t n = 4, c = 3, l = 5;
  Tensor x = randomTensor({n, c, l}, AMPC_F32, -2, 3);
  Tensor dy = randomTensor({n, c, l}, AMPC_F32);
  Tensor w = randomTensor({c}, AMPC_F32, 0.5, 1.5);
  Tensor b = randomTensor({c}, AMPC_F32);
  Tensor rm = randomTensor({c}, AMPC_F32);
  Tensor rv = randomTensor({c}, AMPC_F32, 0.5, 2);
  for (int training : {1, 0}) {
    Tensor y1({n, c, l}, AMPC_F32), y2({n, c, l}, AMPC_F32);
    ASSERT_OK(ampc_batch_norm_fwd(ctx, T(y1), T(x), T(w), T(b), T(rm), T(rv),
                                  training, 1e-5));
    ASSERT_OK(ampc_sync_batch_norm_fwd(ctx, T(y2), T(x), T(w), T(b), T(rm),
                                       T(rv), training, 1e-5));
    EXPECT_TRUE(sameBits(y1, y2)) << "training " << training;
    Tensor dx1({n, c, l}, AMPC_F32), dx2({n, c, l}, AMPC_F32);
    Tensor dw1({c}, AMPC_F32), dw2({c}, AMPC_F32), db1({c}, AMPC_F32),
        db2({c}, AMPC_F32);
    ASSERT_OK(ampc_batch_norm_bwd(ctx, T(dx1), T(dw1), T(db1), T(dy), T(x),
                                  T(w), T(rm), T(rv), training, 1e-5));
    ASSERT_OK(ampc_sync_batch_norm_bwd(ctx, T(dx2), T(dw2), T(db2), T(dy),
                                       T(x), T(w), T(rm), T(rv), training,
                                       1e-5));
    EXPECT_TRUE(sameBits(dx1, dx2)) << "training " << training;
    EXPECT_TRUE(sameBits(dw1, dw2)) << "training " << training;
    EXPECT_TRUE(sameBits(db1, db2)) << "training " << training;
  }
  Tensor m1({c}, AMPC_F32), m2({c}, AMPC_F32), v1({c}, AMPC_F32),
      v2({c}, AMPC_F32);
  ASSERT_OK(ampc_batch_norm_update(ctx, T(m1), T(v1), T(x), T(rm), T(rv), 0.1));
  ASSERT_OK(
      ampc_sync_batch_norm_update(ctx, T(m2), T(v2), T(x), T(rm), T(rv), 0.1));
  EXPECT_TRUE(sameBits(m1, m2));
  EXPECT_TRUE(sameBits(v1, v2));
}

TEST_F(SyncBatchNormTest, BadArgumentsFailAsTheOneRankKernel) {
  Tensor x = randomTensor({4, 3}, AMPC_F32);
  Tensor w = randomTensor({2}, AMPC_F32);
  Tensor y({4, 3}, AMPC_F32);
  EXPECT_EQ(ampc_sync_batch_norm_fwd(ctx, T(y), T(x), T(w), T(w), T(w), T(w),
                                     1, 1e-5),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("ampc_batch_norm_fwd"),
            std::string::npos);
}

} // namespace
