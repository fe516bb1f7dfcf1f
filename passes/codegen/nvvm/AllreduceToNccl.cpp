//===- AllreduceToNccl.cpp - a GPU train step's all-reduce through NCCL ---===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-nvvm-allreduce-to-nccl (Passes.td): on the NVVM path the buffers of
// the all-reduce that convert-shard-to-mpi made are device memory (after
// hkt-nvvm-host-staging); MPI cannot read them (Debian's Open MPI is not
// CUDA-aware), NCCL can. The mpi.allreduce becomes a call of the runtime's
// hktNcclAllReduceF32, which calls ncclAllReduce on the communicator the
// runtime made over the MPI job (docs/training.md, "Several GPUs").
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMALLREDUCETONCCLPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
/// The runtime's all-reduce (runtime/Nccl.h).
constexpr StringLiteral kNcclAllReduce = "hktNcclAllReduceF32";

/// NCCL's ncclRedOp_t for an MPI reduction; none for the others (MPI's
/// logical and bitwise ones, MINLOC and MAXLOC have no NCCL counterpart).
std::optional<int32_t> ncclReduction(mpi::MPI_ReductionOpEnum op) {
  switch (op) {
  case mpi::MPI_ReductionOpEnum::MPI_SUM:
    return 0; // ncclSum
  case mpi::MPI_ReductionOpEnum::MPI_PROD:
    return 1; // ncclProd
  case mpi::MPI_ReductionOpEnum::MPI_MAX:
    return 2; // ncclMax
  case mpi::MPI_ReductionOpEnum::MPI_MIN:
    return 3; // ncclMin
  default:
    return std::nullopt;
  }
}

/// A contiguous 1-D f32 buffer at any offset: what the call takes.
MemRefType callBufferType(MLIRContext *ctx) {
  return MemRefType::get(
      {ShapedType::kDynamic}, Float32Type::get(ctx),
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic, {1}));
}

/// Declared once: (send, recv, ncclRedOp_t), device buffers of as many
/// elements; errors are the runtime's to report (like a driver error).
func::FuncOp declareAllReduce(ModuleOp module) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(kNcclAllReduce))
    return fn;
  auto b = OpBuilder::atBlockBegin(module.getBody());
  MemRefType buffer = callBufferType(module.getContext());
  auto fn = func::FuncOp::create(
      b, module.getLoc(), kNcclAllReduce,
      b.getFunctionType({buffer, buffer, b.getI32Type()}, {}));
  fn.setPrivate();
  // hkt-nvvm-host-staging and gpu-async-region: it reads and writes device
  // memory, and the host waits for the stream before it.
  fn->setAttr(hkt::kDeviceCallAttr, b.getUnitAttr());
  return fn;
}

/// A buffer the call can take: 1-D, f32, unit stride (what
/// convert-shard-to-mpi makes of the flattened gradients).
LogicalResult checkBuffer(mpi::AllReduceOp op, Value buffer, StringRef which) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t offset;
  SmallVector<int64_t> strides;
  if (!type.getElementType().isF32() || type.getRank() != 1 ||
      failed(type.getStridesAndOffset(strides, offset)) || strides[0] != 1)
    return op.emitOpError("hkt-nvvm-allreduce-to-nccl: the ")
           << which << " buffer must be a contiguous 1-D f32 buffer, got "
           << type;
  return success();
}

LogicalResult lower(mpi::AllReduceOp op, func::FuncOp callee) {
  if (!op.getComm().getDefiningOp<mpi::CommWorldOp>())
    return op.emitOpError("hkt-nvvm-allreduce-to-nccl: only the world "
                          "communicator has an NCCL communicator (run "
                          "hkt-mpi-world-communicator first)");
  std::optional<int32_t> reduction = ncclReduction(op.getOp());
  if (!reduction)
    return op.emitOpError("hkt-nvvm-allreduce-to-nccl: NCCL has no ")
           << mpi::stringifyMPI_ReductionOpEnum(op.getOp()) << " reduction";
  if (op.getRetval() && !op.getRetval().use_empty())
    return op.emitOpError("hkt-nvvm-allreduce-to-nccl: its MPI return value "
                          "is used (the runtime reports NCCL's errors)");
  if (failed(checkBuffer(op, op.getSendbuf(), "send")) ||
      failed(checkBuffer(op, op.getRecvbuf(), "receive")))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  MemRefType buffer = callBufferType(op.getContext());
  Value send = memref::CastOp::create(b, loc, buffer, op.getSendbuf());
  Value recv = memref::CastOp::create(b, loc, buffer, op.getRecvbuf());
  Value kind =
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(*reduction));
  func::CallOp::create(b, loc, callee, ValueRange{send, recv, kind});
  op.erase();
  return success();
}

struct HktNvvmAllreduceToNcclPass
    : hkt::impl::HktNvvmAllreduceToNcclPassBase<HktNvvmAllreduceToNcclPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<mpi::AllReduceOp> reductions;
    module.walk([&](mpi::AllReduceOp op) { reductions.push_back(op); });
    if (!reductions.empty()) {
      func::FuncOp callee = declareAllReduce(module);
      for (mpi::AllReduceOp op : reductions)
        if (failed(lower(op, callee)))
          return signalPassFailure();
    }
    // What convert-shard-to-mpi adds besides: the world's handle and the
    // rank, whose users (the grid coordinate) are dead code on a 1-D grid.
    SmallVector<Operation *> rest;
    module.walk([&](Operation *op) {
      if (isa<mpi::MPIDialect>(op->getDialect()))
        rest.push_back(op);
    });
    for (Operation *op : llvm::reverse(rest)) {
      // The rank's index arithmetic, last user first.
      SetVector<Operation *> users;
      getForwardSlice(op, &users);
      for (Operation *user : llvm::reverse(users))
        if (isOpTriviallyDead(user))
          user->erase();
      if (isa<mpi::CommWorldOp, mpi::CommRankOp, mpi::CommSizeOp>(op) &&
          op->use_empty()) {
        op->erase();
        continue;
      }
      op->emitOpError("hkt-nvvm-allreduce-to-nccl: the GPU path has no "
                      "lowering for it (its collectives are NCCL's "
                      "all-reduce)");
      return signalPassFailure();
    }
  }
};
} // namespace
