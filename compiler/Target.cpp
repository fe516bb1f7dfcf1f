//===- Target.cpp - the CPU a module is compiled for ----------------------===//

#include "compiler/Target.h"

#include "runtime/CpuFeatures.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>

using namespace llvm;

Expected<mlir::hkt::CpuTarget>
mlir::hkt::createCpuTarget(StringRef cpu, StringRef extraFeatures) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();

  CpuTarget result;
  Triple triple(sys::getDefaultTargetTriple());
  result.triple = triple.str();
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return createStringError("no LLVM target for '%s': %s",
                             result.triple.c_str(), error.c_str());

  std::string featureString;
  if (cpu == "native") {
    result.cpu = sys::getHostCPUName().str();
    // CPUID's features, less those the kernel does not report as usable in
    // /proc/cpuinfo (Linux clears some for errata: RDSEED on Zen 5): the
    // runtime refuses a module that needs a feature missing there, so a
    // native module must not claim it.
    const std::optional<std::set<std::string>> &usable =
        ::hkt::runtime::hostCpuFlags();
    SmallVector<std::string> enabled;
    for (const auto &feature : sys::getHostCPUFeatures()) {
      bool on = feature.second;
      if (on && usable) {
        std::optional<std::string> flag =
            ::hkt::runtime::cpuinfoFlagForFeature(feature.first().str());
        on = !flag || usable->count(*flag);
      }
      enabled.push_back((on ? "+" : "-") + feature.first().str());
    }
    featureString = join(enabled, ",");
  } else {
    result.cpu = cpu.str();
  }

  // Check the name first: LLVM itself only warns and falls back to generic.
  std::unique_ptr<MCSubtargetInfo> probe(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!probe || !probe->isCPUStringValid(result.cpu))
    return createStringError(
        "unknown CPU '%s' for %s (try 'native', 'x86-64', 'x86-64-v3', "
        "'x86-64-v4' or an LLVM CPU name such as 'znver4')",
        result.cpu.c_str(), result.triple.c_str());

  // --cpu-features: +name / -name on top of the CPU's (llc's -mattr); LLVM
  // adds what a feature implies and removes what depends on a removed one.
  if (!extraFeatures.empty()) {
    SmallVector<StringRef> changes;
    extraFeatures.split(changes, ',', -1, /*KeepEmpty=*/false);
    for (StringRef change : changes) {
      change = change.trim();
      StringRef name = change.drop_front();
      if ((!change.starts_with("+") && !change.starts_with("-")) ||
          !llvm::any_of(
              probe->getAllProcessorFeatures(),
              [&](const SubtargetFeatureKV &kv) { return name == kv.Key; }))
        return createStringError(
            "--cpu-features: '%s' is not +FEATURE or -FEATURE with an LLVM "
            "feature name of %s (such as -amx-tile or -avx512f)",
            change.str().c_str(), result.triple.c_str());
      featureString += (featureString.empty() ? "" : ",") + change.str();
    }
    result.extraFeatures = extraFeatures.str();
  }

  TargetOptions options;
  result.machine.reset(target->createTargetMachine(
      triple, result.cpu, featureString, options, Reloc::PIC_, std::nullopt,
      CodeGenOptLevel::Aggressive));
  if (!result.machine)
    return createStringError("cannot create a target machine for CPU '%s'",
                             result.cpu.c_str());
  const MCSubtargetInfo *sti = result.machine->getMCSubtargetInfo();

  // The manifest lists what the generated code may use, so a runtime can
  // refuse a machine that lacks any of it.
  for (const SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (sti->getFeatureBits().test(kv.Value))
      result.features.push_back(kv.Key);
  std::sort(result.features.begin(), result.features.end());
  return result;
}

bool mlir::hkt::usesAmx(const CpuTarget &target) {
  return ::hkt::runtime::amxBf16Among(target.features);
}
