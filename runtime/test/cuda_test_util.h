//===- cuda_test_util.h - The CUDA-vs-CPU fixture of the CUDA tests -*- C++ -*-===//
//
// Shared by the runtime tests that compare the backends (test_cuda.cpp,
// test_cuda_fast.cpp, test_cuda_gemm_precision.cpp, the family tests): a
// fixture with a CUDA and a CPU context that runs one call sequence on both
// over copies of the same inputs and compares chosen outputs (bytes, or a
// relative tolerance). Without a usable GPU every test skips with a message
// naming what was skipped. The fixtures of test suites whose tests live in
// two files (a family split by file) are here too: one class per suite.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_TEST_CUDA_TEST_UTIL_H
#define AMPC_RUNTIME_TEST_CUDA_TEST_UTIL_H

#include "test_util.h"

#include <functional>
#include <string>
#include <vector>

namespace ampc_test {

using PtrFn = std::function<void *(int)>;
using Op = std::function<ampc_status(ampc_context, const PtrFn &)>;

#define A(i, t) p(i), (t).dtype, (t).dims(), (t).rank()
// The runtime's own AMPC_TRY (src/common.h), when a test includes it, does
// the same.
#ifndef AMPC_TRY
#define AMPC_TRY(expr)                                                         \
  do {                                                                         \
    ampc_status s_ = (expr);                                                   \
    if (s_ != AMPC_OK)                                                         \
      return s_;                                                               \
  } while (0)
#endif

class CudaVsCpu : public ::testing::Test {
protected:
  /// What the fixture's tests compare (named in the skip message).
  virtual const char *skipped() const = 0;

  void SetUp() override {
    int32_t available = 0;
    ampc_backend_available(AMPC_BACKEND_CUDA, &available);
    if (!available)
      GTEST_SKIP() << "no usable CUDA device (or the runtime was built "
                      "without CUDA): "
                   << skipped() << " skipped";
    ASSERT_OK(ampc_context_create(AMPC_BACKEND_CUDA, 0, &gpu));
    ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &cpu));
  }
  void TearDown() override {
    if (gpu)
      ampc_context_destroy(gpu);
    if (cpu)
      ampc_context_destroy(cpu);
  }

  /// Runs `op` on both backends over copies of `ts` and compares `outputs`:
  /// bytes when tol is 0, else |got - want| <= tol |want| + tol max|want|.
  void compare(const std::vector<Tensor> &ts, const std::vector<int> &outputs,
               const Op &op, double tol, const std::string &what,
               ampc_context on = nullptr) {
    SCOPED_TRACE(what);
    ampc_context g = on ? on : gpu;
    std::vector<Tensor> onCpu = ts;
    ASSERT_OK(op(cpu, [&](int i) { return onCpu[i].data(); }));
    std::vector<void *> dev(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      ASSERT_OK(ampc_malloc(g, ts[i].bytes.size(), &dev[i]));
      ASSERT_OK(ampc_memcpy(g, dev[i], ts[i].bytes.data(), ts[i].bytes.size(),
                            AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    ASSERT_OK(op(g, [&](int i) { return dev[i]; }));
    for (int o : outputs) {
      Tensor got = ts[o];
      ASSERT_OK(ampc_memcpy(g, got.bytes.data(), dev[o], ts[o].bytes.size(),
                            AMPC_MEMCPY_DEVICE_TO_HOST));
      if (tol == 0) {
        bool same = got.bytes == onCpu[o].bytes;
        EXPECT_TRUE(same) << what << ": output " << o << " differs";
        if (!same)
          for (int64_t i = 0, bad = 0; i < got.size() && bad < 5; ++i)
            if (got.get(i) != onCpu[o].get(i) &&
                !(std::isnan(got.get(i)) && std::isnan(onCpu[o].get(i)))) {
              ADD_FAILURE() << "element " << i << " got " << got.get(i)
                            << " want " << onCpu[o].get(i);
              ++bad;
            }
      } else {
        expectClose(got.values(), onCpu[o].values(), tol, tol,
                    what + " output " + std::to_string(o));
      }
    }
    for (void *ptr : dev)
      ampc_free(g, ptr);
  }

  /// p(i) advanced by `bytes` (misaligned operands).
  static void *shifted(const PtrFn &p, int i, int bytes) {
    return static_cast<char *>(p(i)) + bytes;
  }

  ampc_context gpu = nullptr, cpu = nullptr;
};

/// Reductions (test_reduction.cpp) and losses (test_loss.cpp) on CUDA
/// against the CPU.
class ReduceLossCuda : public CudaVsCpu {
protected:
  const char *skipped() const override { return "CUDA-vs-CPU comparison"; }
};

/// Batch norm (test_norm.cpp) and dropout (test_dropout.cpp) on CUDA against
/// the CPU.
class NormDropoutCuda : public CudaVsCpu {
protected:
  const char *skipped() const override { return "CUDA-vs-CPU comparison"; }

  /// Copies of `ts` on the GPU; `run` gets the pointer of tensor i.
  std::vector<void *> upload(std::vector<Tensor> &ts) {
    std::vector<void *> dev(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_OK(ampc_malloc(gpu, ts[i].bytes.size(), &dev[i]));
      EXPECT_OK(ampc_memcpy(gpu, dev[i], ts[i].bytes.data(),
                            ts[i].bytes.size(), AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    return dev;
  }
  Tensor download(void *p, const Tensor &like) {
    Tensor t = like;
    EXPECT_OK(ampc_memcpy(gpu, t.data(), p, t.bytes.size(),
                          AMPC_MEMCPY_DEVICE_TO_HOST));
    return t;
  }
  /// batch_norm forward, backward and update on both backends over x of
  /// [n, c, l] in `xt` (y, dy, dx in `yt`; parameters and statistics in
  /// f32), in training and inference; the outputs must agree to `tol`.
  void batchNormOnBoth(int64_t n, int64_t c, int64_t l, ampc_dtype xt,
                       ampc_dtype yt, double tol) {
    std::vector<Tensor> ts = {
        randomTensor({n, c, l}, xt),        randomTensor({c}, AMPC_F32),
        randomTensor({c}, AMPC_F32),        randomTensor({c}, AMPC_F32),
        randomTensor({c}, AMPC_F32, 0.5, 2), Tensor({n, c, l}, yt),
        randomTensor({n, c, l}, yt),        Tensor({n, c, l}, yt),
        Tensor({c}, AMPC_F32),              Tensor({c}, AMPC_F32),
        Tensor({c}, AMPC_F32),              Tensor({c}, AMPC_F32)};
    std::vector<void *> dev = upload(ts);
    for (int training : {1, 0}) {
      for (ampc_context ctx : {cpu, gpu}) {
        auto P = [&](int i) { return ctx == cpu ? ts[i].data() : dev[i]; };
#define B(i) P(i), ts[i].dtype, ts[i].dims(), ts[i].rank()
        ASSERT_OK(ampc_batch_norm_fwd(ctx, B(5), B(0), B(1), B(2), B(3), B(4),
                                      training, 1e-5));
        ASSERT_OK(ampc_batch_norm_bwd(ctx, B(7), B(8), B(9), B(6), B(0), B(1),
                                      B(3), B(4), training, 1e-5));
        ASSERT_OK(ampc_batch_norm_update(ctx, B(10), B(11), B(0), B(3), B(4),
                                         0.1));
#undef B
      }
      for (int o : {5, 7, 8, 9, 10, 11})
        expectClose(download(dev[o], ts[o]).values(), ts[o].values(), tol,
                    1e-6, "output " + std::to_string(o));
    }
    for (void *p : dev)
      ampc_free(gpu, p);
  }
};

} // namespace ampc_test

#endif // AMPC_RUNTIME_TEST_CUDA_TEST_UTIL_H
