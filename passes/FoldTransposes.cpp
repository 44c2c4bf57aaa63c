//===- FoldTransposes.cpp - transposes and permutes folded into GEMMs -----===//
//
// A transpose that feeds a matrix product, or that the product's result
// feeds, becomes part of a tg.permuted_matmul: the GEMM reads and writes
// through strides instead of a materialised copy. A fold is made only where
// the strided GEMM exists (StridedGemm.h), so the lowering never meets one
// it cannot express. The pass description in Passes.td states what the
// fold guarantees.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/StridedGemm.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ampc {
#define GEN_PASS_DEF_FOLDTRANSPOSES
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;

namespace {

SmallVector<int64_t> identity(int64_t rank) {
  SmallVector<int64_t> p;
  for (int64_t i = 0; i < rank; ++i)
    p.push_back(i);
  return p;
}

/// outer applied to the result of inner: dim i is dim inner[outer[i]].
SmallVector<int64_t> compose(ArrayRef<int64_t> inner, ArrayRef<int64_t> outer) {
  SmallVector<int64_t> p;
  for (int64_t i : outer)
    p.push_back(inner[i]);
  return p;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A transpose that only moves elements: the same element type in and out
/// (a transpose storing another type also rounds, which must stay).
tg::TransposeOp plainTranspose(Value v) {
  auto t = v.getDefiningOp<tg::TransposeOp>();
  if (!t || getElementTypeOrSelf(t.getInput().getType()) !=
                getElementTypeOrSelf(t.getType()))
    return {};
  return t;
}

/// A matrix product as the fold sees it: operands with the permutations
/// applied to them, and the permutation of the stored result.
struct Product {
  Value lhs, rhs;
  SmallVector<int64_t> lhsPerm, rhsPerm, resultPerm;
  Type resultType;
  /// The rows of each GEMM the unfolded product ran (ampc_matmul_fwd runs
  /// a batch of row blocks against one shared rhs as one taller GEMM).
  /// OpenBLAS's sums depend on the GEMM's shape, not on its strides or
  /// trans flags: a fold keeps the shape so every result keeps its bits.
  int64_t callRows = 0;

  std::optional<tg::StridedGemm> plan() const {
    return tg::planStridedGemm(shapeOf(lhs), lhsPerm, shapeOf(rhs), rhsPerm,
                               cast<RankedTensorType>(resultType).getShape(),
                               resultPerm);
  }
  bool plannable() const {
    std::optional<tg::StridedGemm> g = plan();
    return g && g->m == callRows;
  }
};

int64_t numel(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The product `op` computes, if it is one the fold handles: tg.matmul and
/// its fixed-rank spellings mm and bmm on operands of rank >= 2, and
/// tg.permuted_matmul itself.
std::optional<Product> productOf(Operation *op) {
  if (auto p = dyn_cast<tg::PermutedMatmulOp>(op)) {
    Product prod{p.getLhs(),
                 p.getRhs(),
                 SmallVector<int64_t>(p.getLhsPerm()),
                 SmallVector<int64_t>(p.getRhsPerm()),
                 SmallVector<int64_t>(p.getResultPerm()),
                 p.getType()};
    // Made by this pass: its GEMMs have the unfolded product's rows.
    std::optional<tg::StridedGemm> g = prod.plan();
    if (!g)
      return std::nullopt;
    prod.callRows = g->m;
    return prod;
  }
  if (!isa<tg::MatmulOp, tg::MmOp, tg::BmmOp>(op) || op->getNumOperands() != 2)
    return std::nullopt;
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto rt = cast<RankedTensorType>(op->getResult(0).getType());
  ArrayRef<int64_t> ls = shapeOf(lhs), rs = shapeOf(rhs);
  if (ls.size() < 2 || rs.size() < 2)
    return std::nullopt;
  Product prod{lhs, rhs, identity(ls.size()), identity(rs.size()),
               identity(rt.getRank()), rt};
  int64_t m = ls[ls.size() - 2];
  int64_t outBatch = numel(rt.getShape().drop_back(2));
  bool tall = numel(rs.drop_back(2)) == 1 && numel(ls.drop_back(2)) == outBatch;
  prod.callRows = tall ? m * outBatch : m;
  return prod;
}

/// Replaces operand `which` (0: lhs, 1: rhs) of `p` by the deepest input of
/// the chain of transposes behind it for which the strided GEMM exists.
bool foldOperand(Product &p, int which) {
  Value &v = which == 0 ? p.lhs : p.rhs;
  SmallVector<int64_t> &perm = which == 0 ? p.lhsPerm : p.rhsPerm;
  bool changed = false;
  Product trial = p;
  Value &tv = which == 0 ? trial.lhs : trial.rhs;
  SmallVector<int64_t> &tperm = which == 0 ? trial.lhsPerm : trial.rhsPerm;
  while (tg::TransposeOp t = plainTranspose(tv)) {
    tperm = compose(t.getPerm(), tperm);
    tv = t.getInput();
    if (trial.plannable()) {
      v = tv;
      perm = tperm;
      changed = true;
    }
  }
  return changed;
}

/// Folds the result's transpose (its only user) into `p`.
tg::TransposeOp foldResult(Product &p, Operation *op) {
  if (!op->getResult(0).hasOneUse())
    return {};
  auto t = dyn_cast<tg::TransposeOp>(*op->getResult(0).getUsers().begin());
  if (!t || !plainTranspose(t.getResult()))
    return {};
  Product trial = p;
  trial.resultPerm = compose(p.resultPerm, t.getPerm());
  trial.resultType = t.getType();
  if (!trial.plannable())
    return {};
  p = trial;
  return t;
}

struct FoldIntoGemm : RewritePattern {
  FoldIntoGemm(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rw) const override {
    std::optional<Product> p = productOf(op);
    if (!p)
      return failure();

    bool lhs = foldOperand(*p, 0);
    bool rhs = foldOperand(*p, 1);
    tg::TransposeOp after = foldResult(*p, op);
    if (!lhs && !rhs && !after)
      return rw.notifyMatchFailure(op, "no transpose to fold");
    rw.setInsertionPoint(after ? after.getOperation() : op);
    auto folded = tg::PermutedMatmulOp::create(
        rw, op->getLoc(), p->resultType, p->lhs, p->rhs, p->lhsPerm,
        p->rhsPerm, p->resultPerm);
    // Roles and pins stay with the product.
    for (NamedAttribute a : op->getDiscardableAttrs())
      folded->setAttr(a.getName(), a.getValue());
    if (after) {
      rw.replaceOp(after, folded.getResult());
      rw.eraseOp(op);
    } else {
      rw.replaceOp(op, folded.getResult());
    }
    return success();
  }
};

struct FoldTransposesPass
    : ampc::impl::FoldTransposesBase<FoldTransposesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldIntoGemm>(&getContext());
    // Only the folds: other ops' folders and region simplification are
    // canonicalization's business, which ran before.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

} // namespace
