// Tables compiled into the library by actgrad-tablegen (a generated source:
// no JSON parsing at run time on the compiled path).
#pragma once
#include <cstddef>
#include <cstdint>

#include "variants/split.h"

namespace actgrad::tables {

struct CompiledEntry {
  uint8_t op, dtype, mode, layout, octave;  // n in [2^octave, 2^(octave+1))
  const char* variant;  // tables::Entry::choice
  Split split;
  const char* one_thread_variant;  // tables::Entry::one_thread; nullptr: none
  Split one_thread_split;
  uint64_t size_lo, size_hi;  // tables::Entry::Lo(), Hi()
  int64_t grain;              // tables::Entry::rule's grain; -1: none (split.threads counts)
  // What it was tuned among (tiling/freshness.h): extra.tuning's search
  // version (0: none), candidate set (an index into the table's
  // candidate_sets; -1: none) and date ("": none).
  int search_version;
  int candidate_set;
  const char* tuned;
};

struct CompiledTable {
  const char* machine_id;
  const char* isa_family;
  const char* source;  // the JSON file it came from
  const CompiledEntry* entries;
  size_t count;
  // The machine facts of its provenance (tiling/fallback.h): vector features
  // separated by spaces, caches in bytes (0: unknown), cores (0: unknown).
  const char* features;
  uint64_t l2, llc;
  long cores;
  // provenance.candidate_sets, each "<hash> <name> <name>...", and the dates
  // of the runs merged into it, separated by spaces.
  const char* const* candidate_sets;
  size_t candidate_set_count;
  const char* run_dates;
};

extern const CompiledTable kCompiledTables[];
extern const size_t kNumCompiledTables;

}  // namespace actgrad::tables
