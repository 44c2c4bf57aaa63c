//===- TGMatmulOps.cpp - mm, bmm, mv, addmm family: inference, gradients -===//
//
// Result types and gradient rules of the ops of TGMatmulOps.td: the
// fixed-rank products (mm, bmm, mv) and the GEMM-plus-add family (addmm,
// baddbmm, addbmm, addmv, addr). Messages follow PyTorch's checks; the
// gradients are PyTorch's autograd formulas (the scale by alpha or beta after
// the product).
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"
#include "InferSupport.h"

#include "ampc/Dialect/TG/TGInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

//===----------------------------------------------------------------------===//
// mm, bmm, mv
//===----------------------------------------------------------------------===//

/// torch.mm / torch.bmm / torch.mv: the ranks each operand must have, the
/// inner (and batch) dims, and the result.
static LogicalResult inferFixedMatmul(StringRef name, int64_t ra, int64_t rb,
                                      std::optional<Location> loc, Value lhs,
                                      Value rhs,
                                      SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto a = tensorType(lhs), b = tensorType(rhs);
  if (!a || !b)
    return err("operands must be ranked tensors");
  if (a.getRank() != ra)
    return err("operand 1 must be ", ra, "-D, got ", a);
  if (b.getRank() != rb)
    return err("operand 2 must be ", rb, "-D, got ", b);
  int64_t k = a.getDimSize(ra - 1), kb = b.getDimSize(rb == 1 ? 0 : rb - 2);
  SmallVector<int64_t> shape;
  if (ra == 3) {
    if (a.getDimSize(0) != b.getDimSize(0))
      return err("needs equal batch sizes, found ", a.getDimSize(0), " and ",
                 b.getDimSize(0));
    shape.push_back(a.getDimSize(0));
  }
  if (k != kb)
    return err("inner dims differ: ", a, " and ", b);
  shape.push_back(a.getDimSize(ra - 2));
  if (rb > 1)
    shape.push_back(b.getDimSize(rb - 1));
  return pushPromoted(err, {lhs, rhs}, {shape}, types);
}

LogicalResult MmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  return inferFixedMatmul("mm", 2, 2, loc, adaptor.getLhs(), adaptor.getRhs(),
                          types);
}

LogicalResult BmmOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferFixedMatmul("bmm", 3, 3, loc, adaptor.getLhs(), adaptor.getRhs(),
                          types);
}

LogicalResult MvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  return inferFixedMatmul("mv", 2, 1, loc, adaptor.getLhs(), adaptor.getRhs(),
                          types);
}

// mm and bmm: da = dy @ b^T, db = a^T @ dy with the same op.
template <typename OpTy>
static LogicalResult fixedMatmulGradient(OpTy op, OpBuilder &builder,
                                         ArrayRef<Value> resultGrads,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, op);
  if (wanted[0])
    operandGrads[0] = g.fit(
        OpTy::create(builder, g.loc, dy, g.transposeLast2(op.getRhs())),
        op.getLhs());
  if (wanted[1])
    operandGrads[1] = g.fit(
        OpTy::create(builder, g.loc, g.transposeLast2(op.getLhs()), dy),
        op.getRhs());
  return success();
}

LogicalResult MmOp::buildGradient(OpBuilder &builder,
                                  ArrayRef<Value> resultGrads,
                                  ArrayRef<bool> wanted,
                                  SmallVectorImpl<Value> &operandGrads) {
  return fixedMatmulGradient(*this, builder, resultGrads, wanted,
                             operandGrads);
}

LogicalResult BmmOp::buildGradient(OpBuilder &builder,
                                   ArrayRef<Value> resultGrads,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &operandGrads) {
  return fixedMatmulGradient(*this, builder, resultGrads, wanted,
                             operandGrads);
}

// mv: da = outer(dy, v) (an mm of [n, 1] and [1, m]), dv = a^T @ dy (mv).
LogicalResult MvOp::buildGradient(OpBuilder &builder,
                                  ArrayRef<Value> resultGrads,
                                  ArrayRef<bool> wanted,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(getOperation()->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, *this);
  Value a = getLhs(), v = getRhs();
  if (wanted[0]) {
    int64_t n = GradBuilder::type(dy).getDimSize(0),
            m = GradBuilder::type(v).getDimSize(0);
    operandGrads[0] = g.fit(MmOp::create(builder, g.loc, g.reshape(dy, {n, 1}),
                                         g.reshape(v, {1, m})),
                            a);
  }
  if (wanted[1])
    operandGrads[1] =
        g.fit(MvOp::create(builder, g.loc, g.transposeLast2(a), dy), v);
  return success();
}

//===----------------------------------------------------------------------===//
// The GEMM-plus-add family: inference
//===----------------------------------------------------------------------===//

namespace {
/// Which product an add* op computes.
enum class Product { Mm, Bmm, SumBmm, Mv, Outer };
} // namespace

/// The result type of `beta * input + alpha * product(lhs, rhs)`: checks the
/// ranks and inner dims of the product (PyTorch's messages, with the
/// operands' shapes) and that `input` broadcasts to the product's shape.
static LogicalResult inferAddGemm(StringRef name, Product kind,
                                  std::optional<Location> loc, Value input,
                                  Value lhs, Value rhs,
                                  SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto c = tensorType(input), a = tensorType(lhs), b = tensorType(rhs);
  if (!c || !a || !b)
    return err("operands must be ranked tensors");
  static const int64_t ranks[][2] = {{2, 2}, {3, 3}, {3, 3}, {2, 1}, {1, 1}};
  static const char *names[][2] = {{"mat1", "mat2"},
                                   {"batch1", "batch2"},
                                   {"batch1", "batch2"},
                                   {"mat", "vec"},
                                   {"vec1", "vec2"}};
  int idx = static_cast<int>(kind);
  for (int i = 0; i < 2; ++i) {
    RankedTensorType t = i ? b : a;
    if (t.getRank() != ranks[idx][i])
      return err("'", names[idx][i], "' (operand ", i + 2, ") must be ",
                 ranks[idx][i], "-D, got ", t);
  }
  SmallVector<int64_t> shape;
  switch (kind) {
  case Product::Mm:
    if (a.getDimSize(1) != b.getDimSize(0))
      return err("mat1 and mat2 shapes cannot be multiplied (", a, " and ", b,
                 ")");
    shape = {a.getDimSize(0), b.getDimSize(1)};
    break;
  case Product::Bmm:
  case Product::SumBmm:
    if (a.getDimSize(0) != b.getDimSize(0))
      return err("batch1 ", a, " and batch2 ", b,
                 " must have the same batch size");
    if (a.getDimSize(2) != b.getDimSize(1))
      return err("batch1 ", a, " and batch2 ", b,
                 " shapes cannot be multiplied");
    if (kind == Product::Bmm)
      shape = {a.getDimSize(0), a.getDimSize(1), b.getDimSize(2)};
    else
      shape = {a.getDimSize(1), b.getDimSize(2)};
    break;
  case Product::Mv:
    if (a.getDimSize(1) != b.getDimSize(0))
      return err("mat ", a, " and vec ", b, " shapes cannot be multiplied");
    shape = {a.getDimSize(0)};
    break;
  case Product::Outer:
    shape = {a.getDimSize(0), b.getDimSize(0)};
    break;
  }
  auto joined = broadcastShapes(c.getShape(), shape);
  if (!joined || ArrayRef<int64_t>(*joined) != ArrayRef<int64_t>(shape))
    return err("input ", c, " does not broadcast to the product's shape ",
               shapeToString(shape));
  return pushPromoted(err, {input, lhs, rhs}, {shape}, types);
}

#define AMPC_ADD_GEMM_INFER(OP, NAME, KIND)                                    \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferAddGemm(NAME, Product::KIND, loc, adaptor.getInput(),          \
                        adaptor.getLhs(), adaptor.getRhs(), types);            \
  }
AMPC_ADD_GEMM_INFER(AddmmOp, "addmm", Mm)
AMPC_ADD_GEMM_INFER(BaddbmmOp, "baddbmm", Bmm)
AMPC_ADD_GEMM_INFER(AddbmmOp, "addbmm", SumBmm)
AMPC_ADD_GEMM_INFER(AddmvOp, "addmv", Mv)
AMPC_ADD_GEMM_INFER(AddrOp, "addr", Outer)
#undef AMPC_ADD_GEMM_INFER

//===----------------------------------------------------------------------===//
// The GEMM-plus-add family: gradients
//===----------------------------------------------------------------------===//

namespace {
/// The rule shared by the add* ops: `beta * dy` summed to `input`'s shape,
/// and the product gradients of `a` and `b`, each one GEMM of the same
/// family with `alpha` folded in (beta 0, so its `input` is a zero that is
/// never read): the GEMM scales before its one rounding, as the reference's
/// `alpha * (dy @ b^T)` does, and no separate multiply runs.
template <typename OpTy, typename DA, typename DB>
LogicalResult addGemmGradient(OpTy op, OpBuilder &builder,
                              ArrayRef<Value> resultGrads,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &operandGrads, DA da,
                              DB db) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, op);
  double beta = op.getBeta().convertToDouble();
  double alpha = op.getAlpha().convertToDouble();
  if (wanted[0])
    operandGrads[0] = g.fit(g.scale(dy, beta), op.getInput());
  if (wanted[1])
    operandGrads[1] = g.fit(da(g, dy, op.getLhs(), op.getRhs(), alpha),
                            op.getLhs());
  if (wanted[2])
    operandGrads[2] = g.fit(db(g, dy, op.getLhs(), op.getRhs(), alpha),
                            op.getRhs());
  return success();
}

/// `alpha * product(x, y)` as the add* op `OpTy` with beta 0.
template <typename OpTy>
Value scaledProduct(GradBuilder &g, Value x, Value y, double alpha) {
  Value zero = g.scalar(0.0, x);
  return OpTy::create(g.b, g.loc, zero, x, y, g.b.getF64FloatAttr(0.0),
                      g.b.getF64FloatAttr(alpha));
}
} // namespace

// addmm: da = alpha * dy @ b^T, db = alpha * a^T @ dy.
LogicalResult AddmmOp::buildGradient(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGrads) {
  auto da = [](GradBuilder &g, Value dy, Value, Value b, double alpha) {
    return scaledProduct<AddmmOp>(g, dy, g.transposeLast2(b), alpha);
  };
  auto db = [](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<AddmmOp>(g, g.transposeLast2(a), dy, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         db);
}

// baddbmm: the same, batched.
LogicalResult BaddbmmOp::buildGradient(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &operandGrads) {
  auto da = [](GradBuilder &g, Value dy, Value, Value b, double alpha) {
    return scaledProduct<BaddbmmOp>(g, dy, g.transposeLast2(b), alpha);
  };
  auto db = [](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<BaddbmmOp>(g, g.transposeLast2(a), dy, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         db);
}

// addbmm: dy is shared by every batch entry: broadcast it to [B, m, n] and
// take baddbmm's rule (PyTorch's grad.unsqueeze(0).expand(...).bmm(...)).
LogicalResult AddbmmOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  auto expand = [](GradBuilder &g, Value dy, Value a) {
    int64_t batch = GradBuilder::type(a).getDimSize(0);
    ArrayRef<int64_t> s = GradBuilder::type(dy).getShape();
    return BroadcastToOp::create(g.b, g.loc, dy,
                                 ArrayRef<int64_t>{batch, s[0], s[1]})
        .getResult();
  };
  auto da = [expand](GradBuilder &g, Value dy, Value a, Value b, double alpha) {
    return scaledProduct<BaddbmmOp>(g, expand(g, dy, a), g.transposeLast2(b),
                                    alpha);
  };
  auto db = [expand](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<BaddbmmOp>(g, g.transposeLast2(a), expand(g, dy, a),
                                    alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         db);
}

// addmv: da = alpha * outer(dy, v) (addr), dv = alpha * a^T @ dy (addmv).
LogicalResult AddmvOp::buildGradient(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGrads) {
  auto da = [](GradBuilder &g, Value dy, Value, Value v, double alpha) {
    return scaledProduct<AddrOp>(g, dy, v, alpha);
  };
  auto dv = [](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<AddmvOp>(g, g.transposeLast2(a), dy, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         dv);
}

// addr: du = alpha * dy @ v, dv = alpha * dy^T @ u (addmv both).
LogicalResult AddrOp::buildGradient(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto du = [](GradBuilder &g, Value dy, Value, Value v, double alpha) {
    return scaledProduct<AddmvOp>(g, dy, v, alpha);
  };
  auto dv = [](GradBuilder &g, Value dy, Value u, Value, double alpha) {
    return scaledProduct<AddmvOp>(g, g.transposeLast2(dy), u, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, du,
                         dv);
}
