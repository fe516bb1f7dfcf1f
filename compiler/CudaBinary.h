//===- CudaBinary.h - PTX objects -> one fatbin per gpu.binary --*- C++ -*-===//
//
// hkt-nvvm-pipeline leaves each gpu.module as a gpu.binary holding one PTX
// object per chip. MLIR embeds a single object of a binary, so one module
// could serve one chip only; instead each PTX is assembled here with the
// toolkit's ptxas (whose -v report says registers, spills and shared memory)
// and the cubins, with the newest chip's PTX for JIT on later GPUs, are put
// in one fatbin by fatbinary.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_CUDABINARY_H
#define HKT_COMPILER_CUDABINARY_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace mlir::hkt {

/// What ptxas said of one kernel for one chip.
struct KernelReport {
  std::string kernel, chip;
  int64_t registers = 0, spillStores = 0, spillLoads = 0, stackBytes = 0,
          sharedBytes = 0;
};

/// Checks that `cudaPath` holds ptxas, fatbinary and libdevice; the message
/// names what is missing.
LogicalResult checkCudaToolkit(Location loc, StringRef cudaPath);

/// Replaces the PTX objects of every gpu.binary in `module` by one fatbin
/// object; appends ptxas's report of each kernel to `reports`.
LogicalResult assembleCudaBinaries(ModuleOp module, StringRef cudaPath,
                                   std::vector<KernelReport> &reports);

/// Prints the PTX of every object of every gpu.binary (hkt-compile
/// --emit-ptx), each after a `// gpu.binary NAME, CHIP` line.
void printPtx(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::hkt

#endif // HKT_COMPILER_CUDABINARY_H
