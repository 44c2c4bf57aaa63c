// RUN: ampc-opt %s --split-input-file --ampc-convert-tg-to-rt -verify-diagnostics

// expected-error @+1 {{not buffer-planned (run ampc-buffer-planning)}}
func.func @unplanned(%x: tensor<4xf32> {tg.input = "x"}) -> (tensor<4xf32> {tg.output = 0 : i64}) {
  %a = tg.relu %x : tensor<4xf32>
  return %a : tensor<4xf32>
}
