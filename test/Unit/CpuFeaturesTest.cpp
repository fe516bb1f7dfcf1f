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

} // namespace
