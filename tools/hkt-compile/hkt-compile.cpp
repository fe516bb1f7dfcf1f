//===- hkt-compile.cpp - ahead-of-time compiler for hkt modules -----------===//
//
//   hkt-compile IN.mlir -o OUT              every public function of IN
//   hkt-compile --layer LAYER.json -o OUT   one HKT layer (entry `layer`)
//   hkt-compile --layer LAYER.json --emit-mlir    print the IR instead
//   hkt-compile --layer LAYER.json --emit-llvm    print the optimised LLVM IR
//   hkt-compile --layer LAYER.json --backward -o OUT   add the entry layer_grad
//   hkt-compile --layer LAYER.json --max-seq-len N [--max-batch M] -o OUT
//                                            any T up to N (and B up to M)
//   hkt-compile --model MODEL.json [--max-batch N] [--fixed-len] -o OUT
//                                            SPEC's classifier: logits, loss,
//                                            loss_grad, train_step (any batch
//                                            up to N, any length up to max_len)
//
// OUT is a directory holding module.so and manifest.json
// (docs/module-format.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleCompiler.h"
#include "compiler/Tuning.h"
#include "compiler/frontend/LayerConfig.h"
#include "compiler/frontend/ModelConfig.h"
#include "dialect/Register.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("hkt-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    layerFile("layer",
              cl::desc("Compile one HKT layer from a layer config (JSON)"),
              cl::value_desc("LAYER.json"), cl::cat(category));
static cl::opt<std::string> modelFile(
    "model",
    cl::desc("Compile SPEC's classifier model from a model config (JSON): "
             "entries logits and loss"),
    cl::value_desc("MODEL.json"), cl::cat(category));
static cl::opt<int64_t> modelBatch(
    "max-batch",
    cl::desc("--model (default 1024) and --layer: the largest batch a call "
             "takes; the batch is dynamic, any B in [1, N] runs (a layer "
             "config's batch may then be null or left out)"),
    cl::init(hkt::kDefaultMaxBatch), cl::cat(category));
static cl::opt<int64_t> ranks(
    "ranks",
    cl::desc("--model: a data-parallel train step for N processes (mpirun "
             "-np N hkt-run train ...): each rank takes its share of the "
             "batch and the gradients are summed over the ranks, with MPI "
             "(--target cpu, gpu-emulation) or NCCL (--target nvvm) "
             "(docs/training.md, \"Several processes\")"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<int64_t> maxSeqLen(
    "max-seq-len",
    cl::desc("--layer: T is dynamic, any length in [1, N] runs (the config's "
             "seq_len may then be null or left out; docs/module-format.md)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> fixedLength(
    "fixed-len",
    cl::desc("--model: tokens are B x max_len (every batch padded to max_len) "
             "instead of B x T for any T <= max_len, each row at its own "
             "length (the default on every target)"),
    cl::cat(category));
static cl::alias modelBatchAlias("batch", cl::desc("Alias for --max-batch"),
                                 cl::aliasopt(modelBatch), cl::cat(category));
static cl::opt<std::string> outputDir("o", cl::desc("Output module directory"),
                                      cl::value_desc("OUT"), cl::cat(category));
static cl::opt<bool>
    emitMlir("emit-mlir",
             cl::desc("Print the hkt IR that would be compiled and stop"),
             cl::cat(category));
static cl::opt<bool> backward(
    "backward",
    cl::desc(
        "Add a gradient entry NAME_grad for every entry (hkt-differentiate:"
        " the layer's arguments and dy in, d(sum(y * dy)) out)"),
    cl::cat(category));
static cl::opt<bool> inferenceOnly(
    "inference",
    cl::desc("--model: only the inference entries logits and loss (no "
             "loss_grad, no train_step; a faster compile)"),
    cl::cat(category));
static cl::opt<bool> emitLLVM(
    "emit-llvm",
    cl::desc("Print the optimised LLVM IR of the module and stop (no -o)"),
    cl::cat(category));
static cl::opt<std::string>
    cpu("cpu",
        cl::desc("Target CPU: 'native' (this machine, the default) or an LLVM "
                 "CPU name ('znver3', 'znver5', 'sapphirerapids', ...: the "
                 "code and the defaults of that CPU's family); 'x86-64' "
                 "gives a portable module"),
        cl::init("native"), cl::cat(category));
static cl::opt<std::string> cpuFeatures(
    "cpu-features",
    cl::desc("LLVM CPU features to add or remove on top of --cpu's, "
             "comma-separated +NAME / -NAME (llc's -mattr): e.g. -amx-tile "
             "(bf16 matmuls on AVX512-BF16 instead of AMX), -avx512f (an "
             "AVX2 module on an AVX-512 host)"),
    cl::value_desc("+F,-G"), cl::cat(category));
static cl::opt<std::string> pipeline(
    "pipeline",
    cl::desc("Lowering pipeline: 'fused' (online attention over tiles, the "
             "default) or 'reference' (materialised scores)"),
    cl::init(hkt::kFusedPipeline.str()), cl::cat(category));

static const std::string tileQHelp =
    "Fused pipeline: query rows per attention tile (default " +
    std::to_string(hkt::kDefaultTileQ) + ")";
static cl::opt<int64_t> tileQ("tile-q", cl::desc(tileQHelp), cl::init(0),
                              cl::cat(category));
static const std::string tileKHelp =
    "Fused pipeline: key columns per attention tile (default " +
    std::to_string(hkt::kDefaultTileK) + ")";
static cl::opt<int64_t> tileK("tile-k", cl::desc(tileKHelp), cl::init(0),
                              cl::cat(category));

static cl::opt<std::string> registerTile(
    "register-tile",
    cl::desc("Fused pipeline, CPU: a matmul's register tile as ROWSxVECTORS "
             "(accumulator rows x vectors of columns; default: the CPU "
             "family's, 8x2 with AVX-512, 6x2 with AVX2; the manifest's "
             "tiles.family names the family)"),
    cl::value_desc("RxV"), cl::cat(category));

static cl::opt<bool> tune(
    "tune",
    cl::desc("Fused pipeline, CPU: time the register-tile candidates for "
             "this CPU on the module itself (hkt-run on random inputs) and "
             "keep the fastest; the choice is cached per CPU model and "
             "module, so compiling it again times nothing (--tune-cache)"),
    cl::cat(category));
static cl::opt<std::string>
    tuneCache("tune-cache",
              cl::desc("--tune's cache file (default $HKT_TUNE_CACHE, else "
                       "$XDG_CACHE_HOME/hkt/tune-cache.json or "
                       "~/.cache/hkt/tune-cache.json)"),
              cl::value_desc("FILE"), cl::cat(category));

static cl::opt<std::string> target(
    "target",
    cl::desc("'cpu' (the default), 'nvvm': GPU kernels for NVIDIA GPUs "
             "(CUDA driver at run time; host code for --cpu), or "
             "'gpu-emulation': the nvvm kernels run on this CPU, one OpenMP "
             "thread per GPU thread (testing without a GPU)"),
    cl::init("cpu"), cl::cat(category));
static cl::list<std::string> chips(
    "chip",
    cl::desc("--target nvvm: GPU architecture(s), comma-separated (default "
             "sm_80,sm_90, one fatbin)"),
    cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("--target nvvm: the CUDA toolkit (ptxas, fatbinary, libdevice; "
             "default $CUDA_HOME or /usr/local/cuda)"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("--target nvvm / gpu-emulation: the attention's arithmetic: "
             "'f32' (the default), 'tf32' (wmma tensor cores) or 'bf16' "
             "(bf16 operands on mma.sync, f32 accumulation; docs/gpu.md "
             "gives their accuracy). --target cpu: 'f32' or 'bf16' (every "
             "matmul on bf16 operands, f32 accumulation: on Intel AMX tiles "
             "where the CPU has AMX, else on AVX512-BF16's vdpbf16ps; "
             "docs/performance.md)"),
    cl::init("f32"), cl::cat(category));
static cl::opt<bool> checkBounds(
    "check-bounds",
    cl::desc("--target gpu-emulation: check every memory access of the "
             "kernels at run time; one out of bounds aborts with the op's "
             "location (slower: for tests)"),
    cl::cat(category));
static cl::opt<bool> emitPTX(
    "emit-ptx",
    cl::desc("--target nvvm: print the PTX of every kernel and stop (no -o)"),
    cl::cat(category));
static cl::opt<bool> kernelReport(
    "kernel-report",
    cl::desc("--target nvvm: print ptxas's registers, spills and shared "
             "memory of every kernel for every chip"),
    cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "hkt-compile: error: " << message << "\n";
  return 1;
}

/// The flags that do not depend on the input: one input, one output, the
/// options that apply to it. Returns the first problem, or "".
static std::string checkFlags() {
  if (int(!inputFile.empty()) + int(!layerFile.empty()) +
          int(!modelFile.empty()) !=
      1)
    return "give exactly one input: IN.mlir, --layer LAYER.json or "
           "--model MODEL.json";
  if (modelBatch.getNumOccurrences() && modelFile.empty() && layerFile.empty())
    return "--max-batch applies to --model and --layer only (in IR, give x "
           "a dynamic B with hkt.dims and hkt.bounds)";
  if (maxSeqLen.getNumOccurrences() && layerFile.empty())
    return "--max-seq-len applies to --layer only (in IR, give x a dynamic "
           "T with hkt.dims and hkt.bounds)";
  if (maxSeqLen.getNumOccurrences() &&
      (maxSeqLen < 1 || maxSeqLen > hkt::kMaxSeqLen))
    return "--max-seq-len must be in [1, 2^31 - 1], got " +
           std::to_string(maxSeqLen);
  if (fixedLength && modelFile.empty())
    return "--fixed-len applies to --model only (a layer's length is fixed "
           "unless --max-seq-len)";
  if (inferenceOnly && modelFile.empty())
    return "--inference applies to --model only";
  if (ranks.getNumOccurrences() && (modelFile.empty() || inferenceOnly))
    return "--ranks applies to --model without --inference (it splits the "
           "train step over processes)";
  if (ranks.getNumOccurrences() && (ranks < 1 || ranks > (int64_t(1) << 20)))
    return "--ranks must be in [1, 2^20], got " + std::to_string(ranks);
  if (inferenceOnly && backward)
    return "--inference and --backward exclude each other";
  if (modelBatch < 1 || modelBatch > (int64_t(1) << 20))
    return "--max-batch must be in [1, 2^20], got " +
           std::to_string(modelBatch);
  if (!emitMlir && !emitLLVM && !emitPTX && outputDir.empty())
    return "no output: give -o OUT (or --emit-mlir, --emit-llvm, "
           "--emit-ptx)";
  if (int(emitMlir) + int(emitLLVM) + int(emitPTX) > 1)
    return "give at most one of --emit-mlir, --emit-llvm and --emit-ptx";
  if (target != "cpu" && target != "nvvm" && target != "gpu-emulation")
    return "unknown --target '" + target +
           "' (available: cpu, nvvm, gpu-emulation)";
  bool gpu = target == "nvvm";
  if (!gpu && (chips.getNumOccurrences() || cudaPath.getNumOccurrences() ||
               emitPTX || kernelReport))
    return "--chip, --cuda-path, --emit-ptx and --kernel-report apply "
           "to --target nvvm only";
  if (checkBounds && target != "gpu-emulation")
    return "--check-bounds applies to --target gpu-emulation only";
  // The model's gradient and training-step entries are there unless
  // --inference, so the GPU's (bf16) backward is needed then too.
  bool gradients = backward || (!modelFile.empty() && !inferenceOnly);
  if (target != "cpu" && gradients && precision != "bf16")
    return std::string(backward ? "--backward" : "--model (without --inference)") +
           " on --target " + target.getValue() +
           " needs --precision bf16 (the GPU's attention backward is the "
           "bf16 tensor-core one)";
  return "";
}

/// The input as hkt IR: built from --layer or --model (whose config, as the
/// manifest records it, goes to `modelConfigJson`) or parsed from IN.mlir.
/// Null after printing the problem.
static OwningOpRef<ModuleOp> loadInput(MLIRContext &context,
                                       llvm::SourceMgr &sourceMgr,
                                       std::string &modelConfigJson) {
  OwningOpRef<ModuleOp> module;
  if (!layerFile.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(layerFile);
    if (!buffer) {
      fail("cannot read layer config '" + layerFile +
           "': " + buffer.getError().message());
      return nullptr;
    }
    llvm::Expected<hkt::LayerConfig> config =
        hkt::parseLayerConfig((*buffer)->getBuffer(), maxSeqLen,
                              modelBatch.getNumOccurrences() ? modelBatch : 0);
    if (!config) {
      fail(layerFile + ": " + llvm::toString(config.takeError()));
      return nullptr;
    }
    module = hkt::buildLayerModule(
        context, *config, FileLineColLoc::get(&context, layerFile, 1, 1));
  } else if (!modelFile.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(modelFile);
    if (!buffer) {
      fail("cannot read model config '" + modelFile +
           "': " + buffer.getError().message());
      return nullptr;
    }
    llvm::Expected<hkt::ModelConfig> config =
        hkt::parseModelConfig((*buffer)->getBuffer());
    if (!config) {
      fail(modelFile + ": " + llvm::toString(config.takeError()));
      return nullptr;
    }
    modelConfigJson = hkt::modelConfigToJson(*config);
    module =
        hkt::buildModelModule(context, *config, modelBatch,
                              /*dynamicLength=*/!fixedLength,
                              FileLineColLoc::get(&context, modelFile, 1, 1));
  } else {
    std::string error;
    auto buffer = mlir::openInputFile(inputFile, &error);
    if (!buffer) {
      fail(error);
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return nullptr; // The parser printed the diagnostics.
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

/// Gradient entries (--backward: every public function of IN.mlir, or the
/// layer) and a model's gradient and training-step entries unless
/// --inference: hkt-autodiff-pipeline, as hkt-opt runs it.
static LogicalResult addAutodiffEntries(MLIRContext &context, ModuleOp module) {
  bool model = !modelFile.empty();
  if (!backward && !(model && !inferenceOnly))
    return success();
  hkt::AutodiffPipelineOptions autodiff;
  // The fused pipeline differentiates the fused attention
  // (hkt.fused_attention -> hkt.online_attention_backward, never T x T);
  // the reference pipeline the step ops (the materialised backward).
  autodiff.fuse = pipeline.getValue() == hkt::kFusedPipeline;
  autodiff.model = model;
  autodiff.maxBatch = modelBatch;
  autodiff.ranks = ranks;
  PassManager pm(&context);
  hkt::buildHktAutodiffPipeline(pm, autodiff);
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  return pm.run(module);
}

/// The compile options of the flags; the problem in `error` if any.
static hkt::CompileOptions
compileOptionsFromFlags(const std::string &modelConfigJson,
                        std::string &error) {
  hkt::CompileOptions options;
  options.cpu = cpu;
  options.cpuFeatures = cpuFeatures;
  options.pipeline = pipeline;
  options.target = target;
  options.precision = precision;
  options.checkBounds = checkBounds;
  options.chips.assign(chips.begin(), chips.end());
  if (!cudaPath.empty())
    options.cudaPath = cudaPath;
  else if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    options.cudaPath = home;
  if (emitPTX)
    options.emitPTX = &llvm::outs();
  if (kernelReport)
    options.kernelReport = &llvm::outs();
  if (tileQ.getNumOccurrences() && tileQ < 1)
    error = "--tile-q must be >= 1";
  else if (tileK.getNumOccurrences() && tileK < 1)
    error = "--tile-k must be >= 1";
  else if ((tileQ.getNumOccurrences() || tileK.getNumOccurrences()) &&
           pipeline.getValue() != hkt::kFusedPipeline)
    error = "--tile-q and --tile-k apply to the fused pipeline only";
  options.tileQ = tileQ;
  options.tileK = tileK;
  if (registerTile.getNumOccurrences()) {
    StringRef rows, vectors;
    std::tie(rows, vectors) = StringRef(registerTile).split('x');
    if (rows.getAsInteger(10, options.registerRows) ||
        vectors.getAsInteger(10, options.registerVectors) ||
        options.registerRows < 1 || options.registerVectors < 1 ||
        options.registerRows > 32 || options.registerVectors > 8)
      error = "--register-tile expects ROWSxVECTORS, e.g. 8x2 (rows 1-32, "
              "vectors 1-8), not '" +
              registerTile + "'";
    else if (pipeline.getValue() != hkt::kFusedPipeline ||
             target.getValue() != "cpu")
      error = "--register-tile applies to the fused pipeline on the cpu "
              "target only";
  }
  if (!modelFile.empty())
    options.modelConfig = modelConfigJson;
  if (emitLLVM)
    options.emitLLVM = &llvm::outs();
  return options;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // MLIR's pass-manager flags (--mlir-print-ir-after=PASS,
  // --mlir-print-ir-after-all, --mlir-timing, ...) apply to both pipelines
  // (autodiff, then the lowering); --help-hidden lists them.
  // The pass names (--mlir-print-ir-after=hkt-nvvm-host-staging) resolve
  // through the pass registry, which must be filled first.
  registerAllPasses();
  hkt::registerHktPassesAndPipelines();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "HKT ahead-of-time compiler: hkt IR or a layer "
                              "config -> a compiled module directory\n\n"
                              "MLIR's pass-manager flags "
                              "(--mlir-print-ir-after=PASS, --mlir-timing, "
                              "...) apply; --help-hidden lists them.\n");
  if (std::string problem = checkFlags(); !problem.empty())
    return fail(problem);

  DialectRegistry registry;
  hkt::registerHktDialects(registry);
  hkt::registerHktExtensions(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);

  std::string modelConfigJson;
  OwningOpRef<ModuleOp> module = loadInput(context, sourceMgr, modelConfigJson);
  if (!module || failed(addAutodiffEntries(context, *module)))
    return 1;
  if (emitMlir) {
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }

  std::string error;
  hkt::CompileOptions options = compileOptionsFromFlags(modelConfigJson, error);
  if (!error.empty())
    return fail(error);
  if (tune) {
    hkt::TuneOptions tuning;
    tuning.cachePath =
        tuneCache.empty() ? hkt::defaultTuneCachePath() : tuneCache.getValue();
    // The hkt-run installed beside this hkt-compile, else the one on PATH.
    std::string self = llvm::sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&fail));
    SmallString<256> beside(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(beside, "hkt-run");
    if (llvm::sys::fs::can_execute(beside)) {
      tuning.hktRun = beside.str().str();
    } else if (llvm::ErrorOr<std::string> found =
                   llvm::sys::findProgramByName("hkt-run")) {
      tuning.hktRun = *found;
    } else {
      return fail("--tune times the candidates with hkt-run, which is "
                  "neither beside hkt-compile nor on PATH");
    }
    tuning.log = &llvm::errs();
    if (failed(hkt::tuneAndCompile(*module, options, outputDir, tuning)))
      return 1;
    return 0;
  }
  if (tuneCache.getNumOccurrences())
    return fail("--tune-cache goes with --tune");
  if (failed(hkt::compileToDirectory(*module, options, outputDir)))
    return 1;
  return 0;
}
