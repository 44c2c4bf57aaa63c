//===- StridedGemm.h - a tg.permuted_matmul as strided GEMMs ----*- C++ -*-===//
//
// How a matrix product over permuted views of row-major tensors maps onto
// the runtime's strided GEMM (`ampc_matmul_strided`): leading dimensions,
// transposed-operand flags, one strided batch and an outer batch. The fold
// pass (ampc-fold-transposes) makes a tg.permuted_matmul only where this
// plan exists, and the lowering writes the plan's numbers into the call.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_STRIDEDGEMM_H
#define AMPC_DIALECT_TG_STRIDEDGEMM_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

namespace ampc::tg {

/// C[o, i] = A[o, i] * B[o, i] for o < outer, i < batch, row-major matrices:
/// matrix (o, i) of X starts at element o * outerX + i * strideX of X's
/// buffer. A is [m, k] (stored [k, m] with transA), B is [k, n] (stored
/// [n, k] with transB), C is [m, n] with rows ldc apart.
struct StridedGemm {
  int64_t outer = 1, outerA = 0, outerB = 0, outerC = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t lda = 1, ldb = 1, ldc = 1;
};

/// The strided GEMM computing
///   transpose(matmul(transpose(lhs, lhsPerm), transpose(rhs, rhsPerm)),
///             resultPerm)
/// into a row-major result of shape `resultShape`, lhs and rhs row-major of
/// the given shapes; std::nullopt where no such GEMM exists (a permuted
/// operand without a unit-stride matrix dim, more than two batch levels
/// after merging, a result whose column dim is not its unit-stride dim) or
/// the shapes do not fit.
std::optional<StridedGemm>
planStridedGemm(llvm::ArrayRef<int64_t> lhsShape,
                llvm::ArrayRef<int64_t> lhsPerm,
                llvm::ArrayRef<int64_t> rhsShape,
                llvm::ArrayRef<int64_t> rhsPerm,
                llvm::ArrayRef<int64_t> resultShape,
                llvm::ArrayRef<int64_t> resultPerm);

} // namespace ampc::tg

#endif // AMPC_DIALECT_TG_STRIDEDGEMM_H
