// Ops of every upstream dialect ampc::registerAllDialects adds next to tg.
func.func @mixed(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %n: index) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x2xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%acc : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e = math.exp %y : tensor<4x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %e) -> (tensor<4x2xf32>) {
    %t = tg.relu %a : tensor<4x2xf32>
    scf.yield %t : tensor<4x2xf32>
  }
  return %r : tensor<4x2xf32>
}
