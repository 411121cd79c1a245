// Which compiled-in table a machine without a table of its own uses: the
// fallback chain over machine facts (docs/tuning.md, "Which table the
// library uses"). Pure functions over facts, so tests can pose as any
// machine; the dispatch feeds them this machine's facts and the tables'.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "variants/variant.h"

namespace actgrad {

// What a table's choices depend on, of one machine: read off this one
// (ThisMachineFacts) or off a table's provenance (actgrad-tablegen). A test
// that poses as a machine poses as all of it (PoseAsMachine, dispatch.h).
struct MachineFacts {
  std::string id;      // "genuineintel-6-143", "arm-0x41-0xd0c"
  std::string vendor;  // the id's first part: "genuineintel", "arm"
  long family = -1, model = -1;  // the id's numbers (Arm: implementer, part); -1: none
  std::string isa_family;        // "x86-avx512", ...
  std::vector<std::string> features;  // its flags among kVectorFeatures, in that order
  uint64_t l2 = 0, llc = 0;           // bytes of one core's L2 and of the last level; 0: unknown
  long cores = 0;                     // 0: unknown
  long llc_sharing = 0;               // CPUs sharing the last level; 0: unknown (then `cores`)
};

// One CPU's part of the last-level cache of `f`: llc over the CPUs sharing
// it (llc_sharing, else cores, else 1); 0 when llc is unknown. For this
// machine it is LastLevelCachePartBytes (variants/cache.h).
uint64_t LlcPartBytes(const MachineFacts& f);
// The vector features (kVectorFeatures' spelling) a variant of `target`
// (Variant::target) needs: "avx512fp16" -> avx512f, avx512bw, avx512vl,
// avx512_fp16; "scalar" -> none. An unknown target needs an unknown flag.
std::vector<std::string> TargetFeatures(std::string_view target);
// Whether a machine with facts `f` runs variant v (its target's features
// are among f.features): the dispatch's test for a machine it poses as.
// For this machine Variant::supported is the exact answer (CPUID).
bool RunsOn(const Variant& v, const MachineFacts& f);

// The CPU flags (as /proc/cpuinfo spells them) that decide which kernel
// variants run and how fast: SIMD width, 16-bit arithmetic and conversions.
extern const std::vector<std::string> kVectorFeatures;

// The flags of `flags` that are in kVectorFeatures, in kVectorFeatures' order.
std::vector<std::string> VectorFeatures(const std::vector<std::string>& flags);
// Sets id, vendor, family and model from a machine id "<vendor>-<a>-<b>"
// (decimal or 0x-hex numbers); a part that is not a number stays -1.
void ParseMachineId(const std::string& id, MachineFacts* f);
// This machine's facts (MachineId, IsaFamily, /proc/cpuinfo's flags, the
// caches of kernels/variants/cache.h, the online cores).
MachineFacts ThisMachineFacts();

// How far apart two machines' tables are likely to be: the share of vector
// features one has and the other lacks (weighted most), then the log2 ratios
// of L2, last-level cache and cores. 0: the same facts.
double FactsDistance(const MachineFacts& a, const MachineFacts& b);

// A compiled-in table as the chain sees it.
struct TableCandidate {
  MachineFacts facts;  // facts.id is the table's machine id ("default" for the default)
  size_t runnable = 0;  // its entries this CPU can run
};
struct TablePick {
  int index = -1;  // into the candidates; -1: none (not even a default)
  std::string reason;
};
// The chain: the table of `me`'s exact id; else, of the tables of the same
// ISA family with an entry this CPU can run, one of the same vendor and
// family with the nearest model; else the one with the nearest facts
// (FactsDistance); else "default". Ties go to more runnable entries, then
// to the first. A table whose id is in `hidden` is never picked (a machine
// posing as new: actgrad-tune --as-new-machine).
TablePick PickTable(const MachineFacts& me, const std::vector<TableCandidate>& tables,
                    const std::vector<std::string>& hidden = {});
// The tables the chain would pick one after another (each next one with the
// earlier ones hidden), the default excluded: a fallback table first, then
// the tables that fill the series (op, dtype, GELU formula, layout) it lacks.
// Empty when the chain gives only the default.
std::vector<TablePick> RankTables(const MachineFacts& me, const std::vector<TableCandidate>& tables,
                                  const std::vector<std::string>& hidden = {});

}  // namespace actgrad
