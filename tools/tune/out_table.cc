#include "tools/tune/out_table.h"
#include "tools/tune/strings.h"
#include "tiling/freshness.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <system_error>
#include <tuple>
#include <utility>

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The directory `path` goes in can be created (its nearest existing ancestor
// is a directory we may write in) or exists and may be written.
bool CheckDirectory(const std::string& path, std::string* error) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  fs::path a = dir;
  for (;;) {
    std::error_code ec;
    const fs::file_status st = fs::status(a, ec);
    if (st.type() == fs::file_type::not_found) {
      fs::path up = a.parent_path();
      if (up.empty() || up == a) up = a.is_absolute() ? a.root_path() : fs::path(".");
      if (up == a) return Fail(error, path + ": cannot reach any existing directory above it");
      a = up;
      continue;
    }
    if (ec) return Fail(error, path + ": cannot create or inspect the directory " + dir.string() + ": " + a.string() +
                                   ": " + ec.message());
    if (!fs::is_directory(st))
      return Fail(error, path + ": cannot create the directory " + dir.string() + ": " + a.string() +
                             " exists and is not a directory");
    break;
  }
  if (access(a.c_str(), W_OK | X_OK) != 0)
    return Fail(error, path + ": cannot " + std::string(a == dir ? "write in " : "create directories in ") +
                           a.string() + ": " + std::strerror(errno));
  return true;
}

json RunSummary(const json& prov, size_t entries, size_t kept) {
  json s = json::object();
  if (prov.is_object())
    for (const char* key : {"date", "command", "git_commit", "tool_version", "log", "quick", "budget_sec"})
      if (prov.contains(key)) s[key] = prov[key];
  s["entries"] = entries;
  s["kept"] = kept;
  return s;
}

}  // namespace

bool PlanOut(const std::string& path, const std::string& machine_id, const std::string& backend, bool force,
             OutPlan* plan, std::string* error, AccuracyClass cls) {
  *plan = OutPlan{};
  const fs::path p(path);
  if (path.empty()) return Fail(error, "--out is empty");
  if (!p.has_filename())
    return Fail(error, path + " names a directory; --out takes the table's file, e.g. " + path + machine_id + ".json");
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() != fs::file_type::not_found) {
    if (ec) return Fail(error, path + ": cannot inspect: " + ec.message());
    if (fs::is_directory(st))
      return Fail(error, path + " is a directory; --out takes the table's file, e.g. " +
                             (p / (machine_id + ".json")).string());
    // Reading a FIFO or a device would block or never end.
    if (!fs::is_regular_file(st)) return Fail(error, path + " exists and is not a regular file");
  }
  if (!CheckDirectory(path, error)) return false;
  if (st.type() == fs::file_type::not_found) return true;  // kCreate

  std::string why;
  tables::Table t;
  if (!tables::LoadTableFile(path, &t, &why, backend == "cpu")) {
    why = "is not a valid table (" + why + ")";
  } else if (t.machine_id != machine_id || t.backend != backend) {
    why = "is the table of machine " + t.machine_id + ", backend " + t.backend + " (this run: " + machine_id +
          ", " + backend + ")";
  } else if (t.accuracy_class != cls) {
    why = "is a table of accuracy class " + std::string(AccuracyClassName(t.accuracy_class)) + " (this run: " +
          std::string(AccuracyClassName(cls)) + ")";
  } else {
    plan->action = OutPlan::Action::kMerge;
    plan->existing = std::move(t);
    return true;
  }
  if (!force)
    return Fail(error, path + " exists and " + why +
                           ": refusing to merge into it or replace it; pass --force to replace it, or choose another "
                           "--out");
  plan->action = OutPlan::Action::kReplace;
  plan->replaced = why;
  return true;
}

tables::Table MergeTables(const tables::Table& base, const tables::Table& run, MergeCounts* counts) {
  MergeCounts c;
  std::map<tables::CellKey, tables::Entry> cells;
  for (const auto& e : base.entries) cells[tables::CellOf(e)] = e;
  for (const auto& e : run.entries) {
    auto [it, added] = cells.insert_or_assign(tables::CellOf(e), e);
    (void)it;
    ++(added ? c.added : c.replaced);
  }
  c.kept = base.entries.size() - c.replaced;

  tables::Table out;
  out.machine_id = run.machine_id;
  out.backend = run.backend;
  out.accuracy_class = run.accuracy_class;
  for (auto& [id, e] : cells) out.entries.push_back(std::move(e));  // sorted by cell
  tables::ResetDisagreeingBoundaries(&out.entries);  // a new entry beside an old one
  out.provenance = run.provenance.is_object() ? run.provenance : json::object();
  if (json sets = MergedCandidateSets(base, run, out.entries); !sets.empty()) out.provenance["candidate_sets"] = sets;
  if (counts) *counts = c;
  // Every entry of the base replaced (a full run again): the table is this
  // run's alone, with the provenance a new table would have.
  if (c.kept == 0) return out;
  json earlier = json::array();
  if (base.provenance.is_object() && base.provenance.contains("merged_from") &&
      base.provenance["merged_from"].is_array())
    earlier = base.provenance["merged_from"];
  earlier.push_back(RunSummary(base.provenance, base.entries.size(), c.kept));
  out.provenance["merged_from"] = std::move(earlier);
  out.provenance["merge"] = {{"added", c.added}, {"replaced", c.replaced}, {"kept", c.kept},
                             {"entries", out.entries.size()}};
  return out;
}

bool WriteRunTable(const std::string& path, const tables::Table& run, bool force, WriteOutcome* outcome,
                   std::string* error) {
  try {
    *outcome = WriteOutcome{};
    if (run.entries.empty()) return Fail(error, "the run has no entries; no table written");
    OutPlan plan;
    if (!PlanOut(path, run.machine_id, run.backend, force, &plan, error, run.accuracy_class)) return false;
    outcome->action = plan.action;
    outcome->replaced = plan.replaced;
    const tables::Table table =
        plan.action == OutPlan::Action::kMerge ? MergeTables(plan.existing, run, &outcome->counts) : run;
    if (const fs::path dir = fs::path(path).parent_path(); !dir.empty()) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) return Fail(error, path + ": cannot create the directory " + dir.string() + ": " + ec.message());
    }
    if (!tables::SaveTableFile(path, table, error)) return false;
    tables::Table written;
    std::string why;
    if (!tables::LoadTableFile(path, &written, &why, table.backend == "cpu"))
      return Fail(error, "the table written does not validate: " + why);
    outcome->entries = written.entries.size();
    return true;
  } catch (const std::exception& e) {
    return Fail(error, path + ": " + e.what());
  }
}

}  // namespace actgrad::tune
