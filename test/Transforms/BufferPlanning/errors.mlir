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
