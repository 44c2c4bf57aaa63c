// RUN: ampc-opt %s -split-input-file -verify-diagnostics

// Verifier errors of the dialect attributes: tg.pin, unknown tg.* attributes,
// function argument/result attributes and #tg.init.

func.func @pin_f64(%x: tensor<2xf32>) {
  // expected-error@+1 {{'tg.exp' op 'tg.pin' must be one of f32, f16, bf16, got f64}}
  %0 = tg.exp %x {tg.pin = f64} : tensor<2xf32>
  return
}

// -----

func.func @pin_string(%x: tensor<2xf32>) {
  // expected-error@+1 {{'tg.exp' op 'tg.pin' must be one of f32, f16, bf16, got "f16"}}
  %0 = tg.exp %x {tg.pin = "f16"} : tensor<2xf32>
  return
}

// -----

func.func @pin_int_type(%x: tensor<2xf32>) {
  // expected-error@+1 {{'tg.exp' op 'tg.pin' must be one of f32, f16, bf16, got i32}}
  %0 = tg.exp %x {tg.pin = i32} : tensor<2xf32>
  return
}

// -----

func.func @pin_on_func_return(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'func.return' op 'tg.pin' must be one of f32, f16, bf16, got tensor<2xf16>}}
  func.return {tg.pin = tensor<2xf16>} %x : tensor<2xf32>
}

// -----

func.func @unknown_op_attr(%x: tensor<2xf32>) {
  // The name is printed as a quoted StringAttr ('"x"'); accept both.
  // expected-error-re@+1 {{'tg.exp' op unknown attribute '{{"?}}tg.precision{{"?}}'}}
  %0 = tg.exp %x {tg.precision = f16} : tensor<2xf32>
  return
}

// -----

// The name is printed as a quoted StringAttr ('"x"'); accept both.

// expected-error-re@+1 {{'func.func' op unknown attribute '{{"?}}tg.input{{"?}}'}}
func.func @input_attr_on_func(%x: tensor<2xf32>) attributes {tg.input = "x"} {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0: 'tg.input' must be a string}}
func.func @input_not_string(%x: tensor<2xf32> {tg.input = 1 : i64}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0: 'tg.param' must be a string}}
func.func @param_not_string(%x: tensor<2xf32> {tg.param = @w}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0: 'tg.init' must be a #tg.init}}
func.func @init_not_init(%x: tensor<2xf32> {tg.param = "w", tg.init = "zeros"}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0: unknown attribute 'tg.output'}}
func.func @output_on_argument(%x: tensor<2xf32> {tg.output = 0 : i64}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0: unknown attribute 'tg.pin'}}
func.func @unknown_argument_attr(%x: tensor<2xf32> {tg.pin = f16}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op result #0: 'tg.output' must be a non-negative integer}}
func.func @output_not_integer(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.output = "0"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{'func.func' op result #0: 'tg.output' must be a non-negative integer}}
func.func @output_negative(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.output = -1 : i64}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{'func.func' op argument #0: 'tg.init' needs a parameter, buffer or state argument}}
func.func @init_on_input(%x: tensor<2xf32> {tg.input = "x", tg.init = #tg.init<zeros>}) {
  return
}

// -----

// expected-error@+1 {{'func.func' op argument #0 cannot be both an input and a parameter}}
func.func @input_and_param(%x: tensor<2xf32> {tg.input = "x", tg.param = "x"}) {
  return
}

// -----

func.func @minimize_no_params(%l: tensor<f32>) {
  // expected-error@+2 {{'tg.minimize' needs at least one parameter to update}}
  // expected-error@+1 {{'tg.minimize' op failed to infer returned types}}
  "tg.minimize"(%l) {optimizer = "sgd", hyperparams = {lr = 0.1, momentum = 0.0, weight_decay = 0.0, nesterov = false}} : (tensor<f32>) -> ()
  return
}

// -----

func.func @sum_empty_dims(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{'tg.sum' dims must not be empty (list every dim to reduce)}}
  // expected-error@+1 {{'tg.sum' op failed to infer returned types}}
  %0 = tg.sum %x dims [] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// expected-error@+1 {{'func.func' op result #0: 'tg.param_out' must be a string}}
func.func @param_out_not_string(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.param_out = 0 : i64}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{'func.func' op result #0: unknown attribute 'tg.input'}}
func.func @input_on_result(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.input = "x"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{'func.func' op result #0: unknown attribute 'tg.init'}}
func.func @init_on_result(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.init = #tg.init<zeros>}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{'func.func' op argument #1: unknown attribute 'tg.bogus'}}
func.func @second_argument(%x: tensor<2xf32> {tg.input = "x"}, %y: tensor<2xf32> {tg.input = "y", tg.bogus}) {
  return
}

// -----

// expected-error@+1 {{unknown initialiser 'xavier'; expected zeros, ones, normal, uniform or full}}
func.func @init_unknown_kind(%x: tensor<2xf32> {tg.init = #tg.init<xavier>}) {
  return
}

// -----

// expected-error@+1 {{normal(mean, std) needs std >= 0, got -1.000000e+00}}
func.func @init_normal_std(%x: tensor<2xf32> {tg.init = #tg.init<normal(0.0, -1.0)>}) {
  return
}

// -----

// expected-error@+1 {{uniform(low, high) needs low <= high, got 1.000000e+00 > -1.000000e+00}}
func.func @init_uniform_bounds(%x: tensor<2xf32> {tg.init = #tg.init<uniform(1.0, -1.0)>}) {
  return
}

// -----

// expected-error@+1 {{initialiser bounds must be finite}}
func.func @init_not_finite(%x: tensor<2xf32> {tg.init = #tg.init<normal(0x7FF0000000000000, 1.0)>}) {
  return
}

// -----

// expected-error@+1 {{initialiser bounds must be finite}}
func.func @init_nan(%x: tensor<2xf32> {tg.init = #tg.init<uniform(0.0, 0x7FF8000000000000)>}) {
  return
}

// -----

// expected-error@+1 {{expected '('}}
func.func @init_missing_bounds(%x: tensor<2xf32> {tg.init = #tg.init<normal>}) {
  return
}

// -----

// expected-error@+1 {{expected '>'}}
func.func @init_zeros_with_bounds(%x: tensor<2xf32> {tg.init = #tg.init<zeros(0.0, 1.0)>}) {
  return
}

// -----

// expected-error@+1 {{expected ','}}
func.func @init_one_bound(%x: tensor<2xf32> {tg.init = #tg.init<uniform(0.0)>}) {
  return
}

// -----

// expected-error@+2 {{unexpected decimal integer literal for a floating point value}}
// expected-note@+1 {{add a trailing dot to make the literal a float}}
func.func @init_integer_bound(%x: tensor<2xf32> {tg.init = #tg.init<normal(0, 1)>}) {
  return
}

// -----

// expected-error@+1 {{normal(mean, std) needs std >= 0, got -5.000000e-01}}
#bad = #tg.init<normal(1.0, -0.5)>
func.func @init_alias() {
  return
}
