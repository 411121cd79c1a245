#include "cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "atlas_runner.h"
#include "host_tiling.h"
#include "tiling/choice.h"
#include "tiling/size_cells.h"

namespace actgrad::atlas {

using AscendEmu::TraceEvent;

CoreTime ReplayTrace(const std::vector<TraceEvent>& trace, const ModelParams& m, double dma_bytes_per_ns) {
  CoreTime ct;
  double pipe[AscendEmu::kNumPipes] = {0, 0, 0, 0};
  std::vector<double> flag;
  double issue = 0;
  const double ns_per_cycle = 1.0 / m.clock_ghz;
  for (const TraceEvent& e : trace) {
    switch (e.type) {
      case TraceEvent::kCopy: {
        issue += m.scalar_issue_ns;
        const double start = std::max(pipe[e.pipe], issue);
        const double cost = m.dma_setup_ns + double(e.amount) / dma_bytes_per_ns;
        pipe[e.pipe] = start + cost;
        ct.busy[e.pipe] += cost;
        break;
      }
      case TraceEvent::kVec: {
        issue += m.scalar_issue_ns;
        const double start = std::max(pipe[e.pipe], issue);
        const double cost =
            (m.vec_issue_cycles + double(e.amount) * m.cycles_per_repeat[e.kind]) * m.vector_cycle_scale * ns_per_cycle;
        pipe[e.pipe] = start + cost;
        ct.busy[e.pipe] += cost;
        break;
      }
      case TraceEvent::kSetFlag:
        if (flag.size() <= e.amount) flag.resize(e.amount + 1, 0.0);
        flag[e.amount] = pipe[e.pipe];
        break;
      case TraceEvent::kWaitFlag: {
        const double f = e.amount < flag.size() ? flag[e.amount] : 0.0;
        if (f > 0) pipe[e.pipe] = std::max(pipe[e.pipe], f + m.flag_sync_ns);
        break;
      }
    }
  }
  ct.ns = std::max({pipe[0], pipe[1], pipe[2], pipe[3], issue});
  return ct;
}

namespace {

struct CoreRun {
  std::vector<TraceEvent> trace;
  AscendEmu::CoreStats stats;
};

using CacheKey = std::tuple<std::string, uint32_t, uint64_t, float, float, uint64_t>;
std::mutex g_cache_mu;
std::map<CacheKey, std::shared_ptr<const CoreRun>> g_cache;

// Emulates one core holding `len` elements (as core 0 of a 1-core launch).
std::shared_ptr<const CoreRun> EmulateCore(const AtlasVariant& v, const AtlasTilingData& t, uint64_t len,
                                           uint64_t ub_capacity) {
  const CacheKey key{v.name, t.tileLength, len, t.scalar0, t.scalar1, ub_capacity};
  {
    std::lock_guard<std::mutex> lock(g_cache_mu);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) return it->second;
  }
  AtlasTilingData one = t;
  one.totalLength = len;
  one.blockDim = 1;
  one.bigCoreNum = 0;
  one.bigCoreLength = one.smallCoreLength = len;
  EmuOptions o;
  o.dry_run = true;
  o.trace = true;
  o.ub_capacity = ub_capacity;
  AscendEmu::LaunchResult r = RunOnEmulator(v, one, nullptr, nullptr, nullptr, o);
  auto run = std::make_shared<CoreRun>();
  run->trace = std::move(r.trace[0]);
  run->stats = r.stats[0];
  std::lock_guard<std::mutex> lock(g_cache_mu);
  g_cache[key] = run;
  return run;
}

AscendEmu::CoreStats Lerp(const AscendEmu::CoreStats& a, const AscendEmu::CoreStats& b, double k) {
  // a + k * (b - a), for counters that grow linearly with the tile count
  auto f = [k](uint64_t x, uint64_t y) { return uint64_t(std::llround(double(x) + k * (double(y) - double(x)))); };
  AscendEmu::CoreStats s = b;
  s.gm_to_ub_bytes = f(a.gm_to_ub_bytes, b.gm_to_ub_bytes);
  s.ub_to_gm_bytes = f(a.ub_to_gm_bytes, b.ub_to_gm_bytes);
  s.dma_in = f(a.dma_in, b.dma_in);
  s.dma_out = f(a.dma_out, b.dma_out);
  s.enque = f(a.enque, b.enque);
  s.deque = f(a.deque, b.deque);
  for (int i = 0; i < AscendEmu::kNumVecKinds; ++i) {
    s.vec_instr[i] = f(a.vec_instr[i], b.vec_instr[i]);
    s.vec_repeats[i] = f(a.vec_repeats[i], b.vec_repeats[i]);
  }
  return s;
}

void Add(AscendEmu::CoreStats* acc, const AscendEmu::CoreStats& s, uint64_t times) {
  acc->gm_to_ub_bytes += s.gm_to_ub_bytes * times;
  acc->ub_to_gm_bytes += s.ub_to_gm_bytes * times;
  acc->dma_in += s.dma_in * times;
  acc->dma_out += s.dma_out * times;
  acc->enque += s.enque * times;
  acc->deque += s.deque * times;
  acc->scalar_gm_reads += s.scalar_gm_reads * times;
  acc->ub_peak_bytes = std::max(acc->ub_peak_bytes, s.ub_peak_bytes);
  for (int i = 0; i < AscendEmu::kNumVecKinds; ++i) {
    acc->vec_instr[i] += s.vec_instr[i] * times;
    acc->vec_repeats[i] += s.vec_repeats[i] * times;
  }
}

constexpr uint64_t kExactTiles = 12;
constexpr uint64_t kShortTiles = 7, kLongTiles = 11;

struct CoreEstimate {
  CoreTime time;
  AscendEmu::CoreStats stats;
};

CoreEstimate EstimateCore(const AtlasVariant& v, const AtlasTilingData& t, uint64_t len, const SocInfo& soc,
                          uint64_t ub_capacity, double bw) {
  CoreEstimate est;
  if (len == 0) return est;
  const uint64_t tile = t.tileLength;
  const uint64_t tiles = (len + tile - 1) / tile;
  if (tiles <= kExactTiles) {
    auto run = EmulateCore(v, t, len, ub_capacity);
    est.time = ReplayTrace(run->trace, soc.model, bw);
    est.stats = run->stats;
    return est;
  }
  const uint64_t tail = len - (tiles - 1) * tile;
  auto r1 = EmulateCore(v, t, (kShortTiles - 1) * tile + tail, ub_capacity);
  auto r2 = EmulateCore(v, t, (kLongTiles - 1) * tile + tail, ub_capacity);
  const CoreTime t1 = ReplayTrace(r1->trace, soc.model, bw);
  const CoreTime t2 = ReplayTrace(r2->trace, soc.model, bw);
  const double k = double(tiles - kShortTiles) / double(kLongTiles - kShortTiles);
  est.time.ns = t1.ns + k * (t2.ns - t1.ns);
  for (int p = 0; p < AscendEmu::kNumPipes; ++p) est.time.busy[p] = t1.busy[p] + k * (t2.busy[p] - t1.busy[p]);
  est.stats = Lerp(r1->stats, r2->stats, k);
  return est;
}

}  // namespace

void ClearTraceCache() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  g_cache.clear();
}

ModelResult ModelLaunch(const AtlasVariant& v, const AtlasTilingData& t, const SocInfo& soc) {
  if (t.blockDim == 0 || t.totalLength == 0) {
    ModelResult res;
    res.block_dim = t.blockDim;
    res.total_ns = soc.model.launch_overhead_ns;
    return res;
  }
  std::vector<uint64_t> lengths(t.blockDim);
  for (uint32_t c = 0; c < t.blockDim; ++c) {
    uint64_t s;
    CoreRange(t, c, &s, &lengths[c]);
  }
  return ModelCores(v, t, lengths, soc);
}

ModelResult ModelCores(const AtlasVariant& v, const AtlasTilingData& t, const std::vector<uint64_t>& core_lengths,
                       const SocInfo& soc, uint64_t ub_capacity) {
  ModelResult res;
  res.block_dim = uint32_t(core_lengths.size());
  const ModelParams& m = soc.model;
  uint64_t n = 0;
  for (uint64_t l : core_lengths) n += l;
  if (core_lengths.empty() || n == 0) {
    res.total_ns = m.launch_overhead_ns;
    return res;
  }
  if (ub_capacity == 0) ub_capacity = soc.UbBudget();
  // Working set: g, x and out.
  const double bytes = 3.0 * double(n) * double(DTypeSize(v.dtype));
  const double mem_bw = bytes <= m.l2_bytes ? m.l2_bandwidth_gbps : m.hbm_bandwidth_gbps;
  // Each copy pipe runs at the core's DMA limit or its share of the memory
  // bandwidth; MTE2 and MTE3 together cannot exceed that share (floor below).
  const double share = mem_bw / double(core_lengths.size());
  const double bw = std::min(m.core_dma_bandwidth_gbps, share);

  std::map<uint64_t, uint64_t> lengths;  // distinct core length -> cores
  for (uint64_t l : core_lengths) ++lengths[l];
  double worst = -1;
  for (const auto& [len, cores] : lengths) {
    CoreEstimate e = EstimateCore(v, t, len, soc, ub_capacity, bw);
    e.time.ns = std::max(e.time.ns, double(e.stats.gm_to_ub_bytes + e.stats.ub_to_gm_bytes) / share);
    Add(&res.total, e.stats, cores);
    if (e.time.ns > worst) {
      worst = e.time.ns;
      res.slowest = e.stats;
      res.mte2_busy_ns = e.time.busy[int(AscendEmu::Pipe::MTE2)];
      res.v_busy_ns = e.time.busy[int(AscendEmu::Pipe::V)];
      res.mte3_busy_ns = e.time.busy[int(AscendEmu::Pipe::MTE3)];
    }
  }
  res.slowest_core_ns = worst;
  res.total_ns = m.launch_overhead_ns + m.core_start_ns + worst;
  res.bound = res.v_busy_ns >= std::max(res.mte2_busy_ns, res.mte3_busy_ns) ? "vector" : "dma";
  return res;
}

// ---------------------------------------------------------------- calibration

std::vector<std::string> DefaultFitParams() {
  return {"launch_overhead_ns", "hbm_bandwidth_gbps", "core_dma_bandwidth_gbps", "dma_setup_ns", "vector_cycle_scale"};
}

static std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r' && c != ' ' && c != '\t') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool ReadMeasurementsCsv(const std::string& path, std::vector<Measurement>* out, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open " + path;
    return false;
  }
  std::string line;
  std::map<std::string, int> col;
  int lineno = 0;
  out->clear();
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    const auto f = SplitCsv(line);
    if (col.empty()) {
      for (size_t i = 0; i < f.size(); ++i) col[f[i]] = int(i);
      for (const char* need : {"variant", "n", "tile", "block_dim", "time_ns"})
        if (!col.count(need)) {
          *err = path + ": header lacks column '" + need + "'";
          return false;
        }
      continue;
    }
    try {
      Measurement m;
      m.variant = f.at(col["variant"]);
      m.n = std::stoull(f.at(col["n"]));
      m.tile = std::stoll(f.at(col["tile"]));
      m.block_dim = std::stoi(f.at(col["block_dim"]));
      m.time_ns = std::stod(f.at(col["time_ns"]));
      if (!FindAtlasVariant(m.variant)) {
        *err = path + ":" + std::to_string(lineno) + ": unknown variant " + m.variant;
        return false;
      }
      if (!(m.time_ns > 0)) {
        *err = path + ":" + std::to_string(lineno) + ": time_ns must be positive";
        return false;
      }
      out->push_back(m);
    } catch (const std::exception& e) {
      *err = path + ":" + std::to_string(lineno) + ": " + e.what();
      return false;
    }
  }
  if (out->empty()) {
    *err = path + ": no measurements";
    return false;
  }
  return true;
}

bool WriteMeasurementsCsv(const std::string& path, const std::vector<Measurement>& rows, std::string* err) {
  std::ofstream o(path);
  if (!o) {
    *err = "cannot write " + path;
    return false;
  }
  o << "variant,n,tile,block_dim,time_ns\n";
  o.precision(10);
  for (const auto& r : rows) o << r.variant << "," << r.n << "," << r.tile << "," << r.block_dim << "," << r.time_ns << "\n";
  return bool(o);
}

namespace {

// "<op>/<dtype>/<mode>/<layout>/o<k>[@n]" (or x<k>@n, a bisection point): n.
bool CellN(const std::string& cell, uint64_t max_n, uint64_t* n) {
  std::vector<std::string> parts;
  std::stringstream ss(cell);
  for (std::string p; std::getline(ss, p, '/');) parts.push_back(p);
  if (parts.size() != 5 || parts[3] != "contig" || parts[4].size() < 2) return false;
  const std::string& last = parts[4];
  if (last[0] != 'o' && last[0] != 'x') return false;
  try {
    const size_t at = last.find('@');
    if (at != std::string::npos) {
      *n = std::stoull(last.substr(at + 1));
      return *n > 0;
    }
    *n = RepresentativeN(std::stoi(last.substr(1)), max_n);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// A logged candidate (Choice::Key, read by ParseChoiceKey) of an Atlas
// variant: no chunk, a block dim and a UB tile.
bool AtlasCand(const std::string& cand, std::string* variant, int* dim, int64_t* tile) {
  Choice c;
  if (!ParseChoiceKey(cand, &c) || !FindAtlasVariant(c.variant) || c.split.chunk != 0) return false;
  *variant = c.variant;
  *dim = c.split.threads;
  *tile = c.split.stage_tile;
  return *dim > 0 && *tile > 0;
}

}  // namespace

bool ReadTuneLog(const std::string& path, std::vector<Measurement>* out, size_t* skipped, std::string* err,
                 std::string* backend) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open " + path;
    return false;
  }
  uint64_t max_n = uint64_t(1) << 26;
  if (backend) backend->clear();
  std::map<std::tuple<std::string, uint64_t, int64_t, int>, std::vector<double>> samples;
  *skipped = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++*skipped;
      continue;
    }
    const std::string type = j.value("type", "");
    if (type == "header") {
      if (j.contains("config") && j["config"].is_object()) {
        max_n = j["config"].value("max_n", max_n);
        if (backend) *backend = j["config"].value("backend", "");
      }
      continue;
    }
    uint64_t n;
    std::string variant;
    int dim;
    int64_t tile;
    if (type != "m" || !j.contains("cell") || !j["cell"].is_string() || !j.contains("cand") ||
        !j["cand"].is_string() || !j.contains("ns") || !j["ns"].is_array() ||
        !CellN(j["cell"].get<std::string>(), max_n, &n) ||
        !AtlasCand(j["cand"].get<std::string>(), &variant, &dim, &tile)) {
      ++*skipped;
      continue;
    }
    auto& v = samples[{variant, n, tile, dim}];
    for (const auto& x : j["ns"])
      if (x.is_number() && x.get<double>() > 0) v.push_back(x.get<double>());
  }
  out->clear();
  for (auto& [key, v] : samples) {
    if (v.empty()) continue;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    double med = v[v.size() / 2];
    if (v.size() % 2 == 0) med = (med + *std::max_element(v.begin(), v.begin() + v.size() / 2)) / 2;
    out->push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), med});
  }
  if (out->empty()) {
    *err = path + ": no Atlas measurements of contiguous cells";
    return false;
  }
  return true;
}

double ModelRow(const Measurement& r, const SocInfo& soc, const OpParams& params) {
  const AtlasVariant* v = FindAtlasVariant(r.variant);
  if (!v) throw std::runtime_error("unknown variant " + r.variant);
  AtlasTilingData t;
  std::string err;
  TilingOptions o;
  o.stage_tile = r.tile;
  o.block_dim = r.block_dim;
  if (!MakeTiling(*v, r.n, params, soc, o, &t, &err)) throw std::runtime_error(err);
  return ModelLaunch(*v, t, soc).total_ns;
}

// Solves A x = b (small dense, Gaussian elimination with pivoting).
static bool Solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>* x) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (std::fabs(a[p][c]) < 1e-300) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x->assign(n, 0);
  for (size_t c = n; c-- > 0;) {
    double s = b[c];
    for (size_t k = c + 1; k < n; ++k) s -= a[c][k] * (*x)[k];
    (*x)[c] = s / a[c][c];
  }
  return true;
}

FitResult Calibrate(SocInfo* soc, const std::vector<Measurement>& rows, const std::vector<std::string>& params,
                    const OpParams& op_params) {
  FitResult fr;
  fr.names = params;
  fr.points = rows.size();
  std::vector<double*> refs;
  for (const auto& p : params) {
    double* r = ModelParamRef(soc->model, p);
    if (!r) throw std::runtime_error("unknown model parameter '" + p + "'");
    if (!(*r > 0)) throw std::runtime_error("parameter '" + p + "' must start positive to be fitted in log space");
    refs.push_back(r);
    fr.before.push_back(*r);
  }
  const size_t np = refs.size(), nr = rows.size();
  auto set = [&](const std::vector<double>& th) {
    for (size_t j = 0; j < np; ++j) *refs[j] = std::exp(th[j]);
  };
  auto residuals = [&](const std::vector<double>& th, std::vector<double>* r) {
    set(th);
    r->resize(nr);
    for (size_t i = 0; i < nr; ++i) (*r)[i] = std::log(ModelRow(rows[i], *soc, op_params) / rows[i].time_ns);
  };
  auto cost = [](const std::vector<double>& r) {
    double s = 0;
    for (double v : r) s += v * v;
    return s;
  };
  std::vector<double> th(np);
  for (size_t j = 0; j < np; ++j) th[j] = std::log(fr.before[j]);
  std::vector<double> r;
  residuals(th, &r);
  double c = cost(r);
  fr.rms_log_before = std::sqrt(c / double(nr));
  double lambda = 1e-2;
  for (int it = 0; it < 100; ++it) {
    fr.iterations = it + 1;
    // numeric Jacobian (central differences in log space)
    std::vector<std::vector<double>> J(nr, std::vector<double>(np));
    const double h = 1e-4;
    for (size_t j = 0; j < np; ++j) {
      std::vector<double> tp = th, tm = th, rp, rm;
      tp[j] += h;
      tm[j] -= h;
      residuals(tp, &rp);
      residuals(tm, &rm);
      for (size_t i = 0; i < nr; ++i) J[i][j] = (rp[i] - rm[i]) / (2 * h);
    }
    std::vector<std::vector<double>> A(np, std::vector<double>(np, 0));
    std::vector<double> g(np, 0);
    for (size_t i = 0; i < nr; ++i)
      for (size_t a = 0; a < np; ++a) {
        g[a] += J[i][a] * r[i];
        for (size_t b = 0; b < np; ++b) A[a][b] += J[i][a] * J[i][b];
      }
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      auto M = A;
      std::vector<double> rhs(np);
      for (size_t a = 0; a < np; ++a) {
        M[a][a] += lambda * std::max(A[a][a], 1e-12);
        rhs[a] = -g[a];
      }
      std::vector<double> d;
      if (!Solve(M, rhs, &d)) {
        lambda *= 10;
        continue;
      }
      std::vector<double> tn = th, rn;
      for (size_t a = 0; a < np; ++a) tn[a] += std::clamp(d[a], -2.0, 2.0);
      residuals(tn, &rn);
      const double cn = cost(rn);
      if (cn < c) {
        const double rel = (c - cn) / std::max(c, 1e-300);
        th = tn;
        r = rn;
        c = cn;
        lambda = std::max(lambda / 10, 1e-9);
        improved = true;
        if (rel < 1e-12) it = 1000;  // converged
      } else {
        lambda *= 10;
      }
    }
    if (!improved || c < 1e-20) break;
  }
  set(th);
  fr.rms_log_after = std::sqrt(c / double(nr));
  for (size_t j = 0; j < np; ++j) fr.after.push_back(*refs[j]);
  return fr;
}

}  // namespace actgrad::atlas
