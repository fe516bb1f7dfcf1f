//===- ModuleCompiler.cpp - MLIR module -> compiled-module dir ------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The driver's phases: the options validated once into a target, the named
// pipeline lowering the module to the LLVM dialect (the entries and their
// working memory collected on the way, ModuleManifest.h), the kernels of
// the nvvm target assembled, then ModuleEmitter.h's translation, link and
// atomic write.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleCompiler.h"
#include "compiler/CudaBinary.h"
#include "compiler/ModuleEmitter.h"
#include "compiler/ModuleManifest.h"
#include "compiler/Target.h"
#include "passes/Passes.h"
#include "passes/codegen/cpu/CpuTuning.h"
#include "runtime/Manifest.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::compiler;

namespace {
/// The code-generation targets of hkt-compile --target.
enum class CodegenTarget { Cpu, Nvvm, GpuEmulation };

/// Checks the options once, before any work; returns the target and, for
/// nvvm, the chips to compile for (the defaults when none is given).
FailureOr<std::pair<CodegenTarget, std::vector<std::string>>>
validateOptions(Location loc, const CompileOptions &options) {
  std::optional<CodegenTarget> parsed =
      llvm::StringSwitch<std::optional<CodegenTarget>>(options.target)
          .Case("cpu", CodegenTarget::Cpu)
          .Case("nvvm", CodegenTarget::Nvvm)
          .Case("gpu-emulation", CodegenTarget::GpuEmulation)
          .Default(std::nullopt);
  if (options.pipeline != kReferencePipeline &&
      options.pipeline != kFusedPipeline)
    return emitError(loc) << "unknown pipeline '" << options.pipeline
                          << "' (available: " << kFusedPipeline << ", "
                          << kReferencePipeline << ")";
  if (options.tileQ < 0 || options.tileK < 0)
    return emitError(loc) << "tile sizes must be >= 1";
  if (options.registerRows < 0 || options.registerVectors < 0)
    return emitError(loc) << "register tile sizes must be >= 1";
  if (!parsed)
    return emitError(loc) << "unknown target '" << options.target
                          << "' (available: cpu, nvvm, gpu-emulation)";
  bool nvvm = *parsed == CodegenTarget::Nvvm;
  bool emulation = *parsed == CodegenTarget::GpuEmulation;
  bool cpuBf16 = *parsed == CodegenTarget::Cpu && options.precision == "bf16";
  if (options.precision != "f32" && !nvvm && !emulation && !cpuBf16)
    return emitError(loc) << "--precision " << options.precision
                          << " applies to --target nvvm and gpu-emulation "
                             "(on the cpu target: f32, or bf16 on AMX or "
                             "AVX512-BF16)";
  if (cpuBf16 && options.pipeline != kFusedPipeline)
    return emitError(loc) << "--precision bf16 on the cpu target is the fused "
                             "pipeline's (bf16 operands for its matmuls)";
  if (options.precision != "f32" && options.precision != "tf32" &&
      options.precision != "bf16")
    return emitError(loc) << "unknown precision '" << options.precision
                          << "' (f32; tf32 or bf16 for the tensor cores)";
  if (options.checkBounds && !emulation)
    return emitError(loc) << "--check-bounds applies to --target "
                             "gpu-emulation only";
  if (emulation && options.pipeline != kFusedPipeline)
    return emitError(loc) << "the gpu-emulation target has the NVVM path's "
                             "pipeline only";
  std::vector<std::string> chips = options.chips;
  if (nvvm) {
    if (options.pipeline != kFusedPipeline)
      return emitError(loc) << "the nvvm target has one pipeline (the fused "
                               "one); --pipeline "
                            << options.pipeline << " is for the CPU";
    if (chips.empty())
      for (StringRef chip : llvm::split(kDefaultGpuChips, ','))
        chips.push_back(chip.str());
    for (const std::string &chip : chips) {
      // The runtime's reading of the name; ptxas of CUDA 13 knows sm_75
      // and later (RECIPE P2).
      std::optional<::hkt::runtime::CudaArch> arch =
          ::hkt::runtime::parseCudaArch(chip);
      if (!arch || arch->major * 10 + arch->minor < 75)
        return emitError(loc) << "unknown GPU chip '" << chip
                              << "' (expected sm_75 or later, e.g. sm_80, "
                                 "sm_90, sm_90a)";
    }
    if (failed(checkCudaToolkit(loc, options.cudaPath)))
      return failure();
  }

  return std::make_pair(*parsed, std::move(chips));
}

/// The named pipeline of the target and options, into `pm`.
void buildPipeline(PassManager &pm, CodegenTarget target, const CpuTarget &cpu,
                   const CompileOptions &options,
                   const std::vector<std::string> &chips) {
  if (target != CodegenTarget::Cpu) {
    NvvmPipelineOptions gpu;
    if (options.tileQ > 0)
      gpu.tileQ = options.tileQ;
    if (options.tileK > 0)
      gpu.tileK = options.tileK;
    gpu.precision = options.precision;
    gpu.chips = chips;
    gpu.cudaPath = options.cudaPath;
    gpu.checkBounds = options.checkBounds;
    if (target == CodegenTarget::Nvvm)
      buildHktNvvmPipeline(pm, gpu);
    else
      buildHktGpuEmulationPipeline(pm, gpu);
  } else if (options.pipeline == kFusedPipeline) {
    FusedPipelineOptions fused;
    fused.tileQ = cpu.tiles->tileQ;
    fused.tileK = cpu.tiles->tileK;
    fused.vectorBits = cpu.tiles->vectorBits;
    fused.registerRows = cpu.tiles->registerRows;
    fused.registerVectors = cpu.tiles->registerVectors;
    fused.precision = options.precision;
    if (options.precision == "bf16" && !usesAmx(cpu))
      fused.bf16Matmuls = "avx512bf16";
    buildHktCpuFusedPipeline(pm, fused);
  } else {
    buildHktCpuReferencePipeline(pm);
  }
}

/// Runs the pipeline; a CPU module's entries get their working memory.
LogicalResult lowerToLLVMDialect(ModuleOp module, CodegenTarget target,
                                 const CpuTarget &cpu,
                                 const CompileOptions &options,
                                 const std::vector<std::string> &chips,
                                 std::vector<EntrySpec> &entries) {
  Location loc = module.getLoc();
  PassManager pm(module.getContext());
  buildPipeline(pm, target, cpu, options, chips);
  // hkt-compile's --mlir-print-ir-* and --mlir-timing (a no-op where no
  // tool registered them).
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  // The working memory of a cuda module is device memory: not measured
  // (nor that of its emulation).
  WorkingMemoryInstrumentation *memory = nullptr;
  if (target == CodegenTarget::Cpu) {
    auto instrumentation =
        std::make_unique<WorkingMemoryInstrumentation>(entries);
    memory = instrumentation.get();
    pm.addInstrumentation(std::move(instrumentation));
  }
  if (failed(pm.run(module)))
    return failure();
  if (memory && !memory->ran)
    return emitError(loc, "internal error: the pipeline has no "
                          "finalize-memref-to-llvm pass, before which the "
                          "working memory is computed");
  return success();
}

/// The nvvm target: the kernels' fatbins, and --kernel-report's lines.
LogicalResult assembleKernels(ModuleOp module, const CompileOptions &options) {
  std::vector<KernelReport> reports;
  if (failed(assembleCudaBinaries(module, options.cudaPath, reports)))
    return failure();
  if (options.kernelReport)
    for (const KernelReport &r : reports)
      *options.kernelReport
          << llvm::formatv("kernel {0} {1}: {2} registers, {3} bytes stack, "
                           "{4} bytes spill stores, {5} bytes spill loads, "
                           "{6} bytes smem\n",
                           r.kernel, r.chip, r.registers, r.stackBytes,
                           r.spillStores, r.spillLoads, r.sharedBytes);
  return success();
}
} // namespace

/// The fused CPU pipeline's tiles for `cpu`: the options', else the
/// defaults and the register tile of the CPU's microarchitecture family.
CpuTiles mlir::hkt::resolveCpuTiles(const CpuTarget &cpu,
                                    const CompileOptions &options) {
  auto has = [&](StringRef f) { return llvm::is_contained(cpu.features, f); };
  CpuTiles tiles;
  tiles.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
  const CpuFamily &family = cpuFamilyFor(cpu.cpu, tiles.vectorBits);
  tiles.family = family.name;
  tiles.tileQ = options.tileQ > 0 ? options.tileQ : kDefaultTileQ;
  tiles.tileK = options.tileK > 0 ? options.tileK : kDefaultTileK;
  tiles.registerRows = options.registerRows > 0 ? options.registerRows
                                                : family.registerTile.rows;
  tiles.registerVectors = options.registerVectors > 0
                              ? options.registerVectors
                              : family.registerTile.vectors;
  tiles.source = !options.tilesSource.empty() ? options.tilesSource
                 : options.registerRows > 0 || options.registerVectors > 0
                     ? "options"
                     : "table";
  tiles.timings = options.tileTimings;
  return tiles;
}

LogicalResult mlir::hkt::compileToDirectory(ModuleOp module,
                                            const CompileOptions &options,
                                            StringRef outDir) {
  Location loc = module.getLoc();
  auto validated = validateOptions(loc, options);
  if (failed(validated))
    return failure();
  auto [targetKind, chips] = *validated;
  llvm::Expected<CpuTarget> target =
      createCpuTarget(options.cpu, options.cpuFeatures);
  if (!target)
    return emitError(loc) << llvm::toString(target.takeError());
  if (targetKind == CodegenTarget::Cpu && options.pipeline == kFusedPipeline)
    target->tiles = resolveCpuTiles(*target, options);
  if (targetKind == CodegenTarget::Cpu && options.precision == "bf16") {
    // AMX where the CPU has it, else AVX512-BF16's dot products.
    if (!usesAmx(*target) &&
        !llvm::is_contained(target->features, "avx512bf16"))
      return emitError(loc)
             << "--precision bf16 on the cpu target needs AVX512-BF16 (AMD "
                "Zen 4 or later, Intel Cooper Lake) or AMX (Intel Sapphire "
                "Rapids or later); CPU '"
             << target->cpu
             << "' has neither (give --cpu znver4 or --cpu sapphirerapids "
                "to cross-compile for one)";
    target->precision = options.precision;
  }

  // Refuse to clobber something that is not a compiled module.
  if (llvm::sys::fs::exists(outDir) &&
      !llvm::sys::fs::exists(outDir + "/" + fmt::kManifestFile))
    return emitError(loc) << "refusing to replace '" << outDir
                          << "': it exists and is not a compiled hkt module "
                             "(no manifest.json)";

  FailureOr<std::optional<DataParallelSpec>> dataParallel =
      collectDataParallel(module);
  if (failed(dataParallel))
    return failure();
  // On the GPU the gradients are device memory: NCCL sums them
  // (hkt-nvvm-allreduce-to-nccl); the emulation's are host memory, MPI's.
  if (*dataParallel && targetKind == CodegenTarget::Nvvm)
    (*dataParallel)->backend = fmt::backend::kNccl;
  FailureOr<std::vector<EntrySpec>> entries = collectEntries(module);
  if (failed(entries) || failed(lowerToLLVMDialect(module, targetKind, *target,
                                                   options, chips, *entries)))
    return failure();
  std::string cudaArch;
  if (targetKind == CodegenTarget::Nvvm) {
    if (options.emitPTX) {
      printPtx(module, *options.emitPTX);
      return success();
    }
    if (failed(assembleKernels(module, options)))
      return failure();
    cudaArch = llvm::join(chips, ",");
  }

  llvm::LLVMContext llvmContext;
  llvm::TargetMachine &tm = *target->machine;
  // The emulation is a testing target: its tests compile many modules and
  // run each for well under a second since its blocks' threads are loops,
  // so no LLVM optimisation (a D = 256 bf16 layer: 9.6 s to compile instead
  // of 22 s at -O3, 0.6 s a call instead of 0.08 s).
  unsigned optLevel = 3;
  if (targetKind == CodegenTarget::GpuEmulation) {
    optLevel = 0;
    tm.setOptLevel(llvm::CodeGenOptLevel::None);
  }
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      translateAndOptimize(module, llvmContext, tm, *entries, optLevel);
  if (failed(llvmModule))
    return failure();
  if (options.emitLLVM) {
    (*llvmModule)->print(*options.emitLLVM, nullptr);
    return success();
  }

  // Everything is written under a fresh directory beside the destination.
  // Absolute: LLVM puts a relative unique name under the system's temp
  // directory, not beside the destination.
  SmallString<256> tmpDir, tmpPrefix(outDir);
  tmpPrefix += ".tmp";
  llvm::sys::fs::make_absolute(tmpPrefix);
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory(tmpPrefix, tmpDir))
    return emitError(loc) << "cannot create a directory beside '" << outDir
                          << "': " << ec.message();
  TempDirGuard guard{tmpDir.str().str()};
  if (failed(writeModuleFiles(loc, tmpDir, **llvmModule, tm, *target, *entries,
                              options, cudaArch, *dataParallel)))
    return failure();
  FailureOr<std::string> old = swapIntoPlace(loc, tmpDir, outDir);
  if (failed(old))
    return failure();
  guard.path.clear();
  if (!old->empty())
    llvm::sys::fs::remove_directories(*old);
  return success();
}
