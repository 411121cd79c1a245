// The accuracy results document (docs/accuracy.json), its markdown rendering
// (docs/accuracy.md) and the loader the tuner uses.
//
// JSON, schema "actgrad-accuracy" version 1:
// {
//   "schema": "actgrad-accuracy", "version": 1,
//   "machine_id": "genuineintel-6-143", "cpu_model": "...", "isa_family": "x86-avx512",
//   "date": "2026-11-22T01:00:00Z", "command": "actgrad-accuracy --md ... --json ...",
//   "tool_version": "0.1.0", "fp32_count": 1000000, "seed": 12345,
//   "results": [
//     {"op": "gelu_bwd", "dtype": "f32", "variant": "gelu_bwd.f32.none.erf_as.u4.avx3",
//      "gelu_mode": "erf", "approx": "erf_as", "target": "avx3", "shippable": true,
//      "count": 1000426, "share": 1.0, "max_err": 1.2e-7, "max_ulp": 2.0,
//      "special_mismatch": 0, "over_hard_bound": 0,
//      "claimed_max_err": 2e-7, "g1_max_err": 1.1e-7, "claim_allowance": 2.6e-7,
//      "meets_claim": true, "g1_worst": "erf: x=-1.2345: got 0.1, reference 0.1000001",
//      "first_failure": ""}
//   ],
//   "not_run": [{"op": "...", "dtype": "...", "variant": "...", "target": "...",
//                "reason": "not run (CPU lacks avx512fp16)"}]
// }
// Non-finite numbers are written as null (read back as +Inf).
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/accuracy/check.h"

namespace actgrad::acc {

inline constexpr const char* kAccuracySchema = "actgrad-accuracy";
inline constexpr int kAccuracySchemaVersion = 1;

struct AccuracyDocument {
  std::string machine_id;
  std::string cpu_model;
  std::string isa_family;
  std::string date;     // ISO 8601 UTC
  std::string command;  // how it was produced
  std::string tool_version;
  size_t fp32_count = 0;
  uint64_t seed = 0;
  std::vector<VariantAccuracy> results;  // run == true
  std::vector<VariantAccuracy> not_run;  // run == false (only name/op/dtype/target/first_failure)
  // Where results not checked by this run came from (--keep): one line per
  // original run, e.g. "412 results of genuineintel-6-167 (Intel ...), 2026-11-25T09:01:55Z".
  std::vector<std::string> kept_from;
};

// --keep: the results of `earlier` for variants `now` did not check (absent
// from it, or "not run" on this CPU) are carried over, so a run on a CPU that
// lacks a target, or a --filter run, updates only what it checked. Variants
// not in `known` (renamed or removed since) are dropped. Each kept result
// names the run that checked it (`source`, carried through later --keep
// runs), and kept_from counts them per run. Returns how many were kept;
// *dropped counts the unknown ones.
size_t KeepEarlier(const AccuracyDocument& earlier, const std::vector<std::string>& known, AccuracyDocument* now,
                   size_t* dropped);

nlohmann::json ToJson(const VariantAccuracy& r);
nlohmann::json ToJson(const AccuracyDocument& d);
// The file text: the document with one result per line (diff-friendly).
std::string ToJsonText(const AccuracyDocument& d);
// Throws std::runtime_error with a message naming the bad field.
VariantAccuracy VariantAccuracyFromJson(const nlohmann::json& j);
AccuracyDocument AccuracyDocumentFromJson(const nlohmann::json& j);

// docs/accuracy.md: header (command, date, machine, rule, inputs), a summary
// per op and dtype, one table per op, the failing variants with their first
// failure and the variants not run on this CPU.
std::string ToMarkdown(const AccuracyDocument& d);

// Sorts results for presentation: op, dtype, GELU mode, approximation, then name.
void SortResults(std::vector<VariantAccuracy>* results);

// Writes `content` to path.tmp.<pid> and renames it over `path`. Throws
// std::runtime_error on failure (the target is left untouched then).
void WriteFileAtomic(const std::string& path, const std::string& content);

// ---- loader for the tuner ---------------------------------------------------
class AccuracyCacheError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AccuracyCache {
 public:
  AccuracyDocument doc;
  // nullptr when the variant is not in the cache.
  const VariantAccuracy* Find(std::string_view variant) const;
  // True only for a variant in the cache that was run and passed the rule.
  bool Shippable(std::string_view variant) const;
  void Index();

 private:
  std::unordered_map<std::string, size_t> by_name_;
};

// Reads an accuracy cache (docs/accuracy.json). A missing, unreadable or
// malformed file throws AccuracyCacheError with a message that says which
// file, what is wrong and how to regenerate it (never crashes on bad JSON).
AccuracyCache LoadAccuracyCache(const std::string& path);
// Same, without exceptions: false and *error set on failure.
bool TryLoadAccuracyCache(const std::string& path, AccuracyCache* out, std::string* error);

}  // namespace actgrad::acc
