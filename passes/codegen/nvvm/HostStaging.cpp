//===- GpuHostStaging.cpp - the host side of a function whose work is on the GPU -===//
//
// After hkt-nvvm-lower-online-attention and hkt-nvvm-map-parallel-loops all
// of a function's loads and stores are inside gpu.launch bodies; the host
// code left allocates, takes views and frees. This pass makes every buffer
// those kernels touch device memory: the caller's arguments get a device
// copy (copied in when a kernel reads them, back out when one writes them),
// host allocations become gpu.alloc, constant globals are copied to the
// device once per call. The module's calling convention stays the CPU
// one: entries take and return host memory (docs/gpu.md). Each entry also
// gets a twin, `<name>_on_device`, whose memref arguments are device memory
// already: the entry is a wrapper that copies its arguments in, calls the
// twin and copies them out, and a runtime that keeps buffers on the device
// across calls (the weights and moments of a training run) calls the twin.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMHOSTSTAGINGPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// Marks a function whose memref arguments are device memory.
constexpr StringLiteral kDeviceAbiAttr = "hkt.device_abi";

struct Access {
  bool read = false, written = false;
};

/// A buffer of one element.
bool isScalar(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// Calls `visit` on each use of `root` and of its views (not on the views'
/// own uses of their sources); stops where `visit` interrupts.
WalkResult walkUsesThroughViews(Value root,
                                function_ref<WalkResult(OpOperand &)> visit) {
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v) {
        llvm::append_range(worklist, user->getResults());
        continue;
      }
      if (visit(use).wasInterrupted())
        return WalkResult::interrupt();
    }
  }
  return WalkResult::advance();
}

/// How the kernels use `root` and its views; fails on a host load or store
/// other than of a scalar.
FailureOr<Access> kernelAccess(Value root) {
  Access access;
  WalkResult walk = walkUsesThroughViews(root, [&](OpOperand &use) {
    Value v = use.get();
    Operation *user = use.getOwner();
    if (isa<memref::DimOp, memref::DeallocOp, gpu::DeallocOp,
            memref::ExtractAlignedPointerAsIndexOp,
            memref::ExtractStridedMetadataOp>(user))
      return WalkResult::advance();
    if (!user->getParentOfType<gpu::LaunchOp>()) {
      // A runtime function that works on device memory (the cuBLASLt
      // GEMM): reads and writes, like a kernel.
      if (auto call = dyn_cast<func::CallOp>(user)) {
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        if (callee && callee->hasAttr(mlir::hkt::kDeviceCallAttr)) {
          access.read = access.written = true;
          return WalkResult::advance();
        }
      }
      // A data-parallel train step's gradient sum: on the device (NCCL,
      // hkt-nvvm-allreduce-to-nccl; the emulation's device memory is the
      // host's, where MPI reads it).
      if (auto sum = dyn_cast<mpi::AllReduceOp>(user)) {
        access.read |= sum.getSendbuf() == v;
        access.written |= sum.getRecvbuf() == v;
        return WalkResult::advance();
      }
      if (auto copy = dyn_cast<gpu::MemcpyOp>(user)) {
        access.read |= copy.getSrc() == v;
        access.written |= copy.getDst() == v;
        return WalkResult::advance();
      }
      // A scalar the host reads or writes (the hyper-parameters, the
      // batch mean of the loss): moved to the device or staged through
      // host memory (moveScalarWorkToDevice), no kernel's business.
      if (isa<memref::LoadOp, memref::StoreOp>(user) && isScalar(v))
        return WalkResult::advance();
      user->emitOpError("reads or writes device memory on the host (the GPU "
                        "path expects every access inside a kernel)");
      return WalkResult::interrupt();
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(user);
    if (!effects) {
      access.read = access.written = true;
      return WalkResult::advance();
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffectsOnValue(v, list);
    for (const MemoryEffects::EffectInstance &e : list) {
      access.read |= isa<MemoryEffects::Read>(e.getEffect());
      access.written |= isa<MemoryEffects::Write>(e.getEffect());
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
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
  if (fn->hasAttr(kDeviceAbiAttr))
    return success(); // the caller's buffers are device memory already
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

/// Whether `v` is device memory: a gpu.alloc, an argument of a function
/// that takes device memory, or a view of either.
bool isDeviceMemory(Value view) {
  auto memref = dyn_cast<MemrefValue>(view);
  if (!memref)
    return false;
  Value v = memref::skipViewLikeOps(memref);
  if (v.getDefiningOp())
    return isa<gpu::AllocOp>(v.getDefiningOp());
  auto arg = dyn_cast<BlockArgument>(v);
  auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                : func::FuncOp();
  return fn && isa<MemRefType>(v.getType()) && fn->hasAttr(kDeviceAbiAttr);
}

/// An entry (public, with a C interface) that returns nothing: its memref
/// arguments can be passed in device memory by a twin.
bool hasDeviceTwin(func::FuncOp fn) {
  return fn.isPublic() && fn->hasAttr("llvm.emit_c_interface") &&
         fn.getNumResults() == 0;
}

/// `fn` (staged already) becomes `<name>_on_device`, whose memref arguments
/// are device memory and which is never inlined (the host code is compiled
/// once); a new `fn` keeps the host calling convention: each memref
/// argument the twin uses gets a device copy, copied in if the twin reads
/// it and back out if it writes it, around the call.
LogicalResult makeDeviceTwin(func::FuncOp fn) {
  MLIRContext *ctx = fn.getContext();
  std::string name = (fn.getName() + ::hkt::format::kDeviceTwinSuffix).str();
  if (SymbolTable::lookupNearestSymbolFrom(fn, StringAttr::get(ctx, name)))
    return fn.emitOpError("cannot get a device twin: '")
           << name << "' exists already";
  OpBuilder b(ctx);
  b.setInsertionPointAfter(fn);
  auto twin = cast<func::FuncOp>(b.clone(*fn));
  twin.setName(name);
  twin->setAttr("no_inline", b.getUnitAttr());
  fn->removeAttr(kDeviceAbiAttr);
  fn.getBody().getBlocks().clear();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Location loc = fn.getLoc();
  SmallVector<Value> callArgs;
  SmallVector<std::pair<Value, Value>> copiedOut; // (host, device)
  SmallVector<Value> deviceBuffers;
  for (auto [hostArg, twinArg] :
       llvm::zip_equal(entry->getArguments(), twin.getArguments())) {
    auto type = dyn_cast<MemRefType>(hostArg.getType());
    FailureOr<Access> access =
        type ? kernelAccess(twinArg) : FailureOr<Access>(Access());
    if (failed(access))
      return failure();
    if (!access->read && !access->written) {
      callArgs.push_back(hostArg); // not memory, or never touched
      continue;
    }
    if (!type.getLayout().isIdentity())
      return fn.emitOpError("argument #")
             << hostArg.getArgNumber()
             << " has a strided layout; the GPU path copies whole buffers";
    Value dev = deviceCopyOf(b, loc, type, hostArg); // no other uses yet
    if (access->read)
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), dev, hostArg);
    if (access->written)
      copiedOut.push_back({hostArg, dev});
    deviceBuffers.push_back(dev);
    callArgs.push_back(dev);
  }
  func::CallOp::create(b, loc, twin, callArgs);
  for (auto [host, dev] : copiedOut)
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), host, dev);
  for (Value dev : deviceBuffers)
    gpu::DeallocOp::create(b, loc, Type(), ValueRange(), dev);
  func::ReturnOp::create(b, loc);
  return success();
}

/// Whether nothing writes `root` (a device buffer) or a view of it: the
/// hyper-parameters of a training step, for one.
bool neverWritten(Value root) {
  return !walkUsesThroughViews(root, [](OpOperand &use) {
            Operation *user = use.getOwner();
            if (isa<memref::DimOp, memref::LoadOp>(user))
              return WalkResult::advance();
            if (auto copy = dyn_cast<gpu::MemcpyOp>(user))
              return copy.getDst() == use.get() ? WalkResult::interrupt()
                                                : WalkResult::advance();
            auto effects = dyn_cast<MemoryEffectOpInterface>(user);
            return !effects || effects.getEffectOnValue<MemoryEffects::Write>(
                                   use.get())
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          }).wasInterrupted();
}

/// Host loads of device scalars that no one writes, and the pure ops on
/// their values, move into each kernel that uses them: the kernel reads
/// the scalar itself (the AdamW kernel computes its bias corrections from
/// the step and the hyper-parameters) and the host reads nothing.
/// Upstream's sinkOperationsIntoLaunchOp sinks nothing that would make the
/// kernel take a new argument, and these loads need the buffer's.
void sinkScalarLoads(gpu::LaunchOp launch) {
  SetVector<Value> used;
  getUsedValuesDefinedAbove(launch.getBody(), used);
  OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
  IRMapping map;
  // Whether `v` is (now) computed in the kernel: a load as above, or a
  // pure op with such a load among its operands' slices.
  std::function<bool(Value)> sink = [&](Value v) -> bool {
    if (map.contains(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumRegions() || def->getNumResults() != 1)
      return false;
    auto load = dyn_cast<memref::LoadOp>(def);
    if (load ? !(isDeviceMemory(load.getMemRef()) &&
                 neverWritten(memref::skipViewLikeOps(
                     cast<MemrefValue>(load.getMemRef()))))
             : !isMemoryEffectFree(def))
      return false;
    bool fromLoad = static_cast<bool>(load);
    for (Value operand : def->getOperands())
      fromLoad |= sink(operand);
    if (!fromLoad)
      return false;
    b.clone(*def, map);
    return true;
  };
  for (Value v : used)
    if (sink(v))
      replaceAllUsesInRegionWith(v, map.lookup(v), launch.getBody());
}

/// Whether the ops strictly between `from` and `to` (one block) leave
/// device memory as it is: no launch, copy, store or call.
bool noWritesBetween(Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    if (op->getNumRegions() ||
        !(isMemoryEffectFree(op) ||
          isa<memref::LoadOp, memref::AllocaOp, gpu::AllocOp>(op)))
      return false;
  }
  return true;
}

/// A host store of a device scalar, with the loads of device memory and
/// the pure ops of its block it computes its value from (the batch mean of
/// the loss, the sum over the rows, a zero), becomes a kernel of one
/// thread: no copy to the host and back, no wait for the device.
/// Returns false, changing nothing, where a load would read the memory
/// after a write it read before.
bool storeOnDevice(memref::StoreOp store, int64_t &count) {
  Block *block = store->getBlock();
  SetVector<Operation *> slice;
  SmallVector<Value> worklist(store->getOperands());
  worklist.erase(worklist.begin() + 1); // the device buffer itself
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != block || slice.contains(def))
      continue;
    auto load = dyn_cast<memref::LoadOp>(def);
    bool movable = load ? isDeviceMemory(load.getMemRef())
                        : isMemoryEffectFree(def) && !def->getNumRegions();
    if (!movable)
      continue; // its value enters the kernel as an argument
    if (load && !noWritesBetween(load, store))
      return false;
    slice.insert(def);
    llvm::append_range(worklist, def->getOperands());
  }
  Operation *def = store.getValue().getDefiningOp();
  std::string what = !def || isa<memref::LoadOp>(def) ? "copy"
                     : isa<arith::ConstantOp>(def)
                         ? "fill"
                         : def->getName().stripDialect().str();
  ImplicitLocOpBuilder b(store.getLoc(), store);
  Value one = arith::ConstantIndexOp::create(b, 1);
  auto launch = gpu::LaunchOp::create(b, one, one, one, one, one, one);
  launch.setFunctionAttr(FlatSymbolRefAttr::get(
      b.getContext(), llvm::formatv("scalar_{0}_{1}", what, count++).str()));
  b.setInsertionPointToStart(&launch.getBody().front());
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  IRMapping map;
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *c) {
    return a->isBeforeInBlock(c);
  });
  for (Operation *op : ordered)
    b.clone(*op, map);
  b.clone(*store, map);
  store.erase();
  return true;
}

/// Erases the host's ops whose results nobody uses (the loads left behind
/// by storeOnDevice and sinkScalarLoads).
void eraseDeadHostOps(func::FuncOp fn) {
  // Pre-order, visited backwards: users before their operands' ops, nested
  // ops before their parents.
  SmallVector<Operation *> ops;
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (op != fn.getOperation())
      ops.push_back(op);
    return WalkResult::advance();
  });
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// The host's scalar work on device memory moves to the device: stores
/// become kernels of one thread (storeOnDevice), loads of buffers no one
/// writes and the pure arithmetic on them move into the kernels that use
/// them (the AdamW bias corrections from the step and the
/// hyper-parameters). What is left is staged (stageScalarAccesses).
void moveScalarWorkToDevice(func::FuncOp fn, int64_t &count) {
  eraseDeadHostOps(fn);
  SmallVector<memref::StoreOp> stores;
  fn.walk([&](memref::StoreOp store) {
    if (!store->getParentOfType<gpu::LaunchOp>() &&
        isDeviceMemory(store.getMemRef()))
      stores.push_back(store);
  });
  for (memref::StoreOp store : stores)
    storeOnDevice(store, count);
  SmallVector<gpu::LaunchOp> launches;
  fn.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
  for (gpu::LaunchOp launch : launches)
    sinkScalarLoads(launch);
  eraseDeadHostOps(fn);
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
    int64_t scalarKernels = 0;
    // Collected first: the loop adds the device twins.
    SmallVector<func::FuncOp> functions(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      if (fn.getBody().getBlocks().size() != 1) {
        fn.emitOpError("has several blocks; the GPU path stages a "
                       "single-block function only");
        return signalPassFailure();
      }
      // An entry's body is staged as its device twin's: its arguments are
      // device memory (isDeviceMemory), and the host wrapper copies them.
      bool twin = hasDeviceTwin(fn);
      if (twin)
        fn->setAttr(kDeviceAbiAttr, UnitAttr::get(fn.getContext()));
      if (failed(stageFunction(fn)))
        return signalPassFailure();
      moveScalarWorkToDevice(fn, scalarKernels);
      stageScalarAccesses(fn);
      if (twin && failed(makeDeviceTwin(fn)))
        return signalPassFailure();
    }
  }
};
} // namespace
