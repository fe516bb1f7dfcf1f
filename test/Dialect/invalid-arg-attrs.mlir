// RUN: hkt-opt %s --split-input-file --verify-diagnostics

// The function argument and result attributes of the hkt dialect
// (docs/module-format.md): every message of HKTDialect::verifyRegionArgAttribute
// and verifyRegionResultAttribute. Valid uses: arg-attrs.mlir.

// expected-error @+1 {{argument #0: 'hkt.name' must be a non-empty string}}
func.func @name_not_string(%x: tensor<4xf32> {hkt.name = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.name' must be a non-empty string}}
func.func @name_empty(%x: tensor<4xf32> {hkt.name = ""}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.default' must be an integer for integer elements or a float for float elements, got 1.500000e+00 : f32 for elements of type 'i32'}}
func.func @default_float_on_int(%x: tensor<2xi32> {hkt.default = 1.5 : f32}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.default' must be an integer for integer elements or a float for float elements, got "one" for elements of type 'f32'}}
func.func @default_string(%x: tensor<2xf32> {hkt.default = "one"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.default' 65 lies outside 'hkt.range' [1, 64]}}
func.func @default_outside_range(%x: tensor<2xi32> {hkt.default = 65 : i32, hkt.range = array<i64: 1, 64>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.range' must be an array of two integers [lo, hi] with lo <= hi (array<i64: lo, hi>)}}
func.func @range_empty(%x: tensor<2xi32> {hkt.range = array<i64: 64, 1>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.range' must be an array of two integers [lo, hi] with lo <= hi (array<i64: lo, hi>)}}
func.func @range_three(%x: tensor<2xi32> {hkt.range = array<i64: 1, 2, 3>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.range' applies to integer elements, not 'f32'}}
func.func @range_on_float(%x: tensor<2xf32> {hkt.range = array<i64: 0, 1>}) {
  return
}

// -----

// expected-error @+1 {{argument #1: 'hkt.role' must be "input", "parameter" or "inout" (results are the outputs)}}
func.func @role_output(%x: tensor<2xf32>, %y: tensor<2xf32> {hkt.role = "output"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.role' must be "input", "parameter" or "inout" (results are the outputs)}}
func.func @role_not_string(%x: tensor<2xf32> {hkt.role = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: an in-out argument must be a ranked tensor, not 'f32'}}
func.func @inout_scalar(%x: f32 {hkt.role = "inout"}) -> (f32 {hkt.inout = 0 : i64}) {
  return %x : f32
}

// -----

// expected-error @+1 {{argument #0: 'hkt.role' is "inout" but no result carries its new value ('hkt.inout' = 0)}}
func.func @inout_without_result(%p: tensor<4xf32> {hkt.role = "inout"}) -> tensor<4xf32> {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0: 'hkt.inout' is a result attribute: mark the argument with 'hkt.role' = "inout" and its new value, a result, with 'hkt.inout' = 0}}
func.func @inout_on_argument(%p: tensor<4xf32> {hkt.inout = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.bounds' applies to ranked tensors, not 'f32'}}
func.func @bounds_scalar(%x: f32 {hkt.bounds = array<i64: 4>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.bounds' must be an array<i64> with one bound per dimension (2 for 'tensor<?x4xf32>')}}
func.func @bounds_rank(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.bounds' must be an array<i64> with one bound per dimension (2 for 'tensor<?x4xf32>')}}
func.func @bounds_not_array(%x: tensor<?x4xf32> {hkt.bounds = 8 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.bounds' gives 5 for dimension 1, whose size is 4}}
func.func @bounds_static(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 5>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.bounds' gives 0 for dynamic dimension 0; a bound is at least 1}}
func.func @bounds_zero(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 0, 4>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.dims' applies to ranked tensors, not 'f32'}}
func.func @dims_scalar(%x: f32 {hkt.dims = ["B"]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.dims' must be an array of strings, one per dimension (2 for 'tensor<?x4xf32>')}}
func.func @dims_rank(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B"]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.dims' must be an array of strings, one per dimension (2 for 'tensor<?x4xf32>')}}
func.func @dims_not_strings(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = [1, 2]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.dims' needs 'hkt.bounds' on the same argument}}
func.func @dims_without_bounds(%x: tensor<?x4xf32> {hkt.dims = ["B", ""]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.dims' names static dimension 1 ('C'); give "" for static dimensions}}
func.func @dims_static(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", "C"]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'hkt.dims' leaves dynamic dimension 0 without a symbol}}
func.func @dims_unnamed(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["", ""]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: symbol 'B' has bound 8 in dimension 0 but bound 16 on argument #1}}
func.func @dims_two_bounds(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", ""]},
                            %y: tensor<?xf32> {hkt.bounds = array<i64: 16>, hkt.dims = ["B"]}) {
  return
}

// -----

// expected-error @+1 {{argument #0: unknown argument attribute 'hkt.nmae' (known: hkt.name, hkt.default, hkt.range, hkt.role, hkt.bounds, hkt.dims)}}
func.func @unknown_argument_attribute(%x: tensor<4xf32> {hkt.nmae = "x"}) {
  return
}

// -----

// expected-error @+1 {{result #0: 'hkt.name' must be a non-empty string}}
func.func @result_name_empty(%x: tensor<4xf32>) -> (tensor<4xf32> {hkt.name = ""}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: an in-out result takes the name of its argument: drop 'hkt.name'}}
func.func @inout_result_named(%p: tensor<4xf32> {hkt.role = "inout"}) -> (tensor<4xf32> {hkt.inout = 0 : i64, hkt.name = "p_new"}) {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.inout' must be an integer: the index of the in-out argument whose new value this result is}}
func.func @inout_not_integer(%p: tensor<4xf32>) -> (tensor<4xf32> {hkt.inout = "p"}) {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.inout' = 2 is not an argument index (the function has 1 arguments)}}
func.func @inout_out_of_range(%p: tensor<4xf32>) -> (tensor<4xf32> {hkt.inout = 2 : i64}) {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.inout' = 0: the result's type 'tensor<5xf32>' differs from the argument's 'tensor<4xf32>'}}
func.func @inout_type(%p: tensor<4xf32> {hkt.role = "inout"}, %q: tensor<5xf32>) -> (tensor<5xf32> {hkt.inout = 0 : i64}) {
  return %q : tensor<5xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.inout' = 0 names argument #0, which needs 'hkt.role' = "inout"}}
func.func @inout_without_role(%p: tensor<4xf32> {hkt.role = "parameter"}) -> (tensor<4xf32> {hkt.inout = 0 : i64}) {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #1: results #0 and #1 both carry 'hkt.inout' = 0}}
func.func @inout_twice(%p: tensor<4xf32> {hkt.role = "inout"}) -> (tensor<4xf32> {hkt.inout = 0 : i64}, tensor<4xf32> {hkt.inout = 0 : i64}) {
  return %p, %p : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.range' applies to arguments, not results}}
func.func @range_on_result(%x: tensor<4xi32>) -> (tensor<4xi32> {hkt.range = array<i64: 0, 1>}) {
  return %x : tensor<4xi32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.role' applies to arguments, not results}}
func.func @role_on_result(%x: tensor<4xf32>) -> (tensor<4xf32> {hkt.role = "output"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: unknown result attribute 'hkt.inplace' (known: hkt.name, hkt.inout, hkt.dims)}}
func.func @unknown_result_attribute(%x: tensor<4xf32>) -> (tensor<4xf32> {hkt.inplace = 0 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.dims' gives dimension 0 the symbol 'N', which no argument's 'hkt.dims' defines (a result's sizes come from the arguments)}}
func.func @result_symbol_undefined(%x: tensor<?xf32> {hkt.bounds = array<i64: 8>, hkt.dims = ["B"]}) -> (tensor<?xf32> {hkt.dims = ["N"]}) {
  return %x : tensor<?xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.dims' leaves dynamic dimension 0 without a symbol}}
func.func @result_dim_unnamed(%x: tensor<?xf32> {hkt.bounds = array<i64: 8>, hkt.dims = ["B"]}) -> (tensor<?xf32> {hkt.dims = [""]}) {
  return %x : tensor<?xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.dims' names static dimension 1 ('C'); give "" for static dimensions}}
func.func @result_dim_static(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", ""]}) -> (tensor<?x4xf32> {hkt.dims = ["B", "C"]}) {
  return %x : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{result #0: 'hkt.dims' must be an array of strings, one per dimension (2 for 'tensor<?x4xf32>')}}
func.func @result_dims_rank(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", ""]}) -> (tensor<?x4xf32> {hkt.dims = ["B"]}) {
  return %x : tensor<?x4xf32>
}
