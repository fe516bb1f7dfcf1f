//===- Tuning.cpp - hkt-compile --tune: tiles measured on this host -------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "compiler/Tuning.h"
#include "compiler/ModuleEmitter.h"
#include "compiler/ModuleManifest.h"
#include "compiler/Target.h"
#include "passes/PipelineOptions.h"
#include "passes/codegen/cpu/CpuTuning.h"
#include "runtime/Manifest.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <limits>
#include <fstream>

using namespace mlir;
using namespace mlir::hkt;
namespace fmt = ::hkt::format;

namespace {

/// The machine's model as /proc/cpuinfo names it ("AMD EPYC 9B45"), else
/// LLVM's name of the host CPU: two machines of one model share a choice.
std::string hostCpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (StringRef(line).starts_with("model name"))
      return StringRef(line).split(':').second.trim().str();
  return llvm::sys::getHostCPUName().str();
}

/// The cache key: the CPU model, the options that shape the code (the
/// precision included: bf16's matmuls leave the register tile fewer), and
/// the module's IR (its shapes included) before lowering.
std::string cacheKey(ModuleOp module, const CompileOptions &options,
                     const CpuTiles &tiles) {
  std::string ir;
  llvm::raw_string_ostream os(ir);
  module->print(os, OpPrintingFlags().enableDebugInfo(false));
  llvm::SHA256 sha;
  sha.update(ir);
  std::string moduleHash = llvm::toHex(sha.final(), /*LowerCase=*/true);
  // The precision only where it is not f32, so that f32 keys stay those of
  // caches written before bf16 existed.
  std::string precision =
      options.precision == "f32" ? "" : " precision=" + options.precision;
  // Likewise --cpu-features only where given.
  std::string features =
      options.cpuFeatures.empty() ? "" : " cpu_features=" + options.cpuFeatures;
  return llvm::formatv(
             "{0} | cpu={1}{7} vector_bits={2} tile_q={3} tile_k={4}{5} "
             "| module sha256 {6}",
             hostCpuModel(), options.cpu, tiles.vectorBits, tiles.tileQ,
             tiles.tileK, precision, moduleHash.substr(0, 32), features)
      .str();
}

/// The cache file's entries; a file that does not parse is reported and
/// left where it is (renamed aside when the new choice is written).
struct Cache {
  llvm::json::Object entries;
  bool unreadable = false;
};

Cache readCache(StringRef path, llvm::raw_ostream *log) {
  Cache cache;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buf =
      llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return cache; // none yet
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buf)->getBuffer());
  if (parsed && parsed->getAsObject()) {
    cache.entries = std::move(*parsed->getAsObject());
    return cache;
  }
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  cache.unreadable = true;
  if (log)
    *log << "hkt-compile: warning: the tuning cache " << path
         << " is not a JSON object; tuning again (it is kept as " << path
         << ".bad)\n";
  return cache;
}

/// Writes the cache through a temporary file renamed over it, so that a
/// reader sees the old file or the new one, never half of one.
LogicalResult writeCache(Location loc, StringRef path, const Cache &cache) {
  if (std::error_code ec =
          llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return emitError(loc) << "cannot create the directory of the tuning "
                             "cache "
                          << path << ": " << ec.message();
  if (cache.unreadable)
    (void)llvm::sys::fs::rename(path, path + ".bad");
  std::string tmp = (path + ".tmp." + Twine(llvm::sys::Process::getProcessId()))
                        .str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec);
    if (ec)
      return emitError(loc) << "cannot write the tuning cache " << tmp << ": "
                            << ec.message();
    os << llvm::formatv("{0:2}",
                        llvm::json::Value(llvm::json::Object(cache.entries)))
       << "\n";
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return emitError(loc) << "cannot write the tuning cache " << path << ": "
                          << ec.message();
  }
  return success();
}

/// The fastest of `calls` calls of the module's first entry on random
/// inputs, from hkt-run --bench: dynamic lengths at their bounds, a
/// dynamic batch at 1 (a model's bound, 1024 rows, would take minutes).
FailureOr<double> timeModule(Location loc, StringRef hktRun, StringRef dir,
                             int calls) {
  SmallString<128> out;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("hkt-tune", "json", out))
    return emitError(loc) << "cannot create a temporary file: "
                          << ec.message();
  std::string callsArg = std::to_string(calls);
  SmallVector<StringRef> argv = {hktRun, dir,      "--random", "1",
                                 "--bench", callsArg, "--quiet"};
  // The first entry, through the runtime's reading of the manifest.
  ::hkt::runtime::Expected<::hkt::runtime::Manifest> manifest =
      ::hkt::runtime::readManifest((dir + "/" + fmt::kManifestFile).str());
  if (!manifest || manifest.value().entries.empty())
    return emitError(loc) << "--tune: the candidate in " << dir
                          << " has no readable manifest";
  const ::hkt::runtime::EntrySpec &entry = manifest.value().entries.front();
  argv.append({"--entry", entry.name});
  bool dynamicBatch = false;
  for (const ::hkt::runtime::TensorSpec &arg : entry.args)
    for (const std::optional<::hkt::runtime::DynamicDim> &d : arg.dims)
      dynamicBatch |= d && d->symbol == "B";
  if (dynamicBatch)
    argv.append({"--size", "B=1"});
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(out),
                                          StringRef(out)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(hktRun, argv, std::nullopt, redirects, 0,
                                     0, &error);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(out);
  llvm::sys::fs::remove(out);
  std::string output = text ? (*text)->getBuffer().trim().str() : "";
  if (rc != 0)
    return emitError(loc) << "--tune: timing a candidate with " << hktRun
                          << " failed (exit " << rc << ") " << error << ": "
                          << output;
  for (StringRef line : llvm::split(output, '\n')) {
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(line);
    if (!json) {
      llvm::consumeError(json.takeError());
      continue;
    }
    if (const llvm::json::Object *obj = json->getAsObject())
      if (std::optional<double> ms = obj->getNumber("min_ms"))
        return *ms;
  }
  return emitError(loc) << "--tune: " << hktRun
                        << " printed no timing: " << output;
}

} // namespace

std::string mlir::hkt::defaultTuneCachePath() {
  if (const char *env = std::getenv("HKT_TUNE_CACHE"); env && *env)
    return env;
  SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    path = "/tmp";
  llvm::sys::path::append(path, "hkt", "tune-cache.json");
  return path.str().str();
}

LogicalResult mlir::hkt::tuneAndCompile(ModuleOp module,
                                        CompileOptions options,
                                        StringRef outDir,
                                        const TuneOptions &tune) {
  Location loc = module.getLoc();
  if (options.target != "cpu" || options.pipeline != kFusedPipeline)
    return emitError(loc, "--tune applies to the fused pipeline on the cpu "
                          "target only");
  if (options.registerRows > 0 || options.registerVectors > 0)
    return emitError(loc, "--tune chooses the register tile: no "
                          "--register-tile with it");
  if (options.emitLLVM)
    return emitError(loc, "--tune writes a module: no --emit-llvm with it");
  llvm::Expected<CpuTarget> target =
      createCpuTarget(options.cpu, options.cpuFeatures);
  if (!target)
    return emitError(loc) << llvm::toString(target.takeError());
  CpuTiles tiles = resolveCpuTiles(*target, options);
  std::string key = cacheKey(module, options, tiles);

  Cache cache = readCache(tune.cachePath, tune.log);
  if (const llvm::json::Object *hit = cache.entries.getObject(key)) {
    std::optional<int64_t> rows = hit->getInteger(fmt::key::kRegisterRows);
    std::optional<int64_t> vectors =
        hit->getInteger(fmt::key::kRegisterVectors);
    if (rows && vectors && *rows > 0 && *vectors > 0) {
      if (tune.log)
        *tune.log << llvm::formatv("hkt-compile: --tune: register tile "
                                   "{0}x{1} from the cache {2}\n",
                                   *rows, *vectors, tune.cachePath);
      options.registerRows = *rows;
      options.registerVectors = *vectors;
      options.tilesSource = "tune-cache";
      return compileToDirectory(module, options, outDir);
    }
  }

  // Each candidate compiled from a copy of the module into a scratch
  // directory beside the destination, then timed in interleaved rounds.
  // The family's default first: on a tie it stays.
  SmallVector<RegisterTile> candidates{
      {tiles.registerRows, tiles.registerVectors}};
  for (const RegisterTile &c : registerTileCandidates(tiles.vectorBits))
    if (c.rows != tiles.registerRows || c.vectors != tiles.registerVectors)
      candidates.push_back(c);
  SmallString<256> scratch(outDir);
  scratch += ".tune";
  llvm::sys::fs::make_absolute(scratch);
  SmallString<256> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory(scratch, dir))
    return emitError(loc) << "--tune: cannot create a directory beside '"
                          << outDir << "': " << ec.message();
  compiler::TempDirGuard guard{dir.str().str()};
  std::vector<std::string> dirs;
  for (const RegisterTile &c : candidates) {
    CompileOptions candidate = options;
    candidate.registerRows = c.rows;
    candidate.registerVectors = c.vectors;
    dirs.push_back(
        (dir + "/" + Twine(c.rows) + "x" + Twine(c.vectors)).str());
    OwningOpRef<ModuleOp> copy = module.clone();
    if (failed(compileToDirectory(*copy, candidate, dirs.back())))
      return failure();
  }
  std::vector<double> best(candidates.size(),
                           std::numeric_limits<double>::infinity());
  for (int round = 0; round < tune.rounds; ++round)
    for (size_t i = 0; i < candidates.size(); ++i) {
      FailureOr<double> ms = timeModule(loc, tune.hktRun, dirs[i], tune.calls);
      if (failed(ms))
        return failure();
      best[i] = std::min(best[i], *ms);
    }
  size_t chosen = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    options.tileTimings.push_back(
        {candidates[i].rows, candidates[i].vectors, best[i]});
    if (best[i] < best[chosen])
      chosen = i;
    if (tune.log)
      *tune.log << llvm::formatv("hkt-compile: --tune: register tile {0}x{1}: "
                                 "{2:F3} ms\n",
                                 candidates[i].rows, candidates[i].vectors,
                                 best[i]);
  }
  const RegisterTile &pick = candidates[chosen];
  if (tune.log)
    *tune.log << llvm::formatv("hkt-compile: --tune: chose {0}x{1} (cached in "
                               "{2})\n",
                               pick.rows, pick.vectors, tune.cachePath);
  cache.entries[key] = llvm::json::Object{
      {fmt::key::kRegisterRows, pick.rows},
      {fmt::key::kRegisterVectors, pick.vectors},
      {fmt::key::kTilesMinMs, best[chosen]}};
  if (failed(writeCache(loc, tune.cachePath, cache)))
    return failure();

  options.registerRows = pick.rows;
  options.registerVectors = pick.vectors;
  options.tilesSource = "tuned";
  return compileToDirectory(module, options, outDir);
}
