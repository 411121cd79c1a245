#include "tools/tune/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace actgrad::tune {

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = long(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
  return buf;
}

namespace {

using Clock = std::chrono::steady_clock;

class PlainProgress : public Progress {
 public:
  explicit PlainProgress(FILE* out) : out_(out) {}
  void Begin(const std::string& title, double total) override {
    total_ = total;
    start_ = Clock::now();
    std::fprintf(out_, "%s\n", title.c_str());
    std::fflush(out_);
  }
  void Update(double done, const std::string&) override { done_ = done; }
  void Line(const std::string& text) override {
    const double el = std::chrono::duration<double>(Clock::now() - start_).count();
    const double pct = total_ > 0 ? std::min(100.0, 100.0 * done_ / total_) : 0;
    std::fprintf(out_, "[%3.0f%% %s] %s\n", pct, FormatDuration(el).c_str(), text.c_str());
    std::fflush(out_);
  }
  void End(const std::string& summary) override {
    std::fprintf(out_, "%s\n", summary.c_str());
    std::fflush(out_);
  }

 private:
  FILE* out_;
  double total_ = 0, done_ = 0;
  Clock::time_point start_ = Clock::now();
};

class BarProgress : public Progress {
 public:
  explicit BarProgress(FILE* out) : out_(out) {}
  void Begin(const std::string& title, double total) override {
    total_ = total;
    start_ = Clock::now();
    std::fprintf(out_, "%s\n", title.c_str());
    Draw(true);
  }
  void Update(double done, const std::string& what) override {
    done_ = done;
    what_ = what;
    Draw(false);
  }
  void Line(const std::string& text) override {
    std::fprintf(out_, "\r\033[K%s\n", text.c_str());
    Draw(true);
  }
  void End(const std::string& summary) override {
    std::fprintf(out_, "\r\033[K%s\n", summary.c_str());
    std::fflush(out_);
  }

 private:
  void Draw(bool force) {
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - start_).count();
    const double f = total_ > 0 ? std::clamp(done_ / total_, 0.0, 1.0) : 0.0;
    const double eta = f > 0.005 ? el * (1 - f) / f : NAN;
    constexpr int kWidth = 30;
    const int fill = int(f * kWidth + 0.5);
    std::string bar(size_t(fill), '#');
    bar += std::string(size_t(kWidth - fill), '.');
    std::string what = what_;
    if (what.size() > 48) what = what.substr(0, 48);
    std::fprintf(out_, "\r\033[K[%s] %3.0f%%  %s elapsed, ETA %s  %s", bar.c_str(), 100 * f,
                 FormatDuration(el).c_str(), FormatDuration(eta).c_str(), what.c_str());
    std::fflush(out_);
  }
  FILE* out_;
  double total_ = 0, done_ = 0;
  std::string what_;
  Clock::time_point start_ = Clock::now(), last_{};
};

class SilentProgress : public Progress {
 public:
  void Begin(const std::string&, double) override {}
  void Update(double, const std::string&) override {}
  void Line(const std::string&) override {}
  void End(const std::string&) override {}
};

}  // namespace

std::unique_ptr<Progress> Progress::Make(FILE* out, bool plain) {
  if (!plain && isatty(fileno(out))) return std::make_unique<BarProgress>(out);
  return std::make_unique<PlainProgress>(out);
}

std::unique_ptr<Progress> Progress::Silent() { return std::make_unique<SilentProgress>(); }

}  // namespace actgrad::tune
