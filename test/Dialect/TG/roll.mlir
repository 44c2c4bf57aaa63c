// RUN: ampc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// tg.roll parses, verifies and prints back (negative and repeated dims, no
// dims: flattened); its verifier (the type inference) rejects shifts that do
// not pair with the dims and dims out of range.

// CHECK-LABEL: func.func @roll
func.func @roll(%x: tensor<3x4xf32>, %i: tensor<5xi64>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<5xi64>, tensor<3x4xbf16>) {
  // CHECK: tg.roll %{{.*}} shifts [1, -2] dims [0, -1] : tensor<3x4xf32> -> tensor<3x4xf32>
  %0 = tg.roll %x shifts [1, -2] dims [0, -1] : tensor<3x4xf32> -> tensor<3x4xf32>
  // CHECK: tg.roll %{{.*}} shifts [5] dims [] : tensor<3x4xf32> -> tensor<3x4xf32>
  %1 = tg.roll %x shifts [5] dims [] : tensor<3x4xf32> -> tensor<3x4xf32>
  // CHECK: tg.roll %{{.*}} shifts [1, 1] dims [0, 0] : tensor<5xi64> -> tensor<5xi64>
  %2 = tg.roll %i shifts [1, 1] dims [0, 0] : tensor<5xi64> -> tensor<5xi64>
  // CHECK: tg.roll %{{.*}} shifts [1] dims [1] : tensor<3x4xf32> -> tensor<3x4xbf16>
  %3 = tg.roll %x shifts [1] dims [1] : tensor<3x4xf32> -> tensor<3x4xbf16>
  return %0, %1, %2, %3 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<5xi64>, tensor<3x4xbf16>
}

// -----

func.func @roll_pairs(%x: tensor<3x4xf32>) {
  // expected-error@+2 {{'tg.roll' shifts [1, 2] and dims [0] must pair one shift with each dim (one shift without dims)}}
  // expected-error@+1 {{'tg.roll' op failed to infer returned types}}
  %0 = tg.roll %x shifts [1, 2] dims [0] : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @roll_flat_pairs(%x: tensor<3x4xf32>) {
  // expected-error@+2 {{'tg.roll' shifts [1, 2] and dims [] must pair one shift with each dim (one shift without dims)}}
  // expected-error@+1 {{'tg.roll' op failed to infer returned types}}
  %0 = tg.roll %x shifts [1, 2] dims [] : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @roll_dim_range(%x: tensor<3x4xf32>) {
  // expected-error@+2 {{'tg.roll' dim -3 is out of range for 'tensor<3x4xf32>' (rank 2)}}
  // expected-error@+1 {{'tg.roll' op failed to infer returned types}}
  %0 = tg.roll %x shifts [1] dims [-3] : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}
