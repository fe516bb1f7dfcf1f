//===- CpuFeatures.h - Checking a module's CPU features ---------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A module lists the LLVM names of the CPU features its code was compiled
// for. Running it on a machine without one of them would die of SIGILL
// somewhere inside a kernel, so the loader compares them, before dlopen,
// with the flags Linux reports in /proc/cpuinfo. Only instruction-set
// features are compared; tuning flags ("slow-3ops-lea", "fast-gather") and
// features every x86-64 has are not in the table and are ignored.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_CPUFEATURES_H
#define HKT_RUNTIME_CPUFEATURES_H

#include "runtime/Status.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hkt::runtime {

struct Manifest;

/// The /proc/cpuinfo flag that stands for an LLVM x86 feature name
/// ("sse4.1" -> "sse4_1", "lzcnt" -> "abm"), or std::nullopt when the feature
/// is not an instruction-set feature this runtime checks.
std::optional<std::string> cpuinfoFlagForFeature(std::string_view llvmFeature);

/// Parses the flags of the first processor in /proc/cpuinfo-formatted text.
std::set<std::string> parseCpuinfoFlags(const std::string &cpuinfo);

/// The flags of this machine, read from /proc/cpuinfo once; std::nullopt if
/// it cannot be read (then nothing can be checked).
const std::optional<std::set<std::string>> &hostCpuFlags();

/// The features of `features` (LLVM names, in order) that map to a cpuinfo
/// flag missing from `hostFlags`.
std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &features,
                   const std::set<std::string> &hostFlags);

/// Refuses a module (in directory `moduleDir`) whose manifest needs CPU
/// features missing from `hostFlags`, naming them and the CPU it was
/// compiled for.
/// Whether LLVM features `llvmFeatures` allow bf16 matmuls on AMX tiles
/// (amx-tile and amx-bf16): the one rule by which hkt-compile chooses AMX
/// over AVX512-BF16 for --precision bf16 and the runtime reads the choice
/// back from a manifest (TargetSpec::usesAmx).
bool amxBf16Among(const std::vector<std::string> &llvmFeatures);

Status checkCpuFeatures(const Manifest &manifest, const std::string &moduleDir,
                        const std::set<std::string> &hostFlags);

/// Asks Linux for the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM,
/// XTILEDATA) for this process, once: without it the first AMX instruction
/// of a bf16 module dies of SIGILL. Fails, with the kernel's reason, where
/// the kernel refuses (before 5.16, or AMX disabled).
Status requestAmxState();

} // namespace hkt::runtime

#endif // HKT_RUNTIME_CPUFEATURES_H
