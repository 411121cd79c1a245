// libFuzzer target: the tiling-table parser (tiling/table.h) on arbitrary
// bytes, as ACTGRAD_TILING_TABLE, actgrad-tune --verify and the table
// generator read them. Invariants: ParseTable never crashes or throws, a
// refusal always says why, and a table it accepts, written with ToJson and
// parsed again, is the same table (so the tuner's tables survive a rewrite).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tiling/table.h"

namespace {

using actgrad::tables::Entry;
using actgrad::tables::Table;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "table_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

bool SameEntry(const Entry& a, const Entry& b) {
  return a.op == b.op && a.dtype == b.dtype && a.mode == b.mode && a.layout == b.layout && a.octave == b.octave &&
         a.choice == b.choice && a.one_thread == b.one_thread && a.median_ns == b.median_ns &&
         a.spread_pct == b.spread_pct && a.runner_up.has_value() == b.runner_up.has_value() &&
         (!a.runner_up || (a.runner_up->choice == b.runner_up->choice && a.runner_up->median_ns == b.runner_up->median_ns)) &&
         a.extra == b.extra;
}

// The source version is not compared: a version 1 or 2 table is written back as version 3.
bool SameTable(const Table& a, const Table& b) {
  if (a.machine_id != b.machine_id || a.backend != b.backend || a.accuracy_class != b.accuracy_class ||
      a.provenance != b.provenance ||
      a.entries.size() != b.entries.size() || a.IsaFamily() != b.IsaFamily())
    return false;
  for (size_t i = 0; i < a.entries.size(); ++i)
    if (!SameEntry(a.entries[i], b.entries[i])) return false;
  return true;
}

void Check(const std::string& text, bool check_variants) {
  Table t;
  std::string error;
  if (!actgrad::tables::ParseTable(text, &t, &error, check_variants)) {
    if (error.empty()) Fail("refused without a message", "");
    return;
  }
  const std::string written = actgrad::tables::ToJson(t).dump(2);
  Table back;
  if (!actgrad::tables::ParseTable(written, &back, &error, check_variants)) Fail("ToJson's text is refused", error);
  if (!SameTable(t, back)) Fail("the round trip changed the table", written.substr(0, 2000));
  if (actgrad::tables::ToJson(back) != actgrad::tables::ToJson(t)) Fail("ToJson is not a fixed point", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Check(text, /*check_variants=*/false);  // any variant name (the Atlas tables' rules)
  Check(text, /*check_variants=*/true);   // CPU tables: the variants must exist and compute the entry
  return 0;
}
