//===- LoweringKernelsTest.cpp - the lowering's calls vs the kernel table -===//
//
// The lowering names runtime entry points from the op records and from the
// runtime's kernel table (ampc/runtime_kernels.inc, compiled into it). These
// tests check that every call it can emit is in that table and that every op
// record naming a kernel is lowered.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Dialect/TG/TGOpInfo.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

using namespace ampc;

namespace {

TEST(LoweringKernels, KnowsTheRuntimeTable) {
  EXPECT_TRUE(isRuntimeKernel("ampc_relu_fwd"));
  EXPECT_TRUE(isRuntimeKernel("ampc_relu_bwd"));
  EXPECT_TRUE(isRuntimeKernel("ampc_add_bwd"));
  EXPECT_TRUE(isRuntimeKernel("ampc_adamw_update"));
  EXPECT_FALSE(isRuntimeKernel("ampc_relu"));
  EXPECT_FALSE(isRuntimeKernel("ampc_no_such_op_fwd"));
  EXPECT_FALSE(isRuntimeKernel(""));
}

TEST(LoweringKernels, EveryCalleeIsARuntimeKernel) {
  auto callees = getKernelCallees();
  ASSERT_FALSE(callees.empty());
  for (auto [op, callee] : callees)
    EXPECT_TRUE(isRuntimeKernel(callee)) << op.str() << " -> " << callee.str();
}

TEST(LoweringKernels, CalleesAreTheRecords) {
  llvm::StringMap<llvm::StringRef> byOp;
  for (auto [op, callee] : getKernelCallees()) {
    EXPECT_TRUE(byOp.insert({op, callee}).second) << "two rows for " << op.str();
  }
  // Ops with patterns of their own (constants, views, broadcasts, the seed).
  llvm::StringSet<> own = {"tg.constant", "tg.reshape", "tg.broadcast_to",
                           "tg.grad_seed"};
  for (const tg::OpInfo &info : tg::getOpInfos()) {
    if (info.kernels.empty() || own.contains(info.name))
      continue;
    auto it = byOp.find(info.name);
    ASSERT_NE(it, byOp.end()) << info.name.str() << " names a kernel but has "
                                 "no lowering";
    EXPECT_EQ(it->second, info.kernels.front()) << info.name.str();
  }
}

TEST(LoweringKernels, EveryUnaryElementwiseOpIsLowered) {
  llvm::StringMap<llvm::StringRef> byOp;
  for (auto [op, callee] : getKernelCallees())
    byOp[op] = callee;
  unsigned unary = 0;
  for (const tg::OpInfo &info : tg::getOpInfos()) {
    if (info.elementwise != "unary")
      continue;
    ++unary;
    EXPECT_TRUE(byOp.count(info.name)) << info.name.str();
  }
  EXPECT_GE(unary, 10u);
}

} // namespace
