// RUN: ampc-opt %s --split-input-file --verify-diagnostics

// `tg.region` names an autocast mode.
func.func @bad_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.region' must be one of "off", "fp16", "bf16", got "fp32"}}
  %0 = tg.relu %x {tg.region = "fp32"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @good_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.relu %x {tg.region = "bf16"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
