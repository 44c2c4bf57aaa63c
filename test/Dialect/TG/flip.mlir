// RUN: ampc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// tg.flip parses, verifies and prints back; its verifier (the type
// inference) rejects dims out of range, unsorted or repeated.

// CHECK-LABEL: func.func @flip
func.func @flip(%x: tensor<2x3x4xf32>, %i: tensor<5xi32>, %s: tensor<f16>) -> (tensor<2x3x4xf32>, tensor<5xi32>, tensor<f16>, tensor<2x3x4xf16>) {
  // CHECK: tg.flip %{{.*}} dims [0, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %0 = tg.flip %x dims [0, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  // CHECK: tg.flip %{{.*}} dims [0] : tensor<5xi32> -> tensor<5xi32>
  %1 = tg.flip %i dims [0] : tensor<5xi32> -> tensor<5xi32>
  // A scalar has no dim to flip.
  // CHECK: tg.flip %{{.*}} dims [] : tensor<f16> -> tensor<f16>
  %2 = tg.flip %s dims [] : tensor<f16> -> tensor<f16>
  // A fused store: the flipped f32 elements stored as f16.
  // CHECK: tg.flip %{{.*}} dims [1] : tensor<2x3x4xf32> -> tensor<2x3x4xf16>
  %3 = tg.flip %x dims [1] : tensor<2x3x4xf32> -> tensor<2x3x4xf16>
  return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<5xi32>, tensor<f16>, tensor<2x3x4xf16>
}

// -----

func.func @flip_dim_range(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.flip' dim 2 is out of range for 'tensor<2x3xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.flip' op failed to infer returned types}}
  %0 = tg.flip %x dims [2] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @flip_dim_negative(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.flip' dim -1 is out of range for 'tensor<2x3xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.flip' op failed to infer returned types}}
  %0 = tg.flip %x dims [-1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @flip_dims_repeated(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.flip' dims [1, 1] must be sorted and distinct}}
  // expected-error@+1 {{'tg.flip' op failed to infer returned types}}
  %0 = tg.flip %x dims [1, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @flip_shape(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.flip' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error@+1 {{'tg.flip' op failed to infer returned types}}
  %0 = tg.flip %x dims [0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}
