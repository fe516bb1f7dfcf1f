//===- MemoryCheck.h - Is there memory for a call? --------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Before a call (and before hkt-run allocates its buffers), the runtime adds
// the bytes of the arguments and results to the entry's working memory (the
// manifest's working_memory_bytes, plus working_memory_per_thread_bytes for
// each OpenMP thread) and compares the total with the memory available to the
// process: the smaller of /proc/meminfo's MemAvailable and what the cgroup
// limit leaves (v2: memory.max - memory.current, v1: memory.limit_in_bytes -
// memory.usage_in_bytes, the tightest of the process's cgroup and its
// ancestors). HKT_MEMORY_LIMIT_BYTES=N replaces both by N (tests, or a user
// who knows better). See docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_MEMORYCHECK_H
#define HKT_RUNTIME_MEMORYCHECK_H

#include "runtime/Manifest.h"
#include "runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hkt::runtime {

/// The environment variable that overrides the available memory (bytes).
inline constexpr const char *kMemoryLimitEnv = "HKT_MEMORY_LIMIT_BYTES";

/// What is known of the memory available to this process.
struct MemoryInfo {
  /// /proc/meminfo's MemAvailable, in bytes.
  std::optional<uint64_t> memAvailable;
  /// What the cgroup limits leave (limit - usage, 0 if over); unset when no
  /// limit applies or none can be read.
  std::optional<uint64_t> cgroupRemaining;
  /// HKT_MEMORY_LIMIT_BYTES, when set: replaces the two above.
  std::optional<uint64_t> override;

  /// The smaller of the known amounts; unset if nothing is known.
  std::optional<uint64_t> available() const;
  /// "7.1 GiB (MemAvailable 7.1 GiB, cgroup limit none)".
  std::string describe() const;
};

/// MemAvailable of /proc/meminfo text ("MemAvailable:  123 kB"), in bytes.
std::optional<uint64_t> parseMemAvailable(std::string_view meminfo);
/// A cgroup limit file's value: a number, or unset for "max" (v2) or a
/// value of 2^62 or more (v1's "unlimited", 0x7FFFFFFFFFFFF000); unset also
/// for text that is not a number.
std::optional<uint64_t> parseCgroupLimit(std::string_view text);
/// A usage file's value (memory.current, memory.usage_in_bytes).
std::optional<uint64_t> parseCgroupUsage(std::string_view text);
/// The process's cgroup paths from /proc/self/cgroup text: the v2 path
/// ("0::PATH") and the v1 memory controller's ("N:...memory...:PATH").
struct CgroupPaths {
  std::optional<std::string> v2, v1Memory;
};
CgroupPaths parseProcCgroup(std::string_view text);

/// Reads the memory available now. `root` prefixes every path read
/// (/proc/meminfo, /proc/self/cgroup, /sys/fs/cgroup/...): "" for this
/// machine, a fixture directory in tests. `env` is the value of
/// HKT_MEMORY_LIMIT_BYTES (null: read the environment).
Expected<MemoryInfo> readMemoryInfo(const std::string &root = "");
Expected<MemoryInfo> readMemoryInfo(const std::string &root, const char *env);

/// The number of threads the entry's parallel regions may run on: the first
/// number of OMP_NUM_THREADS if set, else the CPUs this process may run on.
uint64_t openmpThreadCount();

/// What a call needs, in bytes.
struct MemoryNeed {
  uint64_t inputs = 0, outputs = 0, working = 0;
  /// The arguments and results are allocated already (Entry::call): only
  /// the working memory is compared, and the message says so.
  bool buffersAllocated = false;
  /// inputs + outputs + working, saturating.
  uint64_t total() const;
};

/// The entry's working memory for `threads` threads (0 if the manifest has
/// none), saturating.
uint64_t workingMemory(const EntrySpec &entry, uint64_t threads);

/// Refuses (an error naming the entry and both amounts) if `need` exceeds
/// what `info` says is available; succeeds when nothing is known.
Status checkMemory(const std::string &entryName, const MemoryNeed &need,
                   const MemoryInfo &info);

/// "12.3 GiB", "512 B", "3.0 MiB".
std::string formatBytes(uint64_t bytes);

} // namespace hkt::runtime

#endif // HKT_RUNTIME_MEMORYCHECK_H
