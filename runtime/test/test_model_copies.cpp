//===- test_model_copies.cpp - opt level O2's optimizer model copies ------===//
//
// ampc_sgd_update_model / ampc_adamw_update_model: the f32 master moves
// exactly as with ampc_sgd_update / ampc_adamw_update, and each low model
// copy named by model_params holds the updated master rounded to its type
// after every step (unchanged on a skipped one).
//
//===----------------------------------------------------------------------===//

#include "test_util.h"

#include <functional>

using namespace ampc_test;

namespace {

class ModelCopies : public CpuTest {};

/// Every element of `model` is the element of `master` rounded to the
/// model's dtype.
void expectRoundedCopy(const Tensor &master, const Tensor &model,
                       const char *what) {
  Tensor rounded(master.shape, model.dtype);
  for (int64_t i = 0; i < master.size(); ++i)
    rounded.set(i, master.get(i));
  for (int64_t i = 0; i < master.size(); ++i)
    ASSERT_EQ(model.get(i), rounded.get(i)) << what << " element " << i;
}

TEST_F(ModelCopies, SgdWritesModelInTheSamePass) {
  for (ampc_dtype low : {AMPC_F16, AMPC_BF16}) {
    Tensor a = randomTensor({37}, AMPC_F32), b = randomTensor({5}, AMPC_F32);
    Tensor refA = a, refB = b;
    Tensor bufA({37}, AMPC_F32), bufB({5}, AMPC_F32), refBufA = bufA,
        refBufB = bufB;
    Tensor model({5}, low); // a copy of param 1 only
    for (int step = 0; step < 4; ++step) {
      Tensor ga = randomTensor({37}, AMPC_F32), gb = randomTensor({5}, AMPC_F16);
      float flag = step == 2 ? 1.0f : 0.0f; // step 2 is skipped
      Tensor before = model;
      void *ps[2] = {a.data(), b.data()}, *rps[2] = {refA.data(), refB.data()};
      void *gs[2] = {ga.data(), gb.data()};
      void *bs[2] = {bufA.data(), bufB.data()},
           *rbs[2] = {refBufA.data(), refBufB.data()};
      ampc_dtype pdt[2] = {AMPC_F32, AMPC_F32}, gdt[2] = {AMPC_F32, AMPC_F16};
      int64_t n[2] = {37, 5};
      void *models[1] = {model.data()};
      ampc_dtype mdt[1] = {low};
      int64_t which[1] = {1};
      ASSERT_OK(ampc_sgd_update_model(ctx, ps, pdt, gs, gdt, bs, n, 2, 0.1,
                                      0.9, 0.01, 1, 0.0, &flag, AMPC_F32, nullptr,
                                      models, mdt, which, 1));
      ASSERT_OK(ampc_sgd_update(ctx, rps, pdt, gs, gdt, rbs, n, 2, 0.1, 0.9,
                                0.01, 1, 0.0, &flag, AMPC_F32, nullptr));
      ASSERT_EQ(a.bytes, refA.bytes) << "step " << step;
      ASSERT_EQ(b.bytes, refB.bytes) << "step " << step;
      if (step == 2)
        ASSERT_EQ(model.bytes, before.bytes) << "a skipped step keeps the copy";
      else
        expectRoundedCopy(b, model, "sgd model copy");
    }
  }
}

TEST_F(ModelCopies, AdamWWritesModelInTheSamePass) {
  Tensor a = randomTensor({4, 9}, AMPC_F32), refA = a;
  Tensor m({4, 9}, AMPC_F32), v({4, 9}, AMPC_F32), rm = m, rv = v;
  Tensor model({4, 9}, AMPC_F16);
  int32_t step = 0, refStep = 0;
  for (int k = 0; k < 5; ++k) {
    Tensor g = randomTensor({4, 9}, AMPC_F32);
    float flag = k == 3 ? 1.0f : 0.0f;
    Tensor before = model;
    void *ps[1] = {a.data()}, *rps[1] = {refA.data()}, *gs[1] = {g.data()};
    void *ms[1] = {m.data()}, *vs[1] = {v.data()}, *rms[1] = {rm.data()},
         *rvs[1] = {rv.data()};
    ampc_dtype dt[1] = {AMPC_F32};
    int64_t n[1] = {36};
    void *models[1] = {model.data()};
    ampc_dtype mdt[1] = {AMPC_F16};
    int64_t which[1] = {0};
    ASSERT_OK(ampc_adamw_update_model(ctx, ps, dt, gs, dt, ms, vs, &step, n, 1,
                                      1e-2, 0.9, 0.999, 1e-8, 0.01, 0.0, &flag,
                                      AMPC_F32, nullptr, models, mdt, which, 1));
    ASSERT_OK(ampc_adamw_update(ctx, rps, dt, gs, dt, rms, rvs, &refStep, n, 1,
                                1e-2, 0.9, 0.999, 1e-8, 0.01, 0.0, &flag,
                                AMPC_F32, nullptr));
    ASSERT_EQ(a.bytes, refA.bytes) << "step " << k;
    ASSERT_EQ(step, refStep);
    if (k == 3)
      ASSERT_EQ(model.bytes, before.bytes) << "a skipped step keeps the copy";
    else
      expectRoundedCopy(a, model, "adamw model copy");
  }
}

TEST_F(ModelCopies, BadModelLists) {
  float p = 1, g = 1, model = 0;
  void *ps[1] = {&p}, *gs[1] = {&g}, *models[1] = {&model};
  ampc_dtype dt[1] = {AMPC_F32};
  int64_t n[1] = {1};
  int64_t outOfRange[1] = {1};
  EXPECT_EQ(ampc_sgd_update_model(ctx, ps, dt, gs, dt, nullptr, n, 1, 0.1, 0,
                                  0, 0, 0, nullptr, AMPC_F32, nullptr, models, dt,
                                  outOfRange, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
  int64_t zero[1] = {0};
  EXPECT_EQ(ampc_sgd_update_model(ctx, ps, dt, gs, dt, nullptr, n, 1, 0.1, 0,
                                  0, 0, 0, nullptr, AMPC_F32, nullptr, nullptr, dt,
                                  zero, 1),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_sgd_update_model(ctx, ps, dt, gs, dt, nullptr, n, 1, 0.1, 0,
                                  0, 0, 0, nullptr, AMPC_F32, nullptr, models, dt,
                                  zero, 2),
            AMPC_ERROR_INVALID_ARGUMENT);
}

/// The CUDA kernels against the CPU's, bit for bit (skipped without a GPU).
TEST(ModelCopiesCuda, MatchCpuBitForBit) {
  int32_t available = 0;
  ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  if (!available)
    GTEST_SKIP() << "no usable CUDA device (or the runtime was built without "
                    "CUDA): CUDA-vs-CPU comparison skipped";
  ampc_context gpu = nullptr, cpu = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CUDA, 0, &gpu));
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &cpu));
  // params (f32, 70000 and 5 elements: several blocks and a tiny one),
  // grads, moments, f16 and bf16 model copies of both.
  std::vector<Tensor> host = {
      randomTensor({70000}, AMPC_F32), randomTensor({5}, AMPC_F32),
      randomTensor({70000}, AMPC_F16), randomTensor({5}, AMPC_F32),
      Tensor({70000}, AMPC_F32),       Tensor({5}, AMPC_F32),
      Tensor({70000}, AMPC_F32),       Tensor({5}, AMPC_F32),
      Tensor({70000}, AMPC_F16),       Tensor({5}, AMPC_BF16)};
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "adamw" : "sgd");
    std::vector<Tensor> onCpu = host, fromGpu = host;
    std::vector<void *> dev(host.size());
    for (size_t i = 0; i < host.size(); ++i) {
      ASSERT_OK(ampc_malloc(gpu, host[i].bytes.size(), &dev[i]));
      ASSERT_OK(ampc_memcpy(gpu, dev[i], host[i].bytes.data(),
                            host[i].bytes.size(), AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    int32_t *devStep = nullptr;
    ASSERT_OK(ampc_malloc(gpu, 4, reinterpret_cast<void **>(&devStep)));
    int32_t zero = 0, cpuStep = 0;
    ASSERT_OK(ampc_memcpy(gpu, devStep, &zero, 4, AMPC_MEMCPY_HOST_TO_DEVICE));
    auto run = [&](ampc_context c, const std::function<void *(int)> &p,
                   void *step) {
      void *ps[2] = {p(0), p(1)}, *gs[2] = {p(2), p(3)};
      void *ms[2] = {p(4), p(5)}, *vs[2] = {p(6), p(7)};
      void *models[2] = {p(8), p(9)};
      ampc_dtype pdt[2] = {AMPC_F32, AMPC_F32}, gdt[2] = {AMPC_F16, AMPC_F32};
      ampc_dtype mdt[2] = {AMPC_F16, AMPC_BF16};
      int64_t n[2] = {70000, 5}, which[2] = {0, 1};
      return adamw ? ampc_adamw_update_model(c, ps, pdt, gs, gdt, ms, vs, step,
                                             n, 2, 1e-2, 0.9, 0.999, 1e-8,
                                             0.01, 0.0, nullptr, AMPC_F32, nullptr,
                                             models, mdt, which, 2)
                   : ampc_sgd_update_model(c, ps, pdt, gs, gdt, ms, n, 2, 0.1,
                                           0.9, 0.01, 1, 0.0, nullptr,
                                           AMPC_F32, nullptr, models, mdt, which, 2);
    };
    for (int k = 0; k < 3; ++k) {
      ASSERT_OK(run(cpu, [&](int i) { return onCpu[i].data(); }, &cpuStep));
      ASSERT_OK(run(gpu, [&](int i) { return dev[i]; }, devStep));
    }
    ASSERT_OK(ampc_synchronize(gpu));
    for (size_t i = 0; i < host.size(); ++i) {
      ASSERT_OK(ampc_memcpy(gpu, fromGpu[i].bytes.data(), dev[i],
                            host[i].bytes.size(), AMPC_MEMCPY_DEVICE_TO_HOST));
      EXPECT_EQ(fromGpu[i].bytes, onCpu[i].bytes) << "tensor " << i;
      ampc_free(gpu, dev[i]);
    }
    ampc_free(gpu, devStep);
    expectRoundedCopy(onCpu[0], onCpu[8], "cpu f16 copy");
    expectRoundedCopy(onCpu[1], onCpu[9], "cpu bf16 copy");
  }
  ampc_context_destroy(gpu);
  ampc_context_destroy(cpu);
}

} // namespace
