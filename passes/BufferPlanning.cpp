//===- BufferPlanning.cpp - arena offsets by liveness ----------------------===//
//
// Gives every intermediate tensor of a step an offset in one arena. Values
// whose lifetimes do not overlap share bytes; results computed in place
// (optimizer and scaler updates, unscaling, clipping, reshape views) share
// their operand's buffer, so parameters, optimizer state and scaler state
// keep one persistent buffer each across steps.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/BufferPlan.h"
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

#include <map>
#include <set>
#include <vector>

namespace ampc {
#define GEN_PASS_DEF_BUFFERPLANNING
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;

int64_t ampc::getTensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  Type elt = shaped.getElementType();
  int64_t width = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
  return shaped.getNumElements() * width;
}

namespace {
/// The most bytes one step's tensors may take in all: every size, offset and
/// arena bound the planner, the lowering and the runtime compute stays far
/// from int64 overflow.
constexpr int64_t kMaxStepBytes = int64_t(1) << 62;

/// The bytes of a statically shaped tensor, or nullopt past kMaxStepBytes
/// (computed without overflow whatever the dims).
std::optional<int64_t> boundedTensorBytes(RankedTensorType type) {
  Type elt = type.getElementType();
  if (!elt.isIntOrFloat())
    return 0;
  __int128 bytes = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
  for (int64_t d : type.getShape()) {
    bytes *= d;
    if (bytes > kMaxStepBytes)
      return std::nullopt;
  }
  return static_cast<int64_t>(bytes);
}

/// Values that share one buffer (an in-place chain), with their joint live
/// range in op indices.
struct Group {
  int64_t size = 0;
  int64_t begin = 0, end = 0;
  bool persistent = false; // lives in an argument or constant buffer
  int64_t offset = -1;
};

/// Free bytes of the arena below its high-water mark, as disjoint holes: by
/// offset (to merge neighbours on release) and by size (best fit). Every
/// operation is O(log holes).
class FreeSpace {
public:
  /// The offset of `size` bytes: the smallest hole that holds them (lowest
  /// offset among equals), else the hole that ends at the high-water mark,
  /// extended, else new bytes at the top.
  int64_t allocate(int64_t size) {
    auto fit = bySize.lower_bound({size, 0});
    if (fit != bySize.end()) {
      auto [holeSize, offset] = *fit;
      erase(offset, holeSize);
      if (holeSize > size)
        insert(offset + size, holeSize - size);
      return offset;
    }
    int64_t offset = top;
    if (!byOffset.empty()) {
      auto last = std::prev(byOffset.end());
      if (last->first + last->second == top) {
        offset = last->first;
        erase(last->first, last->second);
      }
    }
    top = offset + size;
    highWater = std::max(highWater, top);
    return offset;
  }

  /// Returns [offset, offset + size) to the free space, merged with the
  /// holes next to it.
  void release(int64_t offset, int64_t size) {
    auto next = byOffset.lower_bound(offset);
    if (next != byOffset.end() && next->first == offset + size) {
      size += next->second;
      erase(next->first, next->second);
    }
    auto after = byOffset.lower_bound(offset);
    if (after != byOffset.begin()) {
      auto prev = std::prev(after);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        erase(prev->first, prev->second);
      }
    }
    insert(offset, size);
  }

  int64_t getHighWater() const { return highWater; }

private:
  void insert(int64_t offset, int64_t size) {
    byOffset.emplace(offset, size);
    bySize.emplace(size, offset);
  }
  void erase(int64_t offset, int64_t size) {
    byOffset.erase(offset);
    bySize.erase({size, offset});
  }

  std::map<int64_t, int64_t> byOffset;
  std::set<std::pair<int64_t, int64_t>> bySize;
  int64_t top = 0, highWater = 0;
};

/// Linear scan: a linear pass over the step in program order that allocates
/// each buffer where its live range starts (best fit among the free holes)
/// and frees it after its last use. O(n log n) in the number of buffers;
/// returns the arena size and sets each group's offset.
int64_t placeByLinearScan(ArrayRef<Group *> groups, int64_t endOfStep) {
  // Buckets by op index: which buffers start and end where.
  std::vector<SmallVector<Group *, 1>> starts(endOfStep + 1),
      ends(endOfStep + 1);
  for (Group *g : groups) {
    starts[g->begin].push_back(g);
    ends[g->end].push_back(g);
  }
  FreeSpace space;
  for (int64_t t = 0; t <= endOfStep; ++t) {
    // Larger buffers first: they are the hardest to fit into holes.
    llvm::stable_sort(starts[t],
                      [](Group *a, Group *b) { return a->size > b->size; });
    for (Group *g : starts[t])
      g->offset = space.allocate(g->size);
    // A buffer read by op t is free from op t + 1 on (op t may not write
    // its result over its own operands).
    for (Group *g : ends[t])
      space.release(g->offset, g->size);
  }
  return space.getHighWater();
}

/// Greedy by size: largest buffer first, each at the lowest offset where it
/// overlaps no placed buffer whose live range meets its own. The placed
/// buffers a live range meets are those live at its start (a stabbing query
/// on a segment tree over op indices) plus those starting inside it (a range
/// of a map by start), so each placement costs O(log n + k) for its k
/// conflicts. That sum is small when live ranges are short (inference
/// graphs) but can grow quadratically (many long-lived activations), so the
/// placement gives up after `budget` conflicts in total; returns
/// std::nullopt then.
std::optional<int64_t> placeGreedyBySize(ArrayRef<Group *> groups,
                                         int64_t endOfStep, int64_t budget) {
  SmallVector<Group *> order(groups);
  llvm::stable_sort(order, [](Group *a, Group *b) {
    if (a->size != b->size)
      return a->size > b->size;
    return a->begin < b->begin;
  });
  // Segment tree over [0, endOfStep]: node lists of the placed ranges that
  // cover the node's span (each range is in O(log n) nodes).
  int64_t leaves = 1;
  while (leaves < endOfStep + 1)
    leaves *= 2;
  std::vector<SmallVector<Group *, 2>> cover(2 * leaves);
  auto insertCover = [&](Group *g) {
    int64_t lo = g->begin + leaves, hi = g->end + leaves + 1;
    for (; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1)
        cover[lo++].push_back(g);
      if (hi & 1)
        cover[--hi].push_back(g);
    }
  };
  std::multimap<int64_t, Group *> byBegin;
  SmallVector<std::pair<int64_t, int64_t>> busy;
  int64_t arena = 0, work = 0;
  for (Group *g : order) {
    busy.clear();
    for (int64_t node = g->begin + leaves; node >= 1; node /= 2)
      for (Group *p : cover[node])
        busy.push_back({p->offset, p->offset + p->size});
    for (auto it = byBegin.upper_bound(g->begin), e = byBegin.end();
         it != e && it->first <= g->end; ++it)
      busy.push_back({it->second->offset,
                      it->second->offset + it->second->size});
    work += busy.size();
    if (work > budget)
      return std::nullopt;
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + g->size <= lo)
        break;
      offset = std::max(offset, hi);
    }
    g->offset = offset;
    arena = std::max(arena, offset + g->size);
    insertCover(g);
    byBegin.emplace(g->begin, g);
  }
  return arena;
}

/// Places every group and returns the arena size: greedy by size (the
/// smaller arena in practice) when it stays within a linear budget of
/// conflicts, and the linear scan otherwise or when it does better. Both
/// are O(n log n) here, so planning stays linear in the step's size.
int64_t placeGroups(ArrayRef<Group *> groups, int64_t endOfStep) {
  int64_t scan = placeByLinearScan(groups, endOfStep);
  SmallVector<int64_t> scanOffsets;
  for (Group *g : groups)
    scanOffsets.push_back(g->offset);
  constexpr int64_t kConflictsPerBuffer = 64;
  std::optional<int64_t> greedy = placeGreedyBySize(
      groups, endOfStep,
      kConflictsPerBuffer * static_cast<int64_t>(groups.size()) + 4096);
  if (greedy && *greedy <= scan)
    return *greedy;
  for (auto [g, offset] : llvm::zip_equal(groups, scanOffsets))
    g->offset = offset;
  return scan;
}

struct BufferPlanningPass
    : public ampc::impl::BufferPlanningBase<BufferPlanningPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("buffer planning needs a single-block graph");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    // The markers of what returned gradients are of (tg.grad_of) compute
    // nothing: the lowered step has none.
    for (auto marker : llvm::make_early_inc_range(body.getOps<tg::GradOfOp>()))
      marker.erase();

    // Index ops; a value is live from its definition to its last use.
    llvm::DenseMap<Operation *, int64_t> index;
    int64_t n = 0;
    for (Operation &op : body)
      index[&op] = n++;
    int64_t endOfStep = n;

    // Union values that share a buffer.
    llvm::EquivalenceClasses<Value> classes;
    auto useIndex = [&](Value v) {
      int64_t last = -1;
      for (OpOperand &use : v.getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        int64_t i = isa<func::ReturnOp>(user) ? endOfStep : index[user];
        last = std::max(last, i);
      }
      return last;
    };
    // Every tensor of the step, and all of them together, must be
    // addressable (kMaxStepBytes); the run would overrun a wrapped size.
    int64_t stepBytes = 0;
    auto fitsStep = [&](Value v, RankedTensorType type) {
      std::optional<int64_t> bytes = boundedTensorBytes(type);
      if (bytes && *bytes <= kMaxStepBytes - stepBytes) {
        stepBytes += *bytes;
        return true;
      }
      auto what = [&](InFlightDiagnostic diag) {
        if (auto result = dyn_cast<OpResult>(v))
          diag << "result #" << result.getResultNumber();
        else
          diag << "argument #" << cast<BlockArgument>(v).getArgNumber();
        diag << " of type " << type;
        return diag;
      };
      Operation *op = v.getDefiningOp();
      InFlightDiagnostic diag = op ? op->emitOpError("buffer planning: ")
                                   : emitError(v.getLoc(), "buffer planning: ");
      if (!bytes) {
        what(std::move(diag)) << " needs more than 2^62 bytes";
      } else {
        diag << "the step's tensors need more than 2^62 bytes in all (";
        what(std::move(diag)) << " is past it)";
      }
      return false;
    };
    for (BlockArgument arg : body.getArguments()) {
      if (auto tensor = dyn_cast<RankedTensorType>(arg.getType()))
        if (tensor.hasStaticShape() && !fitsStep(arg, tensor))
          return signalPassFailure();
      classes.insert(arg);
    }
    for (Operation &op : body) {
      for (OpResult result : op.getResults()) {
        auto tensor = dyn_cast<RankedTensorType>(result.getType());
        if (!tensor || !tensor.hasStaticShape()) {
          op.emitOpError("buffer planning: result #")
              << result.getResultNumber() << " has type " << result.getType()
              << "; only statically shaped tensors can be placed in the arena";
          return signalPassFailure();
        }
        if (!fitsStep(result, tensor))
          return signalPassFailure();
        classes.insert(result);
        if (auto operand = getInPlaceOperand(&op, result.getResultNumber())) {
          Value src = op.getOperand(*operand);
          // In place is only sound when the operand dies here.
          for (OpOperand &use : src.getUses()) {
            Operation *user = body.findAncestorOpInBlock(*use.getOwner());
            if (user != &op && (isa<func::ReturnOp>(user) ||
                                index[user] > index[&op])) {
              if (isa<tg::ReshapeOp>(op))
                continue; // a view: the union below keeps both alive
              op.emitError("buffer planning: operand #")
                  << *operand << " is updated in place but used later";
              return signalPassFailure();
            }
          }
          classes.unionSets(src, result);
        }
      }
    }

    // Groups in order of first definition, so that the plan depends only on
    // the program (never on where values happen to live in memory).
    std::vector<Group> storage;
    llvm::DenseMap<Value, unsigned> groupOf;
    auto groupFor = [&](Value v) -> Group & {
      auto [it, inserted] =
          groupOf.try_emplace(classes.getLeaderValue(v), storage.size());
      if (inserted)
        storage.emplace_back();
      return storage[it->second];
    };
    for (BlockArgument arg : body.getArguments())
      groupFor(arg).persistent = true;
    for (Operation &op : body) {
      for (OpResult result : op.getResults()) {
        Group &g = groupFor(result);
        if (isa<tg::ConstantOp>(op))
          g.persistent = true;
        int64_t def = index[&op];
        int64_t last = std::max(useIndex(result), def);
        // found_inf is read after the step (skipped-step reporting).
        if (isa<tg::CheckFiniteAndUnscaleOp>(op) &&
            result.getResultNumber() + 1 == op.getNumResults())
          last = endOfStep;
        if (g.size == 0) {
          g.begin = def;
          g.end = last;
        } else {
          g.begin = std::min(g.begin, def);
          g.end = std::max(g.end, last);
        }
        g.size = std::max(g.size, getTensorBytes(result.getType()));
      }
    }

    SmallVector<Group *> planned;
    int64_t sum = 0;
    for (Group &g : storage) {
      if (g.persistent)
        continue;
      g.size = llvm::alignTo(g.size, kBufferAlignment);
      sum += g.size;
      planned.push_back(&g);
    }
    int64_t arena = placeGroups(planned, endOfStep);

    Builder b(func.getContext());
    for (Operation &op : body) {
      if (op.getNumResults() == 0)
        continue;
      SmallVector<int64_t> offsets;
      for (OpResult result : op.getResults()) {
        Group &g = groupFor(result);
        offsets.push_back(g.persistent ? -1 : g.offset);
      }
      op.setAttr(tg::TGDialect::kOffsetsAttrName,
                 b.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr(tg::TGDialect::kArenaSizeAttrName,
                  b.getI64IntegerAttr(arena));
    func->setAttr(tg::TGDialect::kIntermediateBytesAttrName,
                  b.getI64IntegerAttr(sum));
  }
};
} // namespace
