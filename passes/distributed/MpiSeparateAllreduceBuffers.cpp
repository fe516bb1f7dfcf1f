//===- MpiSeparateAllreduceBuffers.cpp - send an all-reduce from its source
//===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-mpi-separate-allreduce-buffers (Passes.td): convert-shard-to-mpi gives
// MPI_Allreduce one buffer to send and to receive, which MPI forbids; send
// from the buffer it was copied from instead, and drop the copy.
//
//===----------------------------------------------------------------------===//

#include "passes/distributed/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTMPISEPARATEALLREDUCEBUFFERSPASS
#include "passes/distributed/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// The copy into `buffer` before `op` in its block, if `buffer` has one.
linalg::CopyOp copyInto(Value buffer, Operation *op) {
  for (Operation *user : buffer.getUsers())
    if (auto copy = dyn_cast<linalg::CopyOp>(user))
      if (copy.getDpsInits()[0] == buffer &&
          copy->getBlock() == op->getBlock() && copy->isBeforeInBlock(op))
        return copy;
  return nullptr;
}

struct HktMpiSeparateAllreduceBuffersPass
    : hkt::impl::HktMpiSeparateAllreduceBuffersPassBase<
          HktMpiSeparateAllreduceBuffersPass> {
  void runOnOperation() override {
    WalkResult walk = getOperation().walk([&](mpi::AllReduceOp op) {
      if (op.getSendbuf() != op.getRecvbuf())
        return WalkResult::advance();
      // convert-shard-to-mpi: %buf, or its 1-D view, is both buffers, and
      // was filled by `linalg.copy ins(%source) outs(%buf)`.
      Value buf = op.getRecvbuf();
      auto flat = buf.getDefiningOp<memref::CollapseShapeOp>();
      linalg::CopyOp copy = copyInto(flat ? flat.getSrc() : buf, op);
      if (!copy) {
        op.emitError("hkt-mpi-separate-allreduce-buffers: the same buffer to "
                     "send and receive, and no copy that filled it (MPI "
                     "forbids the aliasing; expected convert-shard-to-mpi's "
                     "form)");
        return WalkResult::interrupt();
      }
      Value source = copy.getDpsInputs()[0];
      if (auto toBuffer = source.getDefiningOp<bufferization::ToBufferOp>())
        toBuffer.setReadOnly(true);
      OpBuilder b(op);
      Value send = source;
      if (flat)
        send = memref::CollapseShapeOp::create(b, flat.getLoc(), source,
                                               flat.getReassociationIndices());
      op.getSendbufMutable().assign(send);
      copy.erase();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
