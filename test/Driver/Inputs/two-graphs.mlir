// Two graphs, one with a non-finite constant (JSON writes it as a string).
func.func @first(%x: tensor<2xf32> {tg.input = "x"}) -> (tensor<2xf32> {tg.output = 0 : i64}) {
  %c = tg.constant dense<[0x7F800000, 0xFF800000]> : tensor<2xf32>
  %y = tg.maximum %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}
func.func @second(%x: tensor<3xf16> {tg.input = "x"}) -> (tensor<3xf16> {tg.output = 0 : i64}) {
  %y = tg.relu %x : tensor<3xf16>
  return %y : tensor<3xf16>
}
