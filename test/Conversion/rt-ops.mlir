// RUN: ampc-opt %s --split-input-file -verify-diagnostics

// expected-error @+1 {{needs one 'rt.init' and one 'rt.step'}}
rt.program @none attributes {arena_size = 0 : i64, fingerprint = 0 : i64, intermediate_bytes = 0 : i64} {
  rt.slot input @x : tensor<4xf32>
}

// -----

rt.program @args attributes {arena_size = 0 : i64, fingerprint = 0 : i64, intermediate_bytes = 0 : i64} {
  rt.slot input @x : tensor<4xf32>
  rt.init {
  ^bb0(%x: !rt.buffer, %arena: !rt.buffer):
  }
  // expected-error @+1 {{expects 2 block arguments (the 1 slots and the arena), got 1}}
  rt.step {
  ^bb0(%arena: !rt.buffer):
  }
}

// -----

rt.program @call attributes {arena_size = 256 : i64, fingerprint = 0 : i64, intermediate_bytes = 0 : i64} {
  rt.init {
  ^bb0(%arena: !rt.buffer):
  }
  rt.step {
  ^bb0(%arena: !rt.buffer):
    // expected-error @+1 {{argument #1 ("text") has no C type of the runtime ABI}}
    rt.call "ampc_fill"(#rt.context, "text")
  }
}

// -----

// expected-error @+1 {{no runtime dtype for 'f80'}}
rt.program @dtype attributes {arena_size = 256 : i64, fingerprint = 0 : i64, intermediate_bytes = 0 : i64, foo = #rt.dtype<f80>} {
}

// -----

// A view into the arena must start inside it (hand-edited lowered IR used to
// crash `ampc run` with a view far outside the arena).
rt.program @view attributes {arena_size = 512 : i64, fingerprint = 0 : i64, intermediate_bytes = 0 : i64} {
  rt.init {
  ^bb0(%arena: !rt.buffer):
  }
  rt.step {
  ^bb0(%arena: !rt.buffer):
    %ok = rt.view %arena[256]
    // expected-error @+1 {{'rt.view' op offset -256 is outside the arena of 512 bytes}}
    %neg = rt.view %arena[-256]
  }
}

// -----

rt.program @view_past attributes {arena_size = 512 : i64, fingerprint = 0 : i64, intermediate_bytes = 0 : i64} {
  rt.init {
  ^bb0(%arena: !rt.buffer):
  }
  rt.step {
  ^bb0(%arena: !rt.buffer):
    // expected-error @+1 {{'rt.view' op offset 512 is outside the arena of 512 bytes}}
    %past = rt.view %arena[512]
  }
}
