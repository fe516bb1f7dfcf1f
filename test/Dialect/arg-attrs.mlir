// RUN: hkt-opt %s | hkt-opt | FileCheck %s

// Valid uses of the hkt function argument and result attributes
// (docs/module-format.md); every message they can give: invalid-arg-attrs.mlir.

// A layer's arguments: names, roles, a default inside its range.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%{{.+}}: tensor<2x8x4xf32> {hkt.name = "x"},
// CHECK-SAME: %{{.+}}: tensor<4x4xf32> {hkt.name = "wv", hkt.role = "parameter"},
// CHECK-SAME: %{{.+}}: tensor<2xi32> {hkt.default = 8 : i32, hkt.name = "lengths", hkt.range = array<i64: 1, 8>, hkt.role = "input"})
// CHECK-SAME: -> (tensor<2x8x4xf32> {hkt.name = "y"})
func.func @layer(%x: tensor<2x8x4xf32> {hkt.name = "x"},
                 %wv: tensor<4x4xf32> {hkt.name = "wv", hkt.role = "parameter"},
                 %len: tensor<2xi32> {hkt.name = "lengths", hkt.role = "input", hkt.default = 8 : i32, hkt.range = array<i64: 1, 8>})
    -> (tensor<2x8x4xf32> {hkt.name = "y"}) {
  return %x : tensor<2x8x4xf32>
}

// In-out arguments, each paired with the result that carries its new value
// (in any order), beside an ordinary result; a float default.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.+}}: tensor<4xf32> {hkt.role = "inout"}, %{{.+}}: tensor<4xf32> {hkt.name = "m", hkt.role = "inout"},
// CHECK-SAME: %{{.+}}: tensor<f32> {hkt.default = 1.000000e-01 : f32, hkt.name = "lr"})
// CHECK-SAME: -> (tensor<f32> {hkt.name = "loss"}, tensor<4xf32> {hkt.inout = 1 : i64}, tensor<4xf32> {hkt.inout = 0 : i64})
func.func @step(%p: tensor<4xf32> {hkt.role = "inout"},
                %m: tensor<4xf32> {hkt.name = "m", hkt.role = "inout"},
                %lr: tensor<f32> {hkt.name = "lr", hkt.default = 0.1 : f32})
    -> (tensor<f32> {hkt.name = "loss"}, tensor<4xf32> {hkt.inout = 1 : i64},
        tensor<4xf32> {hkt.inout = 0 : i64}) {
  return %lr, %m, %p : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// Dynamic dimensions: bounds, and symbols shared between arguments (also
// twice in one argument); without hkt.dims each dimension is its own.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%{{.+}}: tensor<?x?x16xi32> {hkt.bounds = array<i64: 8, 8, 16>, hkt.dims = ["N", "N", ""]},
// CHECK-SAME: %{{.+}}: tensor<?xf32> {hkt.bounds = array<i64: 8>, hkt.dims = ["N"]},
// CHECK-SAME: %{{.+}}: tensor<?x4xf32> {hkt.bounds = array<i64: 32, 4>})
func.func @dynamic(%a: tensor<?x?x16xi32> {hkt.bounds = array<i64: 8, 8, 16>, hkt.dims = ["N", "N", ""]},
                   %b: tensor<?xf32> {hkt.bounds = array<i64: 8>, hkt.dims = ["N"]},
                   %c: tensor<?x4xf32> {hkt.bounds = array<i64: 32, 4>}) {
  return
}

// A result's dynamic dimensions name symbols of the arguments (the caller
// allocates it at their sizes).
// CHECK-LABEL: func.func @dynamic_result
// CHECK-SAME: -> (tensor<?x3xf32> {hkt.dims = ["B", ""], hkt.name = "logits"})
func.func @dynamic_result(%t: tensor<?x16xi32> {hkt.bounds = array<i64: 64, 16>, hkt.dims = ["B", ""]},
                          %r: tensor<?x3xf32>) -> (tensor<?x3xf32> {hkt.name = "logits", hkt.dims = ["B", ""]}) {
  return %r : tensor<?x3xf32>
}
