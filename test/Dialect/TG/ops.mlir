// Round trip of every tg op, the #tg.init attribute, the function argument and
// result attributes and the discardable tg.pin attribute, in the custom form
// and through the generic form.
// RUN: ampc-opt %s | ampc-opt | FileCheck %s
// RUN: ampc-opt %s --mlir-print-op-generic | ampc-opt | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<f32>, tensor<2xi32>, tensor<i1>, tensor<2x2xf16>, tensor<bf16>, tensor<3xi64>) {
  // CHECK: tg.constant dense<2.000000e+00> : tensor<f32>
  %0 = tg.constant dense<2.0> : tensor<f32>
  // CHECK: tg.constant dense<[1, 2]> : tensor<2xi32>
  %1 = tg.constant dense<[1, 2]> : tensor<2xi32>
  // CHECK: tg.constant dense<true> : tensor<i1>
  %2 = tg.constant dense<true> : tensor<i1>
  // CHECK: tg.constant dense<5.000000e-01> : tensor<2x2xf16>
  %3 = tg.constant dense<0.5> : tensor<2x2xf16>
  // CHECK: tg.constant dense<1.000000e+00> : tensor<bf16>
  %4 = tg.constant dense<1.0> : tensor<bf16>
  // CHECK: tg.constant dense<[0, -1, 7]> : tensor<3xi64>
  %5 = tg.constant dense<[0, -1, 7]> : tensor<3xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<f32>, tensor<2xi32>, tensor<i1>, tensor<2x2xf16>, tensor<bf16>, tensor<3xi64>
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.+]]: tensor<4x4xf32>, %[[I:.+]]: tensor<4xi32>, %[[B:.+]]: tensor<4xi1>)
func.func @cast(%x: tensor<4x4xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) -> (tensor<4x4xbf16>, tensor<4xf32>, tensor<4xi64>, tensor<4xf16>) {
  // CHECK: %[[H:.+]] = tg.cast %[[X]] : tensor<4x4xf32> to tensor<4x4xf16>
  %h = tg.cast %x : tensor<4x4xf32> to tensor<4x4xf16>
  // CHECK: tg.cast %[[H]] : tensor<4x4xf16> to tensor<4x4xbf16>
  %bf = tg.cast %h : tensor<4x4xf16> to tensor<4x4xbf16>
  // CHECK: tg.cast %[[I]] : tensor<4xi32> to tensor<4xf32>
  %f = tg.cast %i : tensor<4xi32> to tensor<4xf32>
  // CHECK: tg.cast %[[I]] : tensor<4xi32> to tensor<4xi64>
  %l = tg.cast %i : tensor<4xi32> to tensor<4xi64>
  // CHECK: tg.cast %[[B]] : tensor<4xi1> to tensor<4xf16>
  %m = tg.cast %b : tensor<4xi1> to tensor<4xf16>
  return %bf, %f, %l, %m : tensor<4x4xbf16>, tensor<4xf32>, tensor<4xi64>, tensor<4xf16>
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3x5xf32>, %[[V:.+]]: tensor<3xf32>, %[[W:.+]]: tensor<5xf32>, %[[BA:.+]]: tensor<8x2x3xf32>, %[[BB:.+]]: tensor<4x1x2x3xf16>, %[[BC:.+]]: tensor<6x3x5xf32>, %[[H:.+]]: tensor<3x5xf16>)
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %v: tensor<3xf32>,
                  %w: tensor<5xf32>, %ba: tensor<8x2x3xf32>,
                  %bb: tensor<4x1x2x3xf16>, %bc: tensor<6x3x5xf32>,
                  %h: tensor<3x5xf16>) {
  // CHECK: tg.matmul %[[A]], %[[B]] : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
  // 1-D lhs is a row vector, 1-D rhs a column vector; the added dim is dropped.
  // CHECK: tg.matmul %[[V]], %[[B]] : tensor<3xf32>, tensor<3x5xf32> -> tensor<5xf32>
  %1 = tg.matmul %v, %b : tensor<3xf32>, tensor<3x5xf32> -> tensor<5xf32>
  // CHECK: tg.matmul %[[B]], %[[W]] : tensor<3x5xf32>, tensor<5xf32> -> tensor<3xf32>
  %2 = tg.matmul %b, %w : tensor<3x5xf32>, tensor<5xf32> -> tensor<3xf32>
  // CHECK: tg.matmul %[[V]], %[[V]] : tensor<3xf32>, tensor<3xf32> -> tensor<f32>
  %3 = tg.matmul %v, %v : tensor<3xf32>, tensor<3xf32> -> tensor<f32>
  // CHECK: tg.matmul %[[BA]], %[[B]] : tensor<8x2x3xf32>, tensor<3x5xf32> -> tensor<8x2x5xf32>
  %4 = tg.matmul %ba, %b : tensor<8x2x3xf32>, tensor<3x5xf32> -> tensor<8x2x5xf32>
  // Batch dims broadcast ([4, 1] with [6] gives [4, 6]); f16 with f32 gives f32.
  // CHECK: tg.matmul %[[BB]], %[[BC]] : tensor<4x1x2x3xf16>, tensor<6x3x5xf32> -> tensor<4x6x2x5xf32>
  %5 = tg.matmul %bb, %bc : tensor<4x1x2x3xf16>, tensor<6x3x5xf32> -> tensor<4x6x2x5xf32>
  // CHECK: tg.matmul %[[V]], %[[BC]] : tensor<3xf32>, tensor<6x3x5xf32> -> tensor<6x5xf32>
  %6 = tg.matmul %v, %bc : tensor<3xf32>, tensor<6x3x5xf32> -> tensor<6x5xf32>
  // CHECK: tg.matmul %[[A]], %[[H]] : tensor<2x3xf32>, tensor<3x5xf16> -> tensor<2x5xf32>
  %7 = tg.matmul %a, %h : tensor<2x3xf32>, tensor<3x5xf16> -> tensor<2x5xf32>
  return
}

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<4x16xf32>, %[[W:.+]]: tensor<8x16xf32>, %[[B:.+]]: tensor<8xf32>, %[[X3:.+]]: tensor<2x4x16xf16>, %[[V:.+]]: tensor<16xf32>)
func.func @linear(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>,
                  %x3: tensor<2x4x16xf16>, %v: tensor<16xf32>) {
  // CHECK: tg.linear %[[X]], %[[W]], %[[B]] : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %0 = tg.linear %x, %w, %b : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: tg.linear %[[X]], %[[W]] : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %1 = tg.linear %x, %w : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  // CHECK: tg.linear %[[X3]], %[[W]], %[[B]] : tensor<2x4x16xf16>, tensor<8x16xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %2 = tg.linear %x3, %w, %b : tensor<2x4x16xf16>, tensor<8x16xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: tg.linear %[[V]], %[[W]] : tensor<16xf32>, tensor<8x16xf32> -> tensor<8xf32>
  %3 = tg.linear %v, %w : tensor<16xf32>, tensor<8x16xf32> -> tensor<8xf32>
  return
}

// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8x8xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>, %[[XG:.+]]: tensor<2x4x9x9xf32>, %[[WG:.+]]: tensor<6x2x3x3xf32>, %[[B:.+]]: tensor<6xf32>)
func.func @conv2d(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>,
                  %xg: tensor<2x4x9x9xf32>, %wg: tensor<6x2x3x3xf32>,
                  %b: tensor<6xf32>) {
  // CHECK: tg.conv2d %[[X]], %[[W]] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %0 = tg.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
      : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  // CHECK: tg.conv2d %[[X]], %[[W]] stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x3x3xf32>
  %1 = tg.conv2d %x, %w stride [2, 2] padding [0, 0] dilation [1, 1] groups 1
      : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x3x3xf32>
  // Grouped, dilated, strided and padded, each differently in H and W:
  // H: (9 + 2*1 - (2*2 + 1)) / 2 + 1 = 4, W: (9 + 0 - 3) / 1 + 1 = 7.
  // CHECK: tg.conv2d %[[XG]], %[[WG]], %[[B]] stride [2, 1] padding [1, 0] dilation [2, 1] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<2x6x4x7xf32>
  %2 = tg.conv2d %xg, %wg, %b stride [2, 1] padding [1, 0] dilation [2, 1] groups 2
      : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<2x6x4x7xf32>
  return
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<4x1x3xf32>, %[[B:.+]]: tensor<5x1xf32>, %[[H:.+]]: tensor<4x5x3xf16>, %[[BF:.+]]: tensor<3xbf16>, %[[S:.+]]: tensor<f32>, %[[I:.+]]: tensor<2xi32>, %[[L:.+]]: tensor<2x2xi64>, %[[L1:.+]]: tensor<2xi64>)
func.func @binary(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %h: tensor<4x5x3xf16>,
                  %bf: tensor<3xbf16>, %s: tensor<f32>, %i: tensor<2xi32>,
                  %l: tensor<2x2xi64>, %l1: tensor<2xi64>) {
  // CHECK: tg.add %[[A]], %[[A]] : tensor<4x1x3xf32>, tensor<4x1x3xf32> -> tensor<4x1x3xf32>
  %0 = tg.add %a, %a : tensor<4x1x3xf32>, tensor<4x1x3xf32> -> tensor<4x1x3xf32>
  // CHECK: tg.add %[[A]], %[[B]] : tensor<4x1x3xf32>, tensor<5x1xf32> -> tensor<4x5x3xf32>
  %1 = tg.add %a, %b : tensor<4x1x3xf32>, tensor<5x1xf32> -> tensor<4x5x3xf32>
  // f16 with f32 computes in f32.
  // CHECK: tg.sub %[[H]], %[[A]] : tensor<4x5x3xf16>, tensor<4x1x3xf32> -> tensor<4x5x3xf32>
  %2 = tg.sub %h, %a : tensor<4x5x3xf16>, tensor<4x1x3xf32> -> tensor<4x5x3xf32>
  // f16 with bf16 meets at f32.
  // CHECK: tg.mul %[[H]], %[[BF]] : tensor<4x5x3xf16>, tensor<3xbf16> -> tensor<4x5x3xf32>
  %3 = tg.mul %h, %bf : tensor<4x5x3xf16>, tensor<3xbf16> -> tensor<4x5x3xf32>
  // CHECK: tg.div %[[S]], %[[A]] : tensor<f32>, tensor<4x1x3xf32> -> tensor<4x1x3xf32>
  %4 = tg.div %s, %a : tensor<f32>, tensor<4x1x3xf32> -> tensor<4x1x3xf32>
  // CHECK: tg.maximum %[[I]], %[[I]] : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  %5 = tg.maximum %i, %i : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  // CHECK: tg.minimum %[[L]], %[[L1]] : tensor<2x2xi64>, tensor<2xi64> -> tensor<2x2xi64>
  %6 = tg.minimum %l, %l1 : tensor<2x2xi64>, tensor<2xi64> -> tensor<2x2xi64>
  // CHECK: tg.pow %[[BF]], %[[S]] : tensor<3xbf16>, tensor<f32> -> tensor<3xf32>
  %7 = tg.pow %bf, %s : tensor<3xbf16>, tensor<f32> -> tensor<3xf32>
  // CHECK: tg.pow %[[H]], %[[H]] : tensor<4x5x3xf16>, tensor<4x5x3xf16> -> tensor<4x5x3xf16>
  %8 = tg.pow %h, %h : tensor<4x5x3xf16>, tensor<4x5x3xf16> -> tensor<4x5x3xf16>
  return
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[H:.+]]: tensor<4xf16>, %[[BF:.+]]: tensor<bf16>, %[[I:.+]]: tensor<3xi32>)
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<4xf16>, %bf: tensor<bf16>, %i: tensor<3xi32>) {
  // CHECK: tg.neg %[[X]] : tensor<4x8xf32>
  %0 = tg.neg %x : tensor<4x8xf32>
  // CHECK: tg.neg %[[I]] : tensor<3xi32>
  %1 = tg.neg %i : tensor<3xi32>
  // CHECK: tg.abs %[[H]] : tensor<4xf16>
  %2 = tg.abs %h : tensor<4xf16>
  // CHECK: tg.abs %[[I]] : tensor<3xi32>
  %3 = tg.abs %i : tensor<3xi32>
  // CHECK: tg.exp %[[X]] : tensor<4x8xf32>
  %4 = tg.exp %x : tensor<4x8xf32>
  // CHECK: tg.log %[[BF]] : tensor<bf16>
  %5 = tg.log %bf : tensor<bf16>
  // CHECK: tg.sqrt %[[X]] : tensor<4x8xf32>
  %6 = tg.sqrt %x : tensor<4x8xf32>
  // CHECK: tg.rsqrt %[[H]] : tensor<4xf16>
  %7 = tg.rsqrt %h : tensor<4xf16>
  // CHECK: tg.relu %[[X]] : tensor<4x8xf32>
  %8 = tg.relu %x : tensor<4x8xf32>
  // CHECK: tg.gelu %[[X]] approximate "none" : tensor<4x8xf32>
  %9 = tg.gelu %x approximate "none" : tensor<4x8xf32>
  // CHECK: tg.gelu %[[H]] approximate "tanh" : tensor<4xf16>
  %10 = tg.gelu %h approximate "tanh" : tensor<4xf16>
  // CHECK: tg.silu %[[X]] : tensor<4x8xf32>
  %11 = tg.silu %x : tensor<4x8xf32>
  // CHECK: tg.sigmoid %[[BF]] : tensor<bf16>
  %12 = tg.sigmoid %bf : tensor<bf16>
  // CHECK: tg.tanh %[[X]] : tensor<4x8xf32>
  %13 = tg.tanh %x : tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[H:.+]]: tensor<2x3x4xf16>, %[[I:.+]]: tensor<2x3xi32>)
func.func @reduce(%x: tensor<4x8xf32>, %h: tensor<2x3x4xf16>, %i: tensor<2x3xi32>) {
  // CHECK: tg.sum %[[X]] dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %0 = tg.sum %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  // CHECK: tg.sum %[[X]] dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %1 = tg.sum %x dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // CHECK: tg.mean %[[H]] dims [0, 2] : tensor<2x3x4xf16> -> tensor<3xf16>
  %2 = tg.mean %h dims [0, 2] : tensor<2x3x4xf16> -> tensor<3xf16>
  // CHECK: tg.mean %[[H]] dims [0, 1, 2] keepdim : tensor<2x3x4xf16> -> tensor<1x1x1xf16>
  %3 = tg.mean %h dims [0, 1, 2] keepdim : tensor<2x3x4xf16> -> tensor<1x1x1xf16>
  // CHECK: tg.max %[[X]] dims [0] : tensor<4x8xf32> -> tensor<8xf32>
  %4 = tg.max %x dims [0] : tensor<4x8xf32> -> tensor<8xf32>
  // CHECK: tg.max %[[I]] dims [0, 1] : tensor<2x3xi32> -> tensor<i32>
  %5 = tg.max %i dims [0, 1] : tensor<2x3xi32> -> tensor<i32>
  // CHECK: tg.max %[[I]] dims [1] keepdim : tensor<2x3xi32> -> tensor<2x1xi32>
  %6 = tg.max %i dims [1] keepdim : tensor<2x3xi32> -> tensor<2x1xi32>
  return
}

// CHECK-LABEL: func.func @normalization
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[H:.+]]: tensor<2x4x8xf16>, %[[W:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>, %[[WH:.+]]: tensor<8xf16>)
func.func @normalization(%x: tensor<4x8xf32>, %h: tensor<2x4x8xf16>, %w: tensor<8xf32>,
                         %b: tensor<8xf32>, %wh: tensor<8xf16>) {
  // CHECK: tg.softmax %[[X]] dim 1 : tensor<4x8xf32>
  %0 = tg.softmax %x dim 1 : tensor<4x8xf32>
  // CHECK: tg.softmax %[[H]] dim 0 : tensor<2x4x8xf16>
  %1 = tg.softmax %h dim 0 : tensor<2x4x8xf16>
  // CHECK: tg.log_softmax %[[X]] dim 1 : tensor<4x8xf32>
  %2 = tg.log_softmax %x dim 1 : tensor<4x8xf32>
  // CHECK: tg.layer_norm %[[X]], %[[W]], %[[B]] eps 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %3 = tg.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // The result has the widest float type of the operands.
  // CHECK: tg.layer_norm %[[H]], %[[W]], %[[B]] eps 1.000000e-05 : tensor<2x4x8xf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %4 = tg.layer_norm %h, %w, %b eps 1.0e-05 : tensor<2x4x8xf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: tg.rms_norm %[[X]], %[[W]] eps 9.9999999999999995E-7 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %5 = tg.rms_norm %x, %w eps 1.0e-06 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: tg.rms_norm %[[H]], %[[WH]] eps 0.000000e+00 : tensor<2x4x8xf16>, tensor<8xf16> -> tensor<2x4x8xf16>
  %6 = tg.rms_norm %h, %wh eps 0.0 : tensor<2x4x8xf16>, tensor<8xf16> -> tensor<2x4x8xf16>
  return
}

// CHECK-LABEL: func.func @pool
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8x8xf32>, %[[Y:.+]]: tensor<2x4x7x7xf16>)
func.func @pool(%x: tensor<2x4x8x8xf32>, %y: tensor<2x4x7x7xf16>) {
  // CHECK: tg.max_pool2d %[[X]] kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  %0 = tg.max_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  // (7 + 2*1 - 3) / 2 + 1 = 4 and (7 + 0 - 2) / 1 + 1 = 6.
  // CHECK: tg.max_pool2d %[[Y]] kernel [3, 2] stride [2, 1] padding [1, 0] : tensor<2x4x7x7xf16> -> tensor<2x4x4x6xf16>
  %1 = tg.max_pool2d %y kernel [3, 2] stride [2, 1] padding [1, 0] : tensor<2x4x7x7xf16> -> tensor<2x4x4x6xf16>
  // CHECK: tg.avg_pool2d %[[X]] kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  %2 = tg.avg_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  // CHECK: tg.avg_pool2d %[[Y]] kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x4x7x7xf16> -> tensor<2x4x4x4xf16>
  %3 = tg.avg_pool2d %y kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x4x7x7xf16> -> tensor<2x4x4x4xf16>
  return
}

// CHECK-LABEL: func.func @shape
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[ONE:.+]]: tensor<1x1xi64>, %[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<4x3xf16>, %[[C:.+]]: tensor<1x3xf32>, %[[T:.+]]: tensor<100x16xbf16>, %[[IDS:.+]]: tensor<4x8xi32>, %[[ID:.+]]: tensor<i64>)
func.func @shape(%x: tensor<2x3x4xf32>, %one: tensor<1x1xi64>, %a: tensor<2x3xf32>,
                 %b: tensor<4x3xf16>, %c: tensor<1x3xf32>, %t: tensor<100x16xbf16>,
                 %ids: tensor<4x8xi32>, %id: tensor<i64>) {
  // CHECK: tg.reshape %[[X]] shape [2, -1] : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %0 = tg.reshape %x shape [2, -1] : tensor<2x3x4xf32> -> tensor<2x12xf32>
  // CHECK: tg.reshape %[[X]] shape [4, 6] : tensor<2x3x4xf32> -> tensor<4x6xf32>
  %1 = tg.reshape %x shape [4, 6] : tensor<2x3x4xf32> -> tensor<4x6xf32>
  // CHECK: tg.reshape %[[ONE]] shape [] : tensor<1x1xi64> -> tensor<i64>
  %2 = tg.reshape %one shape [] : tensor<1x1xi64> -> tensor<i64>
  // CHECK: tg.transpose %[[X]] perm [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %3 = tg.transpose %x perm [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: tg.transpose %[[A]] perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %4 = tg.transpose %a perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK: tg.concat %[[A]], %[[B]], %[[C]] dim 0 : tensor<2x3xf32>, tensor<4x3xf16>, tensor<1x3xf32> -> tensor<7x3xf32>
  %5 = tg.concat %a, %b, %c dim 0 : tensor<2x3xf32>, tensor<4x3xf16>, tensor<1x3xf32> -> tensor<7x3xf32>
  // CHECK: tg.concat %[[A]], %[[A]] dim 1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  %6 = tg.concat %a, %a dim 1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  // CHECK: tg.slice %[[X]] dim 2 start 1 end 3 : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  %7 = tg.slice %x dim 2 start 1 end 3 : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  // CHECK: tg.slice %[[A]] dim 0 start 0 end 1 : tensor<2x3xf32> -> tensor<1x3xf32>
  %8 = tg.slice %a dim 0 start 0 end 1 : tensor<2x3xf32> -> tensor<1x3xf32>
  // CHECK: tg.embedding %[[T]], %[[IDS]] : tensor<100x16xbf16>, tensor<4x8xi32> -> tensor<4x8x16xbf16>
  %9 = tg.embedding %t, %ids : tensor<100x16xbf16>, tensor<4x8xi32> -> tensor<4x8x16xbf16>
  // CHECK: tg.embedding %[[T]], %[[ID]] : tensor<100x16xbf16>, tensor<i64> -> tensor<16xbf16>
  %10 = tg.embedding %t, %id : tensor<100x16xbf16>, tensor<i64> -> tensor<16xbf16>
  return
}

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[LOGITS:.+]]: tensor<64x10xf32>, %[[LABELS:.+]]: tensor<64xi32>, %[[LH:.+]]: tensor<8x3xf16>, %[[L64:.+]]: tensor<8xi64>, %[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4x8xf16>)
func.func @losses(%logits: tensor<64x10xf32>, %labels: tensor<64xi32>,
                  %lh: tensor<8x3xf16>, %l64: tensor<8xi64>,
                  %a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // CHECK: tg.cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
  %0 = tg.cross_entropy %logits, %labels : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
  // CHECK: tg.cross_entropy %[[LH]], %[[L64]] : tensor<8x3xf16>, tensor<8xi64> -> tensor<f16>
  %1 = tg.cross_entropy %lh, %l64 : tensor<8x3xf16>, tensor<8xi64> -> tensor<f16>
  // CHECK: tg.mse_loss %[[A]], %[[A]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  %2 = tg.mse_loss %a, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  // CHECK: tg.mse_loss %[[B]], %[[A]] : tensor<4x8xf16>, tensor<4x8xf32> -> tensor<f32>
  %3 = tg.mse_loss %b, %a : tensor<4x8xf16>, tensor<4x8xf32> -> tensor<f32>
  // CHECK: tg.mse_loss %[[B]], %[[B]] : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<f16>
  %4 = tg.mse_loss %b, %b : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<f16>
  return
}

// CHECK-LABEL: func.func @training
// CHECK-SAME: (%[[L:.+]]: tensor<f32>, %[[W:.+]]: tensor<4x4xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<f32>, %[[LH:.+]]: tensor<f16>)
func.func @training(%loss: tensor<f32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>,
                    %s: tensor<f32>, %lh: tensor<f16>) {
  // CHECK: %{{.+}}:2 = tg.grad %[[L]] wrt %[[W]], %[[B]] : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
  %gw, %gb = tg.grad %loss wrt %w, %b : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
  // CHECK: tg.grad %[[LH]] wrt %[[B]] : tensor<f16>, tensor<4xf32>
  %g = tg.grad %lh wrt %b : tensor<f16>, tensor<4xf32>
  // CHECK: tg.grad_seed %[[L]] : tensor<f32>
  %seed = tg.grad_seed %loss : tensor<f32>
  // CHECK: tg.grad_seed %[[L]] scale %[[S]] : tensor<f32>, tensor<f32>
  %seed2 = tg.grad_seed %loss scale %s : tensor<f32>, tensor<f32>
  // CHECK: tg.grad_seed %[[LH]] scale %[[S]] : tensor<f16>, tensor<f32>
  %seed3 = tg.grad_seed %lh scale %s : tensor<f16>, tensor<f32>
  // CHECK: %{{.+}}:2 = tg.minimize %[[L]] wrt %[[W]], %[[B]] with "sgd" {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
  %w1, %b1 = tg.minimize %loss wrt %w, %b with "sgd"
      {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64, nesterov = true, weight_decay = 0.0 : f64}
      : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
  // CHECK: tg.minimize %[[L]] wrt %[[W]] with "sgd" {lr = 1.000000e-02 : f64, max_grad_norm = 1.000000e+00 : f64, momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<4x4xf32>
  %w2 = tg.minimize %loss wrt %w with "sgd"
      {lr = 1.0e-02 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64}
      : tensor<f32>, tensor<4x4xf32>
  // CHECK: %{{.+}}:2 = tg.minimize %[[LH]] wrt %[[W]], %[[B]] with "adamw" {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-02 : f64} : tensor<f16>, tensor<4x4xf32>, tensor<4xf32>
  %w3, %b3 = tg.minimize %lh wrt %w, %b with "adamw"
      {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, max_grad_norm = 1.0 : f64}
      : tensor<f16>, tensor<4x4xf32>, tensor<4xf32>
  // CHECK: tg.minimize %[[L]] wrt %[[B]] with "adamw" {beta1 = 0.000000e+00 : f64, beta2 = 0.000000e+00 : f64, eps = 0.000000e+00 : f64, lr = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<4xf32>
  %b4 = tg.minimize %loss wrt %b with "adamw"
      {lr = 0.0 : f64, beta1 = 0.0 : f64, beta2 = 0.0 : f64, eps = 0.0 : f64, weight_decay = 0.0 : f64}
      : tensor<f32>, tensor<4xf32>
  return
}

// The graph-as-function attributes and #tg.init in all its forms.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%{{.+}}: tensor<64x784xf32> {tg.input = "x"},
// CHECK-SAME: %{{.+}}: tensor<64xi32> {tg.input = "labels"},
// CHECK-SAME: %{{.+}}: tensor<784x10xf32> {tg.init = #tg.init<normal(0.0, 0.05)>, tg.param = "w"},
// CHECK-SAME: %{{.+}}: tensor<10xf32> {tg.init = #tg.init<zeros>, tg.param = "b"},
// CHECK-SAME: %{{.+}}: tensor<10xf32> {tg.init = #tg.init<ones>, tg.param = "g"},
// CHECK-SAME: %{{.+}}: tensor<10xf32> {tg.init = #tg.init<uniform(-0.5, 0.5)>, tg.param = "u"},
// CHECK-SAME: %{{.+}}: tensor<10xf32> {tg.init = #tg.init<normal(-1.5, 0.0)>, tg.param = "n"},
// CHECK-SAME: %{{.+}}: tensor<10xf32> {tg.init = #tg.init<uniform(2.0, 2.0)>, tg.param = "k"})
// CHECK-SAME: -> (tensor<f32> {tg.output = 0 : i64}, tensor<784x10xf32> {tg.param_out = "w"}, tensor<10xf32> {tg.param_out = "b"})
func.func @mlp(%x: tensor<64x784xf32> {tg.input = "x"},
               %labels: tensor<64xi32> {tg.input = "labels"},
               %w: tensor<784x10xf32> {tg.param = "w", tg.init = #tg.init<normal(0.0, 0.05)>},
               %b: tensor<10xf32> {tg.param = "b", tg.init = #tg.init<zeros>},
               %g: tensor<10xf32> {tg.param = "g", tg.init = #tg.init<ones>},
               %u: tensor<10xf32> {tg.param = "u", tg.init = #tg.init<uniform(-0.5, 0.5)>},
               %n: tensor<10xf32> {tg.param = "n", tg.init = #tg.init<normal(-1.5, 0.0)>},
               %k: tensor<10xf32> {tg.param = "k", tg.init = #tg.init<uniform(2.0, 2.0)>})
    -> (tensor<f32> {tg.output = 0 : i64}, tensor<784x10xf32> {tg.param_out = "w"},
        tensor<10xf32> {tg.param_out = "b"}) {
  %0 = tg.matmul %x, %w : tensor<64x784xf32>, tensor<784x10xf32> -> tensor<64x10xf32>
  %1 = tg.add %0, %b : tensor<64x10xf32>, tensor<10xf32> -> tensor<64x10xf32>
  %loss = tg.cross_entropy %1, %labels : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
  %w1, %b1 = tg.minimize %loss wrt %w, %b with "sgd"
      {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64, nesterov = false, weight_decay = 0.0 : f64}
      : tensor<f32>, tensor<784x10xf32>, tensor<10xf32>
  return %loss, %w1, %b1 : tensor<f32>, tensor<784x10xf32>, tensor<10xf32>
}

// `#tg.init` spellings the parser accepts besides the printed one.
// CHECK-LABEL: func.func @init_spellings
// CHECK-SAME: tensor<2xf32> {tg.init = #tg.init<zeros>, tg.param = "a"}
// CHECK-SAME: tensor<2xf32> {tg.init = #tg.init<normal(0.5, 2.0)>, tg.param = "b"}
// CHECK-SAME: tensor<2xf32> {tg.init = #tg.init<normal(100.0, 1.0e-05)>, tg.param = "c"}
func.func @init_spellings(%a: tensor<2xf32> {tg.init = #tg.init<"zeros">, tg.param = "a"},
                          %b: tensor<2xf32> {tg.init = #tg.init<normal(5.0e-01, 2.0)>, tg.param = "b"},
                          %c: tensor<2xf32> {tg.init = #tg.init<normal(100.0, 0.00001)>, tg.param = "c"}) {
  return
}

// The discardable tg.pin attribute, on tg ops and on any other op.
// CHECK-LABEL: func.func @pin
// CHECK-SAME: (%[[X:.+]]: tensor<4x4xf32>, %[[H:.+]]: tensor<4x4xf16>)
func.func @pin(%x: tensor<4x4xf32>, %h: tensor<4x4xf16>) -> tensor<4x4xf32> {
  // CHECK: tg.matmul %[[X]], %[[X]] {tg.pin = f32} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %0 = tg.matmul %x, %x {tg.pin = f32} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  // CHECK: tg.softmax %[[H]] dim 1 {tg.pin = f16} : tensor<4x4xf16>
  %1 = tg.softmax %h dim 1 {tg.pin = f16} : tensor<4x4xf16>
  // CHECK: tg.exp %{{.+}} {tg.pin = bf16} : tensor<4x4xf32>
  %2 = tg.exp %0 {tg.pin = bf16} : tensor<4x4xf32>
  // CHECK: return {tg.pin = f32} %{{.+}} : tensor<4x4xf32>
  func.return {tg.pin = f32} %2 : tensor<4x4xf32>
}
