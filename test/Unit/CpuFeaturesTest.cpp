//===- CpuFeaturesTest.cpp - Tests of the CPU feature check ---------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CpuFeatures.h"
#include "runtime/CompiledModule.h"
#include "test/Unit/TestUtil.h"

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

TEST(CpuFeaturesTest, MapsLLVMNamesToCpuinfoFlags) {
  EXPECT_EQ(cpuinfoFlagForFeature("sse4.1"), "sse4_1");
  EXPECT_EQ(cpuinfoFlagForFeature("sse4.2"), "sse4_2");
  EXPECT_EQ(cpuinfoFlagForFeature("sse3"), "pni");
  EXPECT_EQ(cpuinfoFlagForFeature("pclmul"), "pclmulqdq");
  EXPECT_EQ(cpuinfoFlagForFeature("lzcnt"), "abm");
  EXPECT_EQ(cpuinfoFlagForFeature("rdrnd"), "rdrand");
  EXPECT_EQ(cpuinfoFlagForFeature("sha"), "sha_ni");
  EXPECT_EQ(cpuinfoFlagForFeature("bmi"), "bmi1");
  EXPECT_EQ(cpuinfoFlagForFeature("avx512vnni"), "avx512_vnni");
  EXPECT_EQ(cpuinfoFlagForFeature("avx512bf16"), "avx512_bf16");
  EXPECT_EQ(cpuinfoFlagForFeature("avx512fp16"), "avx512_fp16");
  EXPECT_EQ(cpuinfoFlagForFeature("avxvnni"), "avx_vnni");
  EXPECT_EQ(cpuinfoFlagForFeature("avx512vbmi"), "avx512vbmi");
  EXPECT_EQ(cpuinfoFlagForFeature("avx512vbmi2"), "avx512_vbmi2");
  EXPECT_EQ(cpuinfoFlagForFeature("avx512f"), "avx512f");
  EXPECT_EQ(cpuinfoFlagForFeature("avx2"), "avx2");
}

TEST(CpuFeaturesTest, IgnoresTuningAndBaselineFeatures) {
  for (const char *f : {"slow-3ops-lea", "fast-gather", "64bit", "x87", "cmov",
                        "evex512", "no-such-feature"})
    EXPECT_EQ(cpuinfoFlagForFeature(f), std::nullopt) << f;
}

TEST(CpuFeaturesTest, ParsesCpuinfo) {
  std::string cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                        "flags\t\t: fpu sse sse2 pni avx2\nbogomips\t: 1\n\n"
                        "processor\t: 1\nflags\t\t: fpu\n";
  EXPECT_EQ(parseCpuinfoFlags(cpuinfo),
            (std::set<std::string>{"fpu", "sse", "sse2", "pni", "avx2"}));
  EXPECT_TRUE(parseCpuinfoFlags("nothing here").empty());
}

TEST(CpuFeaturesTest, FindsMissingFeatures) {
  std::set<std::string> host = {"sse2", "pni", "avx", "avx2", "fma"};
  EXPECT_EQ(missingCpuFeatures({"sse2", "sse3", "avx2", "fma", "slow-3ops-lea"},
                               host),
            std::vector<std::string>{});
  EXPECT_EQ(missingCpuFeatures({"avx512f", "avx2", "avx512bw", "sse4.1"}, host),
            (std::vector<std::string>{"avx512f", "avx512bw", "sse4.1"}));
}

TEST(CpuFeaturesTest, RefusesAModuleNeedingMissingFeatures) {
  Manifest m;
  m.target.cpu = "znver5";
  m.target.features = {"avx2", "avx512f", "avx512bw", "slow-3ops-lea"};
  Status s = checkCpuFeatures(m, "DIR", {"avx2", "sse2"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.message(),
      "module 'DIR' was compiled for CPU 'znver5' and needs CPU features this "
      "machine lacks: avx512f, avx512bw (recompile with --cpu x86-64 for a "
      "portable module)");
  EXPECT_TRUE(checkCpuFeatures(m, "DIR", {"avx2", "avx512f", "avx512bw"}).ok());
}

TEST(CpuFeaturesTest, ReadsThisMachinesFlags) {
#if defined(__x86_64__)
  const auto &flags = hostCpuFlags();
  ASSERT_TRUE(flags.has_value()) << "cannot read /proc/cpuinfo";
  EXPECT_TRUE(flags->count("sse2")) << "every x86-64 has SSE2";
  // Whatever this machine has, a feature our table maps to a flag it reports
  // must be accepted.
  EXPECT_TRUE(missingCpuFeatures({"sse", "sse2"}, *flags).empty());
#else
  GTEST_SKIP() << "the feature table covers x86-64 only";
#endif
}

#if defined(__x86_64__)
/// The LLVM feature names runtime/CpuFeatures.cpp maps to /proc/cpuinfo flags.
const char *const kMappedFeatures[] = {
    "sse",       "sse2",       "sse3",        "ssse3",       "sse4.1",
    "sse4.2",    "crc32",      "sse4a",       "avx",         "avx2",
    "fma",       "fma4",       "xop",         "tbm",         "f16c",
    "bmi",       "bmi2",       "lzcnt",       "popcnt",      "movbe",
    "aes",       "pclmul",     "vaes",        "vpclmulqdq",  "gfni",
    "sha",       "sha512",     "sm3",         "sm4",         "xsave",
    "xsaveopt",  "xsavec",     "xsaves",      "adx",         "rdrnd",
    "rdseed",    "cx16",       "sahf",        "prfchw",      "fsgsbase",
    "rdpid",     "clflushopt", "clwb",        "clzero",      "mwaitx",
    "wbnoinvd",  "pku",        "invpcid",     "movdiri",     "movdir64b",
    "serialize", "waitpkg",    "cldemote",    "avx512f",     "avx512cd",
    "avx512bw",  "avx512dq",   "avx512vl",    "avx512ifma",  "avx512vbmi",
    "avx512vbmi2", "avx512vnni", "avx512bitalg", "avx512vpopcntdq",
    "avx512bf16", "avx512fp16", "avx512vp2intersect", "avxvnni", "amx-tile",
    "amx-int8",  "amx-bf16"};

/// This machine's flags, and the mapped features split into those it has and
/// those it lacks: what each set holds depends on the machine, the tests
/// below hold for any of them (AVX2-only, AVX-512, AMX, ...).
struct HostSplit {
  std::set<std::string> flags;
  std::vector<std::string> has, lacks;
};

HostSplit splitByHost() {
  HostSplit split;
  if (hostCpuFlags())
    split.flags = *hostCpuFlags();
  for (const char *f : kMappedFeatures) {
    std::optional<std::string> flag = cpuinfoFlagForFeature(f);
    EXPECT_TRUE(flag.has_value()) << f;
    if (flag)
      (split.flags.count(*flag) ? split.has : split.lacks).push_back(f);
  }
  return split;
}
#endif

TEST(CpuFeaturesTest, ChecksModulesAgainstThisMachinesFlags) {
#if defined(__x86_64__)
  HostSplit host = splitByHost();
  ASSERT_FALSE(host.flags.empty()) << "cannot read /proc/cpuinfo";
  ASSERT_FALSE(host.has.empty()) << "every x86-64 has SSE and SSE2";
  // Every feature the machine reports is accepted, tuning flags are ignored.
  Manifest m;
  m.target.cpu = "test-cpu";
  m.target.features = host.has;
  m.target.features.push_back("slow-3ops-lea");
  EXPECT_TRUE(checkCpuFeatures(m, "DIR", host.flags).ok());
  // Add the ones it lacks (no CPU has them all: XOP and AMX never meet):
  // exactly those are named, in the manifest's order.
  ASSERT_FALSE(host.lacks.empty());
  m.target.features.insert(m.target.features.end(), host.lacks.begin(),
                           host.lacks.end());
  EXPECT_EQ(missingCpuFeatures(m.target.features, host.flags), host.lacks);
  Status s = checkCpuFeatures(m, "DIR", host.flags);
  ASSERT_FALSE(s.ok());
  std::string list;
  for (const std::string &f : host.lacks)
    list += (list.empty() ? "" : ", ") + f;
  EXPECT_EQ(s.message(), "module 'DIR' was compiled for CPU 'test-cpu' and "
                         "needs CPU features this machine lacks: " +
                             list +
                             " (recompile with --cpu x86-64 for a portable "
                             "module)");
  // The machine's flags less one it has: that feature alone is missing.
  for (const std::string &f : host.has) {
    std::set<std::string> fewer = host.flags;
    fewer.erase(*cpuinfoFlagForFeature(f));
    std::vector<std::string> missing = missingCpuFeatures(host.has, fewer);
    // Several LLVM names can share a flag (sse4.2 and crc32).
    ASSERT_FALSE(missing.empty()) << f;
    for (const std::string &g : missing)
      EXPECT_EQ(cpuinfoFlagForFeature(g), cpuinfoFlagForFeature(f)) << f;
  }
#else
  GTEST_SKIP() << "the feature table covers x86-64 only";
#endif
}

class CpuFeaturesModuleTest : public TempDirTest {};

TEST_F(CpuFeaturesModuleTest, LoaderRefusesBeforeLoadingTheLibrary) {
  // No module.so at all: the refusal must come from the feature check.
  writeBytes(path("manifest.json"),
             tinyManifest({"add"}, {"sse2", "avx512f", "made-up-tuning"}));
  std::set<std::string> flags = {"sse", "sse2"};
  CompiledModule::Options options;
  options.cpuFlags = &flags;
  auto m = CompiledModule::open(dir, options);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(mentions(m.message(),
                       "needs CPU features this machine lacks: avx512f ("));
  EXPECT_TRUE(mentions(m.message(), "compiled for CPU 'x86-64'"));
}

TEST_F(CpuFeaturesModuleTest, LoaderChecksThisMachinesFlags) {
#if defined(__x86_64__)
  // A module needing everything this machine has plus one feature it lacks
  // is refused by the loader with the host's own flags (the default), naming
  // that one feature; nothing is loaded (there is no module.so).
  HostSplit host = splitByHost();
  ASSERT_FALSE(host.lacks.empty());
  std::vector<std::string> features = host.has;
  features.push_back(host.lacks.front());
  writeBytes(path("manifest.json"), tinyManifest({"add"}, features));
  auto m = CompiledModule::open(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(mentions(m.message(), "needs CPU features this machine lacks: " +
                                        host.lacks.front() + " ("));
  // The same manifest, checked against the host's flags with that flag added:
  // the feature check passes and the loader gets as far as the library.
  std::set<std::string> more = host.flags;
  more.insert(*cpuinfoFlagForFeature(host.lacks.front()));
  CompiledModule::Options options;
  options.cpuFlags = &more;
  auto m2 = CompiledModule::open(dir, options);
  ASSERT_FALSE(m2.ok());
  EXPECT_FALSE(mentions(m2.message(), "needs CPU features"));
#else
  GTEST_SKIP() << "the feature table covers x86-64 only";
#endif
}

} // namespace
