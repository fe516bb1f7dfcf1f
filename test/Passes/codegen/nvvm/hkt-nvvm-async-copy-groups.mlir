// RUN: hkt-opt %s --hkt-nvvm-async-copy-groups | FileCheck %s

// The marks become nvgpu's group ops before their barriers: a commit only,
// then a commit and a wait for all groups but the newest; unmarked
// barriers stay as they are.
// CHECK-LABEL: func.func @marks
// CHECK: nvgpu.device_async_copy
// CHECK-NEXT: %[[G0:.+]] = nvgpu.device_async_create_group
// CHECK-NOT: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: hkt.cp_async
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy
// CHECK-NEXT: %[[G1:.+]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G1]] {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: nvgpu.device_async
func.func @marks(%src: memref<64x16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%u = %c1, %v = %c1, %w = %c1) {
    %tile = memref.alloca() : memref<32x24xbf16, #gpu.address_space<workgroup>>
    %t0 = nvgpu.device_async_copy %src[%c0, %c0], %tile[%c0, %c0], 8 {bypassL1} : memref<64x16xbf16> to memref<32x24xbf16, #gpu.address_space<workgroup>>
    gpu.barrier {hkt.cp_async_commit}
    scf.for %i = %c0 to %c4 step %c1 {
      %t1 = nvgpu.device_async_copy %src[%i, %c0], %tile[%i, %c0], 8 {bypassL1} : memref<64x16xbf16> to memref<32x24xbf16, #gpu.address_space<workgroup>>
      gpu.barrier {hkt.cp_async_wait = 1 : i32}
      gpu.barrier
    }
    gpu.terminator
  }
  return
}
