//===- ModelCopies.cpp - O2's low model copies of f32 masters -------------===//
//
// The `ampc-model-copies` pass (its description in Passes.td): the casts of
// the f32 master parameters to low precision become state the optimizer
// kernel writes with the master.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ampc {
#define GEN_PASS_DEF_MODELCOPIES
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

struct ModelCopiesPass : public ampc::impl::ModelCopiesBase<ModelCopiesPass> {
  void runOnOperation() override;
};

/// The casts of parameter `p` (an f32 tensor) to one 16-bit type (the first
/// one read), or none.
SmallVector<CastOp> lowCasts(Value p) {
  auto type = dyn_cast<RankedTensorType>(p.getType());
  if (!type || !type.getElementType().isF32())
    return {};
  SmallVector<CastOp> casts;
  Type low;
  for (Operation *user : p.getUsers()) {
    auto cast = dyn_cast<CastOp>(user);
    if (!cast || cast.getInput() != p)
      continue;
    Type to = getElementTypeOrSelf(cast.getType());
    if (!to.isF16() && !to.isBF16())
      continue;
    if (low && to != low)
      continue;
    low = to;
    casts.push_back(cast);
  }
  return casts;
}

} // namespace

void ModelCopiesPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return;
  MLIRContext *ctx = &getContext();
  Block &body = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return;
  // Every f32 parameter read through casts to low gets its model copy,
  // which replaces the casts. One the graph does not update (an evaluation
  // graph of the file, a parameter left out of `minimize`) only reads it:
  // it is the master rounded because the master does not change here, and
  // a graph that shares it by name hands it over with the master.
  DenseMap<Value, std::pair<Value, std::string>> modelOf;
  SmallVector<BlockArgument> args(body.getArguments());
  for (BlockArgument p : args) {
    auto name = func.getArgAttrOfType<StringAttr>(p.getArgNumber(),
                                                  TGDialect::kParamAttrName);
    if (!name)
      continue;
    SmallVector<CastOp> casts = lowCasts(p);
    if (casts.empty())
      continue;
    std::string stateName = (name.getValue() + ".model").str();
    NamedAttrList attrs;
    attrs.append(TGDialect::kStateAttrName, StringAttr::get(ctx, stateName));
    attrs.append(TGDialect::kModelOfAttrName, name);
    // Read only where the lowering cannot cast from the master.
    attrs.append(TGDialect::kInitAttrName,
                 InitAttr::get(ctx, InitKind::zeros, 0.0, 0.0));
    unsigned index = func.getNumArguments();
    (void)func.insertArgument(index, casts.front().getType(),
                              attrs.getDictionary(ctx), p.getLoc());
    Value model = func.getArgument(index);
    for (CastOp cast : casts) {
      cast.getResult().replaceAllUsesWith(model);
      cast.erase();
    }
    modelOf[p] = {model, stateName};
  }

  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (isa<SgdUpdateOp, AdamWUpdateOp>(op))
      updates.push_back(&op);

  for (Operation *update : updates) {
    ValueRange params = isa<SgdUpdateOp>(update)
                            ? cast<SgdUpdateOp>(update).getParams()
                            : cast<AdamWUpdateOp>(update).getParams();
    SmallVector<Value> models;
    SmallVector<int64_t> modelParams;
    SmallVector<std::string> modelNames;
    for (auto [j, p] : llvm::enumerate(params)) {
      auto it = modelOf.find(p);
      if (it == modelOf.end())
        continue;
      models.push_back(it->second.first);
      modelParams.push_back(j);
      modelNames.push_back(it->second.second);
    }
    if (models.empty())
      continue;

    OpBuilder b(update);
    Operation *rebuilt;
    ResultRange newModels = update->getResults(); // reassigned below
    auto indexAttr = b.getDenseI64ArrayAttr(modelParams);
    if (auto sgd = dyn_cast<SgdUpdateOp>(update)) {
      auto now = SgdUpdateOp::create(
          b, sgd.getLoc(), sgd.getParams(), sgd.getGrads(),
          sgd.getMomentumBuffers(), sgd.getFoundInf(), models, sgd.getLrScale(),
          sgd.getComps(), sgd.getCounter(), sgd.getLrAttr(),
          sgd.getMomentumAttr(), sgd.getWeightDecayAttr(),
          sgd.getNesterovAttr(), indexAttr, sgd.getLowUpdateAttr(),
          sgd.getParamBaseAttr(), sgd.getCompParamsAttr());
      // The params and momentum buffers lead both result lists; the
      // compensation buffers and the counter follow the new model copies.
      size_t lead = sgd.getParams().size() + sgd.getMomentumBuffers().size();
      for (auto [old, v] : llvm::zip(sgd.getUpdated().take_front(lead),
                                     now.getUpdated().take_front(lead)))
        old.replaceAllUsesWith(v);
      for (auto [old, v] : llvm::zip(sgd.getNewComps(), now.getNewComps()))
        old.replaceAllUsesWith(v);
      if (Value counter = sgd.getNewCounter())
        counter.replaceAllUsesWith(now.getNewCounter());
      newModels = now.getNewModels();
      rebuilt = now;
    } else {
      auto adamw = cast<AdamWUpdateOp>(update);
      auto now = AdamWUpdateOp::create(
          b, adamw.getLoc(), adamw.getParams(), adamw.getGrads(),
          adamw.getExpAvgs(), adamw.getExpAvgSqs(), adamw.getStep(),
          adamw.getFoundInf(), models, adamw.getLrScale(), adamw.getComps(),
          adamw.getLrAttr(), adamw.getBeta1Attr(),
          adamw.getBeta2Attr(), adamw.getEpsAttr(),
          adamw.getWeightDecayAttr(), indexAttr, adamw.getLowUpdateAttr(),
          adamw.getParamBaseAttr(), adamw.getCompParamsAttr());
      size_t lead = 3 * adamw.getParams().size();
      for (auto [old, v] : llvm::zip(adamw.getUpdated().take_front(lead),
                                     now.getUpdated().take_front(lead)))
        old.replaceAllUsesWith(v);
      for (auto [old, v] : llvm::zip(adamw.getNewComps(), now.getNewComps()))
        old.replaceAllUsesWith(v);
      adamw.getNewStep().replaceAllUsesWith(now.getNewStep());
      newModels = now.getNewModels();
      rebuilt = now;
    }
    rebuilt->setDiscardableAttrs(update->getDiscardableAttrDictionary());
    update->erase();
    for (auto [name, v] : llvm::zip_equal(modelNames, newModels)) {
      unsigned index = func.getNumResults();
      NamedAttrList attrs;
      attrs.append(TGDialect::kStateOutAttrName, StringAttr::get(ctx, name));
      (void)func.insertResult(index, v.getType(), attrs.getDictionary(ctx));
      ret->insertOperands(ret->getNumOperands(), v);
    }
  }
}
