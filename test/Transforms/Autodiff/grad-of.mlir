// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s
// RUN: ampc-opt %s --ampc-autodiff --ampc-loss-scaling="mode=static init=1024" --split-input-file | FileCheck %s --check-prefix=SCALED
// RUN: ampc-opt %s --ampc-autodiff --canonicalize --ampc-buffer-planning --split-input-file | FileCheck %s --check-prefix=PLANNED

// ampc-autodiff marks every used gradient of a tg.grad with what it is the
// gradient of (tg.grad_of, after the backward graph); canonicalization
// keeps the markers, buffer planning erases them.

// Two values: both gradients used, two markers; a value the loss does not
// reach gets its zero gradient marked too.
// CHECK-LABEL: func.func @two(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3xf32>, %[[Y:[a-z0-9]+]]: tensor<3xf32>, %[[Z:[a-z0-9]+]]: tensor<3xf32>
// CHECK: %[[GX:.+]] = tg.mul %{{.+}}, %[[Y]] {tg.role = "grad"}
// CHECK: %[[GY:.+]] = tg.mul %{{.+}}, %[[X]] {tg.role = "grad"}
// CHECK: tg.grad_of %[[GX]] wrt %[[X]] {tg.role = "grad"} : tensor<3xf32>
// CHECK-NEXT: tg.grad_of %[[GY]] wrt %[[Y]] {tg.role = "grad"} : tensor<3xf32>
// CHECK-NEXT: %[[ZERO:.+]] = tg.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-NEXT: tg.grad_of %[[ZERO]] wrt %[[Z]] {tg.role = "grad"} : tensor<3xf32>
// CHECK-NEXT: return %[[GX]], %[[GY]], %[[ZERO]]
// The loss-scaled step: the markers name the unscaled values, like the
// return.
// SCALED-LABEL: func.func @two(
// SCALED: %[[U:.+]]:2, %{{.+}} = tg.check_finite_and_unscale
// SCALED: tg.grad_of %[[U]]#0 wrt %arg0
// SCALED: tg.grad_of %[[U]]#1 wrt %arg1
// SCALED: return %[[U]]#0, %[[U]]#1,
// PLANNED-LABEL: func.func @two(
// PLANNED-NOT: tg.grad_of
// PLANNED: return
func.func @two(%x: tensor<3xf32>, %y: tensor<3xf32>, %z: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %m = tg.mul %x, %y : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = tg.sum %m dims [0] : tensor<3xf32> -> tensor<f32>
  %g:3 = tg.grad %l wrt %x, %y, %z : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  return %g#0, %g#1, %g#2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// An unused gradient gets no marker, so its backward stays dead code.
// CHECK-LABEL: func.func @unused(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3xf32>, %[[Y:[a-z0-9]+]]: tensor<3xf32>
// CHECK: tg.grad_of %{{.+}} wrt %[[X]]
// CHECK-NOT: tg.grad_of
// CHECK: return
func.func @unused(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %m = tg.mul %x, %y : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = tg.sum %m dims [0] : tensor<3xf32> -> tensor<f32>
  %g:2 = tg.grad %l wrt %x, %y : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  return %g#0 : tensor<3xf32>
}
