// RUN: ampc-opt %s | ampc-opt | FileCheck %s

// CHECK-LABEL: func.func @roundtrip
func.func @roundtrip(%a: tensor<4x3xf32>, %b: tensor<3xi32>, %c: tensor<3xi1>) -> (tensor<4x3xi1>, tensor<3xi1>) {
  // CHECK: tg.greater_equal %{{.+}}, %{{.+}} : tensor<4x3xf32>, tensor<3xi32> -> tensor<4x3xi1>
  %0 = tg.greater_equal %a, %b : tensor<4x3xf32>, tensor<3xi32> -> tensor<4x3xi1>
  // CHECK: tg.not_equal %{{.+}}, %{{.+}} : tensor<3xi1>, tensor<3xi32> -> tensor<3xi1>
  %1 = tg.not_equal %c, %b : tensor<3xi1>, tensor<3xi32> -> tensor<3xi1>
  return %0, %1 : tensor<4x3xi1>, tensor<3xi1>
}
