#include "tools/accuracy/results.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "reference/accuracy_rule.h"

namespace actgrad::acc {
namespace {

using json = nlohmann::json;

const char* ModeName(GeluApprox m) { return m == GeluApprox::kTanh ? "tanh" : m == GeluApprox::kNone ? "erf" : "?"; }

[[noreturn]] void Bad(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

const json& Req(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) Bad(where, "not a JSON object");
  const auto it = j.find(key);
  if (it == j.end()) Bad(where, std::string("missing field \"") + key + "\"");
  return *it;
}

std::string Str(const json& j, const char* key, const std::string& where, bool required = true) {
  if (!j.contains(key)) {
    if (required) Bad(where, std::string("missing field \"") + key + "\"");
    return "";
  }
  if (!j[key].is_string()) Bad(where, std::string("field \"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

double Dbl(const json& j, const char* key, const std::string& where, bool required = true) {
  if (!j.contains(key)) {
    if (required) Bad(where, std::string("missing field \"") + key + "\"");
    return 0.0;
  }
  const json& v = j[key];
  if (v.is_null()) return std::numeric_limits<double>::infinity();
  if (!v.is_number()) Bad(where, std::string("field \"") + key + "\" must be a number");
  return v.get<double>();
}

uint64_t U64(const json& j, const char* key, const std::string& where, bool required = true) {
  if (!j.contains(key)) {
    if (required) Bad(where, std::string("missing field \"") + key + "\"");
    return 0;
  }
  const json& v = j[key];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    Bad(where, std::string("field \"") + key + "\" must be a non-negative integer");
  return v.get<uint64_t>();
}

bool Bool(const json& j, const char* key, const std::string& where, bool required = true) {
  if (!j.contains(key)) {
    if (required) Bad(where, std::string("missing field \"") + key + "\"");
    return false;
  }
  if (!j[key].is_boolean()) Bad(where, std::string("field \"") + key + "\" must be true or false");
  return j[key].get<bool>();
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Percent(double share) {
  if (share >= 1.0) return "100 %";
  return Fmt("%.4f %%", 100.0 * std::floor(share * 1e6) / 1e6);  // never round up to 100
}

std::string Err(double e) { return std::isfinite(e) ? Fmt("%.3g", e) : "inf"; }

std::string Escape(const std::string& s) {  // markdown table cell
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

int DTypeOrder(DType t) { return int(t); }

}  // namespace

// Fields in a fixed, readable order (op, dtype, variant first).
template <class J>
J ResultJson(const VariantAccuracy& r) {
  J j;
  j["op"] = std::string(OpName(r.op));
  j["dtype"] = std::string(DTypeName(r.dtype));
  j["variant"] = r.variant;
  if (r.op == Op::kGeluBwd) j["gelu_mode"] = ModeName(r.gelu_mode);
  j["approx"] = r.approx;
  j["target"] = r.target;
  j["shippable"] = r.pass;
  j["count"] = r.count;
  j["share"] = std::isfinite(r.share) ? J(r.share) : J(nullptr);
  j["max_err"] = std::isfinite(r.max_err) ? J(r.max_err) : J(nullptr);
  j["max_ulp"] = std::isfinite(r.max_ulp) ? J(r.max_ulp) : J(nullptr);
  j["special_mismatch"] = r.special_mismatch;
  j["over_hard_bound"] = r.over_hard_bound;
  j["claimed_max_err"] = std::isfinite(r.claimed_max_err) ? J(r.claimed_max_err) : J(nullptr);
  j["g1_max_err"] = std::isfinite(r.g1_max_err) ? J(r.g1_max_err) : J(nullptr);
  j["claim_allowance"] = std::isfinite(r.claim_allowance) ? J(r.claim_allowance) : J(nullptr);
  j["meets_claim"] = r.meets_claim;
  j["g1_worst"] = r.g1_worst;
  j["first_failure"] = r.first_failure;
  if (!r.source.empty()) j["source"] = r.source;
  return j;
}

json ToJson(const VariantAccuracy& r) { return ResultJson<json>(r); }

json ToJson(const AccuracyDocument& d) {
  json j;
  j["schema"] = kAccuracySchema;
  j["version"] = kAccuracySchemaVersion;
  j["machine_id"] = d.machine_id;
  j["cpu_model"] = d.cpu_model;
  j["isa_family"] = d.isa_family;
  j["date"] = d.date;
  j["command"] = d.command;
  j["tool_version"] = d.tool_version;
  j["fp32_count"] = d.fp32_count;
  j["seed"] = d.seed;
  j["results"] = json::array();
  for (const auto& r : d.results) j["results"].push_back(ToJson(r));
  if (!d.kept_from.empty()) j["kept_from"] = d.kept_from;
  j["not_run"] = json::array();
  for (const auto& r : d.not_run)
    j["not_run"].push_back({{"op", std::string(OpName(r.op))},
                            {"dtype", std::string(DTypeName(r.dtype))},
                            {"variant", r.variant},
                            {"target", r.target},
                            {"reason", r.first_failure}});
  return j;
}

std::string ToJsonText(const AccuracyDocument& d) {
  const json top = ToJson(d);
  std::string o = "{\n";
  for (const char* key : {"schema", "version", "machine_id", "cpu_model", "isa_family", "date", "command",
                          "tool_version", "fp32_count", "seed"})
    o += std::string("  \"") + key + "\": " + top[key].dump() + ",\n";
  if (top.contains("kept_from")) o += "  \"kept_from\": " + top["kept_from"].dump() + ",\n";
  o += "  \"results\": [";
  for (size_t i = 0; i < d.results.size(); ++i)
    o += (i ? ",\n    " : "\n    ") + ResultJson<nlohmann::ordered_json>(d.results[i]).dump();
  o += d.results.empty() ? "],\n" : "\n  ],\n";
  const json& not_run = top["not_run"];
  o += "  \"not_run\": [";
  for (size_t i = 0; i < not_run.size(); ++i) o += (i ? ",\n    " : "\n    ") + not_run[i].dump();
  o += not_run.empty() ? "]\n" : "\n  ]\n";
  return o + "}\n";
}

static void ParseOpDType(const json& j, const std::string& where, VariantAccuracy* r) {
  const std::string op = Str(j, "op", where), dt = Str(j, "dtype", where);
  if (!ParseOp(op, &r->op)) Bad(where, "unknown op \"" + op + "\"");
  if (!ParseDType(dt, &r->dtype)) Bad(where, "unknown dtype \"" + dt + "\"");
}

VariantAccuracy VariantAccuracyFromJson(const json& j) {
  VariantAccuracy r;
  std::string where = "result";
  if (!j.is_object()) Bad(where, "not a JSON object");
  r.variant = Str(j, "variant", where);
  where = "result \"" + r.variant + "\"";
  if (r.variant.empty()) Bad(where, "empty variant name");
  ParseOpDType(j, where, &r);
  const std::string mode = Str(j, "gelu_mode", where, false);
  if (mode == "tanh") r.gelu_mode = GeluApprox::kTanh;
  else if (mode.empty() || mode == "erf") r.gelu_mode = GeluApprox::kNone;
  else Bad(where, "unknown gelu_mode \"" + mode + "\"");
  r.approx = Str(j, "approx", where, false);
  r.target = Str(j, "target", where, false);
  r.run = true;
  r.count = U64(j, "count", where);
  r.share = Dbl(j, "share", where);
  r.max_err = Dbl(j, "max_err", where);
  r.max_ulp = Dbl(j, "max_ulp", where);
  r.pass = Bool(j, "shippable", where);
  r.claimed_max_err = Dbl(j, "claimed_max_err", where, false);
  r.g1_max_err = Dbl(j, "g1_max_err", where, false);
  r.g1_worst = Str(j, "g1_worst", where, false);
  r.claim_allowance = Dbl(j, "claim_allowance", where, false);
  r.meets_claim = j.contains("meets_claim") ? Bool(j, "meets_claim", where) : r.pass;
  r.special_mismatch = U64(j, "special_mismatch", where, false);
  r.over_hard_bound = U64(j, "over_hard_bound", where, false);
  r.first_failure = Str(j, "first_failure", where, false);
  r.source = Str(j, "source", where, false);
  return r;
}

AccuracyDocument AccuracyDocumentFromJson(const json& j) {
  const std::string where = "accuracy document";
  if (!j.is_object()) Bad(where, "top level must be a JSON object");
  const std::string schema = Str(j, "schema", where);
  if (schema != kAccuracySchema) Bad(where, "schema is \"" + schema + "\", expected \"" + kAccuracySchema + "\"");
  const json& ver = Req(j, "version", where);
  if (!ver.is_number_integer() || ver.get<int64_t>() != kAccuracySchemaVersion)
    Bad(where, "schema version " + ver.dump() + " is not supported (this build reads version " +
                   std::to_string(kAccuracySchemaVersion) + ")");
  AccuracyDocument d;
  d.machine_id = Str(j, "machine_id", where);
  d.cpu_model = Str(j, "cpu_model", where, false);
  d.isa_family = Str(j, "isa_family", where, false);
  d.date = Str(j, "date", where, false);
  d.command = Str(j, "command", where, false);
  d.tool_version = Str(j, "tool_version", where, false);
  d.fp32_count = U64(j, "fp32_count", where, false);
  d.seed = U64(j, "seed", where, false);
  const json& results = Req(j, "results", where);
  if (!results.is_array()) Bad(where, "\"results\" must be an array");
  for (const json& e : results) d.results.push_back(VariantAccuracyFromJson(e));
  if (j.contains("kept_from")) {
    if (!j["kept_from"].is_array()) Bad(where, "\"kept_from\" must be an array of strings");
    for (const json& e : j["kept_from"]) {
      if (!e.is_string()) Bad(where, "\"kept_from\" must be an array of strings");
      d.kept_from.push_back(e.get<std::string>());
    }
  }
  if (j.contains("not_run")) {
    if (!j["not_run"].is_array()) Bad(where, "\"not_run\" must be an array");
    for (const json& e : j["not_run"]) {
      VariantAccuracy r;
      r.variant = Str(e, "variant", "not_run entry");
      const std::string w = "not_run entry \"" + r.variant + "\"";
      ParseOpDType(e, w, &r);
      r.target = Str(e, "target", w, false);
      r.first_failure = Str(e, "reason", w, false);
      r.run = false;
      d.not_run.push_back(std::move(r));
    }
  }
  return d;
}

size_t KeepEarlier(const AccuracyDocument& earlier, const std::vector<std::string>& known, AccuracyDocument* now,
                   size_t* dropped) {
  const std::set<std::string> is_known(known.begin(), known.end());
  std::set<std::string> checked, kept_names;
  for (const auto& r : now->results) checked.insert(r.variant);
  size_t kept = 0;
  *dropped = 0;
  for (const auto& r : earlier.results) {
    if (checked.count(r.variant)) continue;
    if (!is_known.count(r.variant)) {
      ++*dropped;
      continue;
    }
    now->results.push_back(r);
    checked.insert(r.variant);
    kept_names.insert(r.variant);
    ++kept;
  }
  // A kept result replaces this run's "not run" entry of the same variant.
  std::erase_if(now->not_run, [&](const VariantAccuracy& r) { return checked.count(r.variant) > 0; });
  // kept_from: how many results each original run contributed.
  std::map<std::string, size_t> by_source;
  for (auto& r : now->results) {
    if (r.source.empty() && !kept_names.count(r.variant)) continue;  // checked by this run
    if (r.source.empty())
      r.source = earlier.machine_id + " (" + (earlier.cpu_model.empty() ? "unknown CPU" : earlier.cpu_model) +
                 "), " + earlier.date;
    ++by_source[r.source];
  }
  now->kept_from.clear();
  for (const auto& [source, n] : by_source) now->kept_from.push_back(std::to_string(n) + " results of " + source);
  SortResults(&now->results);
  return kept;
}

void SortResults(std::vector<VariantAccuracy>* results) {
  std::stable_sort(results->begin(), results->end(), [](const VariantAccuracy& a, const VariantAccuracy& b) {
    if (a.op != b.op) return a.op < b.op;
    if (a.dtype != b.dtype) return DTypeOrder(a.dtype) < DTypeOrder(b.dtype);
    if (a.gelu_mode != b.gelu_mode) return a.gelu_mode < b.gelu_mode;
    if (a.approx != b.approx) return a.approx < b.approx;
    return a.variant < b.variant;
  });
}

namespace {

// The run: its command, machine, options and where kept results came from.
void MarkdownHeader(std::ostream& o, const AccuracyDocument& d) {
  o << "# Accuracy of the kernel variants\n\n"
    << "Generated by `actgrad-accuracy`; do not edit by hand. Regenerate with:\n\n"
    << "    " << d.command << "\n\n"
    << "- date: " << d.date << "\n"
    << "- machine: `" << d.machine_id << "` (" << (d.cpu_model.empty() ? "unknown CPU" : d.cpu_model) << ", "
    << d.isa_family << ")\n"
    << "- tool version: " << d.tool_version << "; fp32 values per parameter case: " << d.fp32_count
    << "; seed: " << d.seed << "\n"
    << "- machine-readable results: `accuracy.json` (same run)\n";
  for (const auto& k : d.kept_from) o << "- kept from an earlier run (`--keep`): " << k << "\n";
  o << "\n";
}

// The spec's rule, the thresholds per dtype and the inputs checked.
void MarkdownRule(std::ostream& o, const AccuracyDocument& d) {
  o << "## The rule (shared/spec/operators.md)\n\n"
    << "Reference: double precision on the same (already rounded) inputs. Per element\n"
    << "`err = |out - ref| / max(|ref|, |g|/16, smallest normal of the dtype)`. A variant is\n"
    << "**shippable** when NaN and +-Inf appear exactly where the reference has them (a reference\n"
    << "that rounds past the largest finite value expects Inf), no element reaches the hard bound,\n"
    << "and at least the stated share of elements is under the threshold. Integer SELU: exact.\n\n"
    << "| dtype | threshold | share that must pass | hard bound |\n|---|---|---|---|\n";
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    const AccuracyRule r = RuleFor(t);
    o << "| " << DTypeName(t) << " | " << Fmt("%g", r.threshold) << " | " << Fmt("%g %%", 100 * r.share) << " | "
      << Fmt("%g", r.hard_bound) << " |\n";
  }
  o << "\n*max ULP* is informational: |out - ref| in ULPs of the output dtype at the magnitude the\n"
    << "rule measures against, max(|ref|, |g|/16) (so cancellation near a zero of the derivative\n"
    << "does not blow it up; integers: 0). *claimed* is the variant's own\n"
    << "bound on its approximation (spec metric, g = 1; `exact` = no approximation, the rule alone\n"
    << "applies); it is checked on the g = 1, non-special inputs against claim + the output\n"
    << "dtype's unit roundoff (2^-24, 2^-11, 2^-8) x (1 + claim).\n\n"
    << "Inputs: fp16/bf16 every one of the 65,536 bit patterns of x with g = 1 and with random g;\n"
    << "fp32 " << d.fp32_count << " values per parameter case (GELU U[-10,10] + N(0,1); SELU y = selu(x),\n"
    << "x in U[-30,5]; Hardswish U[-5,5] with exact +-3; Softshrink U[-2,2] with exact +-lambd,\n"
    << "lambd 0.5 and 1/3 (and 0, small); LogitGrad U[0,1] with exact 0, eps, 1-eps, 1, eps in\n"
    << "{-1, 0, 1e-6, 0.25} (and 1, 2, +-Inf, NaN, small)), g = 1 on half of them; in every op\n"
    << "NaN, +-Inf, +-0, denormals, the largest finite values of x, and special g (NaN, +-Inf, +-0,\n"
    << "denormal, largest finite). SELU i8: every (g, y) pair; i32: random and extreme values.\n"
    << "g-sweep (every parameter case, NaN/Inf placement and the hard bound only, not in the share):\n"
    << "g in {+Inf, -Inf, +max, -max, NaN} against every fp16/bf16 x, and for fp32 a grid of 4,000\n"
    << "points per range (GELU [-40,-5], [5,40], [-5,5]; SELU [-40,-1], [-1,5]; Hardswish [-5,5];\n"
    << "Softshrink [-2,2]; LogitGrad [-0.5,1.5]) with the 8 floats on each side of every x where the\n"
    << "reference's class (NaN, +Inf, -Inf, finite) changes.\n\n";
}

// Per op and dtype: variants run, shippable, failing, claims not met, not run.
void MarkdownSummary(std::ostream& o, const AccuracyDocument& d) {
  struct Tally { int run = 0, ship = 0, fail = 0, claim_miss = 0, not_run = 0; };
  std::map<std::pair<int, int>, Tally> tally;
  for (const auto& r : d.results) {
    Tally& t = tally[{int(r.op), int(r.dtype)}];
    ++t.run;
    (r.pass ? t.ship : t.fail)++;
    if (!r.meets_claim && r.claimed_max_err > 0) ++t.claim_miss;
  }
  for (const auto& r : d.not_run) ++tally[{int(r.op), int(r.dtype)}].not_run;
  o << "## Summary\n\n| op | dtype | run | shippable | failing | claim (> 0) not met | not run on this CPU |\n"
    << "|---|---|---|---|---|---|---|\n";
  int total_run = 0, total_ship = 0, total_not_run = 0;
  for (const auto& [k, t] : tally) {
    o << "| " << OpName(Op(k.first)) << " | " << DTypeName(DType(k.second)) << " | " << t.run << " | " << t.ship
      << " | " << t.fail << " | " << t.claim_miss << " | " << t.not_run << " |\n";
    total_run += t.run, total_ship += t.ship, total_not_run += t.not_run;
  }
  o << "\n" << total_run << " variants run, " << total_ship << " shippable, " << (total_run - total_ship)
    << " failing; " << total_not_run << " not run on this CPU.\n\n";
}

// The failing variants and the claims not met (`sorted`: SortResults' order).
void MarkdownFailures(std::ostream& o, const std::vector<VariantAccuracy>& sorted) {
  o << "## Failing variants\n\n";
  int nfail = 0;
  for (const auto& r : sorted) {
    if (r.pass) continue;
    ++nfail;
    o << "- `" << r.variant << "`: share " << Percent(r.share) << ", max error " << Err(r.max_err) << ", "
      << r.special_mismatch << " special mismatches, " << r.over_hard_bound << " over the hard bound; first failure: "
      << r.first_failure << "\n";
  }
  if (!nfail) o << "None.\n";
  o << "\n## Claims not met\n\n";
  int nclaim = 0;
  for (const auto& r : sorted) {
    if (r.meets_claim || r.claimed_max_err <= 0) continue;
    ++nclaim;
    o << "- `" << r.variant << "`: claims " << Err(r.claimed_max_err) << ", measured " << Err(r.g1_max_err)
      << " with g = 1 (allowed " << Err(r.claim_allowance) << "), worst at " << r.g1_worst << "\n";
  }
  if (!nclaim) o << "None.\n";
  o << "\nVariants without a claim (`exact`, and the scalar libm ones) are held to the rule alone:\n"
    << "those failing it are listed under Failing variants.\n";
  o << "\n";
}

// One table per op with results.
void MarkdownOpTables(std::ostream& o, const std::vector<VariantAccuracy>& sorted) {
  for (int op = 0; op < kNumOps; ++op) {
    bool any = false;
    for (const auto& r : sorted) any = any || int(r.op) == op;
    if (!any) continue;
    o << "## " << OpName(Op(op)) << "\n\n"
      << "| op | dtype | variant | share passing | max error | max ULP | claimed | claim met | shippable |\n"
      << "|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : sorted) {
      if (int(r.op) != op) continue;
      o << "| " << OpName(r.op) << " | " << DTypeName(r.dtype) << " | `" << r.variant << "` | " << Percent(r.share)
        << " | " << Err(r.max_err) << " | " << Fmt("%.3g", r.max_ulp) << " | "
        << (r.claimed_max_err > 0 ? Err(r.claimed_max_err) : std::string("exact")) << " | "
        << (r.meets_claim ? "yes" : "**no**") << " | " << (r.pass ? "yes" : "**no**") << " |\n";
    }
    o << "\n";
  }
}

// The variants not run on this CPU, per target.
void MarkdownNotRun(std::ostream& o, const AccuracyDocument& d) {
  o << "## Not run on this CPU\n\n";
  if (d.not_run.empty()) {
    o << "None: every compiled variant is supported here.\n";
  } else {
    std::map<std::string, std::vector<std::string>> by_target;
    for (const auto& r : d.not_run) by_target[r.target].push_back(r.variant);
    for (auto& [target, names] : by_target) {
      std::sort(names.begin(), names.end());
      o << "- " << names.size() << " variants of target `" << target << "`: not run (CPU lacks " << target
        << ")\n\n  <details><summary>names</summary>\n\n";
      for (const auto& n : names) o << "  `" << Escape(n) << "`<br>\n";
      o << "\n  </details>\n\n";
    }
  }
}

}  // namespace

std::string ToMarkdown(const AccuracyDocument& d) {
  std::ostringstream o;
  MarkdownHeader(o, d);
  MarkdownRule(o, d);
  MarkdownSummary(o, d);
  std::vector<VariantAccuracy> sorted = d.results;
  SortResults(&sorted);
  MarkdownFailures(o, sorted);
  MarkdownOpTables(o, sorted);
  MarkdownNotRun(o, d);
  return o.str();
}

void WriteFileAtomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    f << content;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw std::runtime_error("writing " + tmp + " failed: " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + why);
  }
}

// ---- loader -------------------------------------------------------------------
void AccuracyCache::Index() {
  by_name_.clear();
  for (size_t i = 0; i < doc.results.size(); ++i) by_name_[doc.results[i].variant] = i;
}

const VariantAccuracy* AccuracyCache::Find(std::string_view variant) const {
  const auto it = by_name_.find(std::string(variant));
  return it == by_name_.end() ? nullptr : &doc.results[it->second];
}

bool AccuracyCache::Shippable(std::string_view variant) const {
  const VariantAccuracy* r = Find(variant);
  return r && r->run && r->pass;
}

bool TryLoadAccuracyCache(const std::string& path, AccuracyCache* out, std::string* error) {
  const std::string hint = " (regenerate it with: actgrad-accuracy --json " + path + ")";
  auto fail = [&](const std::string& msg) {
    if (error) *error = "accuracy cache " + path + ": " + msg + hint;
    return false;
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(std::string("cannot open: ") + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return fail("read error");
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception& e) {
    return fail(std::string("not valid JSON (truncated or corrupt?): ") + e.what());
  }
  AccuracyCache c;
  try {
    c.doc = AccuracyDocumentFromJson(j);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  c.Index();
  if (out) *out = std::move(c);
  return true;
}

AccuracyCache LoadAccuracyCache(const std::string& path) {
  AccuracyCache c;
  std::string error;
  if (!TryLoadAccuracyCache(path, &c, &error)) throw AccuracyCacheError(error);
  return c;
}

}  // namespace actgrad::acc
