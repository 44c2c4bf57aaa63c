// amp-embed on a dense layer of upstream dialects (install_test.cmake runs
// it with f16 and bf16; LOW is the low type). linalg.matmul is registered
// `lower`: its inputs are cast to the low type, it accumulates into its f32
// `outs` and stays valid linalg, and its result is rounded to the low type;
// math.exp is `fp32`, so whatever the matmul gives reaches it as f32.
func.func @dense(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>,
                 %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>)
                     outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  %z = arith.addf %y, %b : tensor<8x4xf32>
  %e = math.exp %z : tensor<8x4xf32>
  return %e : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @dense
// CHECK-SAME: (%[[X:.+]]: tensor<8x16xf32>, %[[W:.+]]: tensor<16x4xf32>
// CHECK-DAG: %[[XL:.+]] = {{tg.cast|arith.truncf}} %[[X]] {{.*}}tensor<8x16x[[LOW]]>
// CHECK-DAG: %[[WL:.+]] = {{tg.cast|arith.truncf}} %[[W]] {{.*}}tensor<16x4x[[LOW]]>
// CHECK: linalg.matmul {{.*}}ins(%[[XL]], %[[WL]] : tensor<8x16x[[LOW]]>, tensor<16x4x[[LOW]]>)
// CHECK: math.exp {{.*}} : tensor<8x4xf32>
// CHECK: return {{.*}} : tensor<8x4xf32>
