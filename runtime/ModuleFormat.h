//===- ModuleFormat.h - Names of the compiled-module format -----*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Every name and constant that the compiler writes and the runtime reads
// (docs/module-format.md): file names, the manifest's keys and values, the
// entry symbol prefix, and the function argument/result attributes of the IR
// from which the compiler takes them. Defined once, here, so the two sides
// cannot drift apart.
//
// Plain C++17, no MLIR or LLVM headers: the runtime includes it, and so do
// the compiler and the hkt dialect's attribute verifier.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_MODULEFORMAT_H
#define HKT_RUNTIME_MODULEFORMAT_H

#include <cstdint>

namespace hkt::format {

/// The manifest's "format" value.
inline constexpr const char *kFormatName = "hkt-module";
/// The manifest format version this compiler writes and this runtime reads.
/// Version 2 added target kinds, argument roles (in-out arguments) and
/// dynamic dimensions; a version 1 module must be recompiled.
inline constexpr int64_t kVersion = 2;

/// Files of a module directory.
inline constexpr const char *kManifestFile = "manifest.json";
inline constexpr const char *kLibraryFile = "module.so";

/// Each entry `f` is exported as `void <prefix>f(void **args)`.
inline constexpr const char *kPackedSymbolPrefix = "_hkt_packed_";

/// A cuda module's entry `f` has a twin that takes its memref arguments in
/// device memory (a runtime that keeps buffers on the device calls it):
/// the function `f<suffix>` of the IR, exported as
/// `void <kDevicePackedSymbolPrefix>f(void **args)` and named by the
/// entry's optional `device_symbol`.
inline constexpr const char *kDeviceTwinSuffix = "_on_device";
inline constexpr const char *kDevicePackedSymbolPrefix = "_hkt_packed_device_";

/// A dynamic dimension in a manifest "shape".
inline constexpr int64_t kDynamicDim = -1;

/// Buffers the runtime passes are aligned to this many bytes.
inline constexpr int64_t kBufferAlignment = 64;

/// Name prefixes of the AdamW moments of parameter p: the in-out arguments
/// `adam.m.<p>` and `adam.v.<p>` of a model's train_step, and the optimizer
/// state of a checkpoint under the same names.
inline constexpr const char *kAdamFirstMoment = "adam.m.";
inline constexpr const char *kAdamSecondMoment = "adam.v.";

/// Keys of manifest.json.
namespace key {
inline constexpr const char *kFormat = "format";
inline constexpr const char *kVersion = "version";
inline constexpr const char *kLibrary = "library";
inline constexpr const char *kTarget = "target";
inline constexpr const char *kEntries = "entries";
/// Optional: the model config (a JSON object) of hkt-compile --model.
inline constexpr const char *kModel = "model";
/// Optional, modules of the fused CPU pipeline: the tiles their code was
/// generated with (docs/module-format.md, "Tiles"); informative, a runtime
/// does not need them.
inline constexpr const char *kTiles = "tiles";
inline constexpr const char *kTileQ = "tile_q";
inline constexpr const char *kTileK = "tile_k";
inline constexpr const char *kVectorBits = "vector_bits";
inline constexpr const char *kTilesFamily = "family";
inline constexpr const char *kRegisterRows = "register_rows";
inline constexpr const char *kRegisterVectors = "register_vectors";
/// How the register tile was chosen: "table", "options", "tuned" (measured
/// by hkt-compile --tune) or "tune-cache" (a choice --tune measured before).
inline constexpr const char *kTilesSource = "source";
/// "tuned" only: each candidate's register tile and fastest call.
inline constexpr const char *kTilesTuning = "tuning";
inline constexpr const char *kTilesMinMs = "min_ms";
/// Optional: a data-parallel module (hkt-compile --ranks N;
/// docs/module-format.md, "Data parallel"): its train step calls MPI
/// collectives over exactly `ranks` processes, through the ABI of the MPI
/// implementation `mpi` ("OpenMPI"), whose library the runtime loads; the
/// sums themselves through `backend`: "mpi" (the module calls MPI; the
/// default) or "nccl" (a cuda module calls the runtime's NCCL all-reduce).
inline constexpr const char *kDataParallel = "data_parallel";
inline constexpr const char *kRanks = "ranks";
inline constexpr const char *kMpi = "mpi";
inline constexpr const char *kBackend = "backend";
// target
inline constexpr const char *kKind = "kind";
inline constexpr const char *kTriple = "triple";
inline constexpr const char *kCpu = "cpu";
inline constexpr const char *kFeatures = "features";
/// Optional, cpu modules: "bf16" where the matmuls run on Intel AMX tiles
/// (hkt-compile --precision bf16); absent means f32.
inline constexpr const char *kPrecision = "precision";
inline constexpr const char *kArch = "arch";
// entries[i]
inline constexpr const char *kName = "name";
inline constexpr const char *kSymbol = "symbol";
/// Optional, cuda modules: the entry's device twin (kDeviceTwinSuffix).
inline constexpr const char *kDeviceSymbol = "device_symbol";
/// Optional, entries of a data_parallel module: true when the entry calls
/// the MPI collectives (it must run in every rank of an MPI job).
inline constexpr const char *kCollectives = "collectives";
inline constexpr const char *kArgs = "args";
inline constexpr const char *kResults = "results";
// Optional (docs/module-format.md, "Working memory"): an upper bound of the
// bytes the entry allocates during a call, beyond its arguments and results:
// `working_memory_bytes` once per call, plus `working_memory_per_thread_bytes`
// for each thread that runs the entry's parallel regions.
inline constexpr const char *kWorkingMemory = "working_memory_bytes";
inline constexpr const char *kWorkingMemoryPerThread =
    "working_memory_per_thread_bytes";
// args[i] / results[i]
inline constexpr const char *kRole = "role";
inline constexpr const char *kDType = "dtype";
inline constexpr const char *kShape = "shape";
inline constexpr const char *kDims = "dims";
inline constexpr const char *kDefault = "default";
inline constexpr const char *kRange = "range";
// dims[i] of a dynamic dimension
inline constexpr const char *kDimSymbol = "symbol";
inline constexpr const char *kDimMax = "max";
} // namespace key

/// Values of target.kind.
/// data_parallel.backend: what sums a data-parallel train step's gradients.
namespace backend {
inline constexpr const char *kMpi = "mpi";
inline constexpr const char *kNccl = "nccl";
} // namespace backend

namespace target_kind {
/// Host code only: target.triple / cpu / features.
inline constexpr const char *kCpu = "cpu";
/// Host code (triple / cpu / features) that launches GPU kernels compiled for
/// target.arch ("sm_90"); written by the NVVM path.
inline constexpr const char *kCuda = "cuda";
} // namespace target_kind

/// Values of an argument's or result's "role".
namespace role {
/// Read-only data of one call (activations, lengths).
inline constexpr const char *kInput = "input";
/// Read-only model state (weights); bound by name from checkpoints.
inline constexpr const char *kParameter = "parameter";
/// A result: written by the call into a buffer the caller owns.
inline constexpr const char *kOutput = "output";
/// An argument the call reads and then overwrites with its new value.
inline constexpr const char *kInOut = "inout";
} // namespace role

/// Values of "dtype".
namespace dtype {
inline constexpr const char *kF32 = "f32";
inline constexpr const char *kF64 = "f64";
inline constexpr const char *kI32 = "i32";
inline constexpr const char *kI64 = "i64";
} // namespace dtype

/// Function argument and result attributes of the IR that the compiler turns
/// into the manifest (verified by the hkt dialect, dialect/HKTDialect.cpp).
namespace attr {
/// Argument or result: its manifest name (a string).
inline constexpr const char *kName = "hkt.name";
/// Argument: the value an unbound argument is filled with (a scalar).
inline constexpr const char *kDefault = "hkt.default";
/// Argument of integer type: allowed values, array<i64: lo, hi>.
inline constexpr const char *kRange = "hkt.range";
/// Argument: "input" (the default), "parameter" or "inout".
inline constexpr const char *kRole = "hkt.role";
/// Result: the index of the "inout" argument whose new value it is.
inline constexpr const char *kInOut = "hkt.inout";
/// Argument with dynamic dimensions: the largest size of every dimension,
/// array<i64: ...> (static dimensions give their size).
inline constexpr const char *kBounds = "hkt.bounds";
/// Argument with dynamic dimensions: one string per dimension, the symbol of
/// each dynamic one ("" for static ones); arguments sharing a symbol have
/// the same size there at run time.
inline constexpr const char *kDims = "hkt.dims";
/// A batched entry (one that runs a batch-1 function per row): that
/// function's symbol; hkt-differentiate differentiates it and batches its
/// gradient the same way.
inline constexpr const char *kRowFunction = "hkt.row_function";
/// On a batched entry's loop over its rows when they run one after the
/// other: the ops it holds are whole ops (run once per row), not the inner
/// loops of a tiled op.
inline constexpr const char *kRowLoop = "hkt.row_loop";
} // namespace attr

} // namespace hkt::format

#endif // HKT_RUNTIME_MODULEFORMAT_H
