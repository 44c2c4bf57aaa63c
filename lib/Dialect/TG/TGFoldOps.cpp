//===- TGFoldOps.cpp - GEMMs on permuted views -----------------------------===//
//
// The result type of tg.permuted_matmul (TGFoldOps.td) and the strided-GEMM
// plan (StridedGemm.h) that the fold pass and the lowering share.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/StridedGemm.h"
#include "InferSupport.h"

#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

namespace {
/// Checks that `perm` permutes `rank` dims.
LogicalResult checkPerm(const InferError &err, StringRef what,
                        DenseI64ArrayAttr attr, int64_t rank) {
  if (!attr)
    return err("requires attribute '", what, "'");
  ArrayRef<int64_t> perm = attr.asArrayRef();
  if (static_cast<int64_t>(perm.size()) != rank)
    return err("'", what, "' ", shapeToString(perm), " has ", perm.size(),
               " entries for rank ", rank);
  SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return err("'", what, "' ", shapeToString(perm),
                 " is not a permutation of ", rank, " dims");
    seen[p] = true;
  }
  return success();
}

SmallVector<int64_t> permuted(ArrayRef<int64_t> v, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(v[p]);
  return out;
}
} // namespace

LogicalResult PermutedMatmulOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  InferError err{loc, "permuted_matmul"};
  auto a = tensorType(adaptor.getLhs()), b = tensorType(adaptor.getRhs());
  if (!a || !b)
    return err("operands must be ranked tensors");
  if (failed(checkPerm(err, "lhs_perm", adaptor.getLhsPermAttr(),
                       a.getRank())) ||
      failed(checkPerm(err, "rhs_perm", adaptor.getRhsPermAttr(),
                       b.getRank())))
    return failure();
  if (a.getRank() < 2 || b.getRank() < 2)
    return err("operands must have rank >= 2, got ", a, " and ", b);
  FailureOr<Type> elt = promoteAll(err, {adaptor.getLhs(), adaptor.getRhs()});
  if (failed(elt))
    return failure();
  SmallVector<int64_t> as = permuted(a.getShape(), adaptor.getLhsPerm());
  SmallVector<int64_t> bs = permuted(b.getShape(), adaptor.getRhsPerm());
  int64_t k = as.back(), k2 = bs[bs.size() - 2];
  if (k != k2)
    return err("contraction dims differ: permuted lhs ", shapeToString(as),
               " has ", k, ", permuted rhs ", shapeToString(bs), " has ", k2);
  int64_t badDim = 0;
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2), &badDim);
  if (!batch)
    return err("batch dims of permuted lhs ", shapeToString(as),
               " and permuted rhs ", shapeToString(bs),
               " do not broadcast (batch dim ", badDim, ")");
  SmallVector<int64_t> product = *batch;
  product.push_back(as[as.size() - 2]);
  product.push_back(bs.back());
  if (failed(checkPerm(err, "result_perm", adaptor.getResultPermAttr(),
                       product.size())))
    return failure();
  types.push_back(RankedTensorType::get(
      permuted(product, adaptor.getResultPerm()), *elt));
  return success();
}

//===----------------------------------------------------------------------===//
// The strided-GEMM plan
//===----------------------------------------------------------------------===//

namespace {
/// Sizes and element strides of a (permuted) view of a row-major tensor.
struct View {
  SmallVector<int64_t> size, stride;
  int64_t rank() const { return size.size(); }
};

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> st(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * shape[i + 1];
  return st;
}

/// Dim i of the view is dim perm[i] of the stored tensor.
View operandView(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> st = rowMajorStrides(shape);
  View v;
  for (int64_t p : perm) {
    v.size.push_back(shape[p]);
    v.stride.push_back(st[p]);
  }
  return v;
}

/// The product before `perm`: dim i of the stored result is its dim perm[i].
View resultView(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> st = rowMajorStrides(shape);
  View v;
  v.size.assign(shape.size(), 0);
  v.stride.assign(shape.size(), 0);
  for (auto [i, p] : llvm::enumerate(perm)) {
    v.size[p] = shape[i];
    v.stride[p] = st[i];
  }
  return v;
}

bool isPermutation(ArrayRef<int64_t> perm, size_t rank) {
  if (perm.size() != rank)
    return false;
  SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

/// A [rows, cols] matrix with these strides as a row-major GEMM operand:
/// {transposed, leading dimension}.
std::optional<std::pair<bool, int64_t>>
matrixLayout(int64_t rows, int64_t cols, int64_t sRow, int64_t sCol) {
  // The runtime wants ld >= the stored row's length and >= 1 even where
  // it is never stepped over (one row, an empty dim).
  if ((cols <= 1 || sCol == 1) && (rows <= 1 || sRow >= cols))
    return std::make_pair(
        false, std::max<int64_t>(rows <= 1 ? 0 : sRow, std::max<int64_t>(cols, 1)));
  if ((rows <= 1 || sRow == 1) && (cols <= 1 || sCol >= rows))
    return std::make_pair(
        true, std::max<int64_t>(cols <= 1 ? 0 : sCol, std::max<int64_t>(rows, 1)));
  return std::nullopt;
}

/// One batch dim: its size and each matrix's stride along it (0: broadcast).
struct BatchDim {
  int64_t size, a, b, c;
};
} // namespace

std::optional<StridedGemm> ampc::tg::planStridedGemm(
    ArrayRef<int64_t> lhsShape, ArrayRef<int64_t> lhsPerm,
    ArrayRef<int64_t> rhsShape, ArrayRef<int64_t> rhsPerm,
    ArrayRef<int64_t> resultShape, ArrayRef<int64_t> resultPerm) {
  if (!isPermutation(lhsPerm, lhsShape.size()) ||
      !isPermutation(rhsPerm, rhsShape.size()) ||
      !isPermutation(resultPerm, resultShape.size()) || lhsShape.size() < 2 ||
      rhsShape.size() < 2)
    return std::nullopt;
  View a = operandView(lhsShape, lhsPerm), b = operandView(rhsShape, rhsPerm);
  View c = resultView(resultShape, resultPerm);
  int64_t ab = a.rank() - 2, bb = b.rank() - 2, cb = c.rank() - 2;
  if (cb != std::max(ab, bb))
    return std::nullopt;
  int64_t m = a.size[ab], k = a.size[ab + 1], n = b.size[bb + 1];
  if (b.size[bb] != k || c.size[cb] != m || c.size[cb + 1] != n)
    return std::nullopt;

  // Batch dims, outermost first; size-1 dims walk nothing.
  SmallVector<BatchDim> dims;
  for (int64_t d = 0; d < cb; ++d) {
    int64_t size = c.size[d];
    auto strideOf = [&](const View &v, int64_t vb,
                        int64_t &s) -> bool {
      int64_t dv = d - (cb - vb);
      if (dv < 0 || v.size[dv] == 1) {
        s = 0;
        return true;
      }
      s = v.stride[dv];
      return v.size[dv] == size;
    };
    BatchDim bd{size, 0, 0, c.stride[d]};
    if (!strideOf(a, ab, bd.a) || !strideOf(b, bb, bd.b))
      return std::nullopt;
    if (size != 1)
      dims.push_back(bd);
  }
  // Merge neighbours every matrix walks as one dim.
  SmallVector<BatchDim> merged;
  for (const BatchDim &d : dims) {
    if (!merged.empty()) {
      BatchDim &o = merged.back();
      if (o.a == d.a * d.size && o.b == d.b * d.size && o.c == d.c * d.size) {
        o = BatchDim{o.size * d.size, d.a, d.b, d.c};
        continue;
      }
    }
    merged.push_back(d);
  }

  StridedGemm g;
  // The product's matrices: A [m, k], B [k, n], C [m, n] with their strides.
  int64_t amS = a.stride[ab], akS = a.stride[ab + 1];
  int64_t bkS = b.stride[bb], bnS = b.stride[bb + 1];
  int64_t cmS = c.stride[cb], cnS = c.stride[cb + 1];
  // The result's column dim must be its unit-stride dim. (Computing the
  // product transposed, C^T = B^T A^T, would write a result whose row dim
  // is contiguous, but OpenBLAS then sums in another order: other bits.)
  if (!((n <= 1 || cnS == 1) && (m <= 1 || cmS >= n)))
    return std::nullopt;
  auto la = matrixLayout(m, k, amS, akS), lb = matrixLayout(k, n, bkS, bnS);
  if (!la || !lb)
    return std::nullopt;
  g.m = m;
  g.n = n;
  g.k = k;
  g.transA = la->first;
  g.lda = la->second;
  g.transB = lb->first;
  g.ldb = lb->second;
  g.ldc = std::max<int64_t>(m <= 1 ? 0 : cmS, std::max<int64_t>(n, 1));
  // A batch of row blocks against one shared B (its stride 0) whose rows
  // follow each other in A and C is one taller product.
  if (!merged.empty()) {
    const BatchDim &d = merged.back();
    if (d.b == 0 && !g.transA && d.a == g.m * g.lda && d.c == g.m * g.ldc &&
        (g.m > 1 || (g.lda == g.k && g.ldc == g.n))) {
      g.m *= d.size;
      merged.pop_back();
    }
  }
  if (merged.size() > 2)
    return std::nullopt;
  if (!merged.empty()) {
    const BatchDim &in = merged.back();
    g.batch = in.size;
    g.strideA = in.a;
    g.strideB = in.b;
    g.strideC = in.c;
  }
  if (merged.size() == 2) {
    const BatchDim &out = merged.front();
    g.outer = out.size;
    g.outerA = out.a;
    g.outerB = out.b;
    g.outerC = out.c;
  }
  return g;
}
