//===- DropoutSampleLayout.cpp - where each sample of a dropout input lies -===//
//
// A forward analysis over a training step: which values hold the batch as
// their outermost index, i.e. each sample of the batch is one contiguous
// block of S elements in row-major order (element i belongs to sample
// i / S). Every dropout whose input is such a value gets `sample_elems` = S,
// so that under W data-parallel ranks it draws the masks of one process of
// batch W * B (tg.dropout, ampc_dropout_ranked_fwd). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"

namespace ampc {
#define GEN_PASS_DEF_DROPOUTSAMPLELAYOUT
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;

namespace {

/// How an op relates its results' layout to its operands'.
enum class Rule {
  /// Unknown: the result's layout is not proven.
  None,
  /// The result has the operand's elements in the operand's order.
  Reshape,
  /// Elementwise with NumPy broadcasting: result element i reads element i
  /// of every operand of the result's shape.
  Elementwise,
  /// Row-wise along dim 0: dim 0 of the result is dim 0 of the driving
  /// operands, and result row k depends only on their row k.
  Rows,
};

/// The layout fact of one value: S > 0, its samples are contiguous blocks
/// of S elements; 0, not proven.
using SampleSize = int64_t;

class Layouts {
public:
  SampleSize of(Value v) const {
    auto it = sizes.find(v);
    return it == sizes.end() ? 0 : it->second;
  }
  void set(Value v, SampleSize s) {
    if (s > 0)
      sizes[v] = s;
  }

private:
  llvm::DenseMap<Value, SampleSize> sizes;
};

RankedTensorType tensorOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// The sample size of `result` when it is row-wise along dim 0 of `in`
/// (each sample of `in` is whole rows of dim 0), else 0.
SampleSize rowsOf(Value in, SampleSize s, Value result) {
  RankedTensorType ti = tensorOf(in), tr = tensorOf(result);
  if (s <= 0 || !ti || !tr || !ti.hasStaticShape() || !tr.hasStaticShape() ||
      ti.getRank() < 1 || tr.getRank() < 1)
    return 0;
  int64_t rows = ti.getDimSize(0);
  if (rows <= 0 || tr.getDimSize(0) != rows)
    return 0;
  int64_t rowIn = ti.getNumElements() / rows;
  int64_t rowOut = tr.getNumElements() / rows;
  if (rowIn <= 0 || rowOut <= 0 || s % rowIn != 0)
    return 0;
  return (s / rowIn) * rowOut;
}

/// Combines the candidates of several operands: all that give one must
/// agree.
struct Agreement {
  SampleSize value = 0;
  bool conflict = false;
  void add(SampleSize s) {
    if (s <= 0)
      return;
    if (value && value != s)
      conflict = true;
    value = s;
  }
  SampleSize get() const { return conflict ? 0 : value; }
};

/// True when `op`'s dim / dims attribute (the dims it works along) leaves
/// dim 0 of its input alone. An op with neither works along every dim.
bool leavesDim0(Operation *op, Value input) {
  RankedTensorType t = tensorOf(input);
  if (!t)
    return false;
  int64_t rank = t.getRank();
  auto touches0 = [&](int64_t d) { return d == 0 || d + rank == 0; };
  if (auto dim = op->getAttrOfType<IntegerAttr>("dim"))
    return !touches0(dim.getInt());
  if (auto dims = op->getAttrOfType<DenseI64ArrayAttr>("dims"))
    return llvm::none_of(dims.asArrayRef(), touches0);
  return false;
}

/// The rule of `op` and, for Rows, the operands that drive dim 0.
Rule ruleOf(Operation *op, SmallVectorImpl<Value> &drivers) {
  StringRef name = op->getName().getStringRef();
  if (isa<tg::ReshapeOp>(op))
    return Rule::Reshape;
  const tg::OpInfo *info = tg::lookupOpInfo(name);
  if ((info && !info->elementwise.empty()) ||
      isa<tg::CastOp, tg::DropoutOp, tg::WhereOp, tg::PreluOp,
          tg::BroadcastToOp>(op))
    return Rule::Elementwise;
  if (op->getNumOperands() == 0 || op->getNumResults() == 0)
    return Rule::None;
  Value first = op->getOperand(0);
  RankedTensorType result = tensorOf(op->getResult(0));
  if (!result)
    return Rule::None;
  int64_t resultRank = result.getRank();
  auto sameRank = [&](Value v) {
    RankedTensorType t = tensorOf(v);
    return t && t.getRank() == resultRank;
  };
  // GEMMs: the lhs's leading dims are the result's; the rhs's dim 0 is a
  // batch dim only in batched products (rank >= 3).
  if (isa<tg::MatmulOp, tg::MmOp, tg::BmmOp, tg::LinearOp>(op)) {
    if (sameRank(first))
      drivers.push_back(first);
    if (!isa<tg::LinearOp>(op) && resultRank >= 3 &&
        sameRank(op->getOperand(1)))
      drivers.push_back(op->getOperand(1));
    return drivers.empty() ? Rule::None : Rule::Rows;
  }
  // Per-sample ops on (N, ...) inputs: convolutions, pooling, norms (batch
  // norm mixes the batch's values but keeps each row in its place).
  if (isa<tg::Conv1dOp, tg::Conv2dOp, tg::Conv3dOp, tg::ConvTranspose1dOp,
          tg::ConvTranspose2dOp, tg::ConvTranspose3dOp, tg::MaxPool2dOp,
          tg::AvgPool2dOp, tg::LayerNormOp, tg::RmsNormOp, tg::GroupNormOp,
          tg::BatchNormOp>(op)) {
    drivers.push_back(first);
    return Rule::Rows;
  }
  // The ids' layout, each id widened to an embedding row.
  if (isa<tg::EmbeddingOp>(op)) {
    drivers.push_back(op->getOperand(1));
    return Rule::Rows;
  }
  // Ops along some dims: row-wise when dim 0 is not one of them.
  if (isa<tg::SoftmaxOp, tg::LogSoftmaxOp, tg::SumOp, tg::MeanOp, tg::MaxOp,
          tg::LogsumexpOp, tg::NormOp, tg::CumsumOp, tg::ArgmaxOp,
          tg::SliceOp>(op)) {
    if (!leavesDim0(op, first))
      return Rule::None;
    drivers.push_back(first);
    return Rule::Rows;
  }
  if (isa<tg::ConcatOp, tg::CosineSimilarityOp>(op)) {
    if (!leavesDim0(op, first))
      return Rule::None;
    drivers.append(op->operand_begin(), op->operand_end());
    return Rule::Rows;
  }
  if (auto transpose = dyn_cast<tg::TransposeOp>(op)) {
    ArrayRef<int64_t> perm = transpose.getPerm();
    if (perm.empty() || perm.front() != 0)
      return Rule::None;
    drivers.push_back(first);
    return Rule::Rows;
  }
  return Rule::None;
}

/// The sample size of `op`'s result 0.
SampleSize transfer(Operation *op, const Layouts &layouts) {
  if (op->getNumResults() == 0)
    return 0;
  Value result = op->getResult(0);
  RankedTensorType tr = tensorOf(result);
  if (!tr || !tr.hasStaticShape())
    return 0;
  SmallVector<Value> drivers;
  Agreement agree;
  switch (ruleOf(op, drivers)) {
  case Rule::None:
    return 0;
  case Rule::Reshape: {
    SampleSize s = layouts.of(op->getOperand(0));
    return s > 0 && tr.getNumElements() % s == 0 ? s : 0;
  }
  case Rule::Elementwise:
    for (Value v : op->getOperands()) {
      SampleSize s = layouts.of(v);
      RankedTensorType tv = tensorOf(v);
      if (s <= 0 || !tv)
        continue;
      if (tv.getShape() == tr.getShape())
        agree.add(s);
      else if (tv.getRank() == tr.getRank())
        agree.add(rowsOf(v, s, result)); // broadcast within rows
      // Broadcast along dim 0: this operand does not place the rows.
    }
    return agree.get();
  case Rule::Rows:
    for (Value v : drivers) {
      SampleSize s = layouts.of(v);
      if (s <= 0)
        continue;
      SampleSize r = rowsOf(v, s, result);
      if (r <= 0)
        return 0; // a driver whose samples are not whole rows
      agree.add(r);
    }
    return agree.get();
  }
  return 0;
}

struct DropoutSampleLayoutPass
    : public ampc::impl::DropoutSampleLayoutBase<DropoutSampleLayoutPass> {
  using DropoutSampleLayoutBase::DropoutSampleLayoutBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Layouts layouts;
    // The batch: dim 0 of the graph's data inputs (what `ampc run` shards),
    // the size most of them share (ties: the earliest input's). An input of
    // another dim 0 (an attention mask, a lookup table) is no batch.
    SmallVector<BlockArgument> inputs;
    for (BlockArgument arg : func.getArguments()) {
      RankedTensorType t = tensorOf(arg);
      if (func.getArgAttr(arg.getArgNumber(), tg::TGDialect::kInputAttrName) &&
          t && t.hasStaticShape() && t.getRank() >= 1 && t.getDimSize(0) > 0)
        inputs.push_back(arg);
    }
    int64_t batch = 0, votes = 0;
    for (BlockArgument arg : inputs) {
      int64_t d = tensorOf(arg).getDimSize(0);
      int64_t n = llvm::count_if(inputs, [&](BlockArgument other) {
        return tensorOf(other).getDimSize(0) == d;
      });
      if (n > votes) {
        batch = d;
        votes = n;
      }
    }
    for (BlockArgument arg : inputs) {
      RankedTensorType t = tensorOf(arg);
      if (t.getDimSize(0) == batch)
        layouts.set(arg, t.getNumElements() / batch);
    }
    SmallVector<tg::DropoutOp> forward;
    func.walk([&](Operation *op) {
      if (op->getNumResults() >= 1)
        layouts.set(op->getResult(0), transfer(op, layouts));
      if (auto dropout = dyn_cast<tg::DropoutOp>(op))
        if (!hasRole(op, Role::Grad))
          forward.push_back(dropout);
    });
    // A forward dropout and its gradient (the same `key`) draw one mask.
    llvm::DenseMap<int64_t, int64_t> byKey;
    for (tg::DropoutOp op : forward) {
      SampleSize s = layouts.of(op.getInput());
      byKey[op.getKey()] = s;
      if (s > 0 || !notes)
        continue;
      op->getContext()->getDiagEngine().emit(op.getLoc(),
                                             DiagnosticSeverity::Note)
          << "dropout: the input is not proven to hold each sample of the "
             "batch as one contiguous block (batch outermost), so under "
             "data-parallel ranks its mask is keyed by each rank's own "
             "element index and does not follow one process of batch W*B";
    }
    Builder b(func.getContext());
    func.walk([&](tg::DropoutOp op) {
      auto it = byKey.find(op.getKey());
      if (it != byKey.end() && it->second > 0)
        op.setSampleElemsAttr(b.getI64IntegerAttr(it->second));
    });
  }
};

} // namespace
