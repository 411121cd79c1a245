#include "tiling/fallback.h"

#include <unistd.h>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "tiling/machine.h"
#include "variants/cache.h"

namespace actgrad {

const std::vector<std::string> kVectorFeatures = {
    // x86
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
    "avx_vnni", "amx_bf16", "amx_tile",
    // Arm
    "asimd", "asimdhp", "fphp", "sve", "sve2", "bf16", "svebf16"};

std::vector<std::string> VectorFeatures(const std::vector<std::string>& flags) {
  std::vector<std::string> out;
  for (const auto& f : kVectorFeatures)
    if (std::find(flags.begin(), flags.end(), f) != flags.end()) out.push_back(f);
  return out;
}

namespace {

// This process's vector features. On Arm Linux they come from the auxiliary
// vector: what the kernel (or QEMU's user mode, whose /proc/cpuinfo describes
// the host) lets this process run; elsewhere from /proc/cpuinfo's flags.
std::vector<std::string> ThisProcessFeatures() {
#if defined(__aarch64__) && defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  const std::pair<bool, const char*> caps[] = {
      {(hw & HWCAP_ASIMD) != 0, "asimd"}, {(hw & HWCAP_ASIMDHP) != 0, "asimdhp"}, {(hw & HWCAP_FPHP) != 0, "fphp"},
      {(hw & HWCAP_SVE) != 0, "sve"},
#ifdef HWCAP2_SVE2
      {(hw2 & HWCAP2_SVE2) != 0, "sve2"},
#endif
#ifdef HWCAP2_BF16
      {(hw2 & HWCAP2_BF16) != 0, "bf16"},
#endif
#ifdef HWCAP2_SVEBF16
      {(hw2 & HWCAP2_SVEBF16) != 0, "svebf16"},
#endif
  };
  std::vector<std::string> flags;
  for (const auto& [has, name] : caps)
    if (has) flags.push_back(name);
  (void)hw2;
  return VectorFeatures(flags);
#else
  return VectorFeatures(CpuFlags());
#endif
}

// "6" -> 6, "0x41" -> 65; -1 for anything else (empty, signs, trailing text).
long ParseIdNumber(const std::string& s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return -1;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 0);
  return end && *end == 0 && v >= 0 ? v : -1;
}

// |log2(a / b)|, or 1 when either is unknown.
double LogRatio(double a, double b) { return a > 0 && b > 0 ? std::fabs(std::log2(a / b)) : 1.0; }

bool Hidden(const std::string& id, const std::vector<std::string>& hidden) {
  return std::find(hidden.begin(), hidden.end(), id) != hidden.end();
}

// The index of the table passing `eligible` with the lowest `score`, more
// runnable entries breaking ties, then the first; -1: none.
template <class Eligible, class Score>
int Best(const std::vector<TableCandidate>& tables, Eligible eligible, Score score) {
  int best = -1;
  for (int i = 0; i < int(tables.size()); ++i) {
    if (!eligible(tables[size_t(i)])) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const auto &a = tables[size_t(i)], &b = tables[size_t(best)];
    const double da = score(a), db = score(b);
    if (da < db || (da == db && a.runnable > b.runnable)) best = i;
  }
  return best;
}

}  // namespace

void ParseMachineId(const std::string& id, MachineFacts* f) {
  f->id = id;
  std::vector<std::string> parts;
  std::istringstream ss(id);
  for (std::string p; std::getline(ss, p, '-');) parts.push_back(p);
  f->vendor = parts.empty() ? "" : parts[0];
  f->family = parts.size() > 1 ? ParseIdNumber(parts[1]) : -1;
  f->model = parts.size() > 2 ? ParseIdNumber(parts[2]) : -1;
}

MachineFacts ThisMachineFacts() {
  MachineFacts f;
  ParseMachineId(MachineId(), &f);
  f.isa_family = IsaFamily();
  f.features = ThisProcessFeatures();
  f.l2 = L2CacheBytes();
  f.llc = LastLevelCacheBytes();
  f.cores = sysconf(_SC_NPROCESSORS_ONLN);
  f.llc_sharing = long(LastLevelCacheBytes() / std::max<size_t>(1, LastLevelCachePartBytes()));
  return f;
}

uint64_t LlcPartBytes(const MachineFacts& f) {
  const long sharing = f.llc_sharing > 0 ? f.llc_sharing : f.cores > 0 ? f.cores : 1;
  return f.llc / uint64_t(sharing);
}

std::vector<std::string> TargetFeatures(std::string_view target) {
  static const std::vector<std::pair<std::string_view, std::vector<std::string>>> kNeeds = {
      {"scalar", {}},
      {"emu128", {}},
      {"sse4", {"sse4_2"}},
      {"avx2", {"avx2", "fma", "f16c"}},
      {"avx3", {"avx512f", "avx512bw", "avx512vl"}},
      {"avx512", {"avx512f", "avx512bw", "avx512vl"}},
      {"avx512bf16", {"avx512f", "avx512bw", "avx512vl", "avx512_bf16"}},
      {"avx512fp16", {"avx512f", "avx512bw", "avx512vl", "avx512_fp16"}},
      {"neon", {"asimd"}},
      {"sve", {"sve"}},
      {"sve_256", {"sve"}},
      {"sve2", {"sve2"}},
      {"sve2_128", {"sve2"}},
  };
  for (const auto& [t, needs] : kNeeds)
    if (t == target) return needs;
  return {"unknown-target:" + std::string(target)};
}

bool RunsOn(const Variant& v, const MachineFacts& f) {
  for (const std::string& need : TargetFeatures(v.target))
    if (std::find(f.features.begin(), f.features.end(), need) == f.features.end()) return false;
  return true;
}

double FactsDistance(const MachineFacts& a, const MachineFacts& b) {
  size_t both = 0, either = 0;
  for (const auto& f : kVectorFeatures) {
    const bool in_a = std::find(a.features.begin(), a.features.end(), f) != a.features.end();
    const bool in_b = std::find(b.features.begin(), b.features.end(), f) != b.features.end();
    both += in_a && in_b, either += in_a || in_b;
  }
  const double features = either ? 1.0 - double(both) / double(either) : 0.0;
  return 4.0 * features + LogRatio(double(a.l2), double(b.l2)) + 0.5 * LogRatio(double(a.llc), double(b.llc)) +
         0.5 * LogRatio(double(a.cores), double(b.cores));
}

TablePick PickTable(const MachineFacts& me, const std::vector<TableCandidate>& tables,
                    const std::vector<std::string>& hidden) {
  const auto visible = [&](const TableCandidate& t) { return !Hidden(t.facts.id, hidden); };
  for (int i = 0; i < int(tables.size()); ++i)
    if (visible(tables[size_t(i)]) && tables[size_t(i)].facts.id == me.id) return {i, "exact machine id"};
  // Of the ISA family, with something to run.
  const auto kin = [&](const TableCandidate& t) {
    return visible(t) && t.runnable > 0 && !me.isa_family.empty() && t.facts.isa_family == me.isa_family;
  };
  const auto sibling = [&](const TableCandidate& t) {
    return kin(t) && !me.vendor.empty() && t.facts.vendor == me.vendor && me.family >= 0 &&
           t.facts.family == me.family && me.model >= 0 && t.facts.model >= 0;
  };
  if (int i = Best(tables, sibling, [&](const TableCandidate& t) { return double(std::labs(t.facts.model - me.model)); });
      i >= 0)
    return {i, "same vendor and family, nearest model"};
  if (int i = Best(tables, kin, [&](const TableCandidate& t) { return FactsDistance(me, t.facts); }); i >= 0)
    return {i, "nearest machine facts in ISA family " + me.isa_family};
  for (int i = 0; i < int(tables.size()); ++i)
    if (tables[size_t(i)].facts.id == "default") return {i, "portable default"};
  return {};
}

std::vector<TablePick> RankTables(const MachineFacts& me, const std::vector<TableCandidate>& tables,
                                  const std::vector<std::string>& hidden) {
  std::vector<TablePick> ranked;
  std::vector<std::string> seen = hidden;
  for (TablePick p = PickTable(me, tables, seen); p.index >= 0 && tables[size_t(p.index)].facts.id != "default";
       p = PickTable(me, tables, seen)) {
    ranked.push_back(p);
    seen.push_back(tables[size_t(p.index)].facts.id);
  }
  return ranked;
}

}  // namespace actgrad
