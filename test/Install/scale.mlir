// amp-embed on arith/math ops (install_test.cmake runs it with f16 and bf16;
// LOW is the low type). arith.mulf is registered `lower`, math.exp `fp32`,
// arith.addf `follow`.
func.func @scale(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = arith.mulf %x, %y : tensor<4x8xf32>
  %e = math.exp %m : tensor<4x8xf32>
  %s = arith.addf %e, %x : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @scale
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4x8xf32>)
// CHECK-DAG: %[[XL:.+]] = {{tg.cast|arith.truncf}} %[[X]] {{.*}}tensor<4x8x[[LOW]]>
// CHECK-DAG: %[[YL:.+]] = {{tg.cast|arith.truncf}} %[[Y]] {{.*}}tensor<4x8x[[LOW]]>
// CHECK: %[[M:.+]] = arith.mulf %[[XL]], %[[YL]] : tensor<4x8x[[LOW]]>
// CHECK: %[[MF:.+]] = {{tg.cast|arith.extf}} %[[M]] {{.*}}tensor<4x8xf32>
// CHECK: %[[E:.+]] = math.exp %[[MF]] : tensor<4x8xf32>
// CHECK: %[[S:.+]] = arith.addf %[[E]], %[[X]] : tensor<4x8xf32>
// CHECK: return %[[S]] : tensor<4x8xf32>

// The same through textual pipelines (install_test.cmake passes the
// pipeline instead of the low type; PIPE checks them):
// ampc-auto-mixed-precision by name, and ampc-pipeline, which runs it with
// the reference policy and then autodiff and the canonicalizer.
// PIPE-LABEL: func.func @scale
// PIPE: arith.mulf {{.*}} : tensor<4x8xbf16>
// PIPE: math.exp {{.*}} : tensor<4x8xf32>
// PIPE: return {{.*}} : tensor<4x8xf32>
