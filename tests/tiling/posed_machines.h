// The committed tables' machines as fake machines: a test posing as one
// (PoseAsMachine) takes all of its recorded facts (id, ISA family, flags,
// caches, cores) from the table's provenance, so that it means the same on
// whatever CPU runs it. Tests run once per table (TEST_P over PosedTables).
#pragma once
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tiling/compiled_tables.h"
#include "tiling/dispatch.h"
#include "tiling/fallback.h"

namespace actgrad {

// The compiled-in tables of real machines (not "default"; with an ISA family).
inline std::vector<const tables::CompiledTable*> PosedTables() {
  std::vector<const tables::CompiledTable*> out;
  for (size_t i = 0; i < tables::kNumCompiledTables; ++i) {
    const tables::CompiledTable& t = tables::kCompiledTables[i];
    if (std::string(t.machine_id) != "default" && *t.isa_family) out.push_back(&t);
  }
  return out;
}

// A test name per table: its machine id with '-' as '_'.
inline std::string PosedName(const testing::TestParamInfo<const tables::CompiledTable*>& p) {
  std::string s = p.param->machine_id;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

namespace tables {
// The parameter as gtest prints it in a test's name: the machine id.
inline void PrintTo(const CompiledTable* t, std::ostream* os) { *os << t->machine_id; }
}  // namespace tables

}  // namespace actgrad
