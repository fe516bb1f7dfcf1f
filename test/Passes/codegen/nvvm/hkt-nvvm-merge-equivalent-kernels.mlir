// RUN: hkt-opt %s --hkt-nvvm-merge-equivalent-kernels | FileCheck %s

// Three launches of one body (scale_0, scale_1, scale_2, as outlining names
// them), one of another constant, one of another element type, one of the
// same body with another kernel attribute (a known block size): the three
// share scale_0's module, the others keep their own; the erased modules are
// gone.
// CHECK-LABEL: func.func @host
// CHECK: gpu.launch_func @scale_0::@scale_0
// CHECK-NEXT: gpu.launch_func @scale_0::@scale_0
// CHECK-NEXT: gpu.launch_func @scale_0::@scale_0
// CHECK-NEXT: gpu.launch_func @triple::@triple
// CHECK-NEXT: gpu.launch_func @scale_f16::@scale_f16
// CHECK-NEXT: gpu.launch_func @scale_sized::@scale_sized
// CHECK: gpu.module @scale_0
// CHECK: arith.constant 2.0
// CHECK-NOT: gpu.module @scale_1
// CHECK: gpu.module @triple
// CHECK: arith.constant 3.0
// CHECK-NOT: gpu.module @scale_2
// CHECK: gpu.module @scale_f16
// CHECK: gpu.module @scale_sized
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @host(%x: memref<128xf32>, %y: memref<128xf32>, %h: memref<128xf16>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @scale_0::@scale_0 blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<128xf32>)
    gpu.launch_func @scale_1::@scale_1 blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%y : memref<128xf32>)
    gpu.launch_func @scale_2::@scale_2 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<128xf32>)
    gpu.launch_func @triple::@triple blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%y : memref<128xf32>)
    gpu.launch_func @scale_f16::@scale_f16 blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%h : memref<128xf16>)
    gpu.launch_func @scale_sized::@scale_sized blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1) args(%x : memref<128xf32>)
    return
  }
  gpu.module @scale_0 {
    gpu.func @scale_0(%x: memref<128xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      memref.store %w, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
  gpu.module @scale_1 {
    gpu.func @scale_1(%x: memref<128xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      memref.store %w, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
  gpu.module @triple {
    gpu.func @triple(%x: memref<128xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %three = arith.constant 3.0 : f32
      %w = arith.mulf %v, %three : f32
      memref.store %w, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
  gpu.module @scale_2 {
    gpu.func @scale_2(%x: memref<128xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      memref.store %w, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
  gpu.module @scale_f16 {
    gpu.func @scale_f16(%x: memref<128xf16>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<128xf16>
      %two = arith.constant 2.0 : f16
      %w = arith.mulf %v, %two : f16
      memref.store %w, %x[%i] : memref<128xf16>
      gpu.return
    }
  }
  gpu.module @scale_sized {
    gpu.func @scale_sized(%x: memref<128xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      memref.store %w, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
}
