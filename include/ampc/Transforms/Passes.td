//===- Passes.td - ampc transformation passes ---------------*- tablegen -*-===//
//
// Every ampc pass is declared here and implemented in `passes/`, one per file.
// The automatic-mixed-precision, autodiff, loss-scaling, cast-optimization
// and buffer-planning passes land here as they are written.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_TRANSFORMS_PASSES_TD
#define AMPC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // AMPC_TRANSFORMS_PASSES_TD
