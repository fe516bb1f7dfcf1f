//===- Register.cpp - The dialects of hkt IR and its pipelines ------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "dialect/Register.h"
#include "dialect/HKTDialect.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

void mlir::hkt::registerHktDialects(DialectRegistry &registry) {
  // hkt on tensors, and what its lowerings produce on the CPU path.
  registry.insert<hkt::HKTDialect, affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect, ub::UBDialect>();
  // The CPU codegen: OpenMP threads, vectors, the transform-dialect recipes.
  registry.insert<omp::OpenMPDialect, transform::TransformDialect,
                  vector::VectorDialect>();
  // --precision bf16 on the CPU: Intel AMX tiles (hkt-cpu-amx-matmul) or
  // AVX512-BF16 dot products (hkt-cpu-avx512bf16-matmul).
  registry.insert<amx::AMXDialect, x86vector::X86VectorDialect>();
  // The NVVM path: kernels, their compilation and the host's launch code.
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  // Data-parallel training: the grid and its collectives, then MPI calls.
  registry.insert<shard::ShardDialect, mpi::MPIDialect, DLTIDialect>();
}
