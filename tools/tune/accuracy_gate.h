// Which variants may be tuned: only those that pass the spec's accuracy rule,
// as recorded by the accuracy tool in docs/accuracy.json
// ([{"variant": ..., "shippable": true, ...}, ...] or {"results": [...]};
// "pass" is read when "shippable" is absent). A variant listed more than
// once must pass every time. A variant missing from the file is not a
// candidate (the tuner warns and names how many were missing).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "variants/variant.h"

namespace actgrad::tune {

class AccuracyGate {
 public:
  // Reads the accuracy results; false (with a message) if the file is
  // missing or unreadable: then no variant passes.
  bool Load(const std::string& path, std::string* error);
  // Parses results from text (for tests).
  bool Parse(const std::string& text, std::string* error);
  // Testing and experiments only: every variant passes.
  void AllowAll() { allow_all_ = true; }
  bool allow_all() const { return allow_all_; }

  bool Allowed(const Variant& v) const;
  // Optional: decides variants absent from the results (e.g. by running the
  // accuracy check now); its verdicts are remembered.
  void SetChecker(std::function<bool(const Variant&)> check) { checker_ = std::move(check); }
  // Results checked by the checker during this run: name -> pass.
  const std::map<std::string, bool>& checked() const { return checked_; }
  bool Known(const std::string& variant) const { return pass_.count(variant) > 0; }
  size_t known() const { return pass_.size(); }
  size_t passing() const;
  const std::string& source() const { return source_; }
  // Variants asked about that were absent from the results (not allowed).
  const std::set<std::string>& absent() const { return absent_; }

 private:
  std::map<std::string, bool> pass_;
  std::string source_;
  bool allow_all_ = false;
  mutable std::set<std::string> absent_;
  std::function<bool(const Variant&)> checker_;
  mutable std::map<std::string, bool> checked_;
};

}  // namespace actgrad::tune
