#include "tiling/freshness.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace actgrad {
namespace {

using nlohmann::json;

std::string SeriesName(Op op, DType dtype, GeluApprox mode) {
  std::string s = std::string(OpName(op)) + " " + std::string(DTypeName(dtype));
  if (op == Op::kGeluBwd) s += mode == GeluApprox::kTanh ? " tanh" : " erf";
  return s;
}

// "2026-11-29T14:43:40Z" -> "2026-11-29"; anything else -> "".
std::string Day(const json& date) {
  if (!date.is_string()) return "";
  const std::string s = date.get<std::string>();
  return s.size() >= 10 && s[4] == '-' && s[7] == '-' ? s.substr(0, 10) : "";
}

}  // namespace

std::vector<std::string> SeriesCandidates(Op op, DType dtype, GeluApprox mode,
                                          const std::function<bool(const Variant&)>& runs) {
  std::vector<std::string> names;
  for (const Variant& v : Variants())
    if (v.op == op && v.dtype == dtype && (op != Op::kGeluBwd || v.gelu_mode == mode) && runs(v))
      names.push_back(v.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string CandidateSetHash(const std::vector<std::string>& names) {
  uint64_t h = 1469598103934665603ull;
  for (const std::string& n : names)
    for (const char c : n + '\n') h = (h ^ uint8_t(c)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

TunedAmongRecords RecordsOf(const tables::Table& t) {
  TunedAmongRecords r;
  for (const tables::Entry& e : t.entries) {
    TunedAmong a{e.op, e.dtype, e.mode};
    if (e.extra.is_object() && e.extra.contains("tuning") && e.extra["tuning"].is_object()) {
      const json& k = e.extra["tuning"];
      if (k.contains("search_version") && k["search_version"].is_number_integer())
        a.search_version = k["search_version"].get<int>();
      if (k.contains("candidate_set") && k["candidate_set"].is_string()) a.set = k["candidate_set"].get<std::string>();
      if (k.contains("tuned")) a.tuned = Day(k["tuned"]);
    }
    r.entries.push_back(std::move(a));
  }
  const json& p = t.provenance;
  if (p.is_object() && p.contains("candidate_sets") && p["candidate_sets"].is_object())
    for (const auto& [hash, names] : p["candidate_sets"].items()) {
      if (!names.is_array()) continue;
      std::vector<std::string>& out = r.sets[hash];
      for (const json& n : names)
        if (n.is_string()) out.push_back(n.get<std::string>());
    }
  if (p.is_object() && p.contains("merged_from") && p["merged_from"].is_array())
    for (const json& run : p["merged_from"])
      if (run.is_object() && run.contains("date") && !Day(run["date"]).empty()) r.run_dates.push_back(Day(run["date"]));
  if (p.is_object() && p.contains("date") && !Day(p["date"]).empty()) r.run_dates.push_back(Day(p["date"]));
  return r;
}

void RecordTunedAmong(tables::Table* t, int search_version, const std::string& date,
                      const std::function<bool(const Variant&)>& runs) {
  json sets = json::object();
  for (tables::Entry& e : t->entries) {
    const std::vector<std::string> names = SeriesCandidates(e.op, e.dtype, e.mode, runs);
    const std::string hash = CandidateSetHash(names);
    sets[hash] = names;
    if (!e.extra.is_object()) e.extra = json::object();
    if (!e.extra.contains("tuning") || !e.extra["tuning"].is_object()) e.extra["tuning"] = json::object();
    json& k = e.extra["tuning"];
    k["search_version"] = search_version;
    k["candidate_set"] = hash;
    k["tuned"] = Day(json(date));
  }
  t->provenance["candidate_sets"] = sets;
}

json MergedCandidateSets(const tables::Table& base, const tables::Table& run, const std::vector<tables::Entry>& merged) {
  std::set<std::string> named;
  for (const tables::Entry& e : merged)
    if (e.extra.is_object() && e.extra.contains("tuning") && e.extra["tuning"].is_object() &&
        e.extra["tuning"].contains("candidate_set") && e.extra["tuning"]["candidate_set"].is_string())
      named.insert(e.extra["tuning"]["candidate_set"].get<std::string>());
  json out = json::object();
  for (const tables::Table* t : {&base, &run})
    if (t->provenance.is_object() && t->provenance.contains("candidate_sets") &&
        t->provenance["candidate_sets"].is_object())
      for (const auto& [hash, names] : t->provenance["candidate_sets"].items())
        if (named.count(hash)) out[hash] = names;
  return out;
}

Freshness FreshnessOf(const TunedAmongRecords& r, const std::function<bool(const Variant&)>& runs) {
  Freshness f;
  std::map<std::tuple<int, int, int>, std::vector<std::string>> now;  // per series: what runs now
  std::map<std::tuple<int, int, int>, std::set<std::string>> tuned;   // per series: the union of its sets
  std::vector<std::string> days;
  for (const TunedAmong& a : r.entries) {
    const std::tuple<int, int, int> key{int(a.op), int(a.dtype), int(a.mode)};
    auto it = now.find(key);
    if (it == now.end()) it = now.emplace(key, SeriesCandidates(a.op, a.dtype, a.mode, runs)).first;
    ++f.cells;
    if (!a.tuned.empty()) days.push_back(a.tuned);
    if (a.search_version > 0) {
      f.search_version_min = f.search_version_min ? std::min(f.search_version_min, a.search_version) : a.search_version;
      f.search_version_max = std::max(f.search_version_max, a.search_version);
    }
    const auto set = r.sets.find(a.set);
    if (a.set.empty() || set == r.sets.end()) {
      ++f.stale_cells, ++f.unrecorded_cells;
      continue;
    }
    const std::set<std::string> had(set->second.begin(), set->second.end());
    tuned[key].insert(had.begin(), had.end());
    std::vector<std::string> fresh;
    for (const std::string& n : it->second)
      if (!had.count(n)) fresh.push_back(n);
    if (fresh.empty()) continue;
    ++f.stale_cells;
    auto& named = f.new_candidates[SeriesName(a.op, a.dtype, a.mode)];
    for (const std::string& n : fresh)
      if (std::find(named.begin(), named.end(), n) == named.end()) named.push_back(n);
  }
  for (const auto& [key, names] : now) {
    f.candidates_now += names.size();
    const auto t = tuned.find(key);
    if (t != tuned.end())
      for (const std::string& n : names) f.candidates_tuned += t->second.count(n);
  }
  if (days.empty()) days = r.run_dates;
  if (!days.empty()) {
    f.tuned_first = *std::min_element(days.begin(), days.end());
    f.tuned_last = *std::max_element(days.begin(), days.end());
  }
  return f;
}

std::string Freshness::Summary() const {
  std::string s;
  if (unrecorded_cells == cells)
    s = "candidate sets not recorded (" + std::to_string(candidates_now) + " candidates now available): all " +
        std::to_string(cells) + " cells count as having new candidates";
  else
    s = "tuned among " + std::to_string(candidates_tuned) + " of " + std::to_string(candidates_now) +
        " candidates now available; " + std::to_string(stale_cells) + " of " + std::to_string(cells) +
        " cells have new candidates" +
        (unrecorded_cells ? " (" + std::to_string(unrecorded_cells) + " without a record)" : "");
  if (!tuned_first.empty())
    s += "; tuned " + (tuned_first == tuned_last ? tuned_first : tuned_first + " to " + tuned_last);
  return s;
}

json Freshness::ToJson() const {
  json j = {{"cells", cells},
            {"stale_cells", stale_cells},
            {"unrecorded_cells", unrecorded_cells},
            {"candidates_now", candidates_now},
            {"candidates_tuned", candidates_tuned},
            {"tuned_first", tuned_first},
            {"tuned_last", tuned_last},
            {"new_candidates", new_candidates},
            {"summary", Summary()}};
  if (search_version_max) j["search_versions"] = {search_version_min, search_version_max};
  return j;
}

}  // namespace actgrad
