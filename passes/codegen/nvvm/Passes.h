//===- Passes.h - NVVM code generation --------------------------*- C++ -*-===//

#ifndef HKT_PASSES_CODEGEN_NVVM_PASSES_H
#define HKT_PASSES_CODEGEN_NVVM_PASSES_H

#include "passes/PipelineOptions.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/codegen/nvvm/Passes.h.inc"

/// The cp.async points the attention kernels mark on a gpu.barrier for
/// hkt-nvvm-async-copy-groups: close the thread's copies into a group
/// (unit), or close them and wait until at most N groups are pending (i32).
inline constexpr char kAsyncCopyCommitAttr[] = "hkt.cp_async_commit";
inline constexpr char kAsyncCopyWaitAttr[] = "hkt.cp_async_wait";
/// A runtime function that reads and writes device memory like a kernel
/// (the cuBLASLt GEMM): hkt-nvvm-lower-gemm declares it, and
/// hkt-nvvm-host-staging counts its calls as kernel accesses.
inline constexpr char kDeviceCallAttr[] = "hkt.device_call";

#define GEN_PASS_REGISTRATION
#include "passes/codegen/nvvm/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_CODEGEN_NVVM_PASSES_H
