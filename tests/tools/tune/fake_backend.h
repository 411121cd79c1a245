// A deterministic stand-in for a measurement backend: known "true" times per
// candidate with small multiplicative noise, optional sleeping (to make the
// budget bind) and a simulated crash after k measurements.
#pragma once
#include <csignal>
#include <chrono>
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
  double sleep_sec = 0;     // per Measure call
  long crash_after = -1;    // throw SimulatedCrash on call k (0-based), before measuring
  bool kill_instead = false;  // raise SIGKILL instead of throwing
  int variants = 8;
  long calls = 0;           // Measure calls completed
  std::map<std::string, int> per_key;  // (bucket, candidate) -> calls
  std::set<std::string> prepared;      // cells Prepare ran for
  long unprepared_measures = 0;        // Measure calls on a cell Prepare never saw

  static std::string CellId(const Bucket& b) {
    return std::to_string(int(b.op)) + "/" + std::to_string(b.octave) + b.layout + std::to_string(int(b.mode)) + "@" +
           std::to_string(b.n);
  }
  void Prepare(const Bucket& b) override { prepared.insert(CellId(b)); }

  std::string Name() const override { return "fake"; }
  bool Deterministic() const override { return deterministic; }
  std::string MachineId() override { return "fake-machine"; }
  nlohmann::json Provenance() override { return {{"fake", true}, {"isa_family", "fake"}}; }

  std::vector<Candidate> Candidates(const Bucket& b) override {
    std::vector<Candidate> out;
    for (int v = 0; v < variants; ++v)
      for (int t : {1, 4}) {
        Candidate c;
        c.variant = "v" + std::to_string(v);
        c.threads = t;
        out.push_back(c);
        if (t > 1 && b.n >= 65536) {
          c.tile = 4096;
          out.push_back(c);
        }
      }
    return out;
  }
  Candidate Default(const Bucket&) override {
    Candidate c;
    c.variant = "v0";
    return c;
  }
  // The noiseless time of a candidate: which variant is best depends on the
  // bucket; threads pay off for large n only; tiles cost 3 %.
  static double TrueTime(const Bucket& b, const Candidate& c) {
    const int vi = std::stoi(c.variant.substr(1));
    double t = double(b.n) * (1.0 + 0.06 * double((vi + b.octave) % 8));
    if (b.layout == "bcast") t *= 1.2;
    if (c.threads > 1) t = t / c.threads * 1.15 + 20000.0;
    if (c.tile) t *= 1.03;
    return t;
  }
  std::vector<double> Measure(const Bucket& b, const Candidate& c, int reps, double) override {
    if (crash_after >= 0 && calls == crash_after) {
      if (kill_instead) std::raise(SIGKILL);
      throw SimulatedCrash{};
    }
    if (!prepared.count(CellId(b))) ++unprepared_measures;
    if (sleep_sec > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_sec));
    const std::string key = std::to_string(b.octave) + b.layout + std::to_string(int(b.mode)) + "|" + c.Key();
    std::vector<double> out;
    for (int r = 0; r < reps; ++r) {
      const int k = per_key[key]++;
      double u = 0;
      if (!deterministic) {
        const uint64_t h = HashKey(uint64_t(k), key);
        u = (double(h % 2001) / 1000.0 - 1.0) * noise;
      }
      out.push_back(TrueTime(b, c) * (1.0 + u));
    }
    ++calls;
    return out;
  }
};

}  // namespace actgrad::tune::testing
