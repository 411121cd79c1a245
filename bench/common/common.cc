// Placed operands, sizes, threads, own flags, the in-run bandwidth limit, counters,
// the operand cache and the roof benchmarks.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "common/bench_common.h"

namespace actgrad::bench {

// ---------------------------------------------------------------- flags
namespace {

struct OwnFlags {
  std::vector<size_t> sizes;
  std::vector<int> threads;
  size_t cache_mb = 4096;
  double limit_ms = 15.0;
  size_t chunk = 0;
  std::vector<int> placements;
  bool check_peers_only = false;
};

OwnFlags& Flags() {
  static OwnFlags f;
  return f;
}

// The comma-separated items of s, empty ones included ("a,,b" -> a, "", b).
std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string_view::npos) end = s.size();
    items.emplace_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return items;
}

template <typename T>
std::vector<T> ParseList(std::string_view s) {
  std::vector<T> out;
  for (const std::string& item : SplitCommas(s)) {
    if (item.empty()) continue;
    char* rest = nullptr;
    double v = std::strtod(item.c_str(), &rest);
    // Suffixes K, M: powers of two (1K = 1024, 16M = 16777216).
    if (rest && (*rest == 'K' || *rest == 'k')) v *= 1024.0;
    if (rest && (*rest == 'M' || *rest == 'm')) v *= 1024.0 * 1024.0;
    if (v > 0) out.push_back(static_cast<T>(v));
  }
  return out;
}

// "0,1,5": non-negative placement indices (ParseList drops 0).
std::vector<int> ParseIndices(std::string_view s) {
  std::vector<int> out;
  for (const std::string& item : SplitCommas(s)) {
    char* rest = nullptr;
    const long v = std::strtol(item.c_str(), &rest, 10);
    if (item.empty() || *rest != '\0' || v < 0 || v > 1000000) {
      std::fprintf(stderr, "actgrad bench: --actgrad_placements: '%s' is not a placement index (0, 1, ...)\n",
                   item.c_str());
      std::exit(2);
    }
    out.push_back(int(v));
  }
  return out;
}

}  // namespace

void ParseOwnFlags(int* argc, char** argv) {
  ThreadsAtStart();  // capture the OpenMP default before anything else changes it
  int w = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string_view a(argv[i]);
    auto value = [&](std::string_view key, std::string_view* v) {
      if (a.substr(0, key.size()) != key) return false;
      *v = a.substr(key.size());
      return true;
    };
    std::string_view v;
    if (value("--actgrad_sizes=", &v)) {
      Flags().sizes = ParseList<size_t>(v);
    } else if (value("--actgrad_threads=", &v)) {
      Flags().threads = ParseList<int>(v);
    } else if (value("--actgrad_cache_mb=", &v)) {
      Flags().cache_mb = static_cast<size_t>(std::atoll(std::string(v).c_str()));
    } else if (value("--actgrad_chunk=", &v)) {
      Flags().chunk = static_cast<size_t>(std::atoll(std::string(v).c_str()));
    } else if (value("--actgrad_placements=", &v)) {
      Flags().placements = ParseIndices(v);
    } else if (value("--actgrad_limit_ms=", &v)) {
      Flags().limit_ms = std::atof(std::string(v).c_str());
    } else if (a == "--actgrad_check_peers") {
      Flags().check_peers_only = true;
    } else {
      argv[w++] = argv[i];
    }
  }
  *argc = w;
  argv[w] = nullptr;
}

size_t ChunkFlag() { return Flags().chunk; }
bool CheckPeersOnlyFlag() { return Flags().check_peers_only; }

std::vector<inputs::Placement> SweepPlacements() {
  std::vector<inputs::Placement> p;
  if (!Flags().placements.empty()) {
    for (int k : Flags().placements) p.push_back(inputs::PlacementAt(k));
  } else {
    for (int k = 0; k < inputs::kDefaultPlacements; ++k) p.push_back(inputs::PlacementAt(k));
  }
  return p;
}

std::string PlacementsText() {
  std::string s;
  for (const auto& p : SweepPlacements()) s += (s.empty() ? "" : ",") + std::to_string(p.index);
  return s;
}

// ---------------------------------------------------------------- threads, sizes
int ThreadsAtStart() {
  static const int max_threads = std::max(1, omp_get_max_threads());
  return max_threads;
}

std::vector<int> ThreadCounts() {
  std::vector<int> t;
  for (int k = 1; k < ThreadsAtStart(); k *= 2) t.push_back(k);
  t.push_back(ThreadsAtStart());
  return t;
}

std::vector<size_t> PowerOf4Sizes() {
  std::vector<size_t> s;
  for (size_t n = 1024; n <= (size_t{64} << 20); n *= 4) s.push_back(n);
  return s;
}

std::vector<size_t> OddSizes() { return {1001, 65537, 1000003}; }

std::vector<size_t> SweepSizes() {
  if (!Flags().sizes.empty()) return Flags().sizes;
  std::vector<size_t> s = PowerOf4Sizes();
  for (size_t n : OddSizes()) s.push_back(n);
  std::sort(s.begin(), s.end());
  return s;
}

std::vector<int> SweepThreads() {
  if (!Flags().threads.empty()) return Flags().threads;
  return ThreadCounts();
}

// ---------------------------------------------------------------- cache
namespace {

struct Cache {
  std::mutex mu;
  std::list<std::pair<std::string, std::pair<std::shared_ptr<void>, size_t>>> lru;  // front = newest
  size_t bytes = 0;
};

Cache& TheCache() {
  static Cache c;
  return c;
}

}  // namespace

std::shared_ptr<void> CacheGet(const std::string& key) {
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto it = c.lru.begin(); it != c.lru.end(); ++it) {
    if (it->first == key) {
      c.lru.splice(c.lru.begin(), c.lru, it);
      return c.lru.front().second.first;
    }
  }
  return nullptr;
}

namespace {
void EvictFor(Cache& c, size_t bytes) {
  const size_t budget = Flags().cache_mb << 20;
  while (!c.lru.empty() && c.bytes + bytes > budget) {
    c.bytes -= c.lru.back().second.second;
    c.lru.pop_back();
  }
}
}  // namespace

void CachePut(const std::string& key, std::shared_ptr<void> value, size_t bytes) {
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  EvictFor(c, bytes);  // the new entry always stays, even when over budget
  c.lru.emplace_front(key, std::make_pair(std::move(value), bytes));
  c.bytes += bytes;
}

void CacheReserve(size_t bytes) {
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  EvictFor(c, bytes);
}

void CacheClear() {
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.lru.clear();
  c.bytes = 0;
}

std::shared_ptr<Operands> GetOperands(Op op, DType dt, size_t n, const inputs::Placement& place) {
  const std::string key = "op/" + std::string(OpName(op)) + "/" + std::string(DTypeName(dt)) + "/" +
                          std::to_string(n) + "/" + inputs::PlacementLabel(place);
  if (auto p = CacheGet(key)) return std::static_pointer_cast<Operands>(p);
  // Make room first so that the old sets are freed before the new one is allocated.
  const size_t bytes = 3 * n * DTypeSize(dt);
  CacheReserve(bytes);
  auto ops = std::make_shared<Operands>();
  ops->n = n;
  ops->arena = inputs::PlacedArena(n * DTypeSize(dt), n * DTypeSize(dt), place);
  ops->g = ops->arena.g();
  ops->x = ops->arena.x();
  ops->out = ops->arena.out();
  FillG(op, dt, ops->g, n);
  FillX(op, dt, ops->x, n);
  std::memset(ops->out, 0, n * DTypeSize(dt));
  CachePut(key, ops, bytes);
  return ops;
}

namespace {

// dst = a (+ s * b): a, b and dst where g, x and out sit at this placement.
struct RoofBuffers {
  inputs::PlacedArena arena;
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
};

std::shared_ptr<RoofBuffers> GetRoofBuffers(size_t n, const inputs::Placement& place) {
  const std::string key = "roof/" + std::to_string(n) + "/" + inputs::PlacementLabel(place);
  if (auto p = CacheGet(key)) return std::static_pointer_cast<RoofBuffers>(p);
  CacheReserve(12 * n);
  auto r = std::make_shared<RoofBuffers>();
  r->arena = inputs::PlacedArena(n * 4, n * 4, place);
  r->a = static_cast<float*>(r->arena.g());
  r->b = static_cast<float*>(r->arena.x());
  r->c = static_cast<float*>(r->arena.out());
  float* a = r->a;
  float* b = r->b;
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i & 1023) * 0.25f;
    b[i] = 1.0f - static_cast<float>(i & 511) * 0.5f;
  }
  std::memset(r->c, 0, n * 4);
  CachePut(key, r, 12 * n);
  return r;
}

}  // namespace

// ---------------------------------------------------------------- limit
namespace {

// Median over samples of bytes/s; each sample runs whole calls for at least
// `ms` milliseconds.
double MeasureRoof(Roof r, RoofBuffers& buf, size_t n, int threads, double ms, int samples) {
  using clock = std::chrono::steady_clock;
  const float* a = buf.a;
  const float* b = buf.b;
  float* c = buf.c;
  RunRoof(r, a, b, c, n, threads);  // warm-up (caches, pages, thread team)
  RunRoof(r, a, b, c, n, threads);
  std::vector<double> rates;
  for (int s = 0; s < samples; ++s) {
    size_t calls = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    do {
      RunRoof(r, a, b, c, n, threads);
      ++calls;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    } while (elapsed * 1e3 < ms);
    rates.push_back(RoofBytes(r, n) * static_cast<double>(calls) / elapsed);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

double LimitBytesPerSecond(size_t n, int threads) {
  static std::mutex mu;
  static std::map<std::pair<size_t, int>, double> memo;
  n = std::max<size_t>(n, 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find({n, threads});
    if (it != memo.end()) return it->second;
  }
  // A budget of T threads may use fewer: below some n one thread beats a
  // team (the fork/join costs more than the work), and the library does not
  // fork there either. The limit for T is the best over t <= T.
  double best = 0;
  if (threads > 1) {
    for (int t : ThreadCounts())
      if (t < threads) best = std::max(best, LimitBytesPerSecond(n, t));
  }
  const double ms = Flags().limit_ms;
  for (const auto& place : SweepPlacements()) {
    inputs::RunAtStackOffset(place, [&] {
      auto buf = GetRoofBuffers(n, place);
      const double plain = MeasureRoof(Roof::kStreamPlain, *buf, n, threads, ms, 7);
      const double nt = MeasureRoof(Roof::kStreamNt, *buf, n, threads, ms, 7);
      best = std::max(best, std::max(plain, nt));
    });
  }
  std::lock_guard<std::mutex> lock(mu);
  memo[{n, threads}] = best;
  return best;
}

void SetCounters(benchmark::State& st, double seconds, double bytes_per_call, double items_per_call,
                 size_t n, int threads) {
  if (st.iterations() == 0 || seconds <= 0) return;
  const double iters = static_cast<double>(st.iterations());
  const double bps = bytes_per_call * iters / seconds;
  const double limit = LimitBytesPerSecond(n, threads);
  const size_t n_same = std::max<size_t>(1, static_cast<size_t>(bytes_per_call / 12.0 + 0.5));
  const double limit_same = (n_same == n || bytes_per_call <= 0) ? limit : LimitBytesPerSecond(n_same, threads);
  st.counters["bytes_per_second"] = benchmark::Counter(bps, benchmark::Counter::kDefaults,
                                                       benchmark::Counter::kIs1024);
  st.counters["items_per_second"] = benchmark::Counter(items_per_call * iters / seconds);
  st.counters["pct_of_bandwidth"] = benchmark::Counter(100.0 * bps / limit);
  st.counters["pct_of_bandwidth_same_bytes"] = benchmark::Counter(100.0 * bps / limit_same);
  st.counters["roof_bytes_per_second"] = benchmark::Counter(limit, benchmark::Counter::kDefaults,
                                                            benchmark::Counter::kIs1024);
}

std::string BenchName(const std::string& kind, const std::string& subject, size_t n, int threads,
                      const inputs::Placement& place) {
  return kind + "/" + subject + "/n:" + std::to_string(n) + "/thr:" + std::to_string(threads) +
         "/place:" + std::to_string(place.index);
}

void SetPlacement(benchmark::State& st, const inputs::Placement& place) {
  st.counters["placement"] = benchmark::Counter(double(place.index));
  st.SetLabel(inputs::PlacementLabel(place));
}

// ---------------------------------------------------------------- roof benchmarks
void RegisterRoofBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads) {
  for (Roof r : {Roof::kMemcpy, Roof::kStreamPlain, Roof::kStreamNt}) {
    for (size_t n : sizes) {
      for (int t : threads) {
        for (const auto& place : SweepPlacements()) {
          RegisterWallClock(BenchName("roof", RoofName(r), n, t, place),
                                       [r, n, t, place](benchmark::State& st) {
                                         inputs::RunAtStackOffset(place, [&] {
                                         auto buf = GetRoofBuffers(n, place);
                                         RunRoof(r, buf->a, buf->b, buf->c, n, t);
                                         const double s =
                                             TimedLoop(st, [&] { RunRoof(r, buf->a, buf->b, buf->c, n, t); });
                                         SetCounters(st, s, RoofBytes(r, n), static_cast<double>(n), n, t);
                                         SetPlacement(st, place);
                                         });
                                       });
        }
      }
    }
  }
}

}  // namespace actgrad::bench
