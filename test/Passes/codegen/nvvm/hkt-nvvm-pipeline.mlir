// REQUIRES: cuda-toolkit
// RUN: hkt-opt %s --hkt-nvvm-pipeline="cuda-path=%cuda_home" | FileCheck %s
// RUN: hkt-opt %s --hkt-nvvm-pipeline="cuda-path=%cuda_home chips=sm_90" | FileCheck %s --check-prefix=ONE

// The whole pipeline on a small fused chain (two levels, causal): every
// kernel outlined and lowered to NVVM, one PTX object per chip (sm_80 and
// sm_90 by default, PTX 8.0), libdevice linked (exp inlined as ex2, no
// extern call), the host side in the LLVM dialect with one asynchronous
// chain of copies, allocations and launches.
// CHECK-NOT: hkt.
// CHECK: llvm.func @chain
// CHECK: llvm.call @mgpuStreamCreate
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: llvm.call @mgpuMemcpy
//   Kernels named for what they compute: theta's softmax, the attention's
//   initial state and normalisation, the attention.
// CHECK: gpu.launch_func <%{{.+}} : !llvm.ptr> @softmax_{{[0-9]+}}::@softmax_{{[0-9]+}} blocks in (%{{.+}}) threads in (%{{.+}}) : i64
// CHECK: gpu.launch_func <%{{.+}} : !llvm.ptr> @attention_state_{{[0-9]+}}::@attention_state_{{[0-9]+}}
// CHECK: gpu.launch_func <%{{.+}} : !llvm.ptr> @attention_fwd_f32::@attention_fwd_f32
// CHECK-NOT: _kernel
// CHECK: llvm.call @mgpuMemFree
// CHECK: llvm.call @mgpuStreamSynchronize
// CHECK-NEXT: llvm.call @mgpuStreamDestroy
// CHECK: gpu.binary @{{[a-z_0-9]+}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80"
// CHECK-SAME: assembly = "
// CHECK-SAME: .target sm_80
// CHECK-SAME: #gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80"
// CHECK-SAME: .target sm_90
//   The attention kernel: shared arrays, barriers, exp from libdevice.
//   Shared arrays aligned to 32 bytes (hkt-nvvm-align-workgroup-memory).
// CHECK: .shared .align 32
// CHECK-SAME: bar.sync
// CHECK-SAME: ex2.approx
// CHECK-NOT: .extern .func
// ONE: gpu.binary @{{[a-z_0-9]+}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80"
// ONE-NOT: sm_80

func.func @chain(%q0: tensor<1x10x4xf32> {hkt.name = "q0"}, %k0: tensor<1x10x4xf32> {hkt.name = "k0"},
                   %q1: tensor<1x5x4xf32> {hkt.name = "q1"}, %k1: tensor<1x5x4xf32> {hkt.name = "k1"},
                   %theta: tensor<2x2xf32> {hkt.name = "theta"}, %v: tensor<1x10x4xf32> {hkt.name = "v"})
    -> (tensor<1x10x4xf32> {hkt.name = "attn"}) {
  %e0 = tensor.empty() : tensor<1x2x10x10xf32>
  %e1 = tensor.empty() : tensor<1x2x5x5xf32>
  %eu = tensor.empty() : tensor<1x2x10x10xf32>
  %ef = tensor.empty() : tensor<1x2x10x10xf32>
  %em = tensor.empty() : tensor<1x2x10x10xf32>
  %ep = tensor.empty() : tensor<1x2x10x10xf32>
  %ea = tensor.empty() : tensor<1x10x4xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x10x4xf32>, tensor<1x10x4xf32>) outs(%e0 : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e1 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %u1 = hkt.upsample ins(%s1 : tensor<1x2x5x5xf32>) outs(%eu : tensor<1x2x10x10xf32>) factor = 2 -> tensor<1x2x10x10xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<1x2x10x10xf32>, tensor<1x2x10x10xf32>) theta(%theta : tensor<2x2xf32>) outs(%ef : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %m = hkt.mask ins(%f : tensor<1x2x10x10xf32>) outs(%em : tensor<1x2x10x10xf32>) {causal = true} -> tensor<1x2x10x10xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x10x10xf32>) outs(%ep : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x10x10xf32>, tensor<1x10x4xf32>) outs(%ea : tensor<1x10x4xf32>) -> tensor<1x10x4xf32>
  return %a : tensor<1x10x4xf32>
}
