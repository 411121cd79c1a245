#include "tools/tune/series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "tiling/size_cells.h"
#include "tools/tune/stats.h"

namespace actgrad::tune {

namespace {

uint64_t WholeLines(double elements) { return std::max<uint64_t>(64, uint64_t(std::ceil(elements / 64.0)) * 64); }

// The geometric middle of [lo, hi], a multiple of 64 strictly inside when
// there is room.
uint64_t Middle(uint64_t lo, uint64_t hi) {
  const uint64_t m = uint64_t(std::llround(std::sqrt(double(lo) * double(hi)) / 64.0)) * 64;
  return std::clamp(m, lo, hi);
}

std::string TraitsText(const std::vector<std::string>& t) {
  std::string s;
  for (const auto& x : t) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace

std::vector<uint64_t> FitGrains(const std::vector<SeriesPoint>& points, int max_threads, std::string* source) {
  std::vector<uint64_t> grains(points.size(), 0);
  if (max_threads <= 1) {
    if (source) *source = "prior";
    for (size_t i = 0; i < points.size(); ++i) {
      const double per_element = points[i].n ? points[i].median_ns / double(points[i].n) : 0;
      grains[i] = per_element > 0 ? WholeLines(kParallelWorthNs / per_element) : 0;
    }
    return grains;
  }
  if (source) *source = "measured";
  size_t first = 0;
  while (first < points.size() && points[first].threads <= 1) ++first;
  if (first == points.size()) return grains;  // threads never paid off: one thread everywhere
  const SeriesPoint& f = points[first];
  const uint64_t g = WholeLines(double(f.lo ? f.lo : f.n) / double(f.threads));
  for (size_t i = first; i < points.size(); ++i) {
    const SeriesPoint& p = points[i];
    if (p.threads <= 1) continue;  // one thread won here (grain 0), more below: kept as measured
    grains[i] = p.threads >= max_threads ? g : std::max(g, WholeLines(double(p.n) / double(p.threads)));
  }
  return grains;
}

SeriesFit FitSeries(Search& search, Backend& be, const std::string& series,
                    const std::vector<const CellOutcome*>& outcomes, const std::vector<tables::Entry*>& entries,
                    const SeriesOptions& opts) {
  SeriesFit fit;
  // Crossovers between adjacent tuned octaves.
  for (size_t i = 0; i + 1 < outcomes.size(); ++i) {
    const CellOutcome& a = *outcomes[i];
    const CellOutcome& b = *outcomes[i + 1];
    if (b.cell.octave != a.cell.octave + 1) continue;
    const std::vector<std::string> ta = be.Traits(a.chosen.cand), tb = be.Traits(b.chosen.cand);
    if (ta == tb) continue;
    uint64_t lo = a.cell.n, hi = b.cell.n;
    for (int step = 0; step < opts.bisect_steps && hi - lo > 64; ++step) {
      const uint64_t m = Middle(lo, hi);
      if (m <= lo || m >= hi) break;
      Cell c = a.cell;
      c.n = m;
      c.octave = SizeOctave(m);
      const auto [sa, sb] = search.Compare(series + "/x" + std::to_string(a.cell.octave) + "@" + std::to_string(m), c,
                                           a.chosen.cand, b.chosen.cand, opts.bisect_reps);
      (Median(sb) < Median(sa) ? hi : lo) = m;
    }
    // Where the upper choice starts to serve; inside the two octaves'
    // joint range so that both entries keep a size of their own.
    const uint64_t x = std::clamp(Middle(lo, hi), OctaveLo(a.cell.octave) + 64, OctaveHi(b.cell.octave) - 64);
    entries[i]->size_hi = x;
    entries[i + 1]->size_lo = x;
    fit.crossovers.push_back({a.cell.octave, x, TraitsText(ta) + " -> " + TraitsText(tb)});
  }
  // Thread rules.
  std::vector<SeriesPoint> points;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const CellOutcome& o = *outcomes[i];
    points.push_back({o.cell.octave, o.cell.n, o.chosen.cand.split.threads, o.chosen.median, entries[i]->Lo()});
  }
  const std::vector<uint64_t> grains = FitGrains(points, opts.max_threads, &fit.rule_source);
  for (size_t i = 0; i < entries.size(); ++i) {
    tables::Entry& e = *entries[i];
    e.rule = ThreadRule{grains[i]};
    if (!e.extra.is_object()) e.extra = nlohmann::json::object();
    auto& t = e.extra["tuning"];
    t["threads"] = points[i].threads;  // what won at the tuned n (the rule replaces it)
    t["thread_rule"] = fit.rule_source;
  }
  for (const Crossover& c : fit.crossovers)
    for (tables::Entry* e : entries)
      if (e->octave == c.octave) e->extra["tuning"]["crossover"] = {{"n", c.n}, {"why", c.why}};
  return fit;
}

bool FitRulesFromCounts(tables::Table* t, size_t* fitted, std::string* error) {
  *fitted = 0;
  int cores = 0;
  for (const char* key : {"omp_max_threads", "cores"}) {
    const auto it = t->provenance.find(key);
    if (!cores && it != t->provenance.end() && it->is_number_integer() && it->get<int64_t>() >= 1 &&
        it->get<int64_t>() <= 1 << 20)
      cores = int(it->get<int64_t>());
  }
  if (!cores) {
    if (error) *error = "the table's provenance names no core count (omp_max_threads or cores)";
    return false;
  }
  std::map<std::tuple<int, int, int, int>, std::vector<tables::Entry*>> series;
  for (tables::Entry& e : t->entries)
    if (!e.rule) series[{int(e.op), int(e.dtype), int(e.mode), int(e.layout)}].push_back(&e);
  for (auto& [key, entries] : series) {
    std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->octave < b->octave; });
    std::vector<SeriesPoint> points;
    for (const tables::Entry* e : entries) {
      uint64_t n = RepresentativeN(e->octave, uint64_t(1) << 26);
      if (e->extra.is_object() && e->extra.contains("tuning") && e->extra["tuning"].is_object()) {
        const auto& tn = e->extra["tuning"];
        if (tn.contains("n") && tn["n"].is_number_unsigned()) n = tn["n"].get<uint64_t>();
      }
      points.push_back({e->octave, n, std::min(e->choice.split.threads, cores), e->median_ns, e->Lo()});
    }
    const std::vector<uint64_t> grains = FitGrains(points, cores);
    for (size_t i = 0; i < entries.size(); ++i) {
      tables::Entry& e = *entries[i];
      e.rule = ThreadRule{grains[i]};
      if (!e.extra.is_object()) e.extra = nlohmann::json::object();
      if (!e.extra["tuning"].is_object()) e.extra["tuning"] = nlohmann::json::object();
      e.extra["tuning"]["threads"] = points[i].threads;
      e.extra["tuning"]["thread_rule"] = "fitted from the thread counts of a schema-" +
                                         std::to_string(t->source_version) + " table";
      ++*fitted;
    }
  }
  return true;
}

}  // namespace actgrad::tune
