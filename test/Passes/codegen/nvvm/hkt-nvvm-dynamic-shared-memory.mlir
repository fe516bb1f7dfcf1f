// RUN: hkt-opt %s --split-input-file --hkt-nvvm-dynamic-shared-memory --verify-diagnostics | FileCheck %s

// 40000 + 20000 bytes of workgroup arrays, more than a block's static
// 48 KiB: views of dynamic shared memory at 128-byte aligned offsets
// (0 and 40064), the launch asking for their total (60064 bytes).
// CHECK-LABEL: func.func @big
// CHECK: %[[SIZE:.+]] = arith.constant 60064 : i32
// CHECK: gpu.launch {{.*}} dynamic_shared_memory_size %[[SIZE]]
// CHECK-NOT: workgroup(
// CHECK: %[[BASE:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[A:.+]] = memref.view %[[BASE]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<100x100xf32, #gpu.address_space<workgroup>>
// CHECK: %[[B:.+]] = memref.view %[[BASE]][%c40064{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<100x100xf16, #gpu.address_space<workgroup>>
// CHECK: memref.store %{{.+}}, %[[A]]
// CHECK: memref.store %{{.+}}, %[[B]]
func.func @big() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  %h = arith.constant 1.0 : f16
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             workgroup(%a : memref<100x100xf32, #gpu.address_space<workgroup>>,
                       %b : memref<100x100xf16, #gpu.address_space<workgroup>>) {
    memref.store %x, %a[%c0, %c0] : memref<100x100xf32, #gpu.address_space<workgroup>>
    memref.store %h, %b[%c0, %c0] : memref<100x100xf16, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  return
}

// -----

// Within 48 KiB: static arrays, left alone.
// CHECK-LABEL: func.func @small
// CHECK-NOT: dynamic_shared_memory
// CHECK: workgroup(
func.func @small() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             workgroup(%a : memref<100x100xf32, #gpu.address_space<workgroup>>) {
    memref.store %x, %a[%c0, %c0] : memref<100x100xf32, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  return
}

// -----

// More than any chip from sm_80 on lets a block have (99 KiB): an error.
func.func @too_big() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  // expected-error @+1 {{'gpu.launch' op needs 160000 bytes of shared memory, more than the 99 KiB a block may have}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             workgroup(%a : memref<200x200xf32, #gpu.address_space<workgroup>>) {
    memref.store %x, %a[%c0, %c0] : memref<200x200xf32, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  return
}
