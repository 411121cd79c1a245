// Progress display: on a terminal a redrawn bar with ETA, otherwise (a file,
// a pipe, CI) plain lines only.
#pragma once
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace actgrad::tune {

class Progress {
 public:
  virtual ~Progress() = default;
  // Total amount of work (any unit: the tuner uses budgeted seconds).
  virtual void Begin(const std::string& title, double total) = 0;
  // Work done so far and what is running; cheap to call often.
  virtual void Update(double done, const std::string& what) = 0;
  // A line of output (kept above the bar on a terminal).
  virtual void Line(const std::string& text) = 0;
  virtual void End(const std::string& summary) = 0;

  // A bar when `out` is a terminal (and !plain), else plain lines.
  static std::unique_ptr<Progress> Make(FILE* out, bool plain = false);
  // Nothing at all (tests).
  static std::unique_ptr<Progress> Silent();
};

std::string FormatDuration(double seconds);  // "1:05", "1:02:03"

}  // namespace actgrad::tune
