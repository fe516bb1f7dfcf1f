//===- MemoryCheckTest.cpp - meminfo / cgroup parsing and the decision ----===//

#include "runtime/MemoryCheck.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

using namespace hkt::runtime;
namespace fs = std::filesystem;

namespace {

const char *const kMeminfo = "MemTotal:       24684092 kB\n"
                             "MemFree:        23000000 kB\n"
                             "MemAvailable:    7340032 kB\n"
                             "Buffers:            1234 kB\n";

TEST(MemoryCheck, ParsesMemAvailable) {
  EXPECT_EQ(parseMemAvailable(kMeminfo), uint64_t(7340032) * 1024);
  EXPECT_EQ(parseMemAvailable("MemTotal: 1 kB\n"), std::nullopt);
  EXPECT_EQ(parseMemAvailable("MemAvailable: lots kB\n"), std::nullopt);
  EXPECT_EQ(parseMemAvailable(""), std::nullopt);
  // The last line without a newline.
  EXPECT_EQ(parseMemAvailable("MemAvailable: 2 kB"), 2048u);
}

TEST(MemoryCheck, ParsesCgroupFiles) {
  EXPECT_EQ(parseCgroupLimit("max\n"), std::nullopt);
  EXPECT_EQ(parseCgroupLimit("9223372036854771712\n"), std::nullopt); // v1
  EXPECT_EQ(parseCgroupLimit("1073741824\n"), 1073741824u);
  EXPECT_EQ(parseCgroupLimit("garbage"), std::nullopt);
  EXPECT_EQ(parseCgroupUsage("1349926912\n"), 1349926912u);
  CgroupPaths hybrid = parseProcCgroup("9:name=systemd:/\n"
                                       "4:memory:/process_api/abc\n"
                                       "2:cpu,cpuacct:/\n"
                                       "0::/\n");
  EXPECT_EQ(hybrid.v1Memory, "/process_api/abc");
  EXPECT_EQ(hybrid.v2, "/");
  CgroupPaths v2 = parseProcCgroup("0::/user.slice/app.scope\n");
  EXPECT_EQ(v2.v2, "/user.slice/app.scope");
  EXPECT_EQ(v2.v1Memory, std::nullopt);
  EXPECT_EQ(parseProcCgroup("4:cpu,memory:/x").v1Memory, "/x");
}

/// A fake root with /proc and /sys/fs/cgroup files.
struct FakeRoot {
  fs::path root;
  FakeRoot() {
    root = fs::temp_directory_path() /
           ("hkt-memcheck-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
  }
  ~FakeRoot() { fs::remove_all(root); }
  void write(const std::string &path, const std::string &text) {
    fs::path p = root / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
};

TEST(MemoryCheck, ReadsCgroupV2WithAncestors) {
  FakeRoot r;
  r.write("proc/meminfo", kMeminfo);
  r.write("proc/self/cgroup", "0::/a/b\n");
  // The process's cgroup has no limit; its parent leaves 1 GiB; the root
  // has no memory.max.
  r.write("sys/fs/cgroup/a/b/memory.max", "max\n");
  r.write("sys/fs/cgroup/a/b/memory.current", "100\n");
  r.write("sys/fs/cgroup/a/memory.max", "3221225472\n");
  r.write("sys/fs/cgroup/a/memory.current", "2147483648\n");
  Expected<MemoryInfo> info = readMemoryInfo(r.root.string(), nullptr);
  ASSERT_TRUE(info.ok()) << info.message();
  EXPECT_EQ(info->memAvailable, uint64_t(7340032) * 1024);
  EXPECT_EQ(info->cgroupRemaining, uint64_t(1) << 30);
  EXPECT_EQ(info->available(), uint64_t(1) << 30);
  EXPECT_EQ(info->describe(),
            "1.0 GiB (MemAvailable 7.0 GiB, cgroup limit 1.0 GiB left)");
}

TEST(MemoryCheck, ReadsCgroupV1AndUnlimited) {
  FakeRoot r;
  r.write("proc/meminfo", kMeminfo);
  r.write("proc/self/cgroup", "4:memory:/job\n0::/\n");
  r.write("sys/fs/cgroup/memory/job/memory.limit_in_bytes",
          "9223372036854771712\n");
  r.write("sys/fs/cgroup/memory/job/memory.usage_in_bytes", "5000\n");
  Expected<MemoryInfo> info = readMemoryInfo(r.root.string(), nullptr);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->cgroupRemaining, std::nullopt);
  EXPECT_EQ(info->available(), uint64_t(7340032) * 1024);
  EXPECT_EQ(info->describe(), "7.0 GiB (MemAvailable 7.0 GiB, cgroup limit none)");

  // Over the limit: nothing left.
  r.write("sys/fs/cgroup/memory/job/memory.limit_in_bytes", "4000\n");
  info = readMemoryInfo(r.root.string(), nullptr);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->available(), 0u);
}

TEST(MemoryCheck, NothingReadableMeansNoCheck) {
  FakeRoot r;
  Expected<MemoryInfo> info = readMemoryInfo(r.root.string(), nullptr);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->available(), std::nullopt);
  MemoryNeed need;
  need.inputs = UINT64_MAX;
  EXPECT_TRUE(checkMemory("f", need, *info).ok());
}

TEST(MemoryCheck, OverrideReplacesEverything) {
  FakeRoot r;
  r.write("proc/meminfo", kMeminfo);
  Expected<MemoryInfo> info = readMemoryInfo(r.root.string(), "1000");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->available(), 1000u);
  EXPECT_FALSE(readMemoryInfo(r.root.string(), "12x").ok());
  EXPECT_FALSE(readMemoryInfo(r.root.string(), "-5").ok());
}

TEST(MemoryCheck, Decision) {
  MemoryInfo info;
  info.memAvailable = uint64_t(7) << 30;
  info.cgroupRemaining = uint64_t(8) << 30;
  MemoryNeed need;
  need.inputs = uint64_t(1) << 30;
  need.outputs = uint64_t(1) << 30;
  need.working = uint64_t(5) << 30;
  EXPECT_TRUE(checkMemory("layer", need, info).ok()); // exactly 7 GiB fits
  need.working += 1;
  Status s = checkMemory("layer", need, info);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "entry 'layer' needs 7.0 GiB (inputs 1.0 GiB, outputs 1.0 GiB, "
            "working memory 5.0 GiB) but 7.0 GiB (MemAvailable 7.0 GiB, "
            "cgroup limit 8.0 GiB left) is available");
  // Saturating: no wrap-around lets a huge need through.
  need.inputs = UINT64_MAX;
  EXPECT_EQ(need.total(), UINT64_MAX);
  EXPECT_FALSE(checkMemory("layer", need, info).ok());
}

TEST(MemoryCheck, WorkingMemoryPerThread) {
  EntrySpec e;
  EXPECT_EQ(workingMemory(e, 8), 0u);
  e.workingMemoryBytes = 1000;
  e.workingMemoryPerThreadBytes = 10;
  EXPECT_EQ(workingMemory(e, 8), 1080u);
  EXPECT_EQ(workingMemory(e, 0), 1010u);
  e.workingMemoryPerThreadBytes = UINT64_MAX / 2;
  EXPECT_EQ(workingMemory(e, 4), UINT64_MAX);
}

TEST(MemoryCheck, FormatsBytes) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(uint64_t(3) << 20), "3.0 MiB");
  EXPECT_EQ(formatBytes(uint64_t(13207024435)), "12.3 GiB");
}

} // namespace
