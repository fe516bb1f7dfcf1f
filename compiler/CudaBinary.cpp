//===- CudaBinary.cpp - PTX objects -> one fatbin per gpu.binary ----------===//

#include "compiler/CudaBinary.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::hkt;

namespace {

/// A scratch directory removed when it goes out of scope.
struct ScratchDir {
  SmallString<128> path;
  ~ScratchDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

LogicalResult run(Location loc, StringRef program, ArrayRef<std::string> args,
                  StringRef logFile, std::string &log) {
  SmallVector<StringRef> argv{program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logFile),
                                          StringRef(logFile)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0,
                                     0, &error);
  if (auto buffer = llvm::MemoryBuffer::getFile(logFile))
    log = (*buffer)->getBuffer().str();
  if (rc != 0)
    return emitError(loc) << llvm::sys::path::filename(program) << " failed (exit "
                          << rc << ") " << error << ":\n"
                          << log;
  return success();
}

/// ptxas -v: "Compiling entry function 'K' for 'sm_90'", then "N bytes
/// stack frame, S bytes spill stores, L bytes spill loads" and "Used R
/// registers, ... B bytes smem".
void parseReport(StringRef log, StringRef module, StringRef chip,
                 std::vector<KernelReport> &reports) {
  llvm::Regex entry("Compiling entry function '([^']+)'");
  llvm::Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, "
                    "([0-9]+) bytes spill loads");
  llvm::Regex regs("Used ([0-9]+) registers");
  llvm::Regex smem("([0-9]+) bytes smem");
  SmallVector<StringRef> lines, m;
  log.split(lines, '\n');
  for (StringRef line : lines) {
    if (entry.match(line, &m)) {
      reports.push_back({(module + "::" + m[1]).str(), chip.str()});
      continue;
    }
    if (reports.empty())
      continue;
    KernelReport &r = reports.back();
    if (frame.match(line, &m)) {
      m[1].getAsInteger(10, r.stackBytes);
      m[2].getAsInteger(10, r.spillStores);
      m[3].getAsInteger(10, r.spillLoads);
    }
    if (regs.match(line, &m))
      m[1].getAsInteger(10, r.registers);
    if (smem.match(line, &m))
      m[1].getAsInteger(10, r.sharedBytes);
  }
}

/// "sm_90a" -> "90a".
StringRef smNumber(StringRef chip) { return chip.drop_front(3); }

} // namespace

LogicalResult mlir::hkt::checkCudaToolkit(Location loc, StringRef cudaPath) {
  for (const char *file : {"bin/ptxas", "bin/fatbinary",
                           "nvvm/libdevice/libdevice.10.bc"}) {
    SmallString<128> path(cudaPath);
    llvm::sys::path::append(path, file);
    if (!llvm::sys::fs::exists(path))
      return emitError(loc) << "no CUDA toolkit at '" << cudaPath << "': "
                            << path << " is missing (install the CUDA toolkit "
                               "or pass --cuda-path DIR)";
  }
  return success();
}

LogicalResult
mlir::hkt::assembleCudaBinaries(ModuleOp module, StringRef cudaPath,
                                std::vector<KernelReport> &reports) {
  ScratchDir scratch;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("hkt-cuda", scratch.path))
    return emitError(module.getLoc())
           << "cannot create a scratch directory: " << ec.message();
  std::string ptxas = (cudaPath + "/bin/ptxas").str();
  std::string fatbinary = (cudaPath + "/bin/fatbinary").str();
  std::string logFile = (scratch.path + "/log.txt").str();
  int counter = 0;
  WalkResult walk = module.walk([&](gpu::BinaryOp binary) {
    Location loc = binary.getLoc();
    std::vector<std::string> images;
    Attribute firstTarget;
    std::string newestPtx;
    StringRef newestChip;
    for (Attribute attr : binary.getObjectsAttr()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly) {
        binary.emitOpError("expected PTX objects for NVVM targets "
                           "(hkt-nvvm-pipeline's output)");
        return WalkResult::interrupt();
      }
      if (!firstTarget)
        firstTarget = target;
      std::string base =
          (scratch.path + "/" + std::to_string(counter++)).str();
      {
        std::error_code ec;
        llvm::raw_fd_ostream os(base + ".ptx", ec);
        if (ec) {
          emitError(loc) << "cannot write " << base << ".ptx: " << ec.message();
          return WalkResult::interrupt();
        }
        // The object's text ends with the NUL MLIR adds for the JIT.
        os << object.getObject().getValue().rtrim('\0');
      }
      std::string log;
      if (failed(run(loc, ptxas,
                     {"-arch=" + target.getChip().str(), "-O3", "-v",
                      base + ".ptx", "-o", base + ".cubin"},
                     logFile, log)))
        return WalkResult::interrupt();
      parseReport(log, binary.getSymName(), target.getChip(), reports);
      images.push_back(("--image3=kind=elf,sm=" + smNumber(target.getChip()) +
                        ",file=" + base + ".cubin")
                           .str());
      if (newestChip.empty() || smNumber(target.getChip()).compare_numeric(
                                    smNumber(newestChip)) > 0) {
        newestChip = target.getChip();
        newestPtx = base + ".ptx";
      }
    }
    if (images.empty())
      return WalkResult::advance();
    // PTX of the newest chip: the driver JIT-compiles it for later GPUs.
    images.push_back(("--image3=kind=ptx,sm=" + smNumber(newestChip) +
                      ",file=" + newestPtx)
                         .str());
    std::string fatbin =
        (scratch.path + "/" + std::to_string(counter++) + ".fatbin").str();
    SmallVector<std::string> args{"--64", "--create", fatbin};
    args.append(images.begin(), images.end());
    std::string log;
    if (failed(run(loc, fatbinary, args, logFile, log)))
      return WalkResult::interrupt();
    auto data = llvm::MemoryBuffer::getFile(fatbin);
    if (!data) {
      emitError(loc) << "cannot read " << fatbin;
      return WalkResult::interrupt();
    }
    MLIRContext *ctx = binary.getContext();
    auto object = gpu::ObjectAttr::get(
        ctx, firstTarget, gpu::CompilationTarget::Fatbin,
        StringAttr::get(ctx, (*data)->getBuffer()), nullptr, nullptr);
    binary.setObjectsAttr(ArrayAttr::get(ctx, {object}));
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void mlir::hkt::printPtx(ModuleOp module, llvm::raw_ostream &os) {
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjectsAttr()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      StringRef chip = "?";
      if (auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
        chip = target.getChip();
      os << "// gpu.binary " << binary.getSymName() << ", " << chip << "\n"
         << object.getObject().getValue().rtrim('\0') << "\n";
    }
  });
}
