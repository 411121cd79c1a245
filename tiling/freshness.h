// What a table was tuned among, and which of its cells have candidates it
// never measured. The tuner records, per entry, its search version, the date
// and a hash naming the candidate set of the entry's series (op, dtype, GELU
// formula): the variants of that series the tuning machine runs
// (SeriesCandidates); the table's provenance.candidate_sets maps each hash to
// the names. The dispatch compares them with the variants that run now
// (ActiveTableFreshness: once, when asked; never per call). An entry without
// a record (a table written before the tuner kept them) counts as stale.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actgrad/types.h"
#include "tiling/table.h"
#include "variants/variant.h"

namespace actgrad {

// The candidate set of a series on a machine: the names of the variants of
// (op, dtype, mode) that `runs` accepts, sorted. The tuner's candidates are
// these less the accuracy gate's rejections (the same ones then and now).
std::vector<std::string> SeriesCandidates(Op op, DType dtype, GeluApprox mode,
                                          const std::function<bool(const Variant&)>& runs);
// A short stable name of a set (FNV-1a of the sorted names, 12 hex digits).
std::string CandidateSetHash(const std::vector<std::string>& names);

// One entry's record, as the dispatch keeps it.
struct TunedAmong {
  Op op;
  DType dtype;
  GeluApprox mode;
  int search_version = 0;  // 0: not recorded
  std::string set;         // CandidateSetHash; "": not recorded
  std::string tuned;       // YYYY-MM-DD; "": not recorded
};
// A table's records: its entries' (in order) and the sets they name.
struct TunedAmongRecords {
  std::vector<TunedAmong> entries;
  std::map<std::string, std::vector<std::string>> sets;  // hash -> names
  std::vector<std::string> run_dates;  // provenance: the dates of the runs merged into it, YYYY-MM-DD
};
TunedAmongRecords RecordsOf(const tables::Table& t);

// Writes the records of a run's entries into its table (the tuner, once per
// run): search_version, tuned (YYYY-MM-DD of `date`, ISO 8601) and
// candidate_set into each entry's extra.tuning, the sets into
// provenance.candidate_sets. `runs`: the variants this machine runs.
void RecordTunedAmong(tables::Table* t, int search_version, const std::string& date,
                      const std::function<bool(const Variant&)>& runs);
// MergeTables' part: base's sets still named by entries of `merged`, and run's.
nlohmann::json MergedCandidateSets(const tables::Table& base, const tables::Table& run,
                                   const std::vector<tables::Entry>& merged);

// A table's cells against the variants that run now.
struct Freshness {
  size_t cells = 0;             // entries
  size_t stale_cells = 0;       // entries whose series has candidates their set lacks, or without a record
  size_t unrecorded_cells = 0;  // of those, entries without a record
  size_t candidates_now = 0;    // over the table's series: the variants that run now
  size_t candidates_tuned = 0;  // of those, in the sets the entries were tuned among
  int search_version_min = 0, search_version_max = 0;  // of the recorded entries; 0: none
  std::string tuned_first, tuned_last;                 // dates of the entries (else of the runs)
  // Per stale series ("gelu_bwd f16 erf"): the new candidates' names.
  std::map<std::string, std::vector<std::string>> new_candidates;
  // "tuned among 214 of 302 candidates now available; 512 of 891 cells have
  // new candidates; tuned 2026-11-26 to 2026-11-29"
  std::string Summary() const;
  nlohmann::json ToJson() const;
};
Freshness FreshnessOf(const TunedAmongRecords& r, const std::function<bool(const Variant&)>& runs);

}  // namespace actgrad
