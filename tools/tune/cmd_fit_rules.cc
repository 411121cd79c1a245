// `actgrad-tune fit-rules TABLE [--out NEW]`: a schema-3 table's absolute
// thread counts become thread rules fitted from those counts, without
// measuring (tools/tune/series.h FitRulesFromCounts).
#include <cstdio>

#include "tiling/table.h"
#include "tools/tune/cmd.h"
#include "tools/tune/series.h"

namespace actgrad::tune::cmd {

int FitRules(const FitRulesFlags& flags) {
  tables::Table t;
  std::string err;
  size_t fitted = 0;
  if (!tables::LoadTableFile(flags.in, &t, &err) || !FitRulesFromCounts(&t, &fitted, &err)) {
    std::fprintf(stderr, "actgrad-tune: %s%s; nothing written\n",
                 err.rfind(flags.in, 0) == 0 ? "" : (flags.in + ": ").c_str(), err.c_str());
    return 2;
  }
  t.provenance["thread_rules"] = "fitted by actgrad-tune fit-rules from the schema-" +
                                 std::to_string(t.source_version) + " thread counts (no crossovers bisected)";
  const std::string out = flags.out.empty() ? flags.in : flags.out;
  if (!tables::SaveTableFile(out, t, &err)) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  std::printf("wrote %s: %zu of %zu entries given a thread rule\n", out.c_str(), fitted, t.entries.size());
  return 0;
}

}  // namespace actgrad::tune::cmd
