//===- Pipelines.cpp - named hkt pipelines --------------------------------===//
//
// The one place where pass pipelines are assembled; hkt-opt and hkt-compile
// both build their pass managers from here.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/autodiff/ModelEntries.h"

#include "dialect/HKTDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// Tensors -> memrefs with identity layouts at function boundaries, results
/// as caller-owned out-parameters (docs/module-format.md), no leaks.
static void addBufferization(OpPassManager &pm) {
  // A data-parallel train step's collectives (shard.all_reduce on tensors)
  // -> MPI on buffers (docs/training.md, "Several processes").
  pm.addPass(createConvertShardToMPIPass());
  pm.addPass(hkt::createHktMpiSeparateAllreduceBuffersPass());
  pm.addPass(hkt::createHktMpiWorldCommunicatorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Results of dynamic shape first (upstream keeps them as results).
  pm.addPass(hkt::createHktResultsToOutParamsPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(hkt::createHktMemrefCopyToLinalgPass());
}

/// Loops on memrefs -> LLVM dialect (the order TOOLCHAIN.md found to work).
static void addLowerToLLVM(OpPassManager &pm, bool openmp = false) {
  // Buffers freed after their last use: a layer gradient's working set is
  // then its live buffers, not all of them (the CPU paths only: there the
  // memref-level transformations are done).
  pm.addPass(hkt::createHktDeallocAfterLastUsePass());
  // Fully unrolled: the default staging through memref.alloca inside loops
  // grows the stack on every iteration (a stack overflow in OpenMP workers
  // at T = 4097).
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(createConvertLinalgToLoopsPass());
  // scf.parallel -> OpenMP before memrefs are lowered: the parallel bodies
  // get memref.alloca_scope, which finalize-memref-to-llvm handles.
  if (openmp)
    pm.addPass(createConvertSCFToOpenMPPass());
  // Strided metadata first: it expresses dynamic subview offsets with
  // affine.apply, which lower-affine then removes.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(hkt::createHktConvertMpiToLLVMPass());
  pm.addPass(createSCFToControlFlowPass());
  // AMX tiles (hkt-cpu-amx-matmul) and AVX512-BF16 dot products
  // (hkt-cpu-avx512bf16-matmul) as LLVM's intrinsics; nothing else changes
  // where there are none.
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = true;
  vectorToLLVM.x86Vector = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  if (openmp)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::hkt::buildHktCpuReferencePipeline(OpPassManager &pm) {
  pm.addPass(createHktDecomposePass());
  pm.addPass(createHktLowerToLinalgPass());
  // No CSE before bufferization: merging the identical zero-filled
  // accumulators of independent contractions would force buffer copies.
  pm.addPass(createCanonicalizerPass());
  addBufferization(pm);
  pm.addPass(createCSEPass());
  addLowerToLLVM(pm);
}

void mlir::hkt::buildHktCpuFusedPipeline(OpPassManager &pm,
                                         const FusedPipelineOptions &options) {
  pm.addPass(createHktFusePass());
  HktCpuLowerOnlineAttentionPassOptions tiles;
  tiles.tileQ = options.tileQ;
  tiles.tileK = options.tileK;
  pm.addPass(createHktCpuLowerOnlineAttentionPass(tiles));
  // What is not fused (downsampling, the hybrid head, theta's softmax) takes
  // the reference lowering.
  pm.addPass(createHktLowerToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  addBufferization(pm);
  pm.addPass(createCSEPass());
  if (options.precision == "bf16")
    pm.addPass(options.bf16Matmuls == "avx512bf16"
                   ? createHktCpuAvx512Bf16MatmulPass()
                   : createHktCpuAmxMatmulPass());
  HktCpuCodegenPassOptions codegen;
  codegen.vectorBits = options.vectorBits;
  codegen.regRows = options.registerRows;
  codegen.regVectors = options.registerVectors;
  pm.addPass(createHktCpuCodegenPass(codegen));
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createHktCpuLoopBuffersToStackPass());
  addLowerToLLVM(pm, /*openmp=*/true);
}

/// The NVVM path up to kernels in gpu.launch and host code on device
/// buffers (shared by the NVVM and the emulation pipelines).
static void addGpuKernels(OpPassManager &pm, int64_t tileQ, int64_t tileK,
                          StringRef precision, bool cublasLt) {
  using namespace mlir::hkt;
  // A model's entries call its row functions: one host function each, so
  // that every kernel launch is in the entry; the rows run in order.
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createHktNvvmHostLoopsInOrderPass());
  pm.addPass(createHktFusePass());
  HktNvvmLowerOnlineAttentionPassOptions tiles;
  tiles.tileQ = tileQ;
  tiles.tileK = tileK;
  tiles.precision = precision.str();
  pm.addPass(createHktNvvmLowerOnlineAttentionPass(tiles));
  pm.addPass(createHktLowerToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  // Each element-wise chain one kernel (still named for what it computes).
  pm.addPass(createHktNvvmFuseElementwisePass());
  addBufferization(pm);
  pm.addPass(createCSEPass());
  // The projections on the tensor cores where the attention is bf16.
  // On the GPU cuBLASLt first, where the runtime finds it.
  if (precision == "bf16") {
    HktNvvmLowerGemmPassOptions gemm;
    gemm.cublasLt = cublasLt;
    pm.addPass(createHktNvvmLowerGemmPass(gemm));
  }
  // Everything left is linalg on memrefs: a kernel each, named for what it
  // computes; a thread per output element, a warp for long sums.
  pm.addPass(createHktNvvmMapParallelLoopsPass());
  pm.addPass(createHktNvvmHostStagingPass());
  // The AdamW update of every parameter one kernel, the accumulations
  // after each row one kernel per row.
  pm.addPass(createHktNvvmFuseIndependentLaunchesPass());
  // After bufferization, which cannot see through nvvm.mma.sync nor
  // nvgpu's cp.async groups.
  pm.addPass(createHktNvvmLowerBf16MmaPass());
  pm.addPass(createHktNvvmAsyncCopyGroupsPass());
}

void mlir::hkt::buildHktGpuEmulationPipeline(
    OpPassManager &pm, const NvvmPipelineOptions &options) {
  addGpuKernels(pm, options.tileQ, options.tileK, options.precision,
                /*cublasLt=*/false);
  // The kernels' own loads, stores and atomics checked (shared and global
  // memory), before the emulation adds the accesses of its per-thread
  // buffers: thousands more checks, whose messages upstream's cf.assert
  // lowering makes globals one symbol-table scan each (quadratic).
  if (options.checkBounds)
    pm.addPass(createGenerateRuntimeVerificationPass());
  pm.addPass(createHktNvvmEmulateOnCpuPass());
  // bf16 conversions as integer arithmetic: x86 has no bf16 instructions
  // before AVX512-BF16, and the libgcc of Debian 12 no __truncsfbf2.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createCanonicalizerPass());
  addLowerToLLVM(pm, /*openmp=*/true);
}

void mlir::hkt::buildHktNvvmPipeline(OpPassManager &pm,
                                     const NvvmPipelineOptions &options) {
  addGpuKernels(pm, options.tileQ, options.tileK, options.precision,
                /*cublasLt=*/true);
  // A data-parallel train step's gradient sum on device memory: NCCL,
  // through the runtime (the emulation keeps MPI on its host memory).
  pm.addPass(createHktNvvmAllreduceToNcclPass());
  // Constants and index arithmetic into the kernels, not kernel arguments
  // (RECIPE P8); then one asynchronous chain per function (P16).
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  // Shared arrays above 48 KiB (head width 256) in dynamic shared memory.
  pm.addPass(createHktNvvmDynamicSharedMemoryPass());
  pm.addPass(createGpuKernelOutliningPass());
  // A kernel launched at several places compiled once.
  pm.addPass(createHktNvvmMergeEquivalentKernelsPass());
  // ldmatrix and the other nvgpu ops of the bf16 kernels (RECIPE 1.2).
  pm.addPass(createConvertNVGPUToNVVMPass());
  // wmma needs 32-byte aligned shared fragments.
  pm.addPass(createHktNvvmAlignWorkgroupMemoryPass());
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // The explicit form of gpu-lower-to-nvvm-pipeline (RECIPE 1.2), one
  // target per chip; PTX objects, assembled by hkt-compile.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  std::vector<std::string> chips(options.chips.begin(), options.chips.end());
  if (chips.empty())
    for (StringRef chip : llvm::split(kDefaultGpuChips, ','))
      chips.push_back(chip.str());
  for (const std::string &chip : chips) {
    GpuNVVMAttachTargetOptions target;
    target.chip = chip;
    // PTX 8.0: sm_90 needs >= 7.8 (RECIPE P1); every chip gets the same.
    target.features = "+ptx80";
    target.optLevel = 3;
    target.linkLibs.push_back(options.cudaPath +
                              "/nvvm/libdevice/libdevice.10.bc");
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.cudaPath;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::hkt::buildHktAutodiffPipeline(
    OpPassManager &pm, const AutodiffPipelineOptions &options) {
  if (options.fuse)
    pm.addPass(createHktFusePass());
  HktDifferentiatePassOptions differentiate;
  if (options.model) {
    // The model's loss row, with the loss returned beside its gradient
    // (hkt-run --grads prints it); the batched entries come from that.
    differentiate.functions = {kLossRow};
    differentiate.returnValues = true;
  }
  pm.addPass(createHktDifferentiatePass(differentiate));
  if (options.model) {
    HktModelTrainingEntriesPassOptions entries;
    entries.maxBatch = options.maxBatch;
    entries.ranks = options.ranks;
    pm.addPass(createHktModelTrainingEntriesPass(entries));
  }
}

void mlir::hkt::registerHktPassesAndPipelines() {
  registerHktTransformsPasses();
  registerHktAutodiffPasses();
  registerHktConversionPasses();
  registerHktCpuCodegenPasses();
  registerHktNvvmCodegenPasses();
  registerHktDistributedPasses();
  PassPipelineRegistration<AutodiffPipelineOptions>(
      kAutodiffPipelineArg,
      "Add the gradient entries (NAME_grad; for a model, loss_grad and "
      "train_step), as hkt-compile --backward / --model do",
      [](OpPassManager &pm, const AutodiffPipelineOptions &options) {
        buildHktAutodiffPipeline(pm, options);
      });
  PassPipelineRegistration<>(
      kReferencePipelineArg,
      "Lower hkt to the LLVM dialect through the reference path "
      "(materialised scores, linalg loops)",
      [](OpPassManager &pm) { buildHktCpuReferencePipeline(pm); });
  PassPipelineRegistration<FusedPipelineOptions>(
      kFusedPipelineArg,
      "Lower hkt to the LLVM dialect through the fused path (online "
      "attention over tiles, never a T x T matrix)",
      [](OpPassManager &pm, const FusedPipelineOptions &options) {
        buildHktCpuFusedPipeline(pm, options);
      });
  PassPipelineRegistration<NvvmPipelineOptions>(
      kNvvmPipelineArg,
      "Lower hkt to GPU kernels for NVIDIA GPUs (NVVM, one PTX object per "
      "chip) and host code in the LLVM dialect",
      [](OpPassManager &pm, const NvvmPipelineOptions &options) {
        buildHktNvvmPipeline(pm, options);
      });
  PassPipelineRegistration<NvvmPipelineOptions>(
      kGpuEmulationPipelineArg,
      "The NVVM path's kernels on the CPU, one OpenMP thread per GPU thread "
      "(a testing target: the kernels' IR without a GPU)",
      [](OpPassManager &pm, const NvvmPipelineOptions &options) {
        buildHktGpuEmulationPipeline(pm, options);
      });
}
