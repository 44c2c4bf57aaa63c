// RUN: ampc-opt %s --split-input-file --ampc-optimizer-expansion="low-update=stochastic state-dtype=bf16" | FileCheck %s
// RUN: ampc-opt %s --split-input-file --ampc-optimizer-expansion="low-update=kahan" | FileCheck %s --check-prefix=KAHAN
// RUN: not ampc-opt %s --split-input-file --ampc-optimizer-expansion="low-update=up" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not ampc-opt %s --split-input-file --ampc-optimizer-expansion="state-dtype=f16" 2>&1 | FileCheck %s --check-prefix=BADDT

// Updates of 16-bit params: a bf16 param (O3's) and an f32 one under SGD
// with momentum. stochastic + bf16 state: bf16 buffers, the group's update
// counter, the mode and param_base 0. kahan: a compensation buffer for the
// bf16 param only (comp_params names it), no counter.
// CHECK-LABEL: func.func @sgd(
// CHECK-SAME: tensor<3xbf16> {tg.init = #tg.init<zeros>, tg.state = "w.momentum_buffer"}
// CHECK-SAME: tensor<3xbf16> {tg.init = #tg.init<zeros>, tg.state = "v.momentum_buffer"}
// CHECK-SAME: tensor<i32> {tg.init = #tg.init<zeros>, tg.state = "sgd.counter"}
// CHECK-SAME: tensor<i32> {tg.state_out = "sgd.counter"}
// CHECK: tg.sgd_update params({{.*}} : tensor<3xbf16>, tensor<3xf32>) {{.*}} momentum_buffers({{.*}} : tensor<3xbf16>, tensor<3xbf16>) counter(%{{.*}} : tensor<i32>) {{{.*}}low_update = "stochastic", {{.*}}param_base = 0 : i64
// KAHAN-LABEL: func.func @sgd(
// KAHAN-SAME: tensor<3xf32> {tg.init = #tg.init<zeros>, tg.state = "w.momentum_buffer"}
// KAHAN-SAME: tensor<3xbf16> {tg.init = #tg.init<zeros>, tg.state = "w.kahan_comp"}
// KAHAN-NOT: v.kahan_comp
// KAHAN: tg.sgd_update {{.*}} comps(%{{.*}} : tensor<3xbf16>) {comp_params = array<i64: 0>, {{.*}}low_update = "kahan"
// BAD: error: 'tg.minimize' op low-update must be nearest, stochastic or kahan, got 'up'
// BADDT: error: 'tg.minimize' op state-dtype must be f32 or bf16, got 'f16'
func.func @sgd(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3xbf16> {tg.param = "w", tg.init = #tg.init<zeros>}, %v: tensor<3xf32> {tg.param = "v", tg.init = #tg.init<zeros>}) -> (tensor<f32> {tg.output = 0 : i64}) {
  %wf = tg.cast %w : tensor<3xbf16> to tensor<3xf32>
  %a = tg.mul %x, %wf : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %y = tg.mul %a, %v : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = tg.mean %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %n:2 = tg.minimize %l wrt %w, %v with "sgd" {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : tensor<f32>, tensor<3xbf16>, tensor<3xf32>
  return %l : tensor<f32>
}
