//===- MemoryCheck.cpp - Is there memory for a call? ----------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/MemoryCheck.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include <sched.h>

namespace hkt::runtime {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> parseNumber(std::string_view s) {
  s = trim(s);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return std::nullopt;
  return v;
}

std::optional<std::string> readSmallFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b
             ? std::numeric_limits<uint64_t>::max()
             : a + b;
}

uint64_t saturatingMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    return std::numeric_limits<uint64_t>::max();
  return a * b;
}

/// The tightest remaining amount over `path` and its ancestors under
/// `base`, each with a `limitFile` and a `usageFile`.
std::optional<uint64_t> cgroupRemaining(const std::string &base,
                                        std::string path,
                                        const char *limitFile,
                                        const char *usageFile) {
  std::optional<uint64_t> best;
  while (true) {
    std::string dir = base + (path == "/" ? "" : path);
    std::optional<std::string> limitText = readSmallFile(dir + "/" + limitFile);
    std::optional<std::string> usageText = readSmallFile(dir + "/" + usageFile);
    if (limitText && usageText) {
      std::optional<uint64_t> limit = parseCgroupLimit(*limitText);
      std::optional<uint64_t> usage = parseCgroupUsage(*usageText);
      if (limit && usage) {
        uint64_t left = *limit > *usage ? *limit - *usage : 0;
        best = best ? std::min(*best, left) : left;
      }
    }
    if (path == "/" || path.empty())
      break;
    size_t slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

} // namespace

std::optional<uint64_t> MemoryInfo::available() const {
  if (override)
    return override;
  if (memAvailable && cgroupRemaining)
    return std::min(*memAvailable, *cgroupRemaining);
  return memAvailable ? memAvailable : cgroupRemaining;
}

std::string MemoryInfo::describe() const {
  std::optional<uint64_t> avail = available();
  std::string s = avail ? formatBytes(*avail) : std::string("unknown");
  if (override)
    return s + " (" + kMemoryLimitEnv + "=" + std::to_string(*override) + ")";
  return s + " (MemAvailable " +
         (memAvailable ? formatBytes(*memAvailable) : std::string("unknown")) +
         ", cgroup limit " +
         (cgroupRemaining ? formatBytes(*cgroupRemaining) + " left"
                          : std::string("none")) +
         ")";
}

std::optional<uint64_t> parseMemAvailable(std::string_view meminfo) {
  size_t pos = 0;
  while (pos < meminfo.size()) {
    size_t eol = meminfo.find('\n', pos);
    std::string_view line =
        meminfo.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? meminfo.size() : eol + 1;
    constexpr std::string_view key = "MemAvailable:";
    if (line.substr(0, key.size()) != key)
      continue;
    std::string_view rest = trim(line.substr(key.size()));
    uint64_t scale = 1;
    if (rest.size() >= 2 && rest.substr(rest.size() - 2) == "kB") {
      scale = 1024;
      rest = trim(rest.substr(0, rest.size() - 2));
    }
    std::optional<uint64_t> v = parseNumber(rest);
    if (!v)
      return std::nullopt;
    return saturatingMul(*v, scale);
  }
  return std::nullopt;
}

std::optional<uint64_t> parseCgroupLimit(std::string_view text) {
  std::optional<uint64_t> v = parseNumber(text);
  if (!v || *v >= (uint64_t(1) << 62))
    return std::nullopt;
  return v;
}

std::optional<uint64_t> parseCgroupUsage(std::string_view text) {
  return parseNumber(text);
}

CgroupPaths parseProcCgroup(std::string_view text) {
  CgroupPaths paths;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
      continue;
    std::string_view id = line.substr(0, c1);
    std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path(trim(line.substr(c2 + 1)));
    if (path.empty() || path[0] != '/')
      continue;
    if (id == "0" && controllers.empty()) {
      paths.v2 = path;
      continue;
    }
    // A comma-separated list of controllers ("memory", "cpu,cpuacct").
    size_t start = 0;
    while (start <= controllers.size()) {
      size_t comma = controllers.find(',', start);
      std::string_view name = controllers.substr(
          start, comma == std::string_view::npos ? comma : comma - start);
      if (name == "memory")
        paths.v1Memory = path;
      if (comma == std::string_view::npos)
        break;
      start = comma + 1;
    }
  }
  return paths;
}

Expected<MemoryInfo> readMemoryInfo(const std::string &root) {
  return readMemoryInfo(root, std::getenv(kMemoryLimitEnv));
}

Expected<MemoryInfo> readMemoryInfo(const std::string &root, const char *env) {
  MemoryInfo info;
  if (env && *env) {
    std::optional<uint64_t> v = parseNumber(env);
    if (!v)
      return Status::error(std::string(kMemoryLimitEnv) +
                           " must be a number of bytes, got '" + env + "'");
    info.override = v;
    return info;
  }
  if (std::optional<std::string> meminfo = readSmallFile(root + "/proc/meminfo"))
    info.memAvailable = parseMemAvailable(*meminfo);
  CgroupPaths paths;
  if (std::optional<std::string> cg = readSmallFile(root + "/proc/self/cgroup"))
    paths = parseProcCgroup(*cg);
  auto tighter = [&](std::optional<uint64_t> left) {
    if (left)
      info.cgroupRemaining =
          info.cgroupRemaining ? std::min(*info.cgroupRemaining, *left) : *left;
  };
  if (paths.v2)
    tighter(cgroupRemaining(root + "/sys/fs/cgroup", *paths.v2, "memory.max",
                            "memory.current"));
  if (paths.v1Memory)
    tighter(cgroupRemaining(root + "/sys/fs/cgroup/memory", *paths.v1Memory,
                            "memory.limit_in_bytes", "memory.usage_in_bytes"));
  return info;
}

uint64_t openmpThreadCount() {
  if (const char *env = std::getenv("OMP_NUM_THREADS")) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(env, env + std::strlen(env), n);
    (void)end;
    if (ec == std::errc() && n > 0)
      return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<uint64_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t MemoryNeed::total() const {
  return saturatingAdd(saturatingAdd(inputs, outputs), working);
}

uint64_t workingMemory(const EntrySpec &entry, uint64_t threads) {
  if (!entry.workingMemoryBytes)
    return 0;
  return saturatingAdd(*entry.workingMemoryBytes,
                       saturatingMul(entry.workingMemoryPerThreadBytes,
                                     std::max<uint64_t>(threads, 1)));
}

Status checkMemory(const std::string &entryName, const MemoryNeed &need,
                   const MemoryInfo &info) {
  std::optional<uint64_t> avail = info.available();
  if (!avail || need.total() <= *avail)
    return Status::success();
  if (need.buffersAllocated)
    return Status::error("entry '" + entryName + "' needs " +
                         formatBytes(need.total()) +
                         " of working memory for the call (its arguments and "
                         "results are allocated already) but " +
                         info.describe() + " is available");
  return Status::error(
      "entry '" + entryName + "' needs " + formatBytes(need.total()) +
      " (inputs " + formatBytes(need.inputs) + ", outputs " +
      formatBytes(need.outputs) + ", working memory " +
      formatBytes(need.working) + ") but " + info.describe() +
      " is available");
}

std::string formatBytes(uint64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

} // namespace hkt::runtime
