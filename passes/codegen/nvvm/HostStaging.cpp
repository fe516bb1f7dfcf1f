//===- GpuHostStaging.cpp - the host side of a function whose work is on the GPU -===//
//
// After hkt-nvvm-lower-online-attention and hkt-nvvm-map-parallel-loops all
// of a function's loads and stores are inside gpu.launch bodies; the host
// code left allocates, takes views and frees. This pass makes every buffer
// those kernels touch device memory: the caller's arguments get a device
// copy (copied in when a kernel reads them, back out when one writes them),
// host allocations become gpu.alloc, constant globals are copied to the
// device once per call. The module's calling convention stays the CPU
// one: entries take and return host memory (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMHOSTSTAGINGPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

struct Access {
  bool read = false, written = false;
};

/// A buffer of one element.
bool isScalar(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// How the kernels use `root` and its views; fails on a host load or store
/// other than of a scalar.
FailureOr<Access> kernelAccess(Value root) {
  Access access;
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v) {
        for (Value r : user->getResults())
          worklist.push_back(r);
        continue;
      }
      if (isa<memref::DimOp, memref::DeallocOp, gpu::DeallocOp,
              memref::ExtractAlignedPointerAsIndexOp,
              memref::ExtractStridedMetadataOp>(user))
        continue;
      if (!user->getParentOfType<gpu::LaunchOp>()) {
        // A runtime function that works on device memory (the cuBLASLt
        // GEMM): reads and writes, like a kernel.
        if (auto call = dyn_cast<func::CallOp>(user)) {
          auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              call, call.getCalleeAttr());
          if (callee && callee->hasAttr("hkt.device_call")) {
            access.read = access.written = true;
            continue;
          }
        }
        if (auto copy = dyn_cast<gpu::MemcpyOp>(user)) {
          access.read |= copy.getSrc() == v;
          access.written |= copy.getDst() == v;
          continue;
        }
        // A scalar the host reads or writes (the hyper-parameters, the
        // batch mean of the loss): staged through host memory
        // (stageScalarAccesses), no kernel's business.
        if (isa<memref::LoadOp, memref::StoreOp>(user) && isScalar(v))
          continue;
        return user->emitOpError(
                   "reads or writes device memory on the host (the GPU "
                   "path expects every access inside a kernel)"),
               failure();
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects) {
        access.read = access.written = true;
        continue;
      }
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffectsOnValue(v, list);
      for (const MemoryEffects::EffectInstance &e : list) {
        access.read |= isa<MemoryEffects::Read>(e.getEffect());
        access.written |= isa<MemoryEffects::Write>(e.getEffect());
      }
    }
  }
  return access;
}

/// A device buffer of `type` (identity layout) with the dynamic sizes of
/// `like`; replaces the other uses of `like` with it.
Value deviceCopyOf(OpBuilder &b, Location loc, MemRefType type, Value like) {
  SmallPtrSet<Operation *, 4> own;
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i)) {
      sizes.push_back(memref::DimOp::create(b, loc, like, i));
      own.insert(sizes.back().getDefiningOp());
    }
  auto alloc = gpu::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()),
      /*asyncToken=*/Type(), /*asyncDependencies=*/ValueRange(), sizes,
      /*symbolOperands=*/ValueRange(), /*hostShared=*/false);
  own.insert(alloc);
  like.replaceUsesWithIf(alloc.getMemref(), [&](OpOperand &use) {
    return !own.contains(use.getOwner());
  });
  return alloc.getMemref();
}

LogicalResult stageFunction(func::FuncOp fn) {
  Block &entry = fn.getBody().front();
  OpBuilder b(fn.getContext());
  SmallVector<func::ReturnOp> returns;
  fn.walk([&](func::ReturnOp r) { returns.push_back(r); });
  SmallVector<Value> deviceBuffers;

  // Host allocations -> device allocations.
  SmallVector<Operation *> hostOps;
  SmallVector<memref::GetGlobalOp> globals;
  fn.walk([&](Operation *op) {
    if (op->getParentOfType<gpu::LaunchOp>())
      return;
    if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op))
      hostOps.push_back(op);
    else if (auto global = dyn_cast<memref::GetGlobalOp>(op))
      globals.push_back(global);
  });
  for (Operation *op : hostOps) {
    b.setInsertionPoint(op);
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto type = alloc.getType();
      if (!type.getLayout().isIdentity())
        return alloc.emitOpError("with a layout cannot be a device buffer");
      auto dev = gpu::AllocOp::create(b, alloc.getLoc(), type, Type(),
                                      ValueRange(), alloc.getDynamicSizes(),
                                      ValueRange(), false);
      alloc.replaceAllUsesWith(dev.getMemref());
      alloc.erase();
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      // Strided copies became linalg.copy (hkt-memref-copy-to-linalg), so
      // kernels; what is left copies whole buffers.
      gpu::MemcpyOp::create(b, copy.getLoc(), Type(), ValueRange(),
                            copy.getTarget(), copy.getSource());
      copy.erase();
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      gpu::DeallocOp::create(b, dealloc.getLoc(), Type(), ValueRange(),
                             dealloc.getMemref());
      dealloc.erase();
    }
  }
  // Constant globals read by kernels: a device copy per call.
  for (memref::GetGlobalOp global : globals) {
    FailureOr<Access> access = kernelAccess(global.getResult());
    if (failed(access))
      return failure();
    if (!access->read && !access->written)
      continue;
    b.setInsertionPointAfter(global);
    Value dev = deviceCopyOf(b, global.getLoc(), global.getType(), global);
    gpu::MemcpyOp::create(b, global.getLoc(), Type(), ValueRange(), dev,
                          global.getResult());
    deviceBuffers.push_back(dev);
  }
  // The caller's buffers.
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      continue;
    FailureOr<Access> access = kernelAccess(arg);
    if (failed(access))
      return failure();
    if (!access->read && !access->written)
      continue;
    if (!type.getLayout().isIdentity())
      return fn.emitOpError("argument #")
             << arg.getArgNumber()
             << " has a strided layout; the GPU path copies whole buffers";
    Value dev = deviceCopyOf(b, fn.getLoc(), type, arg);
    if (access->read)
      gpu::MemcpyOp::create(b, fn.getLoc(), Type(), ValueRange(), dev, arg);
    for (func::ReturnOp r : returns) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(r);
      if (access->written)
        gpu::MemcpyOp::create(b, r.getLoc(), Type(), ValueRange(), arg, dev);
    }
    deviceBuffers.push_back(dev);
  }
  for (func::ReturnOp r : returns) {
    b.setInsertionPoint(r);
    for (Value dev : deviceBuffers)
      gpu::DeallocOp::create(b, r.getLoc(), Type(), ValueRange(), dev);
  }
  // Whatever else the host still does with memory must not touch these.
  for (Value dev : deviceBuffers)
    if (failed(kernelAccess(dev)))
      return failure();
  return success();
}

/// Whether `v` is device memory: a gpu.alloc or a view of one.
bool isDeviceMemory(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<gpu::AllocOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    v = view.getViewSource();
  }
  return false;
}

/// The host's loads and stores of device scalars go through a host scalar
/// (allocated once, at the function's entry) and a one-element copy: a
/// load copies the device value in first, a store copies it out after.
void stageScalarAccesses(func::FuncOp fn) {
  SmallVector<Operation *> accesses;
  fn.walk([&](Operation *op) {
    if (op->getParentOfType<gpu::LaunchOp>())
      return;
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && isDeviceMemory(load.getMemRef()))
      accesses.push_back(op);
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store && isDeviceMemory(store.getMemRef()))
      accesses.push_back(op);
  });
  OpBuilder b(fn.getContext());
  for (Operation *op : accesses) {
    bool isLoad = isa<memref::LoadOp>(op);
    Value device = isLoad ? cast<memref::LoadOp>(op).getMemRef()
                          : cast<memref::StoreOp>(op).getMemRef();
    auto type = cast<MemRefType>(device.getType());
    b.setInsertionPointToStart(&fn.getBody().front());
    Value host = memref::AllocaOp::create(
        b, op->getLoc(), MemRefType::get(type.getShape(),
                                         type.getElementType()));
    b.setInsertionPoint(op);
    if (isLoad) {
      gpu::MemcpyOp::create(b, op->getLoc(), Type(), ValueRange(), host,
                            device);
      op->setOperand(0, host);
    } else {
      op->setOperand(1, host);
      b.setInsertionPointAfter(op);
      gpu::MemcpyOp::create(b, op->getLoc(), Type(), ValueRange(), device,
                            host);
    }
  }
}

/// Workgroup-memory allocas at a kernel's top level (what
/// hkt-nvvm-lower-online-attention creates, since attributions cannot pass
/// through buffer deallocation) -> workgroup attributions of the launch.
void allocasToAttributions(gpu::LaunchOp launch) {
  auto workgroup = gpu::AddressSpaceAttr::get(launch.getContext(),
                                              gpu::AddressSpace::Workgroup);
  for (Operation &op :
       llvm::make_early_inc_range(launch.getBody().front().getOperations())) {
    auto alloca = dyn_cast<memref::AllocaOp>(op);
    if (!alloca || alloca.getType().getMemorySpace() != workgroup ||
        !alloca.getType().hasStaticShape())
      continue;
    BlockArgument arg =
        launch.addWorkgroupAttribution(alloca.getType(), alloca.getLoc());
    alloca.replaceAllUsesWith(arg);
    alloca.erase();
  }
}

struct HktNvvmHostStagingPass
    : public mlir::hkt::impl::HktNvvmHostStagingPassBase<HktNvvmHostStagingPass> {
  void runOnOperation() override {
    getOperation().walk(allocasToAttributions);
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      if (fn.getBody().getBlocks().size() != 1) {
        fn.emitOpError("has several blocks; the GPU path stages a "
                       "single-block function only");
        return signalPassFailure();
      }
      if (failed(stageFunction(fn)))
        return signalPassFailure();
      stageScalarAccesses(fn);
    }
  }
};
} // namespace
