// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-host-staging | FileCheck %s

// %x is read by a kernel (copied in, not out), %y written (copied out, not
// in), the host allocation %t becomes device memory, and the workgroup
// alloca at the kernel's top level a workgroup attribution. The host copy
// of %t into %y (what buffer-results-to-out-params leaves) is a device copy.
// CHECK-LABEL: func.func @stage
// CHECK-SAME: (%[[X:.+]]: memref<8xf32>, %[[Y:.+]]: memref<8xf32>)
// CHECK: %[[DX:.+]] = gpu.alloc () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy %[[DX]], %[[X]] : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: %[[DY:.+]] = gpu.alloc () : memref<8xf32>
// CHECK-NOT: gpu.memcpy %[[DY]], %[[Y]]
// CHECK: %[[T:.+]] = gpu.alloc () : memref<8xf32>
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[SH:.+]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: memref.alloca
// CHECK: memref.load %[[DX]]
// CHECK: memref.store %{{.+}}, %[[SH]]
// CHECK: memref.store %{{.+}}, %[[T]]
// CHECK: gpu.memcpy %[[DY]], %[[T]]
// CHECK: gpu.dealloc %[[T]]
// CHECK: gpu.memcpy %[[Y]], %[[DY]]
// CHECK: gpu.dealloc %[[DX]]
// CHECK: gpu.dealloc %[[DY]]
// CHECK-NEXT: return
func.func @stage(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() : memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %sh = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>
    %v = memref.load %x[%tx] : memref<8xf32>
    memref.store %v, %sh[%tx] : memref<8xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %sh[%tx] : memref<8xf32, #gpu.address_space<workgroup>>
    memref.store %w, %t[%tx] : memref<8xf32>
    gpu.terminator
  }
  memref.copy %t, %y : memref<8xf32> to memref<8xf32>
  memref.dealloc %t : memref<8xf32>
  return
}

// -----

// A constant a kernel reads gets a device copy per call; views of an
// argument count as the argument (here: written through a reshape).
// CHECK-LABEL: func.func @global_and_view
// CHECK-SAME: (%[[Y:.+]]: memref<2x4xf32>)
// CHECK: %[[DY:.+]] = gpu.alloc () : memref<2x4xf32>
// CHECK: %[[G:.+]] = memref.get_global @table : memref<8xf32>
// CHECK: %[[DG:.+]] = gpu.alloc () : memref<8xf32>
// CHECK: gpu.memcpy %[[DG]], %[[G]]
// CHECK: memref.collapse_shape %[[DY]]
// CHECK: gpu.memcpy %[[Y]], %[[DY]]
// CHECK: gpu.dealloc %[[DG]]
memref.global "private" constant @table : memref<8xf32> = dense<1.0>
func.func @global_and_view(%y: memref<2x4xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %g = memref.get_global @table : memref<8xf32>
  %flat = memref.collapse_shape %y [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %g[%tx] : memref<8xf32>
    memref.store %v, %flat[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}

// -----

// Scalars the host computes with (a model's hyper-parameters, the batch
// mean of its loss): an argument only the host reads stays host memory; a
// host store of a device scalar becomes a kernel of one thread that
// computes the value from the device loads it came from (no copy to the
// host and back).
// CHECK-LABEL: func.func @host_scalars
// CHECK-SAME: (%[[LR:.+]]: memref<f32>, %[[OUT:.+]]: memref<f32>)
// CHECK-NOT: memref.alloca
// CHECK: %[[DOUT:.+]] = gpu.alloc () : memref<f32>
// CHECK: %[[SUM:.+]] = gpu.alloc () : memref<f32>
// CHECK: gpu.launch
// CHECK: %[[L:.+]] = memref.load %[[LR]][]
// CHECK: %[[TMP:.+]] = gpu.alloc () : memref<f32>
// CHECK: gpu.launch {{.*}} function(@scalar_mulf_0)
// CHECK-NEXT: %[[S:.+]] = memref.load %[[SUM]][]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[S]], %[[L]]
// CHECK-NEXT: memref.store %[[P]], %[[TMP]][]
// CHECK: gpu.launch
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.memcpy %[[OUT]], %[[DOUT]]
// CHECK-NOT: gpu.memcpy
func.func @host_scalars(%lr: memref<f32>, %out: memref<f32>) {
  %c1 = arith.constant 1 : index
  %sum = memref.alloc() : memref<f32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %two = arith.constant 2.0 : f32
    memref.store %two, %sum[] : memref<f32>
    gpu.terminator
  }
  %s = memref.load %sum[] : memref<f32>
  %l = memref.load %lr[] : memref<f32>
  %p = arith.mulf %s, %l : f32
  %tmp = memref.alloc() : memref<f32>
  memref.store %p, %tmp[] : memref<f32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %tmp[] : memref<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.terminator
  }
  memref.dealloc %sum : memref<f32>
  memref.dealloc %tmp : memref<f32>
  return
}

// -----

// A kernel writes the scalar between the host's load and its store: the
// store cannot move to the device (it would read the new value), so the
// host reads the device scalar through a host copy made before the kernel,
// and its store goes out through another. A load that nothing uses is
// dropped, copy and all.
// CHECK-LABEL: func.func @staged_scalars
// CHECK-COUNT-2: memref.alloca() : memref<f32>
// CHECK-NOT: memref.alloca
// CHECK: %[[SUM:.+]] = gpu.alloc () : memref<f32>
// CHECK: %[[TMP:.+]] = gpu.alloc () : memref<f32>
// CHECK-NEXT: gpu.memcpy %[[HIN:.+]], %[[SUM]]
// CHECK-NEXT: %[[S:.+]] = memref.load %[[HIN]][]
// CHECK-NEXT: gpu.launch
// CHECK: memref.store %[[S]], %[[HOUT:.+]][]
// CHECK-NEXT: gpu.memcpy %[[TMP]], %[[HOUT]]
// CHECK-NOT: gpu.memcpy
// CHECK: return
func.func @staged_scalars() {
  %c1 = arith.constant 1 : index
  %sum = memref.alloc() : memref<f32>
  %tmp = memref.alloc() : memref<f32>
  %unused = memref.load %tmp[] : memref<f32>
  %s = memref.load %sum[] : memref<f32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %two = arith.constant 2.0 : f32
    memref.store %two, %sum[] : memref<f32>
    gpu.terminator
  }
  memref.store %s, %tmp[] : memref<f32>
  memref.dealloc %sum : memref<f32>
  memref.dealloc %tmp : memref<f32>
  return
}

// -----

// Host code that still reads a buffer a kernel uses: an error, not a crash
// on the device pointer.
func.func @host_load(%x: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %z = arith.constant 0.0 : f32
    memref.store %z, %x[%tx] : memref<8xf32>
    gpu.terminator
  }
  // expected-error @+1 {{'memref.load' op reads or writes device memory on the host (the GPU path expects every access inside a kernel)}}
  %v = memref.load %x[%c0] : memref<8xf32>
  return %v : f32
}

// -----

// A call of a runtime function marked hkt.device_call (the cuBLASLt GEMM)
// reads and writes device memory like a kernel: its buffer arguments get
// device copies, in and out; an unmarked call is a host access.
// CHECK-LABEL: func.func @device_call
// CHECK-SAME: (%[[C:.+]]: memref<4xf32>)
// CHECK: %[[DC:.+]] = gpu.alloc () : memref<4xf32>
// CHECK-NEXT: gpu.memcpy %[[DC]], %[[C]]
// CHECK: %[[V:.+]] = memref.cast %[[DC]]
// CHECK: call @runtime_gemm(%[[V]])
// CHECK: gpu.memcpy %[[C]], %[[DC]]
func.func private @runtime_gemm(memref<?xf32>) -> i32 attributes {hkt.device_call}
func.func @device_call(%c: memref<4xf32>) {
  %v = memref.cast %c : memref<4xf32> to memref<?xf32>
  %r = call @runtime_gemm(%v) : (memref<?xf32>) -> i32
  return
}

// -----

func.func private @host_function(memref<4xf32>)
func.func @host_call(%c: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %one, %c[%tx] : memref<4xf32>
    gpu.terminator
  }
  // expected-error @+1 {{'func.call' op reads or writes device memory on the host (the GPU path expects every access inside a kernel)}}
  call @host_function(%c) : (memref<4xf32>) -> ()
  return
}

// -----

// An entry (public, with a C interface) gets a device twin: its body moves
// to @entry_on_device, whose memref arguments are device memory (no copies;
// the kernel reads the scalar %lr itself, since nothing writes it), and @entry
// keeps the host calling convention: a device copy of each argument the
// twin uses, copied in if it reads it (%x, %lr) and out if it writes it
// (%y), around the call. A runtime that keeps buffers on the device calls
// the twin.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%[[X:.+]]: memref<8xf32>, %[[LR:.+]]: memref<f32>, %[[Y:.+]]: memref<8xf32>)
// CHECK-NEXT: %[[DX:.+]] = gpu.alloc () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy %[[DX]], %[[X]]
// CHECK-NEXT: %[[DLR:.+]] = gpu.alloc () : memref<f32>
// CHECK-NEXT: gpu.memcpy %[[DLR]], %[[LR]]
// CHECK-NEXT: %[[DY:.+]] = gpu.alloc () : memref<8xf32>
// CHECK-NEXT: call @entry_on_device(%[[DX]], %[[DLR]], %[[DY]])
// CHECK-NEXT: gpu.memcpy %[[Y]], %[[DY]]
// CHECK-NEXT: gpu.dealloc %[[DX]]
// CHECK-NEXT: gpu.dealloc %[[DLR]]
// CHECK-NEXT: gpu.dealloc %[[DY]]
// CHECK-NEXT: return
// CHECK: func.func @entry_on_device
// CHECK-SAME: (%[[TX:.+]]: memref<8xf32>, %[[TLR:.+]]: memref<f32>, %[[TY:.+]]: memref<8xf32>)
// CHECK-SAME: hkt.device_abi
// CHECK-SAME: no_inline
// CHECK-NOT: gpu.alloc
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.launch
// CHECK-NEXT: memref.load %[[TLR]][]
// CHECK: memref.load %[[TX]]
// CHECK: memref.store %{{.+}}, %[[TY]]
// CHECK-NOT: gpu.memcpy
// CHECK: return
func.func @entry(%x: memref<8xf32>, %lr: memref<f32>, %y: memref<8xf32>) attributes {llvm.emit_c_interface} {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %l = memref.load %lr[] : memref<f32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<8xf32>
    %w = arith.mulf %v, %l : f32
    memref.store %w, %y[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}

// -----

// The twin's name is taken: an error, not a second symbol of that name.
// expected-error @+1 {{'func.func' op cannot get a device twin: 'taken_on_device' exists already}}
func.func @taken(%y: memref<8xf32>) attributes {llvm.emit_c_interface} {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %z = arith.constant 0.0 : f32
    memref.store %z, %y[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}
func.func private @taken_on_device(memref<8xf32>)
