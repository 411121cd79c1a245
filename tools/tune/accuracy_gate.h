// Which variants may be tuned: only those that pass the spec's accuracy rule,
// as recorded by the accuracy tool in docs/accuracy.json
// ([{"variant": ..., "shippable": true, "max_err": ..., ...}, ...] or
// {"results": [...]}; "pass" is read when "shippable" is absent), and, for
// the near-exact class, whose measured max_err is within the class's bound
// (ClassBound; a result without max_err is outside it). A variant listed
// more than once must pass every time (its largest max_err counts). A
// variant missing from the file is not a candidate (the tuner warns and
// names how many were missing).
#pragma once
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reference/accuracy_rule.h"
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

  // The class the allowed variants must meet (default: the rule).
  void SetClass(AccuracyClass c) { class_ = c; }
  AccuracyClass accuracy_class() const { return class_; }

  bool Allowed(const Variant& v) const;
  // What the gate knows of one variant: the rule's verdict and its largest
  // error (ElementError; +Inf when unknown).
  struct Verdict {
    bool pass = false;
    double max_err = std::numeric_limits<double>::infinity();
  };
  // Optional: decides variants absent from the results (e.g. by running the
  // accuracy check now); its verdicts are remembered.
  void SetChecker(std::function<Verdict(const Variant&)> check) { checker_ = std::move(check); }
  // Results checked by the checker during this run: name -> verdict.
  const std::map<std::string, Verdict>& checked() const { return checked_; }
  bool Known(const std::string& variant) const { return pass_.count(variant) > 0; }
  size_t known() const { return pass_.size(); }
  size_t passing() const;
  const std::string& source() const { return source_; }
  // Variants asked about that were absent from the results (not allowed).
  const std::set<std::string>& absent() const { return absent_; }

 private:
  bool InClass(const Verdict& v, DType t) const { return v.pass && v.max_err <= ClassBound(class_, t); }

  std::map<std::string, Verdict> pass_;
  std::string source_;
  bool allow_all_ = false;
  AccuracyClass class_ = AccuracyClass::kRule;
  mutable std::set<std::string> absent_;
  std::function<Verdict(const Variant&)> checker_;
  mutable std::map<std::string, Verdict> checked_;
};

}  // namespace actgrad::tune
