//===- Passes.h - hkt passes and pipelines ----------------------*- C++ -*-===//
//
// Every pass folder's declarations (transforms, autodiff, conversion,
// codegen/cpu, codegen/nvvm), the named pipelines (Pipelines.cpp) and the
// registration the tools call.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_PASSES_H
#define HKT_PASSES_PASSES_H

#include "passes/PipelineOptions.h"
#include "passes/autodiff/Passes.h"
#include "passes/codegen/cpu/Passes.h"
#include "passes/codegen/nvvm/Passes.h"
#include "passes/conversion/Passes.h"
#include "passes/distributed/Passes.h"
#include "passes/transforms/Passes.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class DialectRegistry;
class RewritePatternSet;

namespace hkt {

/// The reference CPU pipeline: hkt on tensors -> LLVM dialect, with every
/// score matrix materialised. Public functions take and return their tensors
/// as memrefs, results turned into trailing out-parameters.
void buildHktCpuReferencePipeline(OpPassManager &pm);

/// Registers the external interface models and dialect extensions the hkt
/// pipelines need (bufferization, value bounds, deallocation, the adjoints
/// of upstream ops, transform-dialect extensions, translation to LLVM IR) on
/// the dialects of registerHktDialects (dialect/Register.h).
void registerHktExtensions(DialectRegistry &registry);

/// Options of the fused CPU pipeline (tile sizes of the online attention).
struct FusedPipelineOptions
    : public PassPipelineOptions<FusedPipelineOptions> {
  Option<int64_t> tileQ{*this, "tile-q",
                        llvm::cl::desc("Query rows per attention tile"),
                        llvm::cl::init(kDefaultTileQ)};
  Option<int64_t> tileK{*this, "tile-k",
                        llvm::cl::desc("Key columns per attention tile"),
                        llvm::cl::init(kDefaultTileK)};
  Option<int64_t> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Vector register width of the target in bits"),
      llvm::cl::init(kDefaultVectorBits)};
  Option<int64_t> registerRows{
      *this, "register-rows",
      llvm::cl::desc(
          "Rows of a matmul's register tile (0: the tuning table's)"),
      llvm::cl::init(0)};
  Option<int64_t> registerVectors{
      *this, "register-vectors",
      llvm::cl::desc("Columns of a matmul's register tile in vectors (0: the "
                     "tuning table's)"),
      llvm::cl::init(0)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("The matmuls' arithmetic: f32, or bf16 (bf16 operands, "
                     "f32 accumulation: bf16-matmuls says on what)"),
      llvm::cl::init("f32")};
  Option<std::string> bf16Matmuls{
      *this, "bf16-matmuls",
      llvm::cl::desc("precision=bf16's instructions: 'amx' (Intel AMX tiles: "
                     "hkt-cpu-amx-matmul) or 'avx512bf16' (vdpbf16ps: "
                     "hkt-cpu-avx512bf16-matmul)"),
      llvm::cl::init("amx")};
};

/// The fused CPU pipeline: hkt-fuse + tiled online attention; the rest of the
/// layer as on the reference path.
void buildHktCpuFusedPipeline(OpPassManager &pm,
                              const FusedPipelineOptions &options = {});

/// Options of the NVVM pipeline.
struct NvvmPipelineOptions
    : public PassPipelineOptions<NvvmPipelineOptions> {
  Option<int64_t> tileQ{*this, "tile-q",
                        llvm::cl::desc("Query rows (threads) per attention block"),
                        llvm::cl::init(kDefaultGpuTileQ)};
  Option<int64_t> tileK{*this, "tile-k",
                        llvm::cl::desc("Keys per shared-memory tile"),
                        llvm::cl::init(kDefaultGpuTileK)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("f32 (SIMT) or tf32 (tensor cores) for the attention"),
      llvm::cl::init("f32")};
  ListOption<std::string> chips{
      *this, "chips",
      llvm::cl::desc("GPU architectures (sm_80,sm_90 when none is given)")};
  Option<std::string> cudaPath{
      *this, "cuda-path", llvm::cl::desc("The CUDA toolkit (for libdevice)"),
      llvm::cl::init(kDefaultCudaPath.str())};
  Option<bool> checkBounds{
      *this, "check-bounds",
      llvm::cl::desc("gpu-emulation: check every memref access of the "
                     "kernels and the host code at run time (upstream "
                     "generate-runtime-verification); an access out of "
                     "bounds aborts with the op and its location"),
      llvm::cl::init(false)};
};

/// The NVVM pipeline: the fused layer as GPU kernels (the attention from
/// hkt-nvvm-lower-online-attention, the rest one thread per element) and
/// host code that stages the buffers and launches them, lowered to the LLVM
/// dialect; each gpu.module becomes a gpu.binary with one PTX object per
/// chip (hkt-compile assembles them into one fatbin).
void buildHktNvvmPipeline(OpPassManager &pm,
                          const NvvmPipelineOptions &options = {});

/// The NVVM path's kernels compiled for this CPU (hkt-nvvm-emulate-on-cpu),
/// lowered to the LLVM dialect as the CPU pipelines are (the chips and
/// cuda-path options are not used). With check-bounds, every memref access
/// is checked at run time: what a GPU would do with an out-of-bounds
/// address (a fault, or silently wrong memory) becomes an abort that names
/// the op.
void buildHktGpuEmulationPipeline(OpPassManager &pm,
                                  const NvvmPipelineOptions &options = {});

/// Options of the autodiff pipeline.
struct AutodiffPipelineOptions
    : public PassPipelineOptions<AutodiffPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run hkt-fuse first, so that the fused "
                                   "attention is differentiated (the fused "
                                   "pipeline's backward, never T x T)"),
                    llvm::cl::init(true)};
  Option<bool> model{*this, "model",
                     llvm::cl::desc("A model module (hkt-compile --model): "
                                    "differentiate its loss row and add the "
                                    "loss_grad and train_step entries"),
                     llvm::cl::init(false)};
  Option<int64_t> maxBatch{*this, "max-batch",
                           llvm::cl::desc("model: the largest batch"),
                           llvm::cl::init(kDefaultMaxBatch)};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("model: data-parallel train step for this many ranks "
                     "(its gradients summed over a shard grid); 0: one "
                     "process"),
      llvm::cl::init(0)};
};

/// The gradient entries hkt-compile --backward adds (and a model's training
/// entries): [hkt-fuse], hkt-differentiate, [hkt-model-training-entries].
void buildHktAutodiffPipeline(OpPassManager &pm,
                              const AutodiffPipelineOptions &options = {});

/// Registers the passes and the named pipelines (hkt-cpu-reference-pipeline).
void registerHktPassesAndPipelines();

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_PASSES_H
