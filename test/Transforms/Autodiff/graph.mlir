// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-autodiff --split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// Graph-level behaviour: fan-out accumulation, what is (not) differentiated,
// zero gradients, several tg.grad in one graph, locations.

// x feeds three ops: its gradient is the tg.add of three contributions.
// CHECK-LABEL: func.func @fan_out(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3xf32>
// CHECK: %[[E:.+]] = tg.exp %[[X]]
// CHECK: %[[M:.+]] = tg.mul %[[X]], %[[X]]
// CHECK: %[[SEED:.+]] = tg.grad_seed
// CHECK: %[[DM:.+]] = tg.mul %[[DY:.+]], %[[X]]
// CHECK: %[[DM2:.+]] = tg.mul %[[DY]], %[[X]]
// CHECK: %[[ACC1:.+]] = tg.add %[[DM]], %[[DM2]] {tg.role = "grad"} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: %[[DE:.+]] = tg.mul %{{.+}}, %[[E]]
// CHECK: %[[ACC2:.+]] = tg.add %[[ACC1]], %[[DE]] {tg.role = "grad"} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: return %[[ACC2]]
func.func @fan_out(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tg.exp %x : tensor<3xf32>
  %m = tg.mul %x, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %s = tg.add %e, %m : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = tg.sum %s dims [0] : tensor<3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<3xf32>
  return %g : tensor<3xf32>
}

// -----

// Only ops between the loss and x are differentiated: the log of the
// constant-only branch and the tanh the loss does not use get no backward
// op; y, which the loss does not reach, gets a zero gradient.
// CHECK-LABEL: func.func @pruning(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3xf32>, %[[C:[a-z0-9]+]]: tensor<3xf32>, %[[Y:[a-z0-9]+]]: tensor<2xf32>
// CHECK: tg.grad_seed
// CHECK-NOT: tg.log
// CHECK-NOT: tg.tanh
// CHECK: %[[DX:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: %[[Z:.+]] = tg.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %[[DX]], %[[Z]]
func.func @pruning(%x: tensor<3xf32>, %c: tensor<3xf32>, %y: tensor<2xf32>) -> (tensor<3xf32>, tensor<2xf32>) {
  %k = tg.log %c : tensor<3xf32>
  %t = tg.tanh %y : tensor<2xf32>
  %p = tg.mul %x, %k : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = tg.sum %p dims [0] : tensor<3xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %x, %y : tensor<f32>, tensor<3xf32>, tensor<2xf32>
  return %g#0, %g#1 : tensor<3xf32>, tensor<2xf32>
}

// -----

// The gradient of the loss with respect to itself is the seed.
// CHECK-LABEL: func.func @wrt_loss(
// CHECK: %[[SEED:.+]] = tg.grad_seed %arg0 {tg.role = "grad"} : tensor<f32>
// CHECK: return %[[SEED]]
func.func @wrt_loss(%l: tensor<f32>) -> tensor<f32> {
  %g = tg.grad %l wrt %l : tensor<f32>, tensor<f32>
  return %g : tensor<f32>
}

// -----

// Two tg.grad in one graph: two independent backward graphs, two seeds.
// CHECK-LABEL: func.func @two_grads(
// CHECK: %[[L1:.+]] = tg.sum
// CHECK: %[[S1:.+]] = tg.grad_seed %[[L1]]
// CHECK: %[[L2:.+]] = tg.mean
// CHECK: %[[S2:.+]] = tg.grad_seed %[[L2]]
// CHECK: return
func.func @two_grads(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %l1 = tg.sum %x dims [0] : tensor<3xf32> -> tensor<f32>
  %g1 = tg.grad %l1 wrt %x : tensor<f32>, tensor<3xf32>
  %l2 = tg.mean %x dims [0] : tensor<3xf32> -> tensor<f32>
  %g2 = tg.grad %l2 wrt %x : tensor<f32>, tensor<3xf32>
  return %g1, %g2 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Backward ops carry the forward op's location tagged "grad".
// LOC-LABEL: func.func @locations(
// LOC: tg.exp %{{.+}} loc("{{.*}}graph.mlir":[[# @LINE + 5]]:8)
// LOC: tg.grad_seed %{{.+}} loc(fused<"grad">["{{.*}}graph.mlir":[[# @LINE + 5]]:8])
// LOC: tg.broadcast_to {{.+}} loc(fused<"grad">["{{.*}}graph.mlir":[[# @LINE + 4]]:8])
// LOC: tg.mul {{.+}} loc(fused<"grad">["{{.*}}graph.mlir":[[# @LINE + 2]]:8])
func.func @locations(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tg.exp %x : tensor<3xf32>
  %l = tg.sum %e dims [0] : tensor<3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<3xf32>
  return %g : tensor<3xf32>
}
