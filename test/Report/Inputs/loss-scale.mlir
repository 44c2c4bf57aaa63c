func.func @step(%x: tensor<4xf32> {tg.input = "x"}) -> (tensor<4xf32> {tg.output = 0 : i64})
    attributes {tg.loss_scale = {mode = "dynamic", init = 65536.0 : f64, growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64, hysteresis = 1 : i64}} {
  %0 = tg.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
