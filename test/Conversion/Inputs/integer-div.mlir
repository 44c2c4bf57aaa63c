// tg.div of integers is valid IR (an imported model may hold one) but its
// kernel computes on floats: lowering it is an error at the op
// (integer-arithmetic.test).
func.func @g(%arg0: tensor<2xi32> {tg.input = "x"}) -> (tensor<2xi32> {tg.output = 0 : i64}) {
  %0 = tg.div %arg0, %arg0 : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
