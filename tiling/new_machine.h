// What a machine without a table of its own gets from the compiled-in
// tables (the fallback chain, tiling/fallback.h), as data: for the tuner's
// quick pass, which starts from it, and for reports that compare against it.
#pragma once
#include <optional>
#include <string>

#include "tiling/fallback.h"
#include "tiling/table.h"

namespace actgrad {

struct NewMachineFallback {
  // The fallback table's machine id and ISA family, its entries, then the
  // entries of the series it lacks from the next tables of the chain.
  tables::Table table;
  std::vector<bool> from_first;         // per entry: from the fallback table itself
  std::vector<std::string> gap_tables;  // the tables that filled series, in chain order
  MachineFacts facts;                   // the fallback table's facts (CompiledTable's)
  std::string reason;                   // why the chain picked it (TablePick::reason)
};
// The table the chain gives this machine posing as new (no table of its own
// id, no ACTGRAD_TILING_TABLE, no user cache); nullopt when that is the
// portable default (no entries) or nothing.
std::optional<NewMachineFallback> FallbackForNewMachine();
// This machine's own table, the one the library uses (ACTGRAD_TILING_TABLE,
// the user cache, or the compiled-in table of its id), in the same form
// (facts: this machine's; every entry from_first); nullopt when the library
// uses the fallback chain or the file no longer reads.
std::optional<NewMachineFallback> OwnTable();

}  // namespace actgrad
