// A deterministic stand-in for a measurement backend: known "true" times per
// candidate with small multiplicative noise, optional sleeping (to make the
// budget bind), a simulated crash after k measurements and, optionally, times
// that depend on the operands' placement (Backend::SetPlacement).
#pragma once
#include <csignal>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tools/tune/backend.h"
#include "tools/tune/search.h"

namespace actgrad::tune::testing {

struct SimulatedCrash {};  // not a std::exception: nothing catches it on the way up

class FakeBackend : public Backend {
 public:
  bool deterministic = false;
  double noise = 0.005;     // +- relative
  double sleep_sec = 0;     // per Measure call (on `clock` when set, else sleeping)
  // A fake clock for the search (UseFakeClock): a Measure call moves it by
  // sleep_sec, so the budget binds the same on a loaded or idle machine.
  double* clock = nullptr;
  long crash_after = -1;    // throw SimulatedCrash on call k (0-based), before measuring
  bool kill_instead = false;  // raise SIGKILL instead of throwing
  int variants = 8;
  long calls = 0;           // Measure calls completed
  std::map<std::string, int> per_key;  // (bucket, candidate) -> calls
  std::set<std::string> prepared;      // cells Prepare ran for
  long unprepared_measures = 0;        // Measure calls on a cell Prepare never saw
  int placement = 0;                   // the last SetPlacement
  std::vector<int> measured_at;        // the placement of every Measure call
  // A factor on a candidate's time at a placement; unset: placements do not matter.
  std::function<double(const Choice&, int placement)> placement_factor;
  // A factor on sample k (0-based, per cell and candidate) of a candidate; unset: 1.
  std::function<double(const Choice&, int k)> sample_factor;
  // The noiseless time of a candidate instead of TrueTime's; unset: TrueTime.
  std::function<double(const Cell&, const Choice&)> true_time;

  static std::string CellId(const Cell& cell) {
    return std::to_string(int(cell.op)) + "/" + std::to_string(cell.octave) + cell.layout + std::to_string(int(cell.mode)) + "@" +
           std::to_string(cell.n);
  }
  void Prepare(const Cell& cell) override { prepared.insert(CellId(cell)); }
  void SetPlacement(int k) override { placement = k; }

  std::string Name() const override { return "fake"; }
  bool Deterministic() const override { return deterministic; }
  std::string MachineId() override { return "fake-machine"; }
  nlohmann::json Provenance() override { return {{"fake", true}, {"isa_family", "fake"}}; }

  std::vector<Choice> Candidates(const Cell&) override {
    std::vector<Choice> out;
    for (int v = 0; v < variants; ++v)
      for (int t : {1, 4}) out.push_back(Choice{"v" + std::to_string(v), Split{t, 0, 0}});
    return out;
  }
  // Chunks 4096 and 65536 of a threaded winner from 64K elements; stage tile
  // 8192 of an even-numbered ("staged") variant.
  std::vector<Choice> SplitRefinements(const Cell& cell, const Choice& best) override {
    std::vector<Choice> out;
    if (best.split.threads > 1 && cell.n >= 65536)
      for (int64_t chunk : {4096, 65536})
        out.push_back(Choice{best.variant, Split{best.split.threads, chunk, best.split.stage_tile}});
    if (std::stoi(best.variant.substr(1)) % 2 == 0)
      out.push_back(Choice{best.variant, Split{best.split.threads, best.split.chunk, 8192}});
    return out;
  }
  Choice Default(const Cell&) override {
    Choice c;
    c.variant = "v0";
    return c;
  }
  // The noiseless time of a candidate: which variant is best depends on the
  // cell; threads pay off for large n only; chunk 4096 costs 3 %, chunk
  // 65536 saves 8 % from octave 20 on (3 % below); stage tile 8192 saves 6 %.
  static double TrueTime(const Cell& cell, const Choice& c) {
    const int vi = std::stoi(c.variant.substr(1));
    double t = double(cell.n) * (1.0 + 0.06 * double((vi + cell.octave) % 8));
    if (cell.layout == "bcast") t *= 1.2;
    if (c.split.threads > 1) t = t / c.split.threads * 1.15 + 20000.0;
    if (c.split.chunk == 4096) t *= 1.03;
    if (c.split.chunk == 65536) t *= cell.octave >= 20 ? 0.92 : 1.03;
    if (c.split.stage_tile == 8192) t *= 0.94;
    return t;
  }
  std::vector<double> Measure(const Cell& cell, const Choice& c, int reps, double) override {
    if (crash_after >= 0 && calls == crash_after) {
      if (kill_instead) std::raise(SIGKILL);
      throw SimulatedCrash{};
    }
    if (!prepared.count(CellId(cell))) ++unprepared_measures;
    if (clock) *clock += sleep_sec;
    else if (sleep_sec > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_sec));
    const std::string key = std::to_string(cell.octave) + cell.layout + std::to_string(int(cell.mode)) + "|" + c.Key();
    const double factor = placement_factor ? placement_factor(c, placement) : 1.0;
    measured_at.push_back(placement);
    std::vector<double> out;
    for (int r = 0; r < reps; ++r) {
      const int k = per_key[key]++;
      double u = 0;
      if (!deterministic) {
        const uint64_t h = HashKey(uint64_t(k), key);
        u = (double(h % 2001) / 1000.0 - 1.0) * noise;
      }
      out.push_back((true_time ? true_time(cell, c) : TrueTime(cell, c)) * factor * (1.0 + u) * (sample_factor ? sample_factor(c, k) : 1.0));
    }
    ++calls;
    return out;
  }
};

// The search reads `now` (SearchOptions::clock) and the fake backend moves
// it: time in a test is what the fake's samples cost, never the wall clock.
struct FakeClock {
  double now = 0;
  void Use(FakeBackend& be, SearchOptions* opts) {
    be.clock = &now;
    opts->clock = [this] { return now; };
  }
};

}  // namespace actgrad::tune::testing
