// The table a tuning run writes (--out): the check before measuring and the
// merge into an existing table, so that a run never ends without a place to
// write its table and a partial run never shrinks a table (docs/tuning.md).
#pragma once
#include <cstddef>
#include <string>

#include "tiling/table.h"

namespace actgrad::tune {

// What writing --out will do.
struct OutPlan {
  enum class Action {
    kCreate,   // no file yet: write the run's table
    kMerge,    // a valid table of this machine and backend: the run's cells go into it
    kReplace,  // --force over a file that is not such a table
  };
  Action action = Action::kCreate;
  tables::Table existing;   // kMerge: the table in the file
  std::string replaced;     // kReplace: what the file is ("is the table of machine ..."), for messages
};

// Decides what a run of (machine_id, backend) does with `path`, creating
// nothing. Fails (with a message naming the path) when the path is a
// directory or not a regular file, when its directory cannot be created or
// written, and, unless `force`, when the file exists but is not a readable,
// valid table of the same machine_id, backend and accuracy class (a
// near-exact run merged into a rule table would mix the classes).
bool PlanOut(const std::string& path, const std::string& machine_id, const std::string& backend, bool force,
             OutPlan* plan, std::string* error, AccuracyClass cls = AccuracyClass::kRule);

struct MergeCounts {
  size_t added = 0;     // cells the base table did not have
  size_t replaced = 0;  // cells of the base table the run tuned again
  size_t kept = 0;      // cells of the base table the run did not tune
};

// The run's entries over `base`: a cell (op, dtype, GELU mode, layout,
// octave) in both takes the run's entry, every other entry of either is kept;
// entries sorted by cell (the order a full run writes). Provenance: the run's,
// plus "merged_from" (the earlier runs, oldest first: base's own
// "merged_from" and then base's run with how many of its entries remain) and
// "merge" (the counts); just the run's when no entry of base is kept.
tables::Table MergeTables(const tables::Table& base, const tables::Table& run, MergeCounts* counts);

struct WriteOutcome {
  OutPlan::Action action = OutPlan::Action::kCreate;
  MergeCounts counts;  // kMerge
  std::string replaced;
  size_t entries = 0;  // in the file written
};

// Writes a run's table to `path`: plans again (the file may have changed
// while the run measured), merges, creates the directory, saves, and reads
// the file back through the validating loader. Never throws.
bool WriteRunTable(const std::string& path, const tables::Table& run, bool force, WriteOutcome* outcome,
                   std::string* error);

}  // namespace actgrad::tune
