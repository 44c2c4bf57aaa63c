// RUN: ampc-opt %s --ampc-buffer-planning --split-input-file -verify-diagnostics

// Only statically shaped tensors have a place in the arena: a scalar result
// is an error at its op (it used to crash the planner).
func.func @scalar(%a: f32, %b: f32) -> f32 {
  // expected-error @+1 {{'arith.addf' op buffer planning: result #0 has type 'f32'; only statically shaped tensors can be placed in the arena}}
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'arith.negf' op buffer planning: result #0 has type 'tensor<?xf32>'}}
  %n = arith.negf %a : tensor<?xf32>
  return %n : tensor<?xf32>
}

// -----

// A tensor whose bytes do not fit the planner's 2^62-byte limit (here they
// would not even fit in 64 bits) is an error at its op, not a wrapped size
// that the run then overruns.
func.func @huge_result(%a: tensor<3037000499xf32>, %b: tensor<3037000499x1xf32>) -> tensor<3037000499x3037000499xf32> {
  // expected-error @+1 {{'tg.add' op buffer planning: result #0 of type 'tensor<3037000499x3037000499xf32>' needs more than 2^62 bytes}}
  %s = tg.add %a, %b : tensor<3037000499xf32>, tensor<3037000499x1xf32> -> tensor<3037000499x3037000499xf32>
  return %s : tensor<3037000499x3037000499xf32>
}

// -----

// expected-error @+1 {{buffer planning: argument #0 of type 'tensor<9223372036854775807xf32>' needs more than 2^62 bytes}}
func.func @huge_argument(%a: tensor<9223372036854775807xf32>) -> tensor<9223372036854775807xf32> {
  %n = tg.neg %a : tensor<9223372036854775807xf32> -> tensor<9223372036854775807xf32>
  return %n : tensor<9223372036854775807xf32>
}

// -----

// Each tensor fits (2^62 bytes), the two together do not.
func.func @huge_total(%a: tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32> {
  // expected-error @+1 {{'tg.neg' op buffer planning: the step's tensors need more than 2^62 bytes in all (result #0 of type 'tensor<1152921504606846976xf32>' is past it)}}
  %n = tg.neg %a : tensor<1152921504606846976xf32> -> tensor<1152921504606846976xf32>
  return %n : tensor<1152921504606846976xf32>
}
