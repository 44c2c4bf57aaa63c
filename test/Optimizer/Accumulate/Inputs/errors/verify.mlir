// The checks of tg.grad_accumulate's types.
func.func @f16_acc(%a: tensor<4xf16>, %g: tensor<4xf32>, %m: tensor<i32>) {
  // expected-error @+1 {{'tg.grad_accumulate' accumulator #0 must be f32 (its gradient is 'tensor<4xf32>'), got 'tensor<4xf16>'}}
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf16>) grads(%g : tensor<4xf32>) micro(%m : tensor<i32>) {k = 2 : i64}
  return
}

// -----

func.func @f32_acc_of_f64(%a: tensor<4xf32>, %g: tensor<4xf64>, %m: tensor<i32>) {
  // expected-error @+1 {{'tg.grad_accumulate' accumulator #0 must be f64 (its gradient is 'tensor<4xf64>'), got 'tensor<4xf32>'}}
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf32>) grads(%g : tensor<4xf64>) micro(%m : tensor<i32>) {k = 2 : i64}
  return
}

// -----

func.func @f64_acc_of_f32(%a: tensor<4xf64>, %g: tensor<4xf32>, %m: tensor<i32>) {
  // expected-error @+1 {{'tg.grad_accumulate' accumulator #0 must be f32 (its gradient is 'tensor<4xf32>'), got 'tensor<4xf64>'}}
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf64>) grads(%g : tensor<4xf32>) micro(%m : tensor<i32>) {k = 2 : i64}
  return
}

// -----

func.func @shape(%a: tensor<4xf32>, %g: tensor<3xf16>, %m: tensor<i32>) {
  // expected-error @+1 {{'tg.grad_accumulate' accumulator #0 has type 'tensor<4xf32>' but its gradient 'tensor<3xf16>'}}
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf32>) grads(%g : tensor<3xf16>) micro(%m : tensor<i32>) {k = 2 : i64}
  return
}

// -----

func.func @count(%a: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<i32>) {
  // expected-error @+1 {{'tg.grad_accumulate' needs one accumulator per gradient: 1 accumulators but 2 gradients}}
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf32>) grads(%g, %g : tensor<4xf32>, tensor<4xf32>) micro(%m : tensor<i32>) {k = 2 : i64}
  return
}

// -----

func.func @k(%a: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<i32>) {
  // expected-error @+1 {{attribute 'k' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf32>) grads(%g : tensor<4xf32>) micro(%m : tensor<i32>) {k = 0 : i64}
  return
}

// -----

func.func @ok(%a: tensor<4xf32>, %g: tensor<4xbf16>, %m: tensor<i32>) -> (tensor<4xf32>, tensor<i32>) {
  %r:2 = tg.grad_accumulate accs(%a : tensor<4xf32>) grads(%g : tensor<4xbf16>) micro(%m : tensor<i32>) {k = 3 : i64}
  return %r#0, %r#1 : tensor<4xf32>, tensor<i32>
}
