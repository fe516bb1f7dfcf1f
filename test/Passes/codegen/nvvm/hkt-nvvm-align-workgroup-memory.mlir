// RUN: hkt-opt %s --hkt-nvvm-align-workgroup-memory | FileCheck %s
// RUN: hkt-opt %s --hkt-nvvm-align-workgroup-memory="alignment=128" | FileCheck %s --check-prefix=A128
// RUN: not hkt-opt %s --hkt-nvvm-align-workgroup-memory="alignment=24" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: alignment must be a power of two

// Every workgroup attribution gets llvm.align (32 bytes: wmma fragments),
// one that already has as much keeps its own.
// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME: workgroup(%{{.+}} : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}, %{{.+}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
// A128: workgroup(%{{.+}} : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %{{.+}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
gpu.module @kernels {
  gpu.func @kernel(%x: memref<8xf32>)
      workgroup(%a : memref<16x16xf32, #gpu.address_space<workgroup>>,
                %b : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64}) kernel {
    gpu.return
  }
}
