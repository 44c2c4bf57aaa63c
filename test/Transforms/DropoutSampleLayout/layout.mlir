// RUN: ampc-opt %s --ampc-dropout-sample-layout --split-input-file 2>/dev/null | FileCheck %s
// RUN: ampc-opt %s --ampc-dropout-sample-layout --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTE
// RUN: ampc-opt %s --ampc-dropout-sample-layout="notes=false" --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=QUIET --allow-empty

// QUIET-NOT: note:

// [B, T, D] activations (x is a data input of batch 4, 24 elements per
// sample): row-wise ops, reshapes that merge the batch into dim 0, a
// reduction over T and a transpose of the inner dims keep the layout; the
// gradient dropouts (same key) get the forward's attribute.
// CHECK-LABEL: func.func @transformer_like(
// CHECK: tg.dropout %{{.+}} {key = 0 : i64, p = 5.000000e-01 : f64, sample_elems = 24 : i64}
// CHECK: tg.dropout %{{.+}} {key = 1 : i64, p = 5.000000e-01 : f64, sample_elems = 24 : i64} : tensor<12x8xf32>
// CHECK: tg.dropout %{{.+}} {key = 2 : i64, p = 5.000000e-01 : f64, sample_elems = 8 : i64} : tensor<4x8xf32>
// CHECK: tg.dropout %{{.+}} {key = 3 : i64, p = 5.000000e-01 : f64, sample_elems = 24 : i64} : tensor<4x8x3xf32>
// CHECK: tg.dropout %{{.+}} {key = 0 : i64, p = 5.000000e-01 : f64, sample_elems = 24 : i64, tg.role = "grad"}
func.func @transformer_like(%x: tensor<4x3x8xf32> {tg.input = "x"}, %w: tensor<8x8xf32> {tg.param = "w"}, %b: tensor<8xf32> {tg.param = "b"}, %step: tensor<i32> {tg.state = "dropout.step"}) -> (tensor<4x3x8xf32>, tensor<12x8xf32>, tensor<4x8xf32>, tensor<4x8x3xf32>, tensor<4x3x8xf32>) {
  %0 = tg.matmul %x, %w : tensor<4x3x8xf32>, tensor<8x8xf32> -> tensor<4x3x8xf32>
  %1 = tg.add %0, %b : tensor<4x3x8xf32>, tensor<8xf32> -> tensor<4x3x8xf32>
  %2 = tg.relu %1 : tensor<4x3x8xf32>
  %3 = tg.dropout %2, %step {key = 0 : i64, p = 5.000000e-01 : f64} : tensor<4x3x8xf32>, tensor<i32> -> tensor<4x3x8xf32>
  %4 = tg.reshape %3 shape [12, 8] : tensor<4x3x8xf32> -> tensor<12x8xf32>
  %5 = tg.softmax %4 dim 1 : tensor<12x8xf32>
  %6 = tg.dropout %5, %step {key = 1 : i64, p = 5.000000e-01 : f64} : tensor<12x8xf32>, tensor<i32> -> tensor<12x8xf32>
  %7 = tg.sum %3 dims [1] : tensor<4x3x8xf32> -> tensor<4x8xf32>
  %8 = tg.dropout %7, %step {key = 2 : i64, p = 5.000000e-01 : f64} : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf32>
  %9 = tg.transpose %3 perm [0, 2, 1] : tensor<4x3x8xf32> -> tensor<4x8x3xf32>
  %10 = tg.dropout %9, %step {key = 3 : i64, p = 5.000000e-01 : f64} : tensor<4x8x3xf32>, tensor<i32> -> tensor<4x8x3xf32>
  %11 = tg.dropout %2, %step {key = 0 : i64, p = 5.000000e-01 : f64, tg.role = "grad"} : tensor<4x3x8xf32>, tensor<i32> -> tensor<4x3x8xf32>
  return %3, %6, %8, %10, %11 : tensor<4x3x8xf32>, tensor<12x8xf32>, tensor<4x8xf32>, tensor<4x8x3xf32>, tensor<4x3x8xf32>
}

// -----

// A transpose that moves the batch, a reduction over it, a reshape that
// puts several samples in one row and then a row-wise op, and a value
// with no batch (a parameter): nothing is proven, each forward dropout
// gets a note, and neither it nor its gradient gets the attribute.
// CHECK-LABEL: func.func @unproven(
// CHECK-NOT: sample_elems
// CHECK: return
func.func @unproven(%x: tensor<4x6xf32> {tg.input = "x"}, %w: tensor<6x6xf32> {tg.param = "w"}, %v: tensor<12x6xf32> {tg.param = "v"}, %step: tensor<i32> {tg.state = "dropout.step"}) -> (tensor<6x4xf32>, tensor<6xf32>, tensor<2x6xf32>, tensor<6x6xf32>, tensor<6x4xf32>) {
  %0 = tg.transpose %x perm [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  // NOTE: layout.mlir:[[@LINE+1]]:{{[0-9]+}}: note: dropout: the input is not proven to hold each sample of the batch as one contiguous block (batch outermost)
  %1 = tg.dropout %0, %step {key = 0 : i64, p = 5.000000e-01 : f64} : tensor<6x4xf32>, tensor<i32> -> tensor<6x4xf32>
  %2 = tg.sum %x dims [0] : tensor<4x6xf32> -> tensor<6xf32>
  // NOTE: layout.mlir:[[@LINE+1]]:{{[0-9]+}}: note: dropout:
  %3 = tg.dropout %2, %step {key = 1 : i64, p = 5.000000e-01 : f64} : tensor<6xf32>, tensor<i32> -> tensor<6xf32>
  %4 = tg.reshape %x shape [2, 12] : tensor<4x6xf32> -> tensor<2x12xf32>
  %5 = tg.matmul %4, %v : tensor<2x12xf32>, tensor<12x6xf32> -> tensor<2x6xf32>
  // NOTE: layout.mlir:[[@LINE+1]]:{{[0-9]+}}: note: dropout:
  %6 = tg.dropout %5, %step {key = 2 : i64, p = 5.000000e-01 : f64} : tensor<2x6xf32>, tensor<i32> -> tensor<2x6xf32>
  // NOTE: layout.mlir:[[@LINE+1]]:{{[0-9]+}}: note: dropout:
  %7 = tg.dropout %w, %step {key = 3 : i64, p = 5.000000e-01 : f64} : tensor<6x6xf32>, tensor<i32> -> tensor<6x6xf32>
  // The gradient of a dropout is not noted again.
  // NOTE-NOT: note:
  %8 = tg.dropout %0, %step {key = 0 : i64, p = 5.000000e-01 : f64, tg.role = "grad"} : tensor<6x4xf32>, tensor<i32> -> tensor<6x4xf32>
  return %1, %3, %6, %7, %8 : tensor<6x4xf32>, tensor<6xf32>, tensor<2x6xf32>, tensor<6x6xf32>, tensor<6x4xf32>
}

// -----

// Convolutions and pooling keep the batch in dim 0; embedding widens the
// ids' layout (ids [4, 5]: 5 ids, 5 * 6 values per sample); a [B, 1]
// operand broadcast within rows places the rows as well.
// CHECK-LABEL: func.func @conv_and_embedding(
// CHECK: tg.dropout %{{.+}} sample_elems = 36 : i64} : tensor<4x4x3x3xf32>
// CHECK: tg.dropout %{{.+}} sample_elems = 30 : i64} : tensor<4x5x6xf32>
// CHECK: tg.dropout %{{.+}} sample_elems = 7 : i64} : tensor<4x7xf32>
func.func @conv_and_embedding(%img: tensor<4x3x5x5xf32> {tg.input = "img"}, %k: tensor<4x3x3x3xf32> {tg.param = "k"}, %ids: tensor<4x5xi32> {tg.input = "ids"}, %table: tensor<10x6xf32> {tg.param = "table"}, %s: tensor<4x1xf32> {tg.input = "s"}, %c: tensor<7xf32> {tg.param = "c"}, %step: tensor<i32> {tg.state = "dropout.step"}) -> (tensor<4x4x3x3xf32>, tensor<4x5x6xf32>, tensor<4x7xf32>) {
  %0 = tg.conv2d %img, %k stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<4x3x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<4x4x3x3xf32>
  %1 = tg.dropout %0, %step {key = 0 : i64, p = 5.000000e-01 : f64} : tensor<4x4x3x3xf32>, tensor<i32> -> tensor<4x4x3x3xf32>
  %2 = tg.embedding %table, %ids : tensor<10x6xf32>, tensor<4x5xi32> -> tensor<4x5x6xf32>
  %3 = tg.dropout %2, %step {key = 1 : i64, p = 5.000000e-01 : f64} : tensor<4x5x6xf32>, tensor<i32> -> tensor<4x5x6xf32>
  %4 = tg.mul %s, %c : tensor<4x1xf32>, tensor<7xf32> -> tensor<4x7xf32>
  %5 = tg.dropout %4, %step {key = 2 : i64, p = 5.000000e-01 : f64} : tensor<4x7xf32>, tensor<i32> -> tensor<4x7xf32>
  return %1, %3, %5 : tensor<4x4x3x3xf32>, tensor<4x5x6xf32>, tensor<4x7xf32>
}

// -----

// The batch is the dim 0 most data inputs share (4: x and labels); the
// [6, 6] input (an attention mask, given whole to every rank) is no batch.
// CHECK-LABEL: func.func @batch_by_inputs(
// CHECK: tg.dropout %{{.+}} sample_elems = 6 : i64} : tensor<4x6xf32>
// CHECK: tg.dropout %{{.+}} {key = 1 : i64, p = 5.000000e-01 : f64} : tensor<6x6xf32>
func.func @batch_by_inputs(%mask: tensor<6x6xf32> {tg.input = "mask"}, %x: tensor<4x6xf32> {tg.input = "x"}, %labels: tensor<4xi32> {tg.input = "labels"}, %step: tensor<i32> {tg.state = "dropout.step"}) -> (tensor<4x6xf32>, tensor<6x6xf32>) {
  %0 = tg.dropout %x, %step {key = 0 : i64, p = 5.000000e-01 : f64} : tensor<4x6xf32>, tensor<i32> -> tensor<4x6xf32>
  // NOTE: layout.mlir:[[@LINE+1]]:{{[0-9]+}}: note: dropout:
  %1 = tg.dropout %mask, %step {key = 1 : i64, p = 5.000000e-01 : f64} : tensor<6x6xf32>, tensor<i32> -> tensor<6x6xf32>
  return %0, %1 : tensor<4x6xf32>, tensor<6x6xf32>
}
