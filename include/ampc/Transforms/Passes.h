//===- Passes.h - ampc transformation passes --------------------*- C++ -*-===//
#ifndef AMPC_TRANSFORMS_PASSES_H
#define AMPC_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "ampc/Transforms/AMPPolicy.h"

namespace ampc {

#define GEN_PASS_DECL
#include "ampc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ampc/Transforms/Passes.h.inc"

} // namespace ampc

#endif // AMPC_TRANSFORMS_PASSES_H
