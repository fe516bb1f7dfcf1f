//===- ModuleManifest.h - A module's entries and manifest ------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-compile's side of docs/module-format.md: every public function of the
// module as a manifest entry (its arguments and results from their hkt.*
// attributes, in-out arguments prepared for bufferization, the working
// memory measured during the lowering), and the manifest's JSON.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_MODULEMANIFEST_H
#define HKT_COMPILER_MODULEMANIFEST_H

#include "compiler/Target.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::hkt::compiler {

namespace fmt = ::hkt::format;

/// A dynamic dimension of an argument: its symbol and bound.
struct DynamicDim {
  std::string symbol;
  int64_t max;
};

/// One argument or result of an entry, as the manifest describes it.
struct TensorSpec {
  std::string name;
  std::string role;
  std::string dtype;
  /// fmt::kDynamicDim for a dynamic dimension.
  SmallVector<int64_t> shape;
  /// Empty when the shape is static, else one per dimension.
  SmallVector<std::optional<DynamicDim>> dims;
  std::optional<llvm::json::Value> defaultValue;
  std::optional<std::pair<int64_t, int64_t>> range;
};

struct EntrySpec {
  std::string name;
  /// Every argument, in-out ones included; the results that stay results
  /// (in-out results are the new values of their arguments, not listed).
  std::vector<TensorSpec> args, results;
  /// For each result of the function, the in-out argument it updates.
  SmallVector<std::optional<unsigned>> resultInOut;
  /// Working memory (docs/module-format.md): bytes allocated once per call
  /// and per thread of a parallel region; unset if not bounded.
  std::optional<std::pair<uint64_t, uint64_t>> workingMemory;
  /// A GPU module's entry has a twin taking device memory
  /// (fmt::kDeviceTwinSuffix); set when its packed symbol is emitted.
  bool deviceTwin = false;
  /// The entry calls collectives (shard ops, MPI calls once lowered): it
  /// runs in every rank of a data-parallel job.
  bool collectives = false;
};

/// A data-parallel module's collectives: the ranks its grid spans and the
/// MPI implementation whose ABI its calls use (the module's `mpi.dlti`,
/// Open MPI without one).
struct DataParallelSpec {
  int64_t ranks = 0;
  std::string mpi;
  /// What sums the gradients: "mpi" (the module's MPI calls) or "nccl" (a
  /// cuda module's calls of the runtime's NCCL all-reduce).
  std::string backend = "mpi";
};

/// The data-parallel spec of a module with a `shard.grid` (before its
/// lowering), none without one; an error for a grid that is not 1-D of
/// static size.
FailureOr<std::optional<DataParallelSpec>> collectDataParallel(ModuleOp module);

/// Every public function of `module` as an entry, its arguments prepared
/// for bufferization (in-out ones writable, the others read-only) and its
/// hkt.* attributes moved into the entry.
FailureOr<std::vector<EntrySpec>> collectEntries(ModuleOp module);

/// Fills each entry's working memory (docs/module-format.md) just before
/// the module's memrefs are lowered to LLVM (after bufferization,
/// deallocation, the codegen and the conversion of parallel loops to
/// OpenMP): an upper bound of the heap memory a call allocates, or unset
/// where none is known (ModuleManifest.cpp says how it is counted).
struct WorkingMemoryInstrumentation : PassInstrumentation {
  std::vector<EntrySpec> &entries;
  bool ran = false;
  explicit WorkingMemoryInstrumentation(std::vector<EntrySpec> &entries)
      : entries(entries) {}
  void runBeforePass(Pass *pass, Operation *op) override;
};

/// The manifest of a module of `entries` for `target` (with a model's
/// config, and for a cuda module its architectures).
llvm::json::Value
manifestJson(const CpuTarget &target, ArrayRef<EntrySpec> entries,
             StringRef modelConfig, StringRef cudaArch,
             const std::optional<DataParallelSpec> &dataParallel);

} // namespace mlir::hkt::compiler

#endif // HKT_COMPILER_MODULEMANIFEST_H
