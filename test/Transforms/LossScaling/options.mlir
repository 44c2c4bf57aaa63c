// RUN: not ampc-opt %s --ampc-loss-scaling="mode=sometimes" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not ampc-opt %s --ampc-loss-scaling="growth-factor=1" 2>&1 | FileCheck %s --check-prefix=GROWTH
// RUN: not ampc-opt %s --ampc-loss-scaling="backoff-factor=0" 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not ampc-opt %s --ampc-loss-scaling="hysteresis=0" 2>&1 | FileCheck %s --check-prefix=HYST
// RUN: not ampc-opt %s --ampc-loss-scaling="init=-1" 2>&1 | FileCheck %s --check-prefix=INIT
// RUN: not ampc-opt %s --ampc-loss-scaling="min-scale=10 max-scale=1" 2>&1 | FileCheck %s --check-prefix=BOUNDS

// Bad pass options are errors at the function they would apply to.
// MODE: error: ampc-loss-scaling: mode must be dynamic, static or none, got 'sometimes'
// GROWTH: error: ampc-loss-scaling: growth-factor must be finite and > 1, got 1.000000e+00
// BACKOFF: error: ampc-loss-scaling: backoff-factor must be in (0, 1), got 0.000000e+00
// HYST: error: ampc-loss-scaling: hysteresis must be in [1, 2^31), got 0
// INIT: error: ampc-loss-scaling: init must be finite and > 0, got -1.000000e+00
// BOUNDS: error: ampc-loss-scaling: min-scale 1.000000e+01 exceeds max-scale 1.000000e+00
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
