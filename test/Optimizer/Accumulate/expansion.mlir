// ampc-optimizer-expansion with gradient accumulation: the loss times 1/K
// is differentiated, the gradient goes into the f32 state `w.grad_acc`
// through tg.grad_accumulate with the micro-batch index `accumulate.micro`,
// the update reads the accumulator, and the function records K. The pass
// option overrides the op's K; K = 1 adds nothing.
// RUN: ampc-opt %s --ampc-optimizer-expansion | FileCheck %s
// RUN: ampc-opt %s --ampc-optimizer-expansion=accumulate=2 | FileCheck %s --check-prefix=TWO
// RUN: ampc-opt %s --ampc-optimizer-expansion=accumulate=1 | FileCheck %s --check-prefix=ONE

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.param = "w"}
// CHECK-SAME: %[[ACC:[a-z0-9]+]]: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.state = "w.grad_acc"}
// CHECK-SAME: %[[MICRO:[a-z0-9]+]]: tensor<i32> {tg.init = #tg.init<zeros>, tg.state = "accumulate.micro"}
// CHECK-SAME: tensor<3xf32> {tg.state_out = "w.grad_acc"}, tensor<i32> {tg.state_out = "accumulate.micro"}
// CHECK-SAME: attributes {tg.accumulate = 4 : i64}
// CHECK: %[[L:[0-9]+]] = tg.mean
// CHECK: %[[INV:[0-9]+]] = tg.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[LK:[0-9]+]] = tg.mul %[[L]], %[[INV]]
// CHECK: tg.grad_seed %[[LK]]
// CHECK: %[[A:[0-9]+]]:2 = tg.grad_accumulate accs(%[[ACC]] : tensor<3xf32>) grads(%{{[0-9]+}} : tensor<3xf32>) micro(%[[MICRO]] : tensor<i32>) {k = 4 : i64, tg.role = "optimizer"}
// CHECK-NEXT: tg.sgd_update params(%[[W]] : tensor<3xf32>) grads(%[[A]]#0 : tensor<3xf32>)
// CHECK: return %[[L]], %{{[0-9]+}}#0, %[[A]]#0, %[[A]]#1,

// TWO: attributes {tg.accumulate = 2 : i64}
// TWO: tg.constant dense<5.000000e-01> : tensor<f32>
// TWO: tg.grad_accumulate {{.*}} {k = 2 : i64

// ONE-NOT: grad_accumulate
// ONE-NOT: tg.accumulate
// ONE-NOT: grad_acc

func.func @step(%x: tensor<4x3xf32> {tg.input = "x"},
                %w: tensor<3xf32> {tg.param = "w", tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<3xf32> {tg.param_out = "w"}) {
  %y = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %w1 = tg.minimize %l wrt %w with "sgd" {lr = 1.0e-01 : f64,
      momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
      {accumulate = 4 : i64} : tensor<f32>, tensor<3xf32>
  return %l, %w1 : tensor<f32>, tensor<3xf32>
}
