#include "tools/tune/shard.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "tools/inputs/hash.h"
#include "tools/tune/measurement_key.h"
#include "tools/tune/strings.h"

namespace actgrad::tune {

using json = nlohmann::json;

namespace {

bool ParsePositive(const std::string& s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string Describe(const tables::Entry& e) {
  return std::string(OpName(e.op)) + "/" + std::string(DTypeName(e.dtype)) + "/" +
         (e.op == Op::kGeluBwd ? (e.mode == GeluApprox::kTanh ? "tanh" : "none") : "-") + "/" +
         tables::LayoutName(e.layout) + "/o" + std::to_string(e.octave);
}

// provenance.shard of a shard table, checked.
bool ShardOf(const ShardTable& s, int* index, int* count, std::string* plan, std::string* error) {
  const json& p = s.table.provenance;
  const auto it = p.is_object() ? p.find("shard") : p.end();
  if (it == p.end() || !it->is_object())
    return Fail(error, s.path + " is not a shard table (no provenance.shard; tune with --shard K/N)");
  const json& sh = *it;
  const auto num = [&](const char* k, int* v) {
    const auto f = sh.find(k);
    if (f == sh.end() || !f->is_number_integer() || f->get<int64_t>() < 1 || f->get<int64_t>() > kMaxShards)
      return false;
    *v = f->get<int>();
    return true;
  };
  if (!num("index", index) || !num("count", count) || *index > *count)
    return Fail(error, s.path + ": provenance.shard has no valid index and count (1 <= index <= count)");
  const auto pl = sh.find("plan");
  *plan = pl != sh.end() && pl->is_string() ? pl->get<std::string>() : "";
  return true;
}

json KeyOf(const tables::Table& t) {
  const json& p = t.provenance;
  const auto it = p.is_object() ? p.find("measurement_key") : p.end();
  return it == p.end() ? json() : *it;
}

std::string Hash(const json& key) {
  const auto it = key.is_object() ? key.find("hash") : key.end();
  return it != key.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

bool ParseShard(const std::string& text, int* index, int* count, std::string* error) {
  const auto bad = [&](const std::string& why) {
    return Fail(error, "--shard \"" + text + "\": " + why + " (K/N with 1 <= K <= N, e.g. --shard 2/4)");
  };
  const size_t slash = text.find('/');
  int k = 0, n = 0;
  if (slash == std::string::npos || !ParsePositive(text.substr(0, slash), &k) ||
      !ParsePositive(text.substr(slash + 1), &n))
    return bad("not K/N");
  if (n < 1) return bad("N must be at least 1");
  if (n > kMaxShards) return bad("N must be at most " + std::to_string(kMaxShards));
  if (k < 1 || k > n) return bad("K must be in 1.." + std::to_string(n));
  *index = k;
  *count = n;
  return true;
}

std::string SeriesKey(const Cell& c) { return GroupKey(c) + "/" + c.layout; }

ShardPlan AssignSeries(const std::vector<CellSpec>& cells, int count) {
  count = std::max(count, 1);
  std::map<std::string, double> weight;  // sorted by key: the tie order
  for (const auto& c : cells) weight[SeriesKey(c.cell)] += c.weight;
  std::vector<std::pair<std::string, double>> order(weight.begin(), weight.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  ShardPlan plan;
  plan.series.resize(size_t(count));
  plan.weight.assign(size_t(count), 0.0);
  for (const auto& [key, w] : order) {
    size_t best = 0;  // the lightest shard, the lowest index among equals
    for (size_t s = 1; s < plan.weight.size(); ++s)
      if (plan.weight[s] < plan.weight[best]) best = s;
    plan.series[best].push_back(key);
    plan.weight[best] += w;
  }
  for (auto& s : plan.series) std::sort(s.begin(), s.end());
  return plan;
}

std::vector<CellSpec> ShardCells(const std::vector<CellSpec>& cells, int index, int count) {
  const ShardPlan plan = AssignSeries(cells, count);
  std::vector<CellSpec> out;
  if (index < 1 || index > int(plan.series.size())) return out;
  const std::set<std::string> mine(plan.series[size_t(index - 1)].begin(), plan.series[size_t(index - 1)].end());
  for (const auto& c : cells)
    if (mine.count(SeriesKey(c.cell))) out.push_back(c);
  return out;
}

json ShardProvenance(const TuneConfig& cfg, int index, int count) {
  TuneConfig whole = cfg;
  whole.shard_index = whole.shard_count = 0;
  const std::vector<CellSpec> cells = PlanCells(whole);
  const ShardPlan plan = AssignSeries(cells, count);
  // The plan's identity: every shard's series and their cells, in shard order.
  std::map<std::string, std::string> cell_keys;  // series -> its cells' keys
  for (const auto& c : cells) cell_keys[SeriesKey(c.cell)] += c.key + ",";
  uint64_t h = inputs::kFnvBasis;
  for (size_t s = 0; s < plan.series.size(); ++s)
    for (const std::string& key : plan.series[s])
      h = inputs::Fnv1a(std::to_string(s) + ":" + key + ":" + cell_keys[key] + "\n", h);
  const std::vector<std::string> mine =
      index >= 1 && index <= count ? plan.series[size_t(index - 1)] : std::vector<std::string>{};
  return json{{"index", index}, {"count", count}, {"series", mine}, {"plan", inputs::Hex12(h)}};
}

bool MergeShardTables(const std::vector<ShardTable>& shards, bool allow_partial, tables::Table* out,
                      MergeSummary* summary, std::string* error) {
  if (shards.empty()) return Fail(error, "merge: no shard tables given");
  const ShardTable& first = shards.front();
  int index0 = 0, count = 0;
  std::string plan0;
  if (!ShardOf(first, &index0, &count, &plan0, error)) return false;
  const json key0 = KeyOf(first.table);
  if (!key0.is_object())
    return Fail(error, first.path + " has no provenance.measurement_key (tuned by an older actgrad-tune?)");
  std::map<int, const ShardTable*> by_index;
  std::map<tables::CellKey, const ShardTable*> cells;
  for (const ShardTable& s : shards) {
    int index = 0, n = 0;
    std::string plan;
    if (!ShardOf(s, &index, &n, &plan, error)) return false;
    const tables::Table& t = s.table;
    if (t.backend != first.table.backend)
      return Fail(error, s.path + " is a table of backend " + t.backend + ", " + first.path + " of backend " +
                             first.table.backend + ": shards of one run have one backend");
    if (t.machine_id != first.table.machine_id)
      return Fail(error, s.path + " was tuned on machine id " + t.machine_id + ", " + first.path + " on " +
                             first.table.machine_id + ": shards must come from identical machines");
    const json key = KeyOf(t);
    if (!key.is_object())
      return Fail(error, s.path + " has no provenance.measurement_key (tuned by an older actgrad-tune?)");
    if (Hash(key) != Hash(key0) || key != key0) {
      std::string diffs = JoinDifferences(KeyDifferences(key0, key));
      if (diffs.empty()) diffs = "hash " + Hash(key0) + " -> " + Hash(key);
      return Fail(error, s.path + " has another measurement key than " + first.path + " (" + diffs +
                             "): shards must be measured with the same build, commit, environment and cores");
    }
    if (n != count)
      return Fail(error, s.path + " is shard " + std::to_string(index) + "/" + std::to_string(n) + ", " +
                             first.path + " is shard " + std::to_string(index0) + "/" + std::to_string(count) +
                             ": shards of one run have the same N");
    if (plan != plan0)
      return Fail(error, s.path + " and " + first.path +
                             " split different selections of cells (provenance.shard.plan differs): run every shard "
                             "with the same options");
    if (const auto it = by_index.find(index); it != by_index.end())
      return Fail(error, s.path + " and " + it->second->path + " are both shard " + std::to_string(index) + "/" +
                             std::to_string(count));
    by_index[index] = &s;
    for (const tables::Entry& e : t.entries) {
      const auto [it, added] = cells.emplace(tables::CellOf(e), &s);
      if (!added)
        return Fail(error, "cell " + Describe(e) + " is in both " + it->second->path + " and " + s.path +
                               ": shards must not overlap");
    }
  }
  MergeSummary sum;
  sum.count = count;
  for (int k = 1; k <= count; ++k) (by_index.count(k) ? sum.merged : sum.missing).push_back(k);
  if (!sum.missing.empty() && !allow_partial) {
    std::string list;
    for (int k : sum.missing) list += (list.empty() ? "" : ", ") + std::to_string(k);
    return Fail(error, "missing shard(s) " + list + " of " + std::to_string(count) +
                           ": merge all of them, or pass --allow-partial for a table without their cells");
  }

  tables::Table t;
  t.machine_id = first.table.machine_id;
  t.backend = first.table.backend;
  std::map<tables::CellKey, tables::Entry> sorted;
  for (const auto& [k, s] : by_index)
    for (const tables::Entry& e : s->table.entries) sorted.emplace(tables::CellOf(e), e);
  for (auto& [id, e] : sorted) t.entries.push_back(std::move(e));

  // The fields every shard has alike, once; the rest per shard.
  json common = json::object();
  const json& p0 = first.table.provenance.is_object() ? first.table.provenance : json::object();
  for (const auto& [k, v] : p0.items()) {
    if (k == "shard") continue;
    bool same = true;
    for (const ShardTable& s : shards) {
      const json& p = s.table.provenance;
      const auto it = p.find(k);
      if (it == p.end() || *it != v) {
        same = false;
        break;
      }
    }
    if (same) common[k] = v;
  }
  json per = json::array();
  for (const auto& [k, s] : by_index) {
    json own = json::object();
    own["file"] = s->path;
    own["entries"] = s->table.entries.size();
    for (const auto& [f, v] : s->table.provenance.items())
      if (!common.contains(f)) own[f] = v;
    per.push_back(std::move(own));
  }
  t.provenance = common;
  t.provenance["shards"] = std::move(per);
  sum.entries = t.entries.size();
  t.provenance["merge"] = {{"count", count}, {"merged", sum.merged}, {"missing", sum.missing},
                           {"entries", sum.entries}};
  *out = std::move(t);
  if (summary) *summary = sum;
  return true;
}

bool MergeShardFiles(const std::string& out_path, const std::vector<std::string>& inputs, bool allow_partial,
                     MergeSummary* summary, std::string* error) {
  namespace fs = std::filesystem;
  try {
    if (out_path.empty()) return Fail(error, "merge: --out is required");
    std::vector<ShardTable> shards;
    for (const std::string& path : inputs) {
      std::error_code ec;
      if (fs::exists(out_path, ec) && fs::exists(path, ec) && fs::equivalent(out_path, path, ec))
        return Fail(error, "merge: --out " + out_path + " is also an input");
      ShardTable s;
      s.path = path;
      std::string why;
      if (!tables::LoadTableFile(path, &s.table, &why)) return Fail(error, "merge: " + why);
      shards.push_back(std::move(s));
    }
    tables::Table merged;
    if (!MergeShardTables(shards, allow_partial, &merged, summary, error)) {
      if (error) *error = "merge: " + *error;
      return false;
    }
    if (const fs::path dir = fs::path(out_path).parent_path(); !dir.empty()) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) return Fail(error, "merge: " + out_path + ": cannot create the directory: " + ec.message());
    }
    tables::Table back;
    std::string why;
    if (!tables::ParseTable(tables::ToJson(merged).dump(), &back, &why, merged.backend == "cpu"))
      return Fail(error, "merge: the merged table does not validate (nothing written): " + why);
    if (!tables::SaveTableFile(out_path, merged, error)) return false;
    if (!tables::LoadTableFile(out_path, &back, &why, merged.backend == "cpu"))
      return Fail(error, "merge: the table written does not validate: " + why);
    return true;
  } catch (const std::exception& e) {
    return Fail(error, "merge: " + std::string(e.what()));
  }
}

}  // namespace actgrad::tune
