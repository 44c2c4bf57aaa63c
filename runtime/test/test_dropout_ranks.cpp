//===- test_dropout_ranks.cpp - dropout masks of data-parallel ranks ------===//
//
// The index map of ampc_dropout_ranked_fwd (DropoutShard, backend.h): the W
// ranks' elements draw exactly the masks of one process whose batch holds
// every rank's samples, interleaved as the ranks shard their data (rank r's
// sample j is sample j * W + r). Checked with the scalar code both backends
// run; the entry point itself over real ranks is checked under mpirun
// (test/Distributed/dropout-runtime.test). On one rank, with no
// communicator or with sample_elems 0 the entry point is ampc_dropout_fwd
// bit for bit.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "src/dropout_ops.h"
#include "src/norm_ops.h"

#include <set>

using namespace ampc_test;

namespace {

TEST(DropoutShard, IndexMap) {
  // W = 2, S = 3: rank 1's sample 0 is global sample 1, its sample 2 is
  // global sample 5.
  ampc::DropoutShard s{2, 1, 3};
  EXPECT_EQ(s.global(0), 3);
  EXPECT_EQ(s.global(2), 5);
  EXPECT_EQ(s.global(3), 9);
  EXPECT_EQ(s.global(7), 16);
  // One rank, or an unknown layout: the element's own index.
  EXPECT_EQ((ampc::DropoutShard{1, 0, 3}).global(7), 7);
  EXPECT_EQ((ampc::DropoutShard{3, 2, 0}).global(7), 7);
  EXPECT_EQ(ampc::DropoutShard{}.global(11), 11);
}

TEST(DropoutShard, RanksCoverTheWholeBatchOnce) {
  for (int64_t w : {2, 3, 5})
    for (int64_t sample : {1, 4, 7}) {
      const int64_t batch = 3;
      std::set<int64_t> seen;
      for (int64_t r = 0; r < w; ++r) {
        ampc::DropoutShard s{w, r, sample};
        for (int64_t i = 0; i < batch * sample; ++i) {
          int64_t g = s.global(i);
          // The element keeps its place in its sample, and the sample is
          // the one the rank holds.
          EXPECT_EQ(g % sample, i % sample);
          EXPECT_EQ(g / sample, (i / sample) * w + r);
          seen.insert(g);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), w * batch * sample);
      EXPECT_EQ(*seen.rbegin(), w * batch * sample - 1);
    }
}

/// Rank r's factors (the scalar code of both backends) against the factors
/// of one process of batch W * B: the rows j * W + r.
TEST(DropoutShard, RanksDrawTheSingleProcessMasks) {
  const uint64_t seed = 1234, stream = ampc::dropoutStream(2, 7);
  const float p = 0.4f, scale = 1.0f / (1.0f - p);
  for (int64_t w : {2, 3}) {
    const int64_t batch = 5, sample = 6; // [B, 2, 3] per rank
    for (int64_t r = 0; r < w; ++r) {
      ampc::DropoutShard s{w, r, sample};
      for (int64_t j = 0; j < batch; ++j)
        for (int64_t q = 0; q < sample; ++q) {
          int64_t local = j * sample + q, global = (j * w + r) * sample + q;
          EXPECT_EQ(ampc::dropoutFactor(seed, stream, s.global(local), p,
                                        scale),
                    ampc::dropoutFactor(seed, stream, global, p, scale))
              << "W " << w << " rank " << r << " sample " << j;
        }
    }
  }
}

using DropoutRankedTest = CpuTest;

TEST_F(DropoutRankedTest, OneRankIsTheOneProcessKernel) {
  Tensor x = randomTensor({6, 5, 4}, AMPC_F32);
  Tensor step({}, AMPC_I32);
  step.set(0, 9);
  Tensor y0({6, 5, 4}, AMPC_F32);
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y0), T(x), step.data(), 77, 0.3, 1));
  // No communicator attached.
  for (int64_t sample : {0, 20, 120}) {
    Tensor y({6, 5, 4}, AMPC_F32);
    ASSERT_OK(ampc_dropout_ranked_fwd(ctx, T(y), T(x), step.data(), 77, 0.3,
                                      1, sample));
    EXPECT_EQ(y.bytes, y0.bytes) << "sample_elems " << sample;
  }
  // A communicator of one rank.
  ampc_comm comm = nullptr;
  ASSERT_OK(ampc_comm_create_self(&comm));
  ASSERT_OK(ampc_context_set_comm(ctx, comm));
  Tensor y({6, 5, 4}, AMPC_F32);
  ASSERT_OK(ampc_dropout_ranked_fwd(ctx, T(y), T(x), step.data(), 77, 0.3, 1,
                                    20));
  EXPECT_EQ(y.bytes, y0.bytes);
  ASSERT_OK(ampc_context_set_comm(ctx, nullptr));
  ASSERT_OK(ampc_comm_destroy(comm));
}

TEST_F(DropoutRankedTest, SampleElemsMustDivideTheTensor) {
  Tensor x = randomTensor({6, 5}, AMPC_F32), y({6, 5}, AMPC_F32);
  Tensor step({}, AMPC_I32);
  EXPECT_EQ(ampc_dropout_ranked_fwd(ctx, T(y), T(x), step.data(), 1, 0.5, 0,
                                    7),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("sample_elems"),
            std::string::npos);
  EXPECT_EQ(ampc_dropout_ranked_fwd(ctx, T(y), T(x), step.data(), 1, 0.5, 0,
                                    -5),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(ampc_dropout_ranked_fwd(ctx, T(y), T(x), step.data(), 1, 0.5, 0,
                                    10));
}

} // namespace
