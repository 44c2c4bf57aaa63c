// RUN: ampc-opt %s | ampc-opt | FileCheck %s

// batch_norm, its backward and update ops, dropout and counter_next print
// and parse back; buffers are function arguments with tg.buffer and results
// with tg.buffer_out.

// CHECK-LABEL: func.func @bn
// CHECK-SAME: tg.buffer = "rm"
// CHECK-SAME: tg.buffer_out = "rm"
func.func @bn(%x: tensor<8x4x5xf16> {tg.input = "x"}, %w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<ones>},
              %b: tensor<4xf32> {tg.param = "b", tg.init = #tg.init<zeros>},
              %rm: tensor<4xf32> {tg.buffer = "rm", tg.init = #tg.init<zeros>},
              %rv: tensor<4xf32> {tg.buffer = "rv", tg.init = #tg.init<ones>},
              %step: tensor<i32> {tg.state = "dropout.step", tg.init = #tg.init<zeros>})
    -> (tensor<8x4x5xf32> {tg.output = 0 : i64}, tensor<4xf32> {tg.buffer_out = "rm"},
        tensor<4xf32> {tg.buffer_out = "rv"}, tensor<i32> {tg.state_out = "dropout.step"}) {
  // CHECK: tg.batch_norm %{{.*}} {eps = 1.000000e-05 : f64, momentum = 1.000000e-01 : f64, training = true} : tensor<8x4x5xf16>, {{.*}} -> tensor<8x4x5xf32>
  %y = tg.batch_norm %x, %w, %b, %rm, %rv {eps = 1.0e-05 : f64, momentum = 0.1 : f64, training = true}
      : tensor<8x4x5xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4x5xf32>
  // CHECK: tg.batch_norm_update
  %m, %v = tg.batch_norm_update %x, %rm, %rv {momentum = 0.1 : f64}
      : tensor<8x4x5xf16>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  // CHECK: tg.batch_norm_grad
  %dx, %dw, %db = tg.batch_norm_grad %y, %x, %w, %rm, %rv {eps = 1.0e-05 : f64, training = true}
      : tensor<8x4x5xf32>, tensor<8x4x5xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
      -> tensor<8x4x5xf32>, tensor<4xf32>, tensor<4xf32>
  // CHECK: tg.dropout %{{.*}} {key = 1 : i64, p = 2.500000e-01 : f64} : tensor<8x4x5xf32>, tensor<i32> -> tensor<8x4x5xf32>
  %d = tg.dropout %dx, %step {key = 1 : i64, p = 0.25 : f64} : tensor<8x4x5xf32>, tensor<i32> -> tensor<8x4x5xf32>
  // CHECK: tg.counter_next %{{.*}} : tensor<i32>
  %next = tg.counter_next %step : tensor<i32>
  return %d, %m, %v, %next : tensor<8x4x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>
}
