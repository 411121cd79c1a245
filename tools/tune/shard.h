// Tuning a fleet (docs/fleet.md):
// `actgrad-tune --shard K/N` tunes shard K's part of the run, and
// `actgrad-tune merge` joins the shard tables into one table.
//
// The unit of work is a series: every octave of one op / dtype / GELU mode /
// layout (GroupKey + layout), never single cells, because the tuner's
// post-processing of a series (crossovers between adjacent octaves, the
// thread grain) needs the whole series. Series go to shards by weight (the
// sum of CellSpec::weight, the budget's weights): longest processing time
// first, each to the lightest shard so far, ties by series key and shard
// index, so the assignment depends on the run's cells only.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tiling/table.h"
#include "tools/tune/tuner.h"

namespace actgrad::tune {

// "K/N" with 1 <= K <= N <= kMaxShards.
inline constexpr int kMaxShards = 4096;
bool ParseShard(const std::string& text, int* index, int* count, std::string* error);

// "gelu_bwd/f32/none/contig": GroupKey(cell) + "/" + layout.
std::string SeriesKey(const Cell& c);

struct ShardPlan {
  std::vector<std::vector<std::string>> series;  // per shard (index 0 = shard 1), series keys sorted
  std::vector<double> weight;                    // per shard
};
// Assigns the series of `cells` (PlanCells' output, unsharded) to `count`
// shards. Every series lands in exactly one shard; shards may be empty when
// there are fewer series than shards.
ShardPlan AssignSeries(const std::vector<CellSpec>& cells, int count);
// The cells of shard `index` (1-based) of `count`, in PlanCells' order.
std::vector<CellSpec> ShardCells(const std::vector<CellSpec>& cells, int index, int count);
// The provenance block of shard (index, count) of cfg's run:
// {"index", "count", "series": [its series], "plan": hash of the whole
// assignment (every shard of one run has the same)}.
nlohmann::json ShardProvenance(const TuneConfig& cfg, int index, int count);

// One input of a merge: a shard table and where it was read from.
struct ShardTable {
  std::string path;
  tables::Table table;
};
struct MergeSummary {
  int count = 0;                  // N
  std::vector<int> merged;        // shard indices, ascending
  std::vector<int> missing;       // allowed with allow_partial
  size_t entries = 0;
};
// Joins shard tables into one. Refuses (false, `error` names the file and
// why) a table without provenance.shard, shards of another backend, machine
// id, measurement key (provenance.measurement_key), shard count or cell plan,
// two shards with the same index, cells in two shards, and (unless
// allow_partial) missing shards. Provenance: the fields equal in every shard
// once, "shards": per shard its file, its "shard" block and the fields that
// differ, and "merge": {count, merged, missing, entries}.
bool MergeShardTables(const std::vector<ShardTable>& shards, bool allow_partial, tables::Table* out,
                      MergeSummary* summary, std::string* error);
// Loads the inputs (validating), merges, writes `out_path` atomically
// (tables::SaveTableFile) and reads it back through the validating loader.
// Nothing is written when anything is refused. Never throws (but bad_alloc).
bool MergeShardFiles(const std::string& out_path, const std::vector<std::string>& inputs, bool allow_partial,
                     MergeSummary* summary, std::string* error);

}  // namespace actgrad::tune
