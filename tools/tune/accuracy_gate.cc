#include "tools/tune/accuracy_gate.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#ifdef ACTGRAD_TUNER_HAVE_ACCURACY_LIB
#include "tools/accuracy/results.h"
#endif

namespace actgrad::tune {

using json = nlohmann::json;

bool AccuracyGate::Load(const std::string& path, std::string* error) {
  source_ = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) *error = path + ": cannot open (run actgrad-accuracy first)";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string inner;
#ifdef ACTGRAD_TUNER_HAVE_ACCURACY_LIB
  // The accuracy tool's own loader (validates the whole document).
  acc::AccuracyCache cache;
  if (acc::TryLoadAccuracyCache(path, &cache, &inner)) {
    pass_.clear();
    for (const auto& r : cache.doc.results) pass_[r.variant] = {cache.Shippable(r.variant), r.max_err};
    for (const auto& r : cache.doc.not_run) pass_.emplace(r.variant, Verdict{});
    source_ = path;
    return true;
  }
  // Not a full accuracy document: accept the minimal form below.
#endif
  if (!Parse(ss.str(), &inner)) {
    if (error) *error = path + ": " + inner;
    return false;
  }
  source_ = path;
  return true;
}

bool AccuracyGate::Parse(const std::string& text, std::string* error) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    if (error) *error = "not valid JSON";
    return false;
  }
  const json* results = &j;
  if (j.is_object()) {
    if (!j.contains("results") || !j["results"].is_array()) {
      if (error) *error = "expected an array of results or an object with \"results\"";
      return false;
    }
    results = &j["results"];
  }
  if (!results->is_array()) {
    if (error) *error = "expected an array of results";
    return false;
  }
  pass_.clear();
  for (const json& r : *results) {
    if (!r.is_object() || !r.contains("variant") || !r["variant"].is_string()) continue;
    Verdict v;
    if (r.contains("shippable") && r["shippable"].is_boolean()) v.pass = r["shippable"].get<bool>();
    else if (r.contains("pass") && r["pass"].is_boolean()) v.pass = r["pass"].get<bool>();
    if (r.contains("max_err") && r["max_err"].is_number() && r["max_err"].get<double>() >= 0)
      v.max_err = r["max_err"].get<double>();
    const std::string name = r["variant"].get<std::string>();
    auto [it, added] = pass_.emplace(name, v);
    if (!added) it->second = {it->second.pass && v.pass, std::max(it->second.max_err, v.max_err)};
  }
  return true;
}

bool AccuracyGate::Allowed(const Variant& v) const {
  if (allow_all_) return true;
  const auto it = pass_.find(v.name);
  if (it == pass_.end()) {
    if (checker_) {
      auto c = checked_.find(v.name);
      if (c == checked_.end()) c = checked_.emplace(v.name, checker_(v)).first;
      return InClass(c->second, v.dtype);
    }
    absent_.insert(v.name);
    return false;
  }
  return InClass(it->second, v.dtype);
}

size_t AccuracyGate::passing() const {
  size_t n = 0;
  for (const auto& [k, v] : pass_) n += v.pass;
  return n;
}

}  // namespace actgrad::tune
