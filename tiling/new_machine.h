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
  tables::Table table;  // the compiled-in table's entries, machine id and ISA family
  MachineFacts facts;   // its facts (CompiledTable's)
  std::string reason;   // why the chain picked it (TablePick::reason)
};
// The table the chain gives this machine posing as new (no table of its own
// id, no ACTGRAD_TILING_TABLE, no user cache); nullopt when that is the
// portable default (no entries) or nothing.
std::optional<NewMachineFallback> FallbackForNewMachine();

}  // namespace actgrad
