// What the measuring commands share: the flags read into a TuneConfig, the
// accuracy gate, the backend, and the tool's provenance helpers.
#include <cctype>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

#include "tiling/dispatch.h"
#include "tiling/new_machine.h"
#include "tools/tune/cmd.h"
#include "tools/tune/cpu_backend.h"
#include "tools/tune/shard.h"

#ifdef ACTGRAD_TUNER_HAVE_ATLAS
#include "atlas/tune/atlas_backend.h"
#endif
#ifdef ACTGRAD_TUNER_HAVE_ACCURACY_LIB
#include "tools/accuracy/check.h"
#endif

#ifndef ACTGRAD_TUNER_SOURCE_DIR
#define ACTGRAD_TUNER_SOURCE_DIR ""
#endif
#ifndef ACTGRAD_TUNER_GIT_COMMIT
#define ACTGRAD_TUNER_GIT_COMMIT "unknown"
#endif

namespace actgrad::tune::cmd {

namespace fs = std::filesystem;

Choice DispatchChoice(const Cell& cell) {
  tables::Layout layout = tables::Layout::kContig;
  tables::ParseLayout(cell.layout, &layout);  // checked with the options
  Choice c = TableChoice(cell.op, cell.dtype, cell.mode, cell.n, layout);
  if (c.variant.empty()) throw std::runtime_error("the dispatch has no kernel for this cell");
  return c;
}

namespace {

void OnSignal(int sig) {
  StopFlag().store(true);
  std::signal(sig, SIG_DFL);  // a second Ctrl-C kills at once (the log is safe either way)
}

std::vector<std::string> Split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// "10m", "90s", "1h30m", "1.5m", "600" (seconds).
bool ParseDuration(const std::string& s, double* out) {
  double total = 0, num = 0, frac = 0;
  bool have = false, in_frac = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (in_frac) frac /= 10, num += (c - '0') * frac;
      else num = num * 10 + (c - '0');
      have = true;
    } else if (c == '.') {
      in_frac = true, frac = 1;
    } else {
      double unit = c == 's' ? 1 : c == 'm' ? 60 : c == 'h' ? 3600 : -1;
      if (unit < 0 || !have) return false;
      total += num * unit;
      num = 0, have = false, in_frac = false;
    }
  }
  if (have) total += num;
  *out = total;
  return total > 0;
}

// A size with an optional K/M/G suffix (powers of 2), or an octave index (< 48, no suffix).
bool ParseOctave(const std::string& s, int* k) {
  if (s.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + uint64_t(s[i++] - '0');
  if (i == 0) return false;
  if (i == s.size()) {
    if (v <= uint64_t(kMaxOctaveIndex)) return *k = int(v), true;
    return *k = SizeOctave(v), true;
  }
  const char u = char(std::toupper(static_cast<unsigned char>(s[i])));
  if (i + 1 != s.size() || (u != 'K' && u != 'M' && u != 'G')) return false;
  v <<= (u == 'K' ? 10 : u == 'M' ? 20 : 30);
  *k = SizeOctave(v);
  return true;
}

bool ParseSizes(const std::string& spec, std::vector<int>* out, std::string* err) {
  out->clear();
  for (const std::string& tok : Split(spec)) {
    std::string a = tok, b = tok;
    if (auto p = tok.find(".."); p != std::string::npos) a = tok.substr(0, p), b = tok.substr(p + 2);
    else if (auto q = tok.find('-'); q != std::string::npos) a = tok.substr(0, q), b = tok.substr(q + 1);
    int ka, kb;
    if (!ParseOctave(a, &ka) || !ParseOctave(b, &kb)) return *err = "cannot read size \"" + tok + "\"", false;
    if (ka > kb) std::swap(ka, kb);
    for (int k = ka; k <= kb; ++k) {
      if (k < kMinOctave || k > kMaxOctave)
        return *err = "size octave " + std::to_string(k) + " is outside 10 (1K) .. 26 (64M)", false;
      if (std::find(out->begin(), out->end(), k) == out->end()) out->push_back(k);
    }
  }
  std::sort(out->begin(), out->end());
  if (out->empty()) return *err = "no sizes", false;
  return true;
}

bool ParseOps(const std::string& spec, std::vector<Op>* out, std::string* err) {
  out->clear();
  for (const std::string& tok : Split(spec)) {
    if (tok == "all") {
      *out = AllTunedOps();
      continue;
    }
    bool found = false;
    for (int i = 0; i < kNumOps && !found; ++i) {
      const std::string name(OpName(Op(i)));
      if (name == tok || name.rfind(tok, 0) == 0) {  // prefix: "gelu" -> gelu_bwd
        if (std::find(out->begin(), out->end(), Op(i)) == out->end()) out->push_back(Op(i));
        found = true;
      }
    }
    if (!found) return *err = "unknown op \"" + tok + "\"", false;
  }
  return !out->empty() || (*err = "no ops", false);
}

bool ParseDTypes(const std::string& spec, std::vector<DType>* out, std::string* err) {
  out->clear();
  for (const std::string& tok : Split(spec)) {
    DType t;
    if (!ParseDType(tok, &t)) return *err = "unknown dtype \"" + tok + "\"", false;
    if (std::find(out->begin(), out->end(), t) == out->end()) out->push_back(t);
  }
  return !out->empty() || (*err = "no dtypes", false);
}

std::string RunShell(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    if (pclose(p) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::unique_ptr<Backend> MakeBackend(const std::string& name, const std::string& soc, int device,
                                     const AccuracyGate* gate, int threads, std::string* err) {
  if (name == "cpu") {
    CpuBackendOptions o;
    o.max_threads = threads;
    return std::make_unique<CpuBackend>(gate, o);
  }
#ifdef ACTGRAD_TUNER_HAVE_ATLAS
  const std::string soc_path = soc.empty() ? FindDefault("atlas/soc/ascend910b.json") : soc;
  try {
    if (name == "atlas-model") return actgrad::atlas::MakeAtlasModelBackend(soc_path);
    // On an NPU with a CANN build; else the kernels on the AscendC emulator
    // (backend "atlas-device(emulator)", atlas/tune/atlas_device_backend.cc).
    if (name == "atlas-device") return actgrad::atlas::MakeAtlasDeviceBackend(soc_path, device);
  } catch (const std::exception& e) {
    *err = e.what();
    return nullptr;
  }
#else
  (void)soc, (void)device;
  if (name == "atlas-model" || name == "atlas-device") {
    *err = "this actgrad-tune was built without the Atlas backends (ACTGRAD_BUILD_ATLAS=OFF)";
    return nullptr;
  }
#endif
  *err = "unknown backend \"" + name + "\" (cpu, atlas-model, atlas-device)";
  return nullptr;
}

// What to tune: --budget, --ops, --dtypes, --sizes, --layouts, --gelu-modes.
int ReadSelection(const Flags& f, TuneConfig* cfg) {
  std::string err;
  if (!f.budget.empty() && !ParseDuration(f.budget, &cfg->budget_sec)) {
    std::fprintf(stderr, "actgrad-tune: cannot read --budget \"%s\" (e.g. 10m, 90s, 1h)\n", f.budget.c_str());
    return 2;
  }
  if (!ParseOps(f.ops, &cfg->ops, &err) || !ParseDTypes(f.dtypes, &cfg->dtypes, &err) ||
      !ParseSizes(f.sizes, &cfg->octaves, &err)) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  cfg->layouts = Split(f.layouts);
  for (const auto& l : cfg->layouts) {
    tables::Layout parsed;
    if (!tables::ParseLayout(l, &parsed)) {
      std::fprintf(stderr, "actgrad-tune: unknown layout \"%s\" (contig, bcast, strided, transposed)\n", l.c_str());
      return 2;
    }
  }
  // Atlas tables are tuned for the erf form; the host tiling lends its tilings to
  // the tanh form (docs/atlas.md). --gelu-modes tanh tunes the tanh kernels too.
  const std::string modes = !f.gelu_modes.empty() ? f.gelu_modes : f.backend == "cpu" ? "none,tanh" : "none";
  cfg->gelu_modes.clear();
  for (const auto& m : Split(modes)) {
    if (m == "none" || m == "erf") cfg->gelu_modes.push_back(GeluApprox::kNone);
    else if (m == "tanh") cfg->gelu_modes.push_back(GeluApprox::kTanh);
    else {
      std::fprintf(stderr, "actgrad-tune: unknown GELU mode \"%s\" (none, tanh)\n", m.c_str());
      return 2;
    }
  }
  return 0;
}

// --check: the shipping dispatch's choice is every cell's incumbent.
int ReadCheck(const Flags& f, TuneConfig* cfg) {
  if (f.check_points == "tuned") cfg->points = TuneConfig::Points::kTuned;
  else if (f.check_points == "between") cfg->points = TuneConfig::Points::kBetween;
  else if (f.check_points == "both") cfg->points = TuneConfig::Points::kBoth;
  else {
    std::fprintf(stderr, "actgrad-tune: --check-points must be tuned, between or both (got \"%s\")\n",
                 f.check_points.c_str());
    return 2;
  }
  if (f.backend != "cpu") {
    std::fprintf(stderr, "actgrad-tune: --check needs the cpu backend (it times the library's own dispatch)\n");
    return 2;
  }
  // The incumbent of every cell is what the library would run at that n.
  cfg->incumbent = DispatchChoice;
  cfg->incumbent_name = "shipping:" + ActiveTableName();
  cfg->judging = true;
  cfg->fit_cells = false;  // it judges every cell asked for
  // A cell the search calls slower is re-measured with fresh samples
  // before it counts as a miss (the best of many noisy estimates is biased).
  cfg->confirm_reps = std::max(cfg->search.final_reps, 10);
  cfg->confirm_above = f.tolerance_pct / 100.0;
  return 0;
}

// How to measure: --seed, --shard, --check, --min-ms, --placements.
int ReadMeasuring(const Flags& f, TuneConfig* cfg) {
  std::string err;
  cfg->search.seed = f.seed;
  if (!f.shard.empty()) {
    if (!f.verify.empty()) {
      std::fprintf(stderr, "actgrad-tune: --shard splits a tuning run; --verify takes the whole table\n");
      return 2;
    }
    if (!ParseShard(f.shard, &cfg->shard_index, &cfg->shard_count, &err)) {
      std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
      return 2;
    }
  }
  if (f.check)
    if (const int rc = ReadCheck(f, cfg)) return rc;
  if (f.min_ms > 0) cfg->search.min_seconds = f.min_ms / 1000.0;
  // Where the operands sit matters to host buffers only: other backends
  // ignore placements, so their tables do not claim any by default.
  const int placements = f.placements != 0 ? f.placements : f.backend == "cpu" ? inputs::kDefaultPlacements : 1;
  if (placements < 1 || placements > 64) {
    std::fprintf(stderr, "actgrad-tune: --placements must be 1..64 (got %d)\n", placements);
    return 2;
  }
  cfg->search.final_placements = placements;
  return 0;
}

// --accuracy-class: the class the gate holds the candidates to.
int ReadAccuracyClass(const Flags& f, AccuracyGate* gate) {
  AccuracyClass cls = AccuracyClass::kRule;
  if (!ParseAccuracyClass(f.accuracy_class, &cls)) {
    std::fprintf(stderr, "actgrad-tune: --accuracy-class must be rule or near-exact (got \"%s\")\n",
                 f.accuracy_class.c_str());
    return 2;
  }
  if (cls != AccuracyClass::kRule && (f.backend != "cpu" || f.no_gate)) {
    std::fprintf(stderr, "actgrad-tune: --accuracy-class %s needs the cpu backend and the accuracy gate\n",
                 f.accuracy_class.c_str());
    return 2;
  }
  gate->SetClass(cls);
  return 0;
}

// The CPU backend's candidates: only variants that pass the accuracy check.
void SetUpGate(const Flags& f, AccuracyGate* gate) {
  if (f.backend != "cpu") return;
  if (f.no_gate) {
    gate->AllowAll();
    std::fprintf(stderr, "actgrad-tune: --no-accuracy-gate: every variant competes; do not ship this table\n");
    return;
  }
  std::string err;
  const std::string path = f.accuracy.empty() ? FindDefault("docs/accuracy.json") : f.accuracy;
  if (!gate->Load(path, &err))
    std::fprintf(stderr,
                 "actgrad-tune: warning: no accuracy results (%s): only the default variants can be chosen "
                 "(threads, chunk and stage tile are still tuned)\n",
                 err.c_str());
#ifdef ACTGRAD_TUNER_HAVE_ACCURACY_LIB
  if (f.check_missing)
    gate->SetChecker([](const Variant& v) {
      const acc::VariantAccuracy r = acc::CheckVariant(v);
      return AccuracyGate::Verdict{r.pass, r.max_err};
    });
#else
  if (f.check_missing) std::fprintf(stderr, "actgrad-tune: --check-missing needs the accuracy library; ignored\n");
#endif
}

}  // namespace

std::atomic<bool>& StopFlag() {
  static std::atomic<bool> stop{false};
  return stop;
}

std::string& LogNote() {
  static std::string note;
  return note;
}

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string GitCommit() {
  const std::string src = ACTGRAD_TUNER_SOURCE_DIR;
  if (!src.empty() && fs::exists(fs::path(src) / ".git")) {
    const std::string c = RunShell("git -C '" + src + "' describe --always --dirty --abbrev=12 2>/dev/null");
    if (!c.empty()) return c;
  }
  return ACTGRAD_TUNER_GIT_COMMIT;
}

std::string FindDefault(const std::string& rel) {
  if (fs::exists(rel)) return rel;
  const std::string src = ACTGRAD_TUNER_SOURCE_DIR;
  if (!src.empty() && fs::exists(fs::path(src) / rel)) return (fs::path(src) / rel).string();
  return rel;
}

// The starting table's entries whose choices meet the gate's class (a rule
// table's GELU choices are mostly outside the near-exact class).
void KeepEntriesInClass(const AccuracyGate& gate, NewMachineFallback* start) {
  const auto in_class = [&](const Choice& c) {
    const Variant* v = FindVariant(c.variant);
    return v && gate.Allowed(*v);
  };
  std::vector<tables::Entry> entries;
  std::vector<bool> from_first;
  for (size_t i = 0; i < start->table.entries.size(); ++i) {
    tables::Entry& e = start->table.entries[i];
    if (!in_class(e.choice) || (e.one_thread && !in_class(*e.one_thread))) continue;
    from_first.push_back(start->from_first[i]);
    entries.push_back(std::move(e));
  }
  start->table.entries = std::move(entries);
  start->from_first = std::move(from_first);
}

// The table a quick pass starts from (quick_plan.h). On a machine without a
// table of its own: the fallback chain's table, which the library loads for
// the run's incumbents. On a machine with its own table: that table, whose
// entries stay in every cell the run does not measure (the run's table
// replaces it in the user cache; under another accuracy class they keep
// their choices within the class, not the class's default). Under another
// class the entries outside it are dropped, and a cell whose choice is
// outside it starts from the class's default.
void SeedQuickPass(TuneConfig* cfg, const AccuracyGate& gate, Backend* backend) {
  const bool own = ActiveTable().own;
  const bool rule = gate.accuracy_class() == AccuracyClass::kRule;
  std::optional<NewMachineFallback> start = own ? OwnTable() : FallbackForNewMachine();
  if (!start) return;  // the portable default: the run's default incumbent is the same
  if (!rule) KeepEntriesInClass(gate, &*start);
  auto seed = std::make_shared<QuickSeed>();
  seed->machine_id = start->table.machine_id;
  seed->entries = std::move(start->table.entries);
  seed->from_first = std::move(start->from_first);
  seed->facts = start->facts;
  seed->here = ThisMachineFacts();
  seed->own = own;
  if (!own) ReloadTilingTable("", "", /*as_new_machine=*/true);
  cfg->seed = seed;
  cfg->incumbent = DispatchChoice;
  if (!rule)
    cfg->incumbent = [&gate, backend](const Cell& cell) {
      const Choice c = DispatchChoice(cell);
      const Variant* v = FindVariant(c.variant);
      return v && gate.Allowed(*v) ? c : backend->Default(cell);
    };
  cfg->incumbent_name = (own ? "own:" : "fallback:") + seed->machine_id;
}

int Setup(const Flags& flags, Context* s) {
  s->flags = flags;
  s->cfg = TuneConfig::Defaults(flags.quick);
  if (flags.as_new_machine || flags.against != "default") {
    if (flags.backend != "cpu") {
      std::fprintf(stderr, "actgrad-tune: --as-new-machine and --against fallback or TABLE need the cpu backend\n");
      return 2;
    }
    if (flags.as_new_machine) ReloadTilingTable("", "", /*as_new_machine=*/true);
  }
  if (const int rc = ReadSelection(flags, &s->cfg)) return rc;
  if (const int rc = ReadMeasuring(flags, &s->cfg)) return rc;
  if (const int rc = ReadAccuracyClass(flags, &s->gate)) return rc;
  SetUpGate(flags, &s->gate);
  std::string err;
  s->backend = MakeBackend(flags.backend, flags.soc, flags.device, &s->gate, flags.threads, &err);
  if (!s->backend) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  if (flags.quick && flags.backend == "cpu" && !flags.check && flags.verify.empty())
    SeedQuickPass(&s->cfg, s->gate, s->backend.get());
  s->progress = Progress::Make(stderr, flags.plain);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return 0;
}

}  // namespace actgrad::tune::cmd
