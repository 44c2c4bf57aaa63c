// RUN: ampc-opt %s --ampc-autodiff | FileCheck %s --check-prefix=AUTODIFF
// RUN: ampc-opt %s --ampc-optimizer-expansion | FileCheck %s --check-prefix=OPT
// RUN: ampc-opt %s --ampc-autodiff --ampc-optimizer-expansion | FileCheck %s --check-prefix=BOTH

// The two passes split the work: ampc-autodiff expands tg.grad and leaves
// tg.minimize; ampc-optimizer-expansion expands tg.minimize and leaves
// tg.grad; in either order together they expand both.

// AUTODIFF-NOT: tg.grad %
// AUTODIFF: tg.minimize
// AUTODIFF-NOT: tg.sgd_update
// OPT: tg.grad %
// OPT-NOT: tg.minimize
// OPT: tg.sgd_update
// BOTH-NOT: tg.grad %
// BOTH-NOT: tg.minimize
// BOTH: tg.sgd_update
func.func @both(%x: tensor<3xf32> {tg.input = "x"},
                %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<ones>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.output = 1 : i64},
        tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = tg.sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  %gx = tg.grad %l wrt %x : tensor<f32>, tensor<3xf32>
  %w1 = tg.minimize %l wrt %w with "sgd" {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xf32>
  return %l, %gx, %w1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
