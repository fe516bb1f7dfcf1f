//===- Manifest.h - The compiled module's manifest.json ---------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The manifest describes a compiled module: its shared object, the target it
// was compiled for and its entry points with their arguments and results.
// The schema is docs/module-format.md (names in runtime/ModuleFormat.h);
// anything the runtime does not understand (an unknown format, another
// version, an unknown target kind, role or dtype) is refused with a message
// naming the field, never guessed at.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_MANIFEST_H
#define HKT_RUNTIME_MANIFEST_H

#include "runtime/ModuleFormat.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hkt::runtime {

/// The manifest format version this runtime reads.
constexpr int64_t kManifestVersion = format::kVersion;

/// What an argument or result is for (docs/module-format.md, "Roles").
enum class Role {
  Input,     ///< Read-only data of one call.
  Parameter, ///< Read-only model state (weights).
  Output,    ///< A result, written into a caller-owned buffer.
  InOut,     ///< An argument the call overwrites with its new value.
};
/// The manifest name of a role: "input", "parameter", "output", "inout".
const char *roleName(Role role);

/// A dynamic dimension: its symbol (dimensions sharing a symbol have the same
/// size in a call) and the largest size it may take.
struct DynamicDim {
  std::string symbol;
  int64_t max = 0;
};

/// The sizes of an entry's dynamic-dimension symbols in one call.
using DimSizes = std::map<std::string, int64_t>;

/// A scalar from the manifest (an argument's `default`).
struct Scalar {
  bool isInteger = false;
  int64_t intValue = 0;  ///< Valid when isInteger.
  double floatValue = 0; ///< Always valid (rounded for large integers).
  std::string str() const;
};

/// One argument or result of an entry.
struct TensorSpec {
  std::string name;
  /// Arguments: Input, Parameter or InOut; results: Output.
  Role role = Role::Input;
  DType dtype = DType::F32;
  /// Sizes; a dynamic dimension is format::kDynamicDim (-1).
  std::vector<int64_t> shape;
  /// Empty when every dimension is static; otherwise one per dimension, set
  /// for the dynamic ones.
  std::vector<std::optional<DynamicDim>> dims;
  /// Arguments only: the value an unbound argument is filled with.
  std::optional<Scalar> defaultValue;
  /// Arguments of integer dtype only: allowed values [lo, hi], inclusive.
  std::optional<std::pair<int64_t, int64_t>> range;

  bool hasDynamicDims() const { return !dims.empty(); }
  /// True for arguments that the call writes (role InOut).
  bool isInOut() const { return role == Role::InOut; }

  /// The shape with each dynamic dimension set to its symbol's size in
  /// `sizes`, or to its bound when `sizes` has no such symbol.
  std::vector<int64_t> concreteShape(const DimSizes &sizes = {}) const;

  /// Checks `shape` (of the tensor that `who` names, e.g. "entry 'f': input
  /// 'x'") against this spec: static dimensions must be equal, dynamic ones
  /// in [1, max] and equal to their symbol's size in `sizes` if it has one;
  /// symbols seen for the first time are added to `sizes`.
  Status matchShape(const std::vector<int64_t> &shape, DimSizes &sizes,
                    const std::string &who) const;

  /// "[2,64,32]"; a dynamic dimension as its symbol and bound, "B<=8".
  std::string describeShape() const;
  /// "f32 [2,64,32]".
  std::string describe() const;
};

/// One entry point: `void symbol(void **args)`.
struct EntrySpec {
  std::string name;
  std::string symbol;
  /// The device twin's symbol (key::kDeviceSymbol: the same arguments in
  /// device memory); empty if the module has none.
  std::string deviceSymbol;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;
  /// The working memory the compiler recorded (key::kWorkingMemory and
  /// key::kWorkingMemoryPerThread); unset when the manifest has none (an
  /// older compiler, or an entry it could not bound).
  std::optional<uint64_t> workingMemoryBytes;
  uint64_t workingMemoryPerThreadBytes = 0;
  /// The MPI ranks the entry's collectives run over (key::kCollectives of a
  /// data_parallel module: its `ranks`); 0 if it calls none.
  int64_t collectiveRanks = 0;
  /// The module's data_parallel backend, where collectiveRanks is set.
  std::string collectiveBackend;

  /// The argument / result called `name`, or null.
  const TensorSpec *findArg(const std::string &name) const;
  const TensorSpec *findResult(const std::string &name) const;
  /// True if some argument is in-out.
  bool hasInOutArgs() const;
};

/// The kinds of target a module may be compiled for.
enum class TargetKind {
  Cpu,  ///< Host code only.
  Cuda, ///< Host code that launches kernels for an NVIDIA GPU.
};
/// The manifest name of a target kind: "cpu" or "cuda".
const char *targetKindName(TargetKind kind);

/// What the code was compiled for. `triple`, `cpu` and `features` describe
/// the shared object's host code for every kind.
struct TargetSpec {
  TargetKind kind = TargetKind::Cpu;
  std::string triple;
  std::string cpu;
  /// LLVM feature names, without a leading '+' (features the manifest lists
  /// as disabled, with a leading '-', are dropped).
  std::vector<std::string> features;
  /// Cuda only: the GPU architecture of the kernels ("sm_90").
  std::string arch;
  /// Cpu only: "f32", or "bf16" when the matmuls take bf16 operands: on
  /// Intel AMX tiles where `features` has amx-tile and amx-bf16 (the process
  /// must then be granted the AMX state: requestAmxState), else on
  /// AVX512-BF16 (hkt-compile makes the same choice).
  std::string precision = "f32";

  /// Whether the matmuls run on AMX tiles (see `precision`).
  bool usesAmx() const;
};

/// A data-parallel module (the optional key "data_parallel"): its train
/// step calls MPI collectives over exactly `ranks` processes, through the
/// ABI of the MPI implementation `mpi` (this runtime loads "OpenMPI").
struct DataParallelSpec {
  int64_t ranks = 0;
  std::string mpi;
  /// What sums the gradients (key::kBackend): "mpi", the module's own MPI
  /// calls, or "nccl", a cuda module's calls of hktNcclAllReduceF32 on the
  /// runtime's NCCL communicator (runtime/Nccl.h).
  std::string backend = "mpi";
};

/// A parsed manifest.json.
struct Manifest {
  int64_t version = kManifestVersion;
  /// The shared object's file name, relative to the module directory.
  std::string library;
  TargetSpec target;
  std::vector<EntrySpec> entries;
  /// The model config of a model module (the optional key "model"), as
  /// compact JSON text; empty for other modules.
  std::string modelConfig;
  std::optional<DataParallelSpec> dataParallel;

  /// The entry called `name`, or null.
  const EntrySpec *findEntry(const std::string &name) const;
  /// "'a', 'b'": the entry names, for messages.
  std::string entryNames() const;
};

/// Parses manifest text; `source` names it in messages (e.g. its path).
Expected<Manifest> parseManifest(const std::string &text,
                                 const std::string &source);

/// Reads and parses a manifest file.
Expected<Manifest> readManifest(const std::string &path);

/// A CUDA architecture name: "sm_", at least two digits (the last one the
/// minor compute capability, the others the major) and an optional
/// lower-case letter ("sm_90a"). The manifest's check of target.arch and the
/// driver's check of the device (CudaDriver.h) both read names with it.
struct CudaArch {
  int major = 0, minor = 0;
};
std::optional<CudaArch> parseCudaArch(const std::string &name);

} // namespace hkt::runtime

#endif // HKT_RUNTIME_MANIFEST_H
