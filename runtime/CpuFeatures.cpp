//===- CpuFeatures.cpp - Checking a module's CPU features -----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CpuFeatures.h"
#include "runtime/Manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace hkt::runtime;

std::optional<std::string>
hkt::runtime::cpuinfoFlagForFeature(std::string_view llvmFeature) {
  // LLVM name (llvm/lib/TargetParser/X86TargetParser.cpp) -> Linux name
  // (arch/x86/include/asm/cpufeatures.h). Deliberately absent: tuning flags,
  // "64bit", "x87", "cmov", "cx8" and other baseline features, and features
  // Linux does not report.
  static const std::unordered_map<std::string_view, const char *> table = {
      {"sse", "sse"},
      {"sse2", "sse2"},
      {"sse3", "pni"},
      {"ssse3", "ssse3"},
      {"sse4.1", "sse4_1"},
      {"sse4.2", "sse4_2"},
      {"crc32", "sse4_2"},
      {"sse4a", "sse4a"},
      {"avx", "avx"},
      {"avx2", "avx2"},
      {"fma", "fma"},
      {"fma4", "fma4"},
      {"xop", "xop"},
      {"tbm", "tbm"},
      {"f16c", "f16c"},
      {"bmi", "bmi1"},
      {"bmi2", "bmi2"},
      {"lzcnt", "abm"},
      {"popcnt", "popcnt"},
      {"movbe", "movbe"},
      {"aes", "aes"},
      {"pclmul", "pclmulqdq"},
      {"vaes", "vaes"},
      {"vpclmulqdq", "vpclmulqdq"},
      {"gfni", "gfni"},
      {"sha", "sha_ni"},
      {"sha512", "sha512"},
      {"sm3", "sm3"},
      {"sm4", "sm4"},
      {"xsave", "xsave"},
      {"xsaveopt", "xsaveopt"},
      {"xsavec", "xsavec"},
      {"xsaves", "xsaves"},
      {"adx", "adx"},
      {"rdrnd", "rdrand"},
      {"rdseed", "rdseed"},
      {"cx16", "cx16"},
      {"sahf", "lahf_lm"},
      {"prfchw", "3dnowprefetch"},
      {"fsgsbase", "fsgsbase"},
      {"rdpid", "rdpid"},
      {"clflushopt", "clflushopt"},
      {"clwb", "clwb"},
      {"clzero", "clzero"},
      {"mwaitx", "mwaitx"},
      {"wbnoinvd", "wbnoinvd"},
      {"pku", "pku"},
      {"invpcid", "invpcid"},
      {"movdiri", "movdiri"},
      {"movdir64b", "movdir64b"},
      {"serialize", "serialize"},
      {"waitpkg", "waitpkg"},
      {"cldemote", "cldemote"},
      {"avx512f", "avx512f"},
      {"avx512cd", "avx512cd"},
      {"avx512bw", "avx512bw"},
      {"avx512dq", "avx512dq"},
      {"avx512vl", "avx512vl"},
      {"avx512ifma", "avx512ifma"},
      {"avx512vbmi", "avx512vbmi"},
      {"avx512vbmi2", "avx512_vbmi2"},
      {"avx512vnni", "avx512_vnni"},
      {"avx512bitalg", "avx512_bitalg"},
      {"avx512vpopcntdq", "avx512_vpopcntdq"},
      {"avx512bf16", "avx512_bf16"},
      {"avx512fp16", "avx512_fp16"},
      {"avx512vp2intersect", "avx512_vp2intersect"},
      {"avxvnni", "avx_vnni"},
      {"amx-tile", "amx_tile"},
      {"amx-int8", "amx_int8"},
      {"amx-bf16", "amx_bf16"},
  };
  auto it = table.find(llvmFeature);
  if (it == table.end())
    return std::nullopt;
  return std::string(it->second);
}

std::set<std::string>
hkt::runtime::parseCpuinfoFlags(const std::string &cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t'))
      key.pop_back();
    if (key != "flags")
      continue;
    std::set<std::string> flags;
    std::istringstream words(line.substr(colon + 1));
    std::string flag;
    while (words >> flag)
      flags.insert(flag);
    return flags;
  }
  return {};
}

const std::optional<std::set<std::string>> &hkt::runtime::hostCpuFlags() {
  static const std::optional<std::set<std::string>> flags =
      []() -> std::optional<std::set<std::string>> {
    // Not readTextFile: /proc files report a size of 0, so read to the end.
    std::ifstream in("/proc/cpuinfo");
    if (!in)
      return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    std::set<std::string> parsed = parseCpuinfoFlags(text.str());
    if (parsed.empty())
      return std::nullopt;
    return parsed;
  }();
  return flags;
}

std::vector<std::string>
hkt::runtime::missingCpuFeatures(const std::vector<std::string> &features,
                                 const std::set<std::string> &hostFlags) {
  std::vector<std::string> missing;
  for (const std::string &f : features) {
    std::optional<std::string> flag = cpuinfoFlagForFeature(f);
    if (flag && !hostFlags.count(*flag))
      missing.push_back(f);
  }
  return missing;
}

bool hkt::runtime::amxBf16Among(const std::vector<std::string> &llvmFeatures) {
  auto has = [&](const char *f) {
    return std::find(llvmFeatures.begin(), llvmFeatures.end(), f) !=
           llvmFeatures.end();
  };
  return has("amx-tile") && has("amx-bf16");
}

Status hkt::runtime::checkCpuFeatures(const Manifest &manifest,
                                      const std::string &moduleDir,
                                      const std::set<std::string> &hostFlags) {
  std::vector<std::string> missing =
      missingCpuFeatures(manifest.target.features, hostFlags);
  if (missing.empty())
    return Status::success();
  std::string list;
  for (const std::string &f : missing)
    list += (list.empty() ? "" : ", ") + f;
  return Status::error("module '" + moduleDir + "' was compiled for CPU '" +
                       manifest.target.cpu +
                       "' and needs CPU features this machine lacks: " + list +
                       " (recompile with --cpu x86-64 for a portable module)");
}

Status hkt::runtime::requestAmxState() {
#if defined(__x86_64__) && defined(__linux__)
  // <asm/prctl.h>: ARCH_REQ_XCOMP_PERM; XFEATURE_XTILEDATA is state 18.
  constexpr int kReqXcompPerm = 0x1023, kXtileData = 18;
  static const int error = [] {
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0 ? 0 : errno;
  }();
  if (error == 0)
    return Status::success();
  return Status::error(std::string("Linux refused this process the AMX tile "
                                   "state (arch_prctl ARCH_REQ_XCOMP_PERM: ") +
                       std::strerror(error) +
                       "); the module's matmuls need it (compiled with "
                       "--precision bf16: recompile without it)");
#else
  return Status::error("AMX tiles (a --precision bf16 module) need Linux on "
                       "x86-64");
#endif
}
