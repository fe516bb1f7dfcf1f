//===- TargetInfo.h - NVIDIA GPU facts of the NVVM path ---------*- C++ -*-===//
//
// The hardware facts the NVVM code generation builds on, in one place
// instead of as literals in each pass (after Triton's TargetInfoBase: the
// target's facts behind one small interface). Every fact holds for the
// chips the path compiles for (sm_80 and up); a second target (an AMD
// wave of 64, say) would turn this struct into an interface.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_TARGETINFO_H
#define HKT_PASSES_CODEGEN_NVVM_TARGETINFO_H

#include <cstdint>

namespace mlir::hkt {

struct NvvmTargetInfo {
  /// Threads per warp: the unit the warp-level ops (wmma) run on (PTX ISA,
  /// the predefined constant WARP_SZ; CUDA C++ Programming Guide, "SIMT
  /// Architecture").
  static constexpr int64_t kWarpSize = 32;

  /// Threads a block may have (CUDA C++ Programming Guide, "Technical
  /// Specifications per Compute Capability": 1024 for every compute
  /// capability the path targets).
  static constexpr int64_t kMaxThreadsPerBlock = 1024;

  /// Bytes of static shared memory a block may have; more needs dynamic
  /// shared memory and an explicit opt-in (CUDA C++ Programming Guide,
  /// "Shared Memory" in the compute capability sections).
  static constexpr int64_t kStaticSharedMemoryBytes = 48 * 1024;

  /// Bytes of shared memory a block may opt in to (dynamic shared memory,
  /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES): 99 KiB on sm_86 and
  /// sm_89, the least of the chips from sm_80 on (163 KiB on sm_80, 227 KiB
  /// on sm_90; CUDA C++ Programming Guide, "Technical Specifications per
  /// Compute Capability"). The runtime checks the device's own limit.
  static constexpr int64_t kMaxSharedMemoryBytes = 99 * 1024;

  /// The only wmma shape for tf32 operands, m16n16k8: A fragments are
  /// M x K, B fragments K x N, accumulators M x N (PTX ISA, "Matrix Shape"
  /// of the warp-level matrix instructions).
  static constexpr int64_t kMmaM = 16;
  static constexpr int64_t kMmaN = 16;
  static constexpr int64_t kMmaK = 8;

  /// The bf16 tensor-core shape of mma.sync, m16n8k16 (bf16 operands, f32
  /// accumulators): A fragments 16 x 16 in four 32-bit registers a lane,
  /// B fragments 16 x 8 in two, accumulators 16 x 8 in four f32 (PTX ISA,
  /// "Matrix Fragments for mma.m16n8k16 with floating point type").
  static constexpr int64_t kBf16MmaM = 16;
  static constexpr int64_t kBf16MmaN = 8;
  static constexpr int64_t kBf16MmaK = 16;

  /// ldmatrix moves 8 x 8 matrices of 16-bit elements, one 16-byte row
  /// address from each of 8 lanes per matrix (PTX ISA, ldmatrix).
  static constexpr int64_t kLdMatrixRows = 8;

  /// Bytes to which wmma.load / wmma.store fragment addresses must be
  /// aligned: 256 bits (PTX ISA, wmma.load and wmma.store).
  static constexpr int64_t kMmaFragmentAlignment = 32;

  /// Mantissa bits the tensor cores keep of an f32 operand read as tf32;
  /// the low 23 - 10 bits are ignored (PTX ISA, "Alternate Floating Point
  /// Data Formats": tf32).
  static constexpr int64_t kTf32MantissaBits = 10;
};

} // namespace mlir::hkt

#endif // HKT_PASSES_CODEGEN_NVVM_TARGETINFO_H
