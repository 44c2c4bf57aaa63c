// RUN: ampc-opt %s --ampc-autodiff --split-input-file | FileCheck %s

// The gradients of several slices of one value are merged, not added, where
// the slices do not overlap: one concat of their gradients, zeros where no
// slice reads (each element is the one slice's gradient itself).

// Three slices that partition x along dim 1: one concat of the three
// gradients, in order, no zeros and no add.
// CHECK-LABEL: func.func @partition(
// CHECK-DAG: %[[GC:.+]] = tg.mul %{{.+}}, %arg3 {tg.role = "grad"}
// CHECK-DAG: %[[GB:.+]] = tg.mul %{{.+}}, %arg2 {tg.role = "grad"}
// CHECK-DAG: %[[GA:.+]] = tg.mul %{{.+}}, %arg1 {tg.role = "grad"}
// CHECK-NOT: tg.constant
// CHECK: %[[G:.+]] = tg.concat %[[GA]], %[[GB]], %[[GC]] dim 1 {tg.role = "grad"} : tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
// CHECK-NEXT: tg.grad_of %[[G]] wrt %arg0
// CHECK-NEXT: return %[[G]]
func.func @partition(%x: tensor<2x6xf32>, %u: tensor<2x2xf32>, %v: tensor<2x1xf32>, %w: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %a = tg.slice %x dim 1 start 0 end 2 : tensor<2x6xf32> -> tensor<2x2xf32>
  %b = tg.slice %x dim 1 start 2 end 3 : tensor<2x6xf32> -> tensor<2x1xf32>
  %c = tg.slice %x dim 1 start 3 end 6 : tensor<2x6xf32> -> tensor<2x3xf32>
  %pa = tg.mul %a, %u : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %pb = tg.mul %b, %v : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
  %pc = tg.mul %c, %w : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %sa = tg.sum %pa dims [0, 1] : tensor<2x2xf32> -> tensor<f32>
  %sb = tg.sum %pb dims [0, 1] : tensor<2x1xf32> -> tensor<f32>
  %sc = tg.sum %pc dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
  %l1 = tg.add %sa, %sb : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = tg.add %l1, %sc : tensor<f32>, tensor<f32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<2x6xf32>
  return %g : tensor<2x6xf32>
}

// -----

// Two slices with a gap between them, neither at an end, met in reverse
// order: zeros in the gap and at both ends, one constant of each width (the
// paddings the merge replaced are erased with their zeros).
// CHECK-LABEL: func.func @gap(
// CHECK: %[[GA:.+]] = tg.mul %{{.+}}, %1 {tg.role = "grad"}
// CHECK: %[[GB:.+]] = tg.mul %{{.+}}, %0 {tg.role = "grad"}
// CHECK-DAG: %[[Z1:.+]] = tg.constant dense<0.000000e+00> : tensor<1x4xbf16>
// CHECK-DAG: %[[Z2:.+]] = tg.constant dense<0.000000e+00> : tensor<2x4xbf16>
// CHECK-DAG: %[[Z3:.+]] = tg.constant dense<0.000000e+00> : tensor<3x4xbf16>
// CHECK: %[[G:.+]] = tg.concat %[[Z1]], %[[GB]], %[[Z2]], %[[GA]], %[[Z3]] dim 0 {tg.role = "grad"} : tensor<1x4xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<3x4xbf16> -> tensor<10x4xbf16>
// CHECK-NEXT: tg.grad_of %[[G]] wrt %arg0
// CHECK-NEXT: return %[[G]]
func.func @gap(%x: tensor<10x4xbf16>) -> tensor<10x4xbf16> {
  %a = tg.slice %x dim 0 start 5 end 7 : tensor<10x4xbf16> -> tensor<2x4xbf16>
  %b = tg.slice %x dim 0 start 1 end 3 : tensor<10x4xbf16> -> tensor<2x4xbf16>
  %p = tg.mul %a, %b : tensor<2x4xbf16>, tensor<2x4xbf16> -> tensor<2x4xbf16>
  %l = tg.sum %p dims [0, 1] : tensor<2x4xbf16> -> tensor<bf16>
  %g = tg.grad %l wrt %x : tensor<bf16>, tensor<10x4xbf16>
  return %g : tensor<10x4xbf16>
}

// -----

// Overlapping slices are added, as any two gradients of one value.
// CHECK-LABEL: func.func @overlap(
// CHECK: %[[P1:.+]] = tg.concat
// CHECK: %[[P2:.+]] = tg.concat
// CHECK: %[[G:.+]] = tg.add %[[P1]], %[[P2]] {tg.role = "grad"}
// CHECK: return %[[G]]
func.func @overlap(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %a = tg.slice %x dim 1 start 0 end 4 : tensor<2x6xf32> -> tensor<2x4xf32>
  %b = tg.slice %x dim 1 start 2 end 6 : tensor<2x6xf32> -> tensor<2x4xf32>
  %p = tg.mul %a, %b : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %l = tg.sum %p dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<2x6xf32>
  return %g : tensor<2x6xf32>
}

// -----

// Slices along different dims are added; so is a slice's gradient and that
// of a whole use of the value.
// CHECK-LABEL: func.func @other_dims(
// CHECK-COUNT-2: tg.add {{.+}} {tg.role = "grad"} : tensor<4x4xf32>, tensor<4x4xf32>
// CHECK: return
func.func @other_dims(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = tg.slice %x dim 0 start 0 end 2 : tensor<4x4xf32> -> tensor<2x4xf32>
  %b = tg.slice %x dim 1 start 2 end 4 : tensor<4x4xf32> -> tensor<4x2xf32>
  %sa = tg.sum %a dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %sb = tg.sum %b dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %sx = tg.sum %x dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
  %l1 = tg.add %sa, %sb : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = tg.add %l1, %sx : tensor<f32>, tensor<f32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}

// -----

// Slices of a slice: the inner slices' gradients merge into the outer
// slice's gradient, which the outer slice's rule then pads (the merged
// concat is read, so it stays).
// CHECK-LABEL: func.func @nested(
// CHECK: %[[GA:.+]] = tg.mul %{{.+}}, %2 {tg.role = "grad"}
// CHECK: %[[GB:.+]] = tg.mul %{{.+}}, %1 {tg.role = "grad"}
// CHECK: %[[S:.+]] = tg.concat %[[GA]], %[[GB]] dim 1 {tg.role = "grad"} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
// CHECK: %[[Z1:.+]] = tg.constant dense<0.000000e+00> : tensor<2x1xf32>
// CHECK: %[[Z2:.+]] = tg.constant dense<0.000000e+00> : tensor<2x1xf32>
// CHECK: %[[G:.+]] = tg.concat %[[Z1]], %[[S]], %[[Z2]] dim 1 {tg.role = "grad"} : tensor<2x1xf32>, tensor<2x6xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
// CHECK-NEXT: tg.grad_of %[[G]] wrt %arg0
func.func @nested(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = tg.slice %x dim 1 start 1 end 7 : tensor<2x8xf32> -> tensor<2x6xf32>
  %a = tg.slice %s dim 1 start 0 end 3 : tensor<2x6xf32> -> tensor<2x3xf32>
  %b = tg.slice %s dim 1 start 3 end 6 : tensor<2x6xf32> -> tensor<2x3xf32>
  %p = tg.mul %a, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %l = tg.sum %p dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
  %g = tg.grad %l wrt %x : tensor<f32>, tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}
