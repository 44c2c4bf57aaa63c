//===- test_kernels.cpp - Every kernel against f64 references
//---------------===//
//
// Forward outputs are compared with a direct f64 evaluation on the (rounded)
// inputs. Backward kernels are compared with central differences of that
// same f64 reference, so each op needs one reference only.
//
// Tolerances (|err| <= rtol*|ref| + atol*max|ref|):
//   f32 out: forward rtol 1e-5 / atol 1e-5; backward rtol 1e-4 / atol 1e-4
//   f16 out: rtol = atol = 2^-10 (+ f16 input rounding is in the reference)
//   bf16 out: rtol = atol = 2^-7
//
//===----------------------------------------------------------------------===//
#include "src/dropout_ops.h"
#include "src/norm_ops.h"
#include "test_util.h"

using namespace ampc_test;

namespace {

using Ref = std::function<Vec(const std::vector<Vec> &)>;
using Fwd =
    std::function<ampc_status(ampc_context, Tensor &, std::vector<Tensor> &)>;
using Bwd =
    std::function<ampc_status(ampc_context, std::vector<Tensor> &, Tensor &,
                              std::vector<Tensor> &, Tensor &)>;

struct OpCheck {
  std::string name;
  std::vector<Tensor> inputs; // differentiable inputs
  Shape outShape;
  Ref ref;
  Fwd fwd;
  Bwd bwd;                // may be empty
  std::vector<bool> grad; // which inputs get a gradient (default all)
  ampc_dtype outDtype = AMPC_F32;
  double fwdTol = 0, bwdTol = 1e-4;
};

double tolFor(ampc_dtype dt, double f32Tol) {
  return dt == AMPC_F32 ? f32Tol : dtypeEps(dt);
}

void runCheck(ampc_context ctx, OpCheck c) {
  SCOPED_TRACE(c.name);
  std::vector<Vec> in;
  for (auto &t : c.inputs)
    in.push_back(t.values());
  Tensor y(c.outShape, c.outDtype);
  ASSERT_OK(c.fwd(ctx, y, c.inputs));
  Vec want = c.ref(in);
  double ft = c.fwdTol ? c.fwdTol : tolFor(c.outDtype, 1e-5);
  expectClose(y.values(), want, ft, ft, c.name + " forward");
  if (!c.bwd)
    return;
  Tensor dy = randomTensor(c.outShape, AMPC_F32);
  std::vector<Tensor> grads;
  for (auto &t : c.inputs)
    grads.emplace_back(t.shape, AMPC_F32);
  ASSERT_OK(c.bwd(ctx, grads, dy, c.inputs, y));
  Vec w = dy.values();
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    if (!c.grad.empty() && !c.grad[k])
      continue;
    Vec num = numericGrad(c.ref, in, k, w);
    expectClose(grads[k].values(), num, c.bwdTol, c.bwdTol,
                c.name + " grad of input " + std::to_string(k));
  }
}

class Kernels : public CpuTest {};

// ---------------------------------------------------------------- unary --

struct UnaryCase {
  const char *name;
  ampc_status (*fwd)(ampc_context, void *, ampc_dtype, const int64_t *, int32_t,
                     const void *, ampc_dtype, const int64_t *, int32_t);
  ampc_status (*bwd)(ampc_context, void *, ampc_dtype, const int64_t *, int32_t,
                     const void *, ampc_dtype, const int64_t *, int32_t,
                     const void *, ampc_dtype, const int64_t *, int32_t);
  double (*ref)(double);
  double lo, hi;
};

double sigm(double x) { return 1 / (1 + std::exp(-x)); }

const UnaryCase kUnary[] = {
    {"neg", ampc_neg_fwd, ampc_neg_bwd, [](double x) { return -x; }, -2, 2},
    {"abs", ampc_abs_fwd, ampc_abs_bwd, [](double x) { return std::fabs(x); },
     -2, 2},
    {"exp", ampc_exp_fwd, ampc_exp_bwd, [](double x) { return std::exp(x); },
     -2, 2},
    {"log", ampc_log_fwd, ampc_log_bwd, [](double x) { return std::log(x); },
     0.2, 3},
    {"sqrt", ampc_sqrt_fwd, ampc_sqrt_bwd,
     [](double x) { return std::sqrt(x); }, 0.2, 3},
    {"rsqrt", ampc_rsqrt_fwd, ampc_rsqrt_bwd,
     [](double x) { return 1 / std::sqrt(x); }, 0.2, 3},
    {"relu", ampc_relu_fwd, ampc_relu_bwd,
     [](double x) { return x > 0 ? x : 0.0; }, -2, 2},
    {"silu", ampc_silu_fwd, ampc_silu_bwd, [](double x) { return x * sigm(x); },
     -4, 4},
    {"sigmoid", ampc_sigmoid_fwd, ampc_sigmoid_bwd, sigm, -4, 4},
    {"tanh", ampc_tanh_fwd, ampc_tanh_bwd,
     [](double x) { return std::tanh(x); }, -3, 3},
};

TEST_F(Kernels, UnaryOps) {
  for (const UnaryCase &u : kUnary) {
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
      OpCheck c;
      c.name = std::string(u.name) + " dtype " + std::to_string(dt);
      c.inputs.push_back(randomTensor({3, 17}, dt, u.lo, u.hi));
      // Keep relu/abs away from the kink for the finite differences.
      for (int64_t i = 0; i < c.inputs[0].size(); ++i)
        if (std::fabs(c.inputs[0].get(i)) < 0.01)
          c.inputs[0].set(i, 0.5);
      c.outShape = {3, 17};
      c.outDtype = dt;
      c.ref = [&u](const std::vector<Vec> &in) {
        Vec y(in[0].size());
        for (size_t i = 0; i < y.size(); ++i)
          y[i] = u.ref(in[0][i]);
        return y;
      };
      c.fwd = [&u](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
        return u.fwd(ctx, T(y), T(in[0]));
      };
      if (dt == AMPC_F32)
        c.bwd = [&u](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                     std::vector<Tensor> &in,
                     Tensor &) { return u.bwd(ctx, T(g[0]), T(dy), T(in[0])); };
      runCheck(ctx, c);
    }
  }
}

TEST_F(Kernels, Gelu) {
  for (ampc_gelu_approximate mode : {AMPC_GELU_NONE, AMPC_GELU_TANH}) {
    OpCheck c;
    c.name = mode == AMPC_GELU_NONE ? "gelu" : "gelu_tanh";
    c.inputs.push_back(randomTensor({40}, AMPC_F32, -4, 4));
    c.outShape = {40};
    c.ref = [mode](const std::vector<Vec> &in) {
      Vec y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) {
        double x = in[0][i];
        y[i] = mode == AMPC_GELU_NONE
                   ? 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)))
                   : 0.5 * x *
                         (1 + std::tanh(std::sqrt(2 / M_PI) *
                                        (x + 0.044715 * x * x * x)));
      }
      return y;
    };
    c.fwd = [mode](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
      return ampc_gelu_fwd(ctx, T(y), T(in[0]), mode);
    };
    c.bwd = [mode](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                   std::vector<Tensor> &in, Tensor &) {
      return ampc_gelu_bwd(ctx, T(g[0]), T(dy), T(in[0]), mode);
    };
    runCheck(ctx, c);
  }
}

// --------------------------------------------------------------- binary --

struct BinaryCase {
  const char *name;
  decltype(&ampc_add_fwd) fwd;
  decltype(&ampc_add_bwd) bwd;
  double (*ref)(double, double);
  double lo, hi;
};

const BinaryCase kBinary[] = {
    {"add", ampc_add_fwd, ampc_add_bwd,
     [](double a, double b) { return a + b; }, -2, 2},
    {"sub", ampc_sub_fwd, ampc_sub_bwd,
     [](double a, double b) { return a - b; }, -2, 2},
    {"mul", ampc_mul_fwd, ampc_mul_bwd,
     [](double a, double b) { return a * b; }, -2, 2},
    {"div", ampc_div_fwd, ampc_div_bwd,
     [](double a, double b) { return a / b; }, 0.5, 2},
    {"maximum", ampc_maximum_fwd, ampc_maximum_bwd,
     [](double a, double b) { return std::max(a, b); }, -2, 2},
    {"minimum", ampc_minimum_fwd, ampc_minimum_bwd,
     [](double a, double b) { return std::min(a, b); }, -2, 2},
    {"pow", ampc_pow_fwd, ampc_pow_bwd,
     [](double a, double b) { return std::pow(a, b); }, 0.5, 2},
};

TEST_F(Kernels, BinaryOpsWithBroadcasting) {
  struct Shapes {
    Shape a, b, out;
  };
  const Shapes shapes[] = {{{4, 5}, {4, 5}, {4, 5}},
                           {{2, 3, 4}, {4}, {2, 3, 4}},
                           {{2, 1, 4}, {3, 1}, {2, 3, 4}},
                           {{}, {3, 2}, {3, 2}},
                           {{5, 1}, {1, 6}, {5, 6}}};
  for (const BinaryCase &op : kBinary) {
    for (const Shapes &s : shapes) {
      for (ampc_dtype dt : {AMPC_F32, AMPC_F16}) {
        OpCheck c;
        c.name = std::string(op.name) + " dtype " + std::to_string(dt) +
                 " a rank " + std::to_string(s.a.size());
        c.inputs.push_back(randomTensor(s.a, dt, op.lo, op.hi));
        c.inputs.push_back(randomTensor(s.b, AMPC_F32, op.lo, op.hi));
        c.outShape = s.out;
        c.outDtype = dt;
        Shape as = s.a, bs = s.b, os = s.out;
        c.ref = [&op, as, bs, os](const std::vector<Vec> &in) {
          Vec y(numel(os));
          for (int64_t i = 0; i < numel(os); ++i) {
            Shape idx = unravel(i, os);
            y[i] = op.ref(in[0][broadcastOffset(idx, as)],
                          in[1][broadcastOffset(idx, bs)]);
          }
          return y;
        };
        c.fwd = [&op](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
          return op.fwd(ctx, T(y), T(in[0]), T(in[1]));
        };
        if (dt == AMPC_F32)
          c.bwd = [&op](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                        std::vector<Tensor> &in, Tensor &) {
            return op.bwd(ctx, T(g[0]), T(g[1]), T(dy), T(in[0]), T(in[1]));
          };
        runCheck(ctx, c);
      }
    }
  }
}

TEST_F(Kernels, MaximumTiesSplitTheGradient) {
  Tensor a({2}, AMPC_F32), b({2}, AMPC_F32), dy({2}, AMPC_F32),
      da({2}, AMPC_F32), db({2}, AMPC_F32);
  a.set(0, 1);
  b.set(0, 1);
  a.set(1, 2);
  b.set(1, 1);
  dy.set(0, 1);
  dy.set(1, 1);
  ASSERT_OK(ampc_maximum_bwd(ctx, T(da), T(db), T(dy), T(a), T(b)));
  EXPECT_EQ(da.get(0), 0.5);
  EXPECT_EQ(db.get(0), 0.5);
  EXPECT_EQ(da.get(1), 1.0);
  EXPECT_EQ(db.get(1), 0.0);
}

// ----------------------------------------------------------- reductions --

TEST_F(Kernels, Reductions) {
  struct RCase {
    std::vector<int64_t> dims;
    bool keep;
  };
  const RCase cases[] = {{{}, false},
                         {{1}, false},
                         {{0, 2}, true},
                         {{-1}, true},
                         {{0, 1, 2}, false}};
  Shape xs = {3, 4, 5};
  for (int op = 0; op < 3; ++op) {
    for (const RCase &rc : cases) {
      bool red[3] = {rc.dims.empty(), rc.dims.empty(), rc.dims.empty()};
      for (int64_t d : rc.dims)
        red[d < 0 ? d + 3 : d] = true;
      Shape ys;
      for (int i = 0; i < 3; ++i)
        if (!red[i] || rc.keep)
          ys.push_back(red[i] ? 1 : xs[i]);
      OpCheck c;
      c.name = std::string(op == 0   ? "sum"
                           : op == 1 ? "mean"
                                     : "max") +
               " dims " + std::to_string(rc.dims.size());
      c.inputs.push_back(randomTensor(xs, AMPC_F32, -2, 2));
      c.outShape = ys;
      std::vector<bool> redv(red, red + 3);
      c.ref = [op, xs, redv, ys](const std::vector<Vec> &in) {
        Vec y(numel(ys), op == 2 ? -INFINITY : 0.0);
        Vec count(numel(ys), 0);
        for (int64_t i = 0; i < numel(xs); ++i) {
          Shape idx = unravel(i, xs);
          int64_t o = 0;
          for (int d = 0; d < 3; ++d)
            if (!redv[d])
              o = o * xs[d] + idx[d];
          y[o] = op == 2 ? std::max(y[o], in[0][i]) : y[o] + in[0][i];
          count[o] += 1;
        }
        if (op == 1)
          for (size_t o = 0; o < y.size(); ++o)
            y[o] /= count[o];
        return y;
      };
      std::vector<int64_t> dims = rc.dims;
      int keep = rc.keep;
      auto fwds = std::vector<decltype(&ampc_sum_fwd)>{
          ampc_sum_fwd, ampc_mean_fwd, ampc_max_fwd};
      auto bwds = std::vector<decltype(&ampc_sum_bwd)>{
          ampc_sum_bwd, ampc_mean_bwd, ampc_max_bwd};
      c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
        return fwds[op](ctx, T(y), T(in[0]), dims.data(),
                        static_cast<int32_t>(dims.size()), keep);
      };
      c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                  std::vector<Tensor> &in, Tensor &y) {
        return bwds[op](ctx, T(g[0]), T(dy), T(in[0]), T(y), dims.data(),
                        static_cast<int32_t>(dims.size()), keep);
      };
      runCheck(ctx, c);
    }
  }
}

TEST_F(Kernels, BroadcastBackwardConvertsEachElementOnce) {
  // sum/mean backward of an f32 dy into 16-bit dx (the AMP form of a
  // pooling mean): every element is storeF32(scale * dy) of its source,
  // over inner dims reduced ([2, 3]), an outer one ([0]) and a middle one.
  struct Case {
    std::vector<int64_t> dims;
  } cases[] = {{{2, 3}}, {{0}}, {{1}}, {{0, 2}}};
  Shape xs{3, 5, 6, 37};
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16})
    for (const Case &cs : cases)
      for (int mean = 0; mean < 2; ++mean) {
        bool red[4] = {};
        for (int64_t d : cs.dims)
          red[d] = true;
        Shape ys;
        int64_t kept = 1;
        for (int d = 0; d < 4; ++d)
          if (!red[d])
            ys.push_back(xs[d]), kept *= xs[d];
        Tensor dy(ys, AMPC_F32), dx(xs, dt), x(xs, dt), y(ys, dt);
        for (int64_t i = 0; i < dy.size(); ++i)
          dy.set(i, 0.013 * static_cast<double>(i % 97) - 0.61);
        auto fn = mean ? ampc_mean_bwd : ampc_sum_bwd;
        ASSERT_OK(fn(ctx, T(dx), T(dy), T(x), T(y), cs.dims.data(),
                     static_cast<int32_t>(cs.dims.size()), 0));
        float scale =
            mean ? static_cast<float>(static_cast<double>(kept) /
                                      static_cast<double>(numel(xs)))
                 : 1.0f;
        for (int64_t i = 0; i < dx.size(); ++i) {
          Shape idx = unravel(i, xs);
          int64_t o = 0;
          for (int d = 0; d < 4; ++d)
            if (!red[d])
              o = o * xs[d] + idx[d];
          float src = static_cast<float>(dy.get(o));
          uint16_t want = dt == AMPC_F16 ? ampc::f32ToF16(scale * src)
                                         : ampc::f32ToBf16(scale * src);
          uint16_t got;
          std::memcpy(&got, dx.bytes.data() + 2 * i, 2);
          ASSERT_EQ(got, want) << "dims " << cs.dims.size() << " mean "
                               << mean << " element " << i;
        }
      }
}

TEST_F(Kernels, MaxTiesShareTheGradient) {
  Tensor x({4}, AMPC_F32), y(Shape{}, AMPC_F32), dy(Shape{}, AMPC_F32),
      dx({4}, AMPC_F32);
  double vals[4] = {1, 3, 3, 2};
  for (int i = 0; i < 4; ++i)
    x.set(i, vals[i]);
  ASSERT_OK(ampc_max_fwd(ctx, T(y), T(x), nullptr, 0, 0));
  EXPECT_EQ(y.get(0), 3);
  dy.set(0, 1);
  ASSERT_OK(ampc_max_bwd(ctx, T(dx), T(dy), T(x), T(y), nullptr, 0, 0));
  EXPECT_EQ(dx.values(), (Vec{0, 0.5, 0.5, 0}));
}

// -------------------------------------------------------- normalisation --

Vec softmaxRef(const Vec &x, const Shape &s, int dim, bool log) {
  int64_t outer = 1, inner = 1, n = s[dim];
  for (int i = 0; i < dim; ++i)
    outer *= s[i];
  for (size_t i = dim + 1; i < s.size(); ++i)
    inner *= s[i];
  Vec y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j)
        m = std::max(m, x[(o * n + j) * inner + in]);
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(x[(o * n + j) * inner + in] - m);
      for (int64_t j = 0; j < n; ++j) {
        double v = x[(o * n + j) * inner + in] - m;
        y[(o * n + j) * inner + in] =
            log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

TEST_F(Kernels, SoftmaxAndLogSoftmax) {
  Shape s = {2, 5, 3};
  for (bool log : {false, true})
    for (int dim : {-1, 1, 0})
      for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
        OpCheck c;
        c.name = std::string(log ? "log_softmax" : "softmax") + " dim " +
                 std::to_string(dim) + " dtype " + std::to_string(dt);
        c.inputs.push_back(randomTensor(s, dt, -3, 3));
        c.outShape = s;
        c.outDtype = dt;
        int d = dim < 0 ? dim + 3 : dim;
        c.ref = [=](const std::vector<Vec> &in) {
          return softmaxRef(in[0], s, d, log);
        };
        c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
          return log ? ampc_log_softmax_fwd(ctx, T(y), T(in[0]), dim)
                     : ampc_softmax_fwd(ctx, T(y), T(in[0]), dim);
        };
        if (dt == AMPC_F32)
          c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                      std::vector<Tensor> &, Tensor &y) {
            return log ? ampc_log_softmax_bwd(ctx, T(g[0]), T(dy), T(y), dim)
                       : ampc_softmax_bwd(ctx, T(g[0]), T(dy), T(y), dim);
          };
        runCheck(ctx, c);
      }
}

TEST_F(Kernels, LayerNormAndRmsNorm) {
  for (bool rms : {false, true})
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16}) {
      Shape xs = {3, 2, 8};
      OpCheck c;
      c.name = std::string(rms ? "rms_norm" : "layer_norm") + " dtype " +
               std::to_string(dt);
      c.inputs.push_back(randomTensor(xs, dt, -2, 2));
      c.inputs.push_back(randomTensor({8}, AMPC_F32, 0.5, 1.5));
      if (!rms)
        c.inputs.push_back(randomTensor({8}, AMPC_F32, -0.5, 0.5));
      c.outShape = xs;
      c.outDtype = dt;
      double eps = 1e-5;
      c.ref = [=](const std::vector<Vec> &in) {
        Vec y(in[0].size());
        for (int64_t r = 0; r < 6; ++r) {
          double mean = 0, var = 0;
          for (int j = 0; j < 8; ++j)
            mean += in[0][r * 8 + j] / 8;
          if (rms)
            mean = 0;
          for (int j = 0; j < 8; ++j)
            var += (in[0][r * 8 + j] - mean) * (in[0][r * 8 + j] - mean) / 8;
          for (int j = 0; j < 8; ++j)
            y[r * 8 + j] =
                (in[0][r * 8 + j] - mean) / std::sqrt(var + eps) * in[1][j] +
                (rms ? 0.0 : in[2][j]);
        }
        return y;
      };
      c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
        return rms ? ampc_rms_norm_fwd(ctx, T(y), T(in[0]), T(in[1]), eps)
                   : ampc_layer_norm_fwd(ctx, T(y), T(in[0]), T(in[1]),
                                         T(in[2]), eps);
      };
      if (dt == AMPC_F32)
        c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                    std::vector<Tensor> &in, Tensor &) {
          return rms ? ampc_rms_norm_bwd(ctx, T(g[0]), T(g[1]), T(dy), T(in[0]),
                                         T(in[1]), eps)
                     : ampc_layer_norm_bwd(ctx, T(g[0]), T(g[1]), T(g[2]),
                                           T(dy), T(in[0]), T(in[1]), eps);
        };
      runCheck(ctx, c);
    }
}

// -------------------------------------------------------- linear algebra --

/// torch.matmul on f64 with 1-D promotion and batch broadcasting.
Vec matmulRef(const Vec &a, Shape as, const Vec &b, Shape bs, Shape &out) {
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2), ob;
  size_t r = std::max(ab.size(), bb.size());
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + ab.size() >= r ? ab[i + ab.size() - r] : 1;
    int64_t db = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
    ob.push_back(std::max(da, db));
  }
  out = ob;
  if (!aVec)
    out.push_back(m);
  if (!bVec)
    out.push_back(n);
  Vec y(numel(ob) * m * n, 0.0);
  for (int64_t bi = 0; bi < numel(ob); ++bi) {
    Shape idx = unravel(bi, ob);
    int64_t ao = broadcastOffset(idx, ab) * m * k,
            bo = broadcastOffset(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a[ao + i * k + p] * b[bo + p * n + j];
        y[(bi * m + i) * n + j] = s;
      }
  }
  return y;
}

TEST_F(Kernels, MatmulBatchedBroadcast) {
  struct MCase {
    Shape a, b;
  };
  const MCase cases[] = {{{4, 3}, {3, 5}},    {{2, 4, 3}, {3, 5}},
                         {{4, 3}, {2, 3, 5}}, {{2, 1, 4, 3}, {3, 3, 5}},
                         {{3}, {3, 5}},       {{2, 4, 3}, {3}},
                         {{3}, {3}},          {{2, 2, 4, 3}, {2, 1, 3, 5}}};
  for (const MCase &mc : cases)
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
      OpCheck c;
      c.name = "matmul a rank " + std::to_string(mc.a.size()) + " b rank " +
               std::to_string(mc.b.size()) + " dtype " + std::to_string(dt);
      c.inputs.push_back(randomTensor(mc.a, dt));
      c.inputs.push_back(randomTensor(mc.b, dt));
      Shape out;
      matmulRef(c.inputs[0].values(), mc.a, c.inputs[1].values(), mc.b, out);
      c.outShape = out;
      c.outDtype = dt == AMPC_BF16 ? AMPC_F32 : dt; // bf16 in, f32 out
      Shape as = mc.a, bs = mc.b;
      c.ref = [=](const std::vector<Vec> &in) {
        Shape o;
        return matmulRef(in[0], as, in[1], bs, o);
      };
      c.fwd = [](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
        return ampc_matmul_fwd(ctx, T(y), T(in[0]), T(in[1]));
      };
      c.bwd = [](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                 std::vector<Tensor> &in, Tensor &) {
        return ampc_matmul_bwd(ctx, T(g[0]), T(g[1]), T(dy), T(in[0]),
                               T(in[1]));
      };
      runCheck(ctx, c);
    }
}

TEST_F(Kernels, GemmTransposesBiasEpilogueAndBeta) {
  const int64_t m = 5, n = 7, k = 6, batch = 3;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (ampc_epilogue epi : {AMPC_EPILOGUE_NONE, AMPC_EPILOGUE_RELU,
                                AMPC_EPILOGUE_GELU, AMPC_EPILOGUE_GELU_TANH})
        for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
          SCOPED_TRACE("ta " + std::to_string(ta) + " tb " +
                       std::to_string(tb) + " epi " + std::to_string(epi) +
                       " dtype " + std::to_string(dt));
          Tensor a = randomTensor({batch, ta ? k : m, ta ? m : k}, dt);
          Tensor b = randomTensor({batch, tb ? n : k, tb ? k : n}, dt);
          Tensor bias = randomTensor({n}, dt);
          Tensor c0 = randomTensor({batch, m, n}, dt);
          Tensor c = c0;
          float alpha = 0.75f, beta = 0.5f;
          ASSERT_OK(ampc_gemm(ctx, c.data(), dt, a.data(), dt, b.data(), dt,
                              bias.data(), dt, batch, m, n, k, ta, tb,
                              ta ? m : k, tb ? k : n, n, m * k, k * n, m * n,
                              alpha, beta, epi));
          Vec want(batch * m * n);
          for (int64_t bi = 0; bi < batch; ++bi)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double s = 0;
                for (int64_t p = 0; p < k; ++p) {
                  double av = a.get(bi * m * k + (ta ? p * m + i : i * k + p));
                  double bv = b.get(bi * k * n + (tb ? j * k + p : p * n + j));
                  s += av * bv;
                }
                double v = alpha * s + beta * c0.get((bi * m + i) * n + j) +
                           bias.get(j);
                if (epi == AMPC_EPILOGUE_RELU)
                  v = std::max(v, 0.0);
                else if (epi == AMPC_EPILOGUE_GELU)
                  v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
                else if (epi == AMPC_EPILOGUE_GELU_TANH)
                  v = 0.5 * v *
                      (1 + std::tanh(std::sqrt(2 / M_PI) *
                                     (v + 0.044715 * v * v * v)));
                want[(bi * m + i) * n + j] = v;
              }
          double tol = tolFor(dt, 1e-5);
          expectClose(c.values(), want, tol, tol, "gemm");
        }
}

// An f32 GEMM's epilogue gives the bits of the GEMM without it followed by
// the elementwise op (relu, gelu exact and tanh): rows of 2500 columns, more
// than one chunk of the vector math's scratch.
TEST_F(Kernels, GemmEpilogueIsTheElementwiseOpsBits) {
  const int64_t m = 37, n = 2500, k = 16;
  Tensor a = randomTensor({m, k}, AMPC_F32, -2, 2),
         b = randomTensor({k, n}, AMPC_F32, -2, 2),
         bias = randomTensor({n}, AMPC_F32, -1, 1);
  Tensor plain({m, n}, AMPC_F32);
  ASSERT_OK(ampc_gemm(ctx, plain.data(), AMPC_F32, a.data(), AMPC_F32, b.data(),
                      AMPC_F32, bias.data(), AMPC_F32, 1, m, n, k, 0, 0, k, n,
                      n, 0, 0, 0, 1.0f, 0.0f, AMPC_EPILOGUE_NONE));
  int64_t shape[2] = {m, n};
  for (ampc_epilogue epi :
       {AMPC_EPILOGUE_RELU, AMPC_EPILOGUE_GELU, AMPC_EPILOGUE_GELU_TANH}) {
    SCOPED_TRACE(static_cast<int>(epi));
    Tensor fused({m, n}, AMPC_F32), want({m, n}, AMPC_F32);
    ASSERT_OK(ampc_gemm(ctx, fused.data(), AMPC_F32, a.data(), AMPC_F32,
                        b.data(), AMPC_F32, bias.data(), AMPC_F32, 1, m, n, k,
                        0, 0, k, n, n, 0, 0, 0, 1.0f, 0.0f, epi));
    if (epi == AMPC_EPILOGUE_RELU)
      ASSERT_OK(ampc_relu_fwd(ctx, want.data(), AMPC_F32, shape, 2,
                              plain.data(), AMPC_F32, shape, 2));
    else
      ASSERT_OK(ampc_gelu_fwd(
          ctx, want.data(), AMPC_F32, shape, 2, plain.data(), AMPC_F32, shape,
          2, epi == AMPC_EPILOGUE_GELU ? AMPC_GELU_NONE : AMPC_GELU_TANH));
    EXPECT_EQ(fused.bytes, want.bytes);
  }
  // The bias: the product's bits plus the bias broadcast over the rows.
  Tensor product({m, n}, AMPC_F32), withBias({m, n}, AMPC_F32);
  ASSERT_OK(ampc_gemm(ctx, product.data(), AMPC_F32, a.data(), AMPC_F32,
                      b.data(), AMPC_F32, nullptr, AMPC_F32, 1, m, n, k, 0, 0,
                      k, n, n, 0, 0, 0, 1.0f, 0.0f, AMPC_EPILOGUE_NONE));
  ASSERT_OK(ampc_add_fwd(ctx, T(withBias), T(product), T(bias)));
  EXPECT_EQ(plain.bytes, withBias.bytes);
}

TEST_F(Kernels, GemmBroadcastBatchAndMixedDtypes) {
  // B shared across the batch (stride 0); f16 x bf16 inputs, f32 output.
  Tensor a = randomTensor({2, 3, 4}, AMPC_F16),
         b = randomTensor({4, 5}, AMPC_BF16);
  Tensor c({2, 3, 5}, AMPC_F32);
  ASSERT_OK(ampc_gemm(ctx, c.data(), AMPC_F32, a.data(), AMPC_F16, b.data(),
                      AMPC_BF16, nullptr, AMPC_F32, 2, 3, 5, 4, 0, 0, 4, 5, 5,
                      12, 0, 15, 1.0f, 0.0f, AMPC_EPILOGUE_NONE));
  Shape out;
  Vec want = matmulRef(a.values(), {2, 3, 4}, b.values(), {4, 5}, out);
  expectClose(c.values(), want, 1e-6, 1e-6, "gemm broadcast");
}

TEST_F(Kernels, Linear) {
  for (bool withBias : {true, false})
    for (ampc_dtype dt : {AMPC_F32, AMPC_F16}) {
      OpCheck c;
      c.name = std::string("linear bias ") + (withBias ? "1" : "0");
      c.inputs.push_back(randomTensor({2, 3, 4}, dt));
      c.inputs.push_back(randomTensor({5, 4}, dt));
      if (withBias)
        c.inputs.push_back(randomTensor({5}, dt));
      c.outShape = {2, 3, 5};
      c.outDtype = dt;
      c.ref = [withBias](const std::vector<Vec> &in) {
        Vec y(30);
        for (int r = 0; r < 6; ++r)
          for (int o = 0; o < 5; ++o) {
            double s = withBias ? in[2][o] : 0.0;
            for (int i = 0; i < 4; ++i)
              s += in[0][r * 4 + i] * in[1][o * 4 + i];
            y[r * 5 + o] = s;
          }
        return y;
      };
      c.fwd = [withBias](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
        Tensor none;
        Tensor &b = withBias ? in[2] : none;
        return ampc_linear_fwd(ctx, T(y), T(in[0]), T(in[1]),
                               withBias ? b.data() : nullptr, b.dtype, b.dims(),
                               b.rank(), AMPC_EPILOGUE_NONE);
      };
      if (dt == AMPC_F32)
        c.bwd = [withBias](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                           std::vector<Tensor> &in, Tensor &) {
          Tensor none;
          Tensor &db = withBias ? g[2] : none;
          return ampc_linear_bwd(
              ctx, T(g[0]), T(g[1]), withBias ? db.data() : nullptr, db.dtype,
              db.dims(), db.rank(), T(dy), T(in[0]), T(in[1]));
        };
      runCheck(ctx, c);
    }
}

struct ConvParams {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

Vec convRef(const std::vector<Vec> &in, const ConvParams &p, bool bias,
            Shape &out) {
  int64_t oh = (p.h + 2 * p.ph - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  int64_t ow = (p.w + 2 * p.pw - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  out = {p.n, p.o, oh, ow};
  int64_t cg = p.c / p.groups, og = p.o / p.groups;
  Vec y(numel(out));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.o; ++o)
      for (int64_t y0 = 0; y0 < oh; ++y0)
        for (int64_t x0 = 0; x0 < ow; ++x0) {
          double s = bias ? in[2][o] : 0.0;
          int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                int64_t iy = y0 * p.sh - p.ph + ky * p.dh,
                        ix = x0 * p.sw - p.pw + kx * p.dw;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w)
                  continue;
                int64_t c = g * cg + ci;
                s += in[0][((n * p.c + c) * p.h + iy) * p.w + ix] *
                     in[1][((o * cg + ci) * p.kh + ky) * p.kw + kx];
              }
          y[((n * p.o + o) * oh + y0) * ow + x0] = s;
        }
  return y;
}

TEST_F(Kernels, Conv2d) {
  const ConvParams cases[] = {{2, 3, 5, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1},
                              {1, 4, 6, 5, 6, 3, 2, 2, 1, 1, 1, 1, 1, 2},
                              {2, 2, 7, 7, 2, 3, 3, 1, 2, 2, 1, 2, 1, 1},
                              {1, 4, 4, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1, 4},
                              // Stride 1 with >= 8 channels per group (the
                              // CPU's per-tap GEMMs): padding, dilation,
                              // groups, non-square kernels.
                              {2, 16, 6, 5, 6, 3, 2, 1, 1, 1, 1, 1, 1, 2},
                              {2, 8, 7, 6, 2, 3, 3, 1, 1, 2, 1, 2, 1, 1},
                              {1, 8, 5, 9, 3, 1, 3, 1, 1, 0, 2, 1, 3, 1}};
  for (const ConvParams &p : cases)
    for (bool bias : {true, false})
      for (ampc_dtype dt : {AMPC_F32, AMPC_F16}) {
        OpCheck c;
        c.name = "conv2d groups " + std::to_string(p.groups) + " bias " +
                 std::to_string(bias) + " dtype " + std::to_string(dt);
        c.inputs.push_back(randomTensor({p.n, p.c, p.h, p.w}, dt));
        c.inputs.push_back(randomTensor({p.o, p.c / p.groups, p.kh, p.kw}, dt));
        if (bias)
          c.inputs.push_back(randomTensor({p.o}, dt));
        Shape out;
        std::vector<Vec> in0;
        for (auto &t : c.inputs)
          in0.push_back(t.values());
        convRef(in0, p, bias, out);
        c.outShape = out;
        c.outDtype = dt;
        c.ref = [=](const std::vector<Vec> &in) {
          Shape o;
          return convRef(in, p, bias, o);
        };
        c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
          Tensor none;
          Tensor &b = bias ? in[2] : none;
          return ampc_conv2d_fwd(
              ctx, T(y), T(in[0]), T(in[1]), bias ? b.data() : nullptr, b.dtype,
              b.dims(), b.rank(), p.sh, p.sw, p.ph, p.pw, p.dh, p.dw, p.groups);
        };
        if (dt == AMPC_F32)
          c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                      std::vector<Tensor> &in, Tensor &) {
            Tensor none;
            Tensor &db = bias ? g[2] : none;
            return ampc_conv2d_bwd(
                ctx, T(g[0]), T(g[1]), bias ? db.data() : nullptr, db.dtype,
                db.dims(), db.rank(), T(dy), T(in[0]), T(in[1]), p.sh, p.sw,
                p.ph, p.pw, p.dh, p.dw, p.groups);
          };
        runCheck(ctx, c);
      }
}

// -------------------------------------------------------------- pooling --

TEST_F(Kernels, Pooling) {
  struct PCase {
    int64_t kh, kw, sh, sw, ph, pw;
  };
  const PCase cases[] = {
      {2, 2, 2, 2, 0, 0}, {3, 3, 1, 1, 1, 1}, {3, 2, 2, 1, 1, 0}};
  Shape xs = {2, 2, 6, 5};
  for (bool isMax : {true, false})
    for (const PCase &p : cases) {
      int64_t oh = (6 + 2 * p.ph - p.kh) / p.sh + 1,
              ow = (5 + 2 * p.pw - p.kw) / p.sw + 1;
      OpCheck c;
      c.name = std::string(isMax ? "max_pool2d" : "avg_pool2d") + " k" +
               std::to_string(p.kh);
      c.inputs.push_back(randomTensor(xs, AMPC_F32, -2, 2));
      c.outShape = {2, 2, oh, ow};
      c.ref = [=](const std::vector<Vec> &in) {
        Vec y(4 * oh * ow);
        for (int64_t pl = 0; pl < 4; ++pl)
          for (int64_t y0 = 0; y0 < oh; ++y0)
            for (int64_t x0 = 0; x0 < ow; ++x0) {
              double m = -INFINITY, s = 0;
              for (int64_t ky = 0; ky < p.kh; ++ky)
                for (int64_t kx = 0; kx < p.kw; ++kx) {
                  int64_t iy = y0 * p.sh - p.ph + ky,
                          ix = x0 * p.sw - p.pw + kx;
                  if (iy < 0 || iy >= 6 || ix < 0 || ix >= 5)
                    continue;
                  double v = in[0][(pl * 6 + iy) * 5 + ix];
                  m = std::max(m, v);
                  s += v;
                }
              y[(pl * oh + y0) * ow + x0] = isMax ? m : s / (p.kh * p.kw);
            }
        return y;
      };
      c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
        return isMax ? ampc_max_pool2d_fwd(ctx, T(y), T(in[0]), p.kh, p.kw,
                                           p.sh, p.sw, p.ph, p.pw)
                     : ampc_avg_pool2d_fwd(ctx, T(y), T(in[0]), p.kh, p.kw,
                                           p.sh, p.sw, p.ph, p.pw);
      };
      c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                  std::vector<Tensor> &in, Tensor &) {
        return isMax ? ampc_max_pool2d_bwd(ctx, T(g[0]), T(dy), T(in[0]), p.kh,
                                           p.kw, p.sh, p.sw, p.ph, p.pw)
                     : ampc_avg_pool2d_bwd(ctx, T(g[0]), T(dy), T(in[0]), p.kh,
                                           p.kw, p.sh, p.sw, p.ph, p.pw);
      };
      runCheck(ctx, c);
    }
}

// ----------------------------------------------------------- shape ops --

TEST_F(Kernels, TransposeAndPermute) {
  Shape xs = {2, 3, 4};
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{2, 0, 1}, std::vector<int64_t>{},
        std::vector<int64_t>{0, 2, 1}, std::vector<int64_t>{-1, -3, -2}}) {
    std::vector<int64_t> p =
        perm.empty() ? std::vector<int64_t>{0, 2, 1} : perm;
    for (auto &v : p)
      v = v < 0 ? v + 3 : v;
    OpCheck c;
    c.name = "transpose";
    c.inputs.push_back(randomTensor(xs, AMPC_F32));
    c.outShape = {xs[p[0]], xs[p[1]], xs[p[2]]};
    Shape ys = c.outShape;
    c.ref = [=](const std::vector<Vec> &in) {
      Vec y(24);
      for (int64_t i = 0; i < 24; ++i) {
        Shape yi = unravel(i, ys), xi(3);
        for (int d = 0; d < 3; ++d)
          xi[p[d]] = yi[d];
        y[i] = in[0][(xi[0] * 3 + xi[1]) * 4 + xi[2]];
      }
      return y;
    };
    c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
      return ampc_transpose_fwd(ctx, T(y), T(in[0]), perm.data(),
                                static_cast<int32_t>(perm.size()));
    };
    c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                std::vector<Tensor> &, Tensor &) {
      return ampc_transpose_bwd(ctx, T(g[0]), T(dy), perm.data(),
                                static_cast<int32_t>(perm.size()));
    };
    runCheck(ctx, c);
  }
}

TEST_F(Kernels, ConcatSliceReshape) {
  for (int dim : {0, 1, -1}) {
    Shape as = {2, 3, 4}, bs = as;
    int d = dim < 0 ? dim + 3 : dim;
    bs[d] = 2;
    Shape ys = as;
    ys[d] += 2;
    OpCheck c;
    c.name = "concat dim " + std::to_string(dim);
    c.inputs.push_back(randomTensor(as, AMPC_F32));
    c.inputs.push_back(randomTensor(bs, AMPC_F16));
    c.outShape = ys;
    c.ref = [=](const std::vector<Vec> &in) {
      Vec y(numel(ys));
      for (int64_t i = 0; i < numel(ys); ++i) {
        Shape idx = unravel(i, ys);
        bool first = idx[d] < as[d];
        const Shape &s = first ? as : bs;
        if (!first)
          idx[d] -= as[d];
        y[i] =
            (first ? in[0] : in[1])[(idx[0] * s[1] + idx[1]) * s[2] + idx[2]];
      }
      return y;
    };
    c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
      const void *xs[2] = {in[0].data(), in[1].data()};
      ampc_dtype dts[2] = {in[0].dtype, in[1].dtype};
      const int64_t *shapes[2] = {in[0].dims(), in[1].dims()};
      return ampc_concat_fwd(ctx, T(y), xs, dts, shapes, 2, dim);
    };
    c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                std::vector<Tensor> &, Tensor &) {
      void *dxs[2] = {g[0].data(), g[1].data()};
      ampc_dtype dts[2] = {g[0].dtype, g[1].dtype};
      const int64_t *shapes[2] = {g[0].dims(), g[1].dims()};
      return ampc_concat_bwd(ctx, dxs, dts, shapes, 2, T(dy), dim);
    };
    runCheck(ctx, c);
  }
  struct SCase {
    int64_t dim, start, end, len;
  };
  for (SCase s : {SCase{1, 1, 3, 2}, SCase{-1, -3, 100, 3}, SCase{0, 0, 1, 1},
                  SCase{2, 3, 1, 0}}) {
    Shape xs = {2, 3, 5};
    int d = s.dim < 0 ? static_cast<int>(s.dim) + 3 : static_cast<int>(s.dim);
    Shape ys = xs;
    ys[d] = s.len;
    int64_t start = s.start < 0 ? s.start + xs[d] : s.start;
    OpCheck c;
    c.name = "slice dim " + std::to_string(s.dim);
    c.inputs.push_back(randomTensor(xs, AMPC_F32));
    c.outShape = ys;
    c.ref = [=](const std::vector<Vec> &in) {
      Vec y(numel(ys));
      for (int64_t i = 0; i < numel(ys); ++i) {
        Shape idx = unravel(i, ys);
        idx[d] += start;
        y[i] = in[0][(idx[0] * 3 + idx[1]) * 5 + idx[2]];
      }
      return y;
    };
    c.fwd = [=](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
      return ampc_slice_fwd(ctx, T(y), T(in[0]), s.dim, s.start, s.end);
    };
    c.bwd = [=](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                std::vector<Tensor> &, Tensor &) {
      return ampc_slice_bwd(ctx, T(g[0]), T(dy), s.dim, s.start, s.end);
    };
    runCheck(ctx, c);
  }
  // reshape: a no-op on the same buffer, a (converting) copy otherwise.
  Tensor x = randomTensor({2, 6}, AMPC_F32), y({3, 4}, AMPC_F16);
  ASSERT_OK(ampc_reshape_fwd(ctx, x.data(), x.dtype, y.dims(), y.rank(), T(x)));
  ASSERT_OK(ampc_reshape_fwd(ctx, T(y), T(x)));
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(y.get(i), static_cast<double>(ampc::f16ToF32(
                            ampc::f32ToF16(static_cast<float>(x.get(i))))));
  Tensor dx({2, 6}, AMPC_F32);
  ASSERT_OK(ampc_reshape_bwd(ctx, T(dx), T(y)));
  EXPECT_EQ(dx.values(), y.values());
}

TEST_F(Kernels, EmbeddingForwardAndScatterAdd) {
  for (ampc_dtype idt : {AMPC_I32, AMPC_I64}) {
    Tensor ids({2, 3}, idt);
    int64_t vals[6] = {1, 4, 1, 0, 4, 4};
    for (int i = 0; i < 6; ++i)
      ids.set(i, static_cast<double>(vals[i]));
    OpCheck c;
    c.name = "embedding";
    c.inputs.push_back(randomTensor({5, 3}, AMPC_F32));
    c.outShape = {2, 3, 3};
    c.ref = [=](const std::vector<Vec> &in) {
      Vec y(18);
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 3; ++j)
          y[i * 3 + j] = in[0][vals[i] * 3 + j];
      return y;
    };
    c.fwd = [ids](ampc_context ctx, Tensor &y,
                  std::vector<Tensor> &in) mutable {
      return ampc_embedding_fwd(ctx, T(y), T(in[0]), T(ids), -1);
    };
    c.bwd = [ids](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                  std::vector<Tensor> &, Tensor &) mutable {
      return ampc_embedding_bwd(ctx, T(g[0]), T(dy), T(ids));
    };
    runCheck(ctx, c);
  }
}

// --------------------------------------------------------------- losses --

TEST_F(Kernels, CrossEntropy) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    Tensor labels({6}, AMPC_I64);
    int64_t lab[6] = {0, 3, 2, -100, 4, 1};
    for (int i = 0; i < 6; ++i)
      labels.set(i, static_cast<double>(lab[i]));
    OpCheck c;
    c.name = "cross_entropy dtype " + std::to_string(dt);
    c.inputs.push_back(randomTensor({6, 5}, dt, -3, 3));
    c.outShape = {};
    c.ref = [=](const std::vector<Vec> &in) {
      double total = 0;
      int valid = 0;
      for (int r = 0; r < 6; ++r) {
        if (lab[r] == -100)
          continue;
        ++valid;
        Vec row(in[0].begin() + r * 5, in[0].begin() + r * 5 + 5);
        total -= softmaxRef(row, {5}, 0, true)[lab[r]];
      }
      return Vec{total / valid};
    };
    c.fwd = [labels](ampc_context ctx, Tensor &y,
                     std::vector<Tensor> &in) mutable {
      return ampc_cross_entropy_fwd(ctx, T(y), T(in[0]), T(labels), -1);
    };
    c.bwd = [labels](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
                     std::vector<Tensor> &in, Tensor &) mutable {
      return ampc_cross_entropy_bwd(ctx, T(g[0]), T(dy), T(in[0]), T(labels));
    };
    runCheck(ctx, c);
  }
}

TEST_F(Kernels, MseLoss) {
  OpCheck c;
  c.name = "mse_loss";
  c.inputs.push_back(randomTensor({4, 5}, AMPC_F32));
  c.inputs.push_back(randomTensor({4, 5}, AMPC_F16));
  c.outShape = {};
  c.ref = [](const std::vector<Vec> &in) {
    double s = 0;
    for (size_t i = 0; i < in[0].size(); ++i)
      s += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    return Vec{s / in[0].size()};
  };
  c.fwd = [](ampc_context ctx, Tensor &y, std::vector<Tensor> &in) {
    return ampc_mse_loss_fwd(ctx, T(y), T(in[0]), T(in[1]));
  };
  c.bwd = [](ampc_context ctx, std::vector<Tensor> &g, Tensor &dy,
             std::vector<Tensor> &in, Tensor &) {
    return ampc_mse_loss_bwd(ctx, T(g[0]), T(g[1]), T(dy), T(in[0]), T(in[1]));
  };
  runCheck(ctx, c);
}

// ---------------------------------------------------- fill, init, copies --

TEST_F(Kernels, FillAndMemory) {
  Tensor y({7}, AMPC_BF16), yi({3}, AMPC_I32);
  ASSERT_OK(ampc_fill(ctx, y.data(), y.dtype, 7, 1.0));
  EXPECT_EQ(y.values(), Vec(7, 1.0));
  ASSERT_OK(ampc_fill(ctx, yi.data(), AMPC_I32, 3, -4));
  EXPECT_EQ(yi.values(), Vec(3, -4.0));
  ampc_arena arena;
  ASSERT_OK(ampc_arena_create(ctx, 1000, &arena));
  void *base = nullptr;
  size_t size = 0;
  ASSERT_OK(ampc_arena_base(arena, &base));
  ASSERT_OK(ampc_arena_size(arena, &size));
  EXPECT_EQ(size, 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 256, 0u);
  ASSERT_OK(ampc_memset(ctx, base, 0x7f, 1000));
  std::vector<uint8_t> host(1000);
  ASSERT_OK(
      ampc_memcpy(ctx, host.data(), base, 1000, AMPC_MEMCPY_DEVICE_TO_HOST));
  EXPECT_EQ(host[999], 0x7f);
  ASSERT_OK(ampc_arena_destroy(arena));
  void *p = nullptr;
  ASSERT_OK(ampc_malloc(ctx, 64, &p));
  ASSERT_OK(ampc_free(ctx, p));
}

// ------------------------------------- 16-bit operands over many chunks --
//
// Losses, embedding, dropout, gradient accumulation and the non-finite
// check widen 16-bit operands into f32 a chunk at a time: every result has
// the bits of the element-by-element definition (the scalar conversions,
// the same f32/f64 expression in element order, one rounding to the stored
// type), over sizes that end inside a chunk.

/// v rounded once to dt, as f32.
float storedAs(ampc_dtype dt, float v) {
  switch (dt) {
  case AMPC_F16:
    return ampc::f16ToF32(ampc::f32ToF16(v));
  case AMPC_BF16:
    return ampc::bf16ToF32(ampc::f32ToBf16(v));
  default:
    return v;
  }
}

/// Element i of t as f32 (exact for every float dtype).
float at(const Tensor &t, int64_t i) {
  return ampc::loadF32(t.bytes.data(), t.dtype, i);
}

/// Compares t's bits with want[i] stored as t's dtype.
void expectStored(const Tensor &t, const std::vector<float> &want) {
  Tensor w(t.shape, t.dtype);
  for (int64_t i = 0; i < t.size(); ++i)
    ampc::storeF32(w.data(), w.dtype, i, want[i]);
  for (int64_t i = 0; i < t.size(); ++i)
    ASSERT_EQ(memcmp(t.bytes.data() + i * elemSize(t.dtype),
                     w.bytes.data() + i * elemSize(t.dtype), elemSize(t.dtype)),
              0)
        << "element " << i << ": " << at(t, i) << " != " << at(w, i);
}

TEST_F(Kernels, MseLoss16BitExact) {
  const int64_t n = 5003;
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : "bf16");
    Tensor a = randomTensor({n}, dt, -3, 3), b = randomTensor({n}, dt, -3, 3);
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      float d = at(a, i) - at(b, i);
      s += static_cast<double>(d) * d;
    }
    for (ampc_dtype lt : {AMPC_F32, dt}) {
      Tensor loss({}, lt);
      ASSERT_OK(ampc_mse_loss_fwd(ctx, T(loss), T(a), T(b)));
      expectStored(loss, {static_cast<float>(s / static_cast<double>(n))});
    }
    Tensor dloss({}, dt), da({n}, dt), db({n}, dt);
    dloss.set(0, 0.75);
    ASSERT_OK(ampc_mse_loss_bwd(ctx, T(da), T(db), T(dloss), T(a), T(b)));
    std::vector<float> wa(n), wb(n);
    float norm = 2.0f / static_cast<float>(n), g = at(dloss, 0);
    for (int64_t i = 0; i < n; ++i) {
      wa[i] = norm * (at(a, i) - at(b, i)) * g;
      wb[i] = -wa[i];
    }
    expectStored(da, wa);
    expectStored(db, wb);
  }
}

TEST_F(Kernels, Embedding16BitExact) {
  const int64_t vocab = 7, dim = 1537, rows = 6;
  const int64_t vals[rows] = {3, 0, 9, 3, 6, 3}; // 9: out of range
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : "bf16");
    Tensor ids({rows}, AMPC_I64);
    for (int64_t i = 0; i < rows; ++i)
      ids.set(i, static_cast<double>(vals[i]));
    Tensor table = randomTensor({vocab, dim}, dt, -2, 2), y({rows, dim}, dt);
    ASSERT_OK(ampc_embedding_fwd(ctx, T(y), T(table), T(ids), -1));
    std::vector<float> wy(rows * dim, 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < dim && vals[i] < vocab; ++j)
        wy[i * dim + j] = at(table, vals[i] * dim + j);
    expectStored(y, wy);

    Tensor dy = randomTensor({rows, dim}, dt, -2, 2), dtable({vocab, dim}, dt);
    ASSERT_OK(ampc_embedding_bwd(ctx, T(dtable), T(dy), T(ids)));
    std::vector<float> acc(vocab * dim, 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < dim && vals[i] < vocab; ++j)
        acc[vals[i] * dim + j] += at(dy, i * dim + j);
    expectStored(dtable, acc);
  }
}

TEST_F(Kernels, Dropout16BitExact) {
  const int64_t n = 4099;
  Tensor step({}, AMPC_I32);
  step.set(0, 5);
  // Each element's factor (0 or 1 / (1 - p)), element by element.
  const float p = static_cast<float>(0.3), scale = 1.0f / (1.0f - p);
  std::vector<float> factor(n);
  for (int64_t i = 0; i < n; ++i)
    factor[i] = ampc::dropoutFactor(11, ampc::dropoutStream(2, 5), i, p, scale);
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16, AMPC_F32}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : dt == AMPC_BF16 ? "bf16" : "f32");
    Tensor x = randomTensor({n}, dt, -3, 3), y({n}, dt);
    ASSERT_OK(ampc_dropout_fwd(ctx, T(y), T(x), step.data(), 11, 0.3, 2));
    std::vector<float> want(n);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      want[i] = at(x, i) * factor[i];
      kept += factor[i] != 0.0f;
    }
    EXPECT_GT(kept, n / 2);
    EXPECT_LT(kept, n);
    expectStored(y, want);
  }
}

TEST_F(Kernels, GradAccumulate16BitExact) {
  const int64_t n = 3001;
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : "bf16");
    Tensor g1 = randomTensor({n}, dt, -2, 2), g2 = randomTensor({n}, dt, -2, 2);
    Tensor acc({n}, AMPC_F32);
    void *accs[1] = {acc.data()};
    ampc_dtype dts[1] = {dt};
    int64_t numels[1] = {n};
    int32_t micro = 0;
    void *grads[1] = {g1.data()};
    ASSERT_OK(
        ampc_grad_accumulate(ctx, accs, grads, dts, numels, 1, &micro, 2));
    std::vector<float> want(n);
    for (int64_t i = 0; i < n; ++i)
      want[i] = at(g1, i);
    expectStored(acc, want);
    grads[0] = g2.data();
    ASSERT_OK(
        ampc_grad_accumulate(ctx, accs, grads, dts, numels, 1, &micro, 2));
    for (int64_t i = 0; i < n; ++i)
      want[i] = at(g1, i) + at(g2, i);
    expectStored(acc, want);
    EXPECT_EQ(micro, 0);
  }
}

TEST_F(Kernels, CheckNonfinite16BitPastFirstChunk) {
  const int64_t n = 3001;
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : "bf16");
    Tensor x = randomTensor({n}, dt, -60000, 60000);
    for (double bad : {INFINITY, -INFINITY, NAN}) {
      x.set(2999, bad);
      int32_t site = 0;
      ASSERT_OK(ampc_check_nonfinite(ctx, x.data(), dt, 2999, 5)); // not it
      ASSERT_OK(ampc_check_read(ctx, AMPC_CHECK_NONFINITE, 1, &site));
      EXPECT_EQ(site, -1);
      ASSERT_OK(ampc_check_nonfinite(ctx, x.data(), dt, n, 5));
      ASSERT_OK(ampc_check_read(ctx, AMPC_CHECK_NONFINITE, 1, &site));
      EXPECT_EQ(site, 5);
      x.set(2999, 1.0);
    }
  }
}

} // namespace
