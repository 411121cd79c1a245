#include "tiling/dispatch.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <sstream>
#include <utility>
#include <vector>

#include "tiling/compiled_tables.h"
#include "tiling/fallback.h"
#include "tiling/freshness.h"
#include "tiling/size_cells.h"
#include "tiling/machine.h"
#include "tiling/new_machine.h"
#include "tiling/table.h"
#include "variants/cache.h"
#include "variants/thread_pool.h"

namespace actgrad {

namespace {

constexpr int kOctaves = kMaxOctaveIndex + 1;
struct Cell {
  KernelChoice best;
  KernelChoice one_thread;  // when the caller allows 1 thread only; variant nullptr: none
  std::optional<ThreadRule> rule;  // absent: best.split.threads is the thread count
  uint64_t lo = 0, hi = 0;  // the sizes it serves (tables::Entry::Lo, Hi)
  int32_t entry = -1;       // index of its Choices in Active::choices; -1: no entry
  bool unrunnable = false;  // the entry names a variant this CPU cannot run: the default at n
};
// cells[op][dtype][mode][layout][octave]; nearest[...][b]: the octave FindCell
// falls back to when octave b has no entry (the nearest one with an entry,
// lower first at equal distance), -1 when the row has none; filled by Select
// once every entry is in (FindNearest), so a call does no search.
struct Grid {
  Cell cells[kNumOps][kNumDTypes][2][tables::kNumLayouts][kOctaves];
  int8_t nearest[kNumOps][kNumDTypes][2][tables::kNumLayouts][kOctaves];
};
static_assert(kOctaves <= 127, "nearest[] holds an octave in an int8_t");

// Whose machine a selection is for: this one, or one a test poses as
// (PoseAsMachine), whose facts then decide what runs and what fits a cache.
struct MachineView {
  std::optional<MachineFacts> posed;  // absent: this machine
  uint64_t l2 = 0, llc = 0, llc_part = 0;  // bytes: its L2, last level, one CPU's part of that
  static MachineView This() { return {std::nullopt, L2CacheBytes(), LastLevelCacheBytes(), LastLevelCachePartBytes()}; }
  static MachineView Posed(const MachineFacts& f) {
    const MachineView here = This();  // an unknown fact of the pose stays this machine's
    return {f, f.l2 ? f.l2 : here.l2, f.llc ? f.llc : here.llc, f.llc ? LlcPartBytes(f) : here.llc_part};
  }
  bool Runs(const Variant* v) const { return v && (posed ? RunsOn(*v, *posed) : v->supported); }
  const Variant* Twin(const Variant& v) const {  // StreamingTwin on this machine
    return StreamingTwin(v, [this](const Variant& t) { return Runs(&t); });
  }
};

struct Active {
  ActiveTableInfo info;
  MachineView machine = MachineView::This();
  std::unique_ptr<Grid> grid = std::make_unique<Grid>();
  // Per entry: its choice and its one-thread choice (TableChoice reads them).
  std::vector<std::pair<Choice, std::optional<Choice>>> choices;
  // What the entries were tuned among, read when asked (ActiveTableFreshness):
  // each compiled entry's table and index, or the parsed table.
  std::vector<std::pair<const tables::CompiledTable*, size_t>> compiled_from;
  std::shared_ptr<const tables::Table> parsed;
  std::once_flag freshness_once;
  Freshness freshness;
};

Active* g_active = nullptr;
std::once_flag g_once;
// Set once the first selection is done: the per-call check, without
// std::call_once (which stores its callable in thread-locals on every call).
std::atomic<bool> g_selected{false};
// Table selections since the first (ReloadTilingTable): ChooseKernel's memos
// of an earlier selection are stale.
std::atomic<uint64_t> g_reloads{0};

// Entries naming a variant this CPU cannot run (a table of another machine
// of the ISA family: AVX512-FP16 variants on an AVX-512 CPU without it) give
// the default choice in their octave; they are counted for one message.
struct Skipped {
  size_t count = 0;
  std::string first;
};

// One entry's cell: its choices, thread rule and size range.
struct EntryCell {
  int op, dtype, mode, layout, octave;
  Choice best;
  std::optional<Choice> one_thread;
  std::optional<ThreadRule> rule;
  uint64_t lo, hi;
};

// Resolve (choice.h) for the machine of the selection: a table entry's.
KernelChoice ResolveOn(const MachineView& m, const Choice& c) {
  KernelChoice k;
  const Variant* v = FindVariant(c.variant);
  k.variant = m.Runs(v) ? v : nullptr;
  k.split = c.split;
  k.from_table = true;
  return k;
}

void Add(Active* a, EntryCell e, Skipped* skipped) {
  const auto& [op, dtype, mode, layout, octave, best, one_thread_in, rule, lo, hi] = e;
  std::optional<Choice> one_thread = one_thread_in;
  if (op >= kNumOps || dtype >= kNumDTypes || mode > 1 || layout >= tables::kNumLayouts || octave < 0 || octave >= kOctaves) return;
  Cell& cell = a->grid->cells[op][dtype][mode][layout][octave];
  cell = Cell{};
  cell.rule = rule;
  cell.lo = lo, cell.hi = hi;
  cell.best = ResolveOn(a->machine, best);
  if (!cell.best.variant) {
    if (skipped->count++ == 0) skipped->first = best.variant;
    cell.unrunnable = true;
    return;
  }
  if (one_thread) {
    one_thread->split.threads = 1;
    cell.one_thread = ResolveOn(a->machine, *one_thread);
  }
  cell.entry = int32_t(a->choices.size());
  a->choices.emplace_back(best, std::move(one_thread));
  ++a->info.entries;
}

void ReportSkipped(const Active* a, const Skipped& s) {
  if (s.count == 0) return;
  std::fprintf(stderr,
               "actgrad: tiling table %s: %zu entries name variants %s cannot run (first: %s); "
               "those cells use the default\n",
               a->info.source.c_str(), s.count,
               a->machine.posed ? ("the posed machine " + a->machine.posed->id).c_str() : "this CPU", s.first.c_str());
}

// Entries of a compiled table the machine m runs.
size_t RunnableEntries(const tables::CompiledTable& t, const MachineView& m) {
  size_t k = 0;
  for (size_t i = 0; i < t.count; ++i) k += m.Runs(FindVariant(t.entries[i].variant));  // (CompiledEntry::variant)
  return k;
}

bool HasEntry(const Cell& c) { return c.entry >= 0 || c.unrunnable; }

// Fills grid.nearest (see Grid) from the cells.
void FindNearest(Grid* g) {
  for (int op = 0; op < kNumOps; ++op)
    for (int dt = 0; dt < kNumDTypes; ++dt)
      for (int mode = 0; mode < 2; ++mode)
        for (int layout = 0; layout < tables::kNumLayouts; ++layout) {
          const auto& cells = g->cells[op][dt][mode][layout];
          int below[kOctaves], above[kOctaves];  // the nearest octave with an entry below / above b; -1: none
          for (int b = 0, last = -1; b < kOctaves; ++b) below[b] = last, last = HasEntry(cells[b]) ? b : last;
          for (int b = kOctaves - 1, last = -1; b >= 0; --b) above[b] = last, last = HasEntry(cells[b]) ? b : last;
          for (int b = 0; b < kOctaves; ++b) {
            int found = below[b];  // at equal distance the lower one, as FindCell's search goes
            if (above[b] >= 0 && (found < 0 || above[b] - b < b - found)) found = above[b];
            g->nearest[op][dt][mode][layout][b] = int8_t(found);
          }
        }
}

// What a selection is for: the machine (this one with its id or ISA family
// overridden, or one posed as), and whether as a new machine.
struct Selection {
  MachineFacts me;
  bool posed = false;
  bool as_new_machine = false;
};
Selection ThisMachine(const std::string& id_override = "", const std::string& isa_override = "",
                      bool as_new_machine = false) {
  Selection s{ThisMachineFacts(), false, as_new_machine};
  if (!id_override.empty()) ParseMachineId(id_override, &s.me);
  if (!isa_override.empty()) s.me.isa_family = isa_override;
  return s;
}

Active* SelectEntries(const Selection& sel);

Active* Select(const Selection& sel) {
  Active* a = SelectEntries(sel);
  FindNearest(a->grid.get());
  return a;
}

// A parsed table's entries (ACTGRAD_TILING_TABLE, the user cache).
void AddTable(Active* a, const tables::Table& t) {
  a->info.accuracy_class = t.accuracy_class;
  a->parsed = std::make_shared<const tables::Table>(t);
  Skipped skipped;
  for (const auto& e : t.entries)
    Add(a, {int(e.op), int(e.dtype), int(e.mode), int(e.layout), e.octave, e.choice, e.one_thread, e.rule, e.Lo(), e.Hi()},
        &skipped);
  ReportSkipped(a, skipped);
}

// The user cache's table for machine `id`: <UserTableCacheDir()>/<id>.json,
// read as ACTGRAD_TILING_TABLE is; it must name this machine's id and the
// CPU backend. No file there: false, silently (the normal case); any other
// defect: false with *error naming the file and why.
bool LoadUserCacheTable(const std::string& id, std::string* path, tables::Table* t, std::string* error) {
  const std::string dir = UserTableCacheDir();
  if (dir.empty() || id.empty() || id.find('/') != std::string::npos || id == "." || id == "..") return false;
  *path = dir + "/" + id + ".json";
  struct stat st;
  if (::stat(path->c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return false;
  if (!tables::LoadTableFile(*path, t, error)) return false;
  if (t->backend != "cpu") {
    *error = *path + ": not a CPU table (backend \"" + t->backend + "\")";
    return false;
  }
  if (t->machine_id != id) {
    *error = *path + ": machine_id \"" + t->machine_id + "\" is not this machine's (\"" + id + "\")";
    return false;
  }
  return true;
}

// A compiled-in table's facts for the fallback chain.
TableCandidate Candidate(const tables::CompiledTable& t, const MachineView& m) {
  TableCandidate c;
  c.facts = CompiledTableFacts(t);
  c.runnable = RunnableEntries(t, m);
  return c;
}

// The compiled-in tables the chain gives machine `id` (as_new_machine: never
// the one of its own id): the table of its exact id alone; else the fallback
// table first, then the tables that fill the series it lacks (RankTables);
// the default alone; empty: none. *reason: why the first.
std::vector<const tables::CompiledTable*> ChainTables(const Selection& sel, const MachineView& m,
                                                     std::string* reason) {
  const MachineFacts& me = sel.me;
  std::vector<TableCandidate> candidates;
  for (size_t i = 0; i < tables::kNumCompiledTables; ++i) candidates.push_back(Candidate(tables::kCompiledTables[i], m));
  const std::vector<std::string> hidden =
      sel.as_new_machine ? std::vector<std::string>{me.id} : std::vector<std::string>{};
  // RankTables' first pick is PickTable's, unless that is the default.
  const std::vector<TablePick> ranked = RankTables(me, candidates, hidden);
  const TablePick first = ranked.empty() ? PickTable(me, candidates, hidden) : ranked.front();
  if (first.index < 0) return {};
  *reason = first.reason;
  if (ranked.empty() || first.reason == "exact machine id") return {&tables::kCompiledTables[first.index]};
  std::vector<const tables::CompiledTable*> chain;
  for (const TablePick& p : ranked) chain.push_back(&tables::kCompiledTables[p.index]);
  return chain;
}

// Calls f(entry, k) for each entry of chain[k] whose series (op, dtype, GELU
// formula, layout) chain[k] serves: the first table with an entry of the
// series the machine m runs, else (none runs one) the first with the series.
// A series a foreign table has only in variants m cannot run (an Intel
// table's AVX512-FP16 kernels, posed as Zen 4) comes from a later table.
template <class F>
void ForEachChainEntry(const std::vector<const tables::CompiledTable*>& chain, const MachineView& m, F f) {
  std::map<tables::SeriesKey, size_t> runs, has;  // series -> the first table running / having it
  for (size_t k = chain.size(); k-- > 0;)
    for (size_t i = 0; i < chain[k]->count; ++i) {
      const auto& e = chain[k]->entries[i];
      const tables::SeriesKey series{e.op, e.dtype, e.mode, e.layout};
      has[series] = k;
      if (m.Runs(FindVariant(e.variant))) runs[series] = k;
    }
  for (size_t k = 0; k < chain.size(); ++k)
    for (size_t i = 0; i < chain[k]->count; ++i) {
      const auto& e = chain[k]->entries[i];
      const tables::SeriesKey series{e.op, e.dtype, e.mode, e.layout};
      const auto r = runs.find(series);
      if ((r != runs.end() ? r->second : has[series]) == k) f(e, k);
    }
}

// A compiled entry as a table's.
EntryCell ToCell(const tables::CompiledEntry& e) {
  std::optional<Choice> one_thread;
  if (e.one_thread_variant) one_thread = Choice{e.one_thread_variant, e.one_thread_split};
  std::optional<ThreadRule> rule;
  if (e.grain >= 0) rule = ThreadRule{uint64_t(e.grain)};
  return {e.op, e.dtype, e.mode, e.layout, e.octave, Choice{e.variant, e.split}, std::move(one_thread), rule,
          e.size_lo, e.size_hi};
}

void AddCompiled(Active* a, const Selection& sel) {
  std::string reason;
  const auto chain = ChainTables(sel, a->machine, &reason);
  if (chain.empty()) return;
  a->info = {chain[0]->machine_id, std::string("compiled:") + chain[0]->source, reason, 0};
  a->info.own = reason == "exact machine id";
  Skipped skipped;
  std::vector<bool> used(chain.size(), false);
  ForEachChainEntry(chain, a->machine, [&](const tables::CompiledEntry& e, size_t k) {
    Add(a, ToCell(e), &skipped);
    a->compiled_from.emplace_back(chain[k], size_t(&e - chain[k]->entries));
    used[k] = true;
  });
  for (size_t k = 1; k < chain.size(); ++k)
    if (used[k]) a->info.gap_tables.push_back(chain[k]->machine_id);
  ReportSkipped(a, skipped);
}

Active* SelectEntries(const Selection& sel) {
  auto* a = new Active;
  if (sel.posed) a->machine = MachineView::Posed(sel.me);
  const std::string& id = sel.me.id;
  const bool as_new_machine = sel.as_new_machine;
  // 1. the run-time override, for experiments; a bad file falls back.
  if (const char* path = std::getenv("ACTGRAD_TILING_TABLE"); path && *path && !as_new_machine) {
    tables::Table t;
    std::string error;
    if (tables::LoadTableFile(path, &t, &error) && t.backend == "cpu") {
      a->info = {t.machine_id, std::string("env:") + path, "ACTGRAD_TILING_TABLE", 0};
      a->info.own = true;
      AddTable(a, t);
      return a;
    }
    std::fprintf(stderr, "actgrad: ignoring ACTGRAD_TILING_TABLE: %s; using the next table of the chain\n",
                 error.empty() ? "not a CPU table" : error.c_str());
  }
  // 2. this machine's own table in the user cache (actgrad-tune --install).
  if (!as_new_machine) {
    tables::Table t;
    std::string path, error;
    if (LoadUserCacheTable(id, &path, &t, &error)) {
      a->info = {t.machine_id, "cache:" + path, "user cache (this machine's id)", 0};
      a->info.own = true;
      AddTable(a, t);
      return a;
    }
    if (!error.empty())
      std::fprintf(stderr, "actgrad: ignoring the user-cache table: %s; using the compiled-in table\n", error.c_str());
  }
  // 3. compiled-in: the fallback chain over machine facts (tiling/fallback.h).
  AddCompiled(a, sel);
  return a;
}

Active* Get() {
  if (!g_selected.load(std::memory_order_acquire)) {
    std::call_once(g_once, [] { g_active = Select(ThisMachine()); });
    g_selected.store(true, std::memory_order_release);
  }
  return g_active;
}

}  // namespace

namespace {
// The chain's tables as one table: the first's entries, then those of the
// series it lacks from the next ones.
std::optional<NewMachineFallback> ChainAsTable(bool as_new_machine) {
  std::string reason;
  const MachineView here = MachineView::This();
  const auto chain = ChainTables(ThisMachine("", "", as_new_machine), here, &reason);
  if (chain.empty() || chain[0]->count == 0) return std::nullopt;
  NewMachineFallback f;
  f.table.machine_id = chain[0]->machine_id;
  f.table.provenance = {{"isa_family", chain[0]->isa_family}};
  ForEachChainEntry(chain, here, [&](const tables::CompiledEntry& ce, size_t k) {
    const EntryCell c = ToCell(ce);
    tables::Entry e;
    e.op = Op(c.op), e.dtype = DType(c.dtype), e.mode = GeluApprox(c.mode), e.layout = tables::Layout(c.layout);
    e.octave = c.octave, e.choice = c.best, e.one_thread = c.one_thread, e.rule = c.rule;
    e.size_lo = c.lo, e.size_hi = c.hi;
    f.table.entries.push_back(std::move(e));
    f.from_first.push_back(k == 0);
    if (k > 0 && (f.gap_tables.empty() || f.gap_tables.back() != chain[k]->machine_id))
      f.gap_tables.push_back(chain[k]->machine_id);
  });
  f.facts = CompiledTableFacts(*chain[0]);
  f.reason = reason;
  return f;
}
}  // namespace

std::optional<NewMachineFallback> FallbackForNewMachine() { return ChainAsTable(/*as_new_machine=*/true); }

std::optional<NewMachineFallback> OwnTable() {
  const ActiveTableInfo& info = ActiveTable();
  if (!info.own) return std::nullopt;
  std::optional<NewMachineFallback> f;
  if (info.source.rfind("compiled:", 0) == 0) {
    f = ChainAsTable(/*as_new_machine=*/false);
  } else {
    f.emplace();
    std::string error;
    if (!tables::LoadTableFile(info.source.substr(info.source.find(':') + 1), &f->table, &error)) return std::nullopt;
    f->from_first.assign(f->table.entries.size(), true);
    f->reason = info.reason;
  }
  if (f) f->facts = ThisMachineFacts();
  return f;
}

std::string UserTableCacheDir() {
  if (const char* d = std::getenv("ACTGRAD_TABLE_CACHE"); d && *d) return d;
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/actgrad/tables";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/actgrad/tables";
  return "";
}

const ActiveTableInfo& ActiveTable() { return Get()->info; }
std::string ActiveTableName() {
  const ActiveTableInfo& info = Get()->info;
  std::string gaps;
  for (const auto& g : info.gap_tables) gaps += (gaps.empty() ? "; series it lacks from " : ", ") + g;
  const std::string cls = info.accuracy_class == AccuracyClass::kRule
                              ? ""
                              : "; accuracy class " + std::string(AccuracyClassName(info.accuracy_class));
  return info.machine_id + " (" + info.source + gaps + cls + ")";
}

namespace {
// The records of the compiled entries a selection took (CompiledEntry's
// tuned-among fields, CompiledTable::candidate_sets and run_dates).
TunedAmongRecords CompiledRecords(const std::vector<std::pair<const tables::CompiledTable*, size_t>>& from) {
  TunedAmongRecords r;
  std::set<const tables::CompiledTable*> seen;
  for (const auto& [t, i] : from) {
    const tables::CompiledEntry& e = t->entries[i];
    const bool has_set = e.candidate_set >= 0 && size_t(e.candidate_set) < t->candidate_set_count;
    std::string hash;
    if (has_set) {
      std::istringstream line(t->candidate_sets[e.candidate_set]);
      line >> hash;
      if (!r.sets.count(hash))
        for (std::string name; line >> name;) r.sets[hash].push_back(name);
    }
    r.entries.push_back({Op(e.op), DType(e.dtype), GeluApprox(e.mode), e.search_version, hash, e.tuned ? e.tuned : ""});
    if (seen.insert(t).second) {
      std::istringstream dates(t->run_dates ? t->run_dates : "");
      for (std::string d; dates >> d;) r.run_dates.push_back(d);
    }
  }
  return r;
}

void Reselect(const Selection& sel) {
  bool first = false;  // the first selection is this one (not a default one thrown away, messages and all)
  std::call_once(g_once, [&] { g_active = Select(sel), first = true; });
  g_selected.store(true, std::memory_order_release);
  if (first) return;
  Active* old = g_active;
  g_active = Select(sel);
  g_reloads.fetch_add(1, std::memory_order_relaxed);
  delete old;
}
}  // namespace

void ReloadTilingTable(const std::string& id, const std::string& isa, bool as_new_machine) {
  Reselect(ThisMachine(id, isa, as_new_machine));
}

const Freshness& ActiveTableFreshness() {
  Active* a = Get();
  std::call_once(a->freshness_once, [a] {
    const auto runs = [a](const Variant& v) { return a->machine.Runs(&v); };
    a->freshness = FreshnessOf(a->parsed ? RecordsOf(*a->parsed) : CompiledRecords(a->compiled_from), runs);
  });
  return a->freshness;
}

std::string ActiveTableFreshnessSummary() {
  return std::string(ActiveTable().own ? "this machine's own table" : "a table of another machine class") + ": " +
         ActiveTableFreshness().Summary();
}

void PoseAsMachine(const MachineFacts& facts, bool as_new_machine) {
  Reselect(Selection{facts, /*posed=*/true, as_new_machine});
}

MachineFacts CompiledTableFacts(const tables::CompiledTable& t) {
  MachineFacts f;
  ParseMachineId(t.machine_id, &f);
  f.isa_family = t.isa_family;
  std::istringstream features(t.features ? t.features : "");
  for (std::string x; features >> x;) f.features.push_back(x);
  f.l2 = t.l2, f.llc = t.llc, f.cores = t.cores;
  return f;
}

namespace {
// Per thread: the override, and the last choice ChooseKernel made per op (a
// loop calls the same op on the same size again and again; the lookup is
// then a compare). A memo holds for the table selection it was made under
// (g_reloads) and the thread cap. Constant-initialized: one TLS access, no
// guard.
struct Memo {
  uint64_t reloads = ~uint64_t(0);  // never a g_reloads value: empty
  uint64_t n = 0;
  int cap = 0;
  DType dtype = DType::kF32;
  GeluApprox mode = GeluApprox::kNone;
  tables::Layout layout = tables::Layout::kContig;
  KernelChoice choice;
};
struct ThreadDispatch {
  const KernelChoice* forced = nullptr;
  Memo memo[kNumOps];
};
thread_local ThreadDispatch t_dispatch;
}  // namespace

ScopedKernelOverride::ScopedKernelOverride(const KernelChoice& forced)
    : previous_(t_dispatch.forced), forced_(forced) {
  t_dispatch.forced = &forced_;
}
ScopedKernelOverride::~ScopedKernelOverride() { t_dispatch.forced = previous_; }

namespace {

// The cell serving n: n's octave if the table has an entry there, else the
// nearest octave with one (tables cover 1K..128M; smaller and larger sizes use
// the end octaves); nullptr when the table has none for (op, dtype, mode, layout).
const Cell* FindCell(const Active* a, Op op, DType dtype, GeluApprox mode, uint64_t n, tables::Layout l) {
  const int layout = int(l);
  const auto& cells = a->grid->cells[int(op)][int(dtype)][int(mode)][layout];
  const auto has = [&](int s) { return s >= 0 && s < kOctaves && HasEntry(cells[s]); };
  const int b = SizeOctave(n);
  if (b >= kOctaves) {  // beyond every table octave (n >= 2^48): the search, as nearest[] would for b
    for (int d = 1; d < kOctaves; ++d)
      for (int s : {b - d, b + d})
        if (has(s)) return &cells[s];
    return nullptr;
  }
  if (has(b)) {
    // A crossover inside the octave moved its boundary with a neighbour.
    if (n >= cells[b].hi && has(b + 1)) return &cells[b + 1];
    if (n < cells[b].lo && has(b - 1)) return &cells[b - 1];
    return &cells[b];
  }
  const int s = a->grid->nearest[int(op)][int(dtype)][int(mode)][layout][b];
  return s < 0 ? nullptr : &cells[s];
}

// The untuned default's variant for (op, dtype, mode), looked up once
// (DefaultVariant scans every variant): Resolve(DefaultChoice(...)) but for
// the threads, which depend on n and the thread cap.
KernelChoice DefaultKernel(const MachineView& on, Op op, DType dtype, GeluApprox mode, uint64_t n, int cap,
                           AccuracyClass cls) {
  if (on.posed) {  // a test posing as another machine: its default, looked up each time
    KernelChoice k;
    k.variant = DefaultVariant(op, dtype, mode, cls, [&](const Variant& v) { return on.Runs(&v); });
    k.split.threads = kDefaultThreadRule.Threads(n, cap);
    return k;
  }
  static std::atomic<const Variant*> memo[2][kNumOps][kNumDTypes][2];
  static std::atomic<bool> known[2][kNumOps][kNumDTypes][2];
  const int c = cls == AccuracyClass::kNearExact, o = int(op), d = int(dtype), m = int(mode);
  KernelChoice k;
  if (o >= 0 && o < kNumOps && d >= 0 && d < kNumDTypes && m >= 0 && m < 2) {
    if (!known[c][o][d][m].load(std::memory_order_acquire)) {
      memo[c][o][d][m].store(Resolve(DefaultChoice(op, dtype, mode, 1, cls)).variant, std::memory_order_relaxed);
      known[c][o][d][m].store(true, std::memory_order_release);
    }
    k.variant = memo[c][o][d][m].load(std::memory_order_relaxed);
    k.split.threads = kDefaultThreadRule.Threads(n, cap);
    return k;
  }
  return Resolve(DefaultChoice(op, dtype, mode, n, cls));
}

// A streaming-store choice where a thread's share of the call (g, x and out)
// fits its L2 becomes its plain twin: streaming stores send out to DRAM past
// a cache that would hold it. An octave's entry is tuned at 2^h * sqrt(2)
// elements, which can lie beyond the L2 while the octave's bottom lies
// within (SELU f32 on the strided view, one thread: the octave-16 entry,
// tuned at 92,672 elements (1.1 MB), chose u4.nt; at 65,536 (768 KB) it
// took 11.7 us, the plain u4 10.0).
bool ShareFitsL2(const MachineView& m, DType dtype, uint64_t n, int threads) {
  return 3 * n * DTypeSize(dtype) / uint64_t(std::max(1, threads)) <= m.l2;
}
std::string_view PlainName(std::string_view nt) {
  constexpr std::string_view kSuffix = ".nt";
  return nt.size() > kSuffix.size() && nt.substr(nt.size() - kSuffix.size()) == kSuffix
             ? nt.substr(0, nt.size() - kSuffix.size())
             : std::string_view();
}
KernelChoice InCacheTwin(const MachineView& m, KernelChoice c, DType dtype, uint64_t n) {
  if (!c.variant || !c.variant->nt_stores || !ShareFitsL2(m, dtype, n, c.split.threads)) return c;
  if (const Variant* p = FindVariant(PlainName(c.variant->name)); m.Runs(p)) c.variant = p;
  return c;
}
Choice InCacheTwin(const MachineView& m, Choice c, DType dtype, uint64_t n) {
  const std::string_view plain = PlainName(c.variant);
  if (plain.empty() || !ShareFitsL2(m, dtype, n, c.split.threads)) return c;
  if (m.Runs(FindVariant(plain))) c.variant = std::string(plain);
  return c;
}

// A plain-store choice of another machine's table where a thread's share of
// the call (g, x and out) exceeds its part of this machine's last-level cache
// (LastLevelCachePartBytes) becomes its streaming twin: that table chose its
// stores against another cache, and here out would not stay cached. The
// other half of InCacheTwin, for tables of other machines only: a machine's
// own table measured its store kinds here.
bool ShareExceedsLlcPart(const MachineView& m, DType dtype, uint64_t n, int threads) {
  return 3 * n * DTypeSize(dtype) / uint64_t(std::max(1, threads)) > m.llc_part;
}
KernelChoice BeyondCacheTwin(const MachineView& m, KernelChoice c, DType dtype, uint64_t n) {
  if (!c.variant || c.variant->nt_stores || !ShareExceedsLlcPart(m, dtype, n, c.split.threads)) return c;
  if (const Variant* nt = m.Twin(*c.variant)) c.variant = nt;
  return c;
}
Choice BeyondCacheTwin(const MachineView& m, Choice c, DType dtype, uint64_t n) {
  const Variant* v = FindVariant(c.variant);
  if (!v || v->nt_stores || !ShareExceedsLlcPart(m, dtype, n, c.split.threads)) return c;
  if (const Variant* nt = m.Twin(*v)) c.variant = nt->name;
  return c;
}

// An entry's choice for n under the thread cap: the threads its rule gives
// for n (or its thread count), at most `cap`; at a cap of 1 its one-thread
// choice (if any) instead of a threaded one; a streaming-store choice whose
// call fits the cache takes its plain twin (InCacheTwin), and a plain one of
// another machine's table whose call does not fit here its streaming twin
// (BeyondCacheTwin).
template <class C>
C AtSize(const MachineView& m, const C& best, const C* one_thread, const std::optional<ThreadRule>& rule, DType dtype,
         uint64_t n, int cap, bool foreign) {
  const int wanted = rule ? rule->Threads(n, 1 << 30) : best.split.threads;
  const bool fallback = cap == 1 && wanted > 1 && one_thread;
  C c = fallback ? *one_thread : best;
  if (!fallback) c.split.threads = std::max(1, std::min(wanted, cap));
  c = InCacheTwin(m, c, dtype, n);
  return foreign ? BeyondCacheTwin(m, c, dtype, n) : c;
}

}  // namespace

KernelChoice ChooseKernel(Op op, DType dtype, GeluApprox mode, uint64_t n, tables::Layout layout) {
  const int cap = MaxThreads();
  ThreadDispatch& td = t_dispatch;  // after the call: one TLS look-up
  if (const KernelChoice* f = td.forced; f && f->variant && f->variant->op == op && f->variant->dtype == dtype)
    return *f;
  const Active* a = Get();
  const uint64_t reloads = g_reloads.load(std::memory_order_relaxed);
  Memo* memo = int(op) >= 0 && int(op) < kNumOps ? &td.memo[int(op)] : nullptr;
  if (memo && memo->reloads == reloads && memo->n == n && memo->cap == cap && memo->dtype == dtype &&
      memo->mode == mode && memo->layout == layout)
    return memo->choice;
  const Cell* cell = FindCell(a, op, dtype, mode, n, layout);
  const KernelChoice k = !cell || cell->unrunnable
                             ? DefaultKernel(a->machine, op, dtype, mode, n, cap, a->info.accuracy_class)
                             : AtSize(a->machine, cell->best, cell->one_thread.variant ? &cell->one_thread : nullptr, cell->rule,
                                      dtype, n, cap, !a->info.own);
  if (memo) *memo = Memo{reloads, n, cap, dtype, mode, layout, k};
  return k;
}

KernelChoice StreamingOnWholeLines(const KernelChoice& c, DType dtype, uint64_t n) {
  if (t_dispatch.forced || !c.variant || c.variant->nt_stores || 3 * n * DTypeSize(dtype) <= Get()->machine.llc)
    return c;
  KernelChoice s = c;
  if (const Variant* nt = Get()->machine.Twin(*c.variant)) s.variant = nt;
  return s;
}

Choice TableChoice(Op op, DType dtype, GeluApprox mode, uint64_t n, tables::Layout layout) {
  const Active* a = Get();
  const Cell* cell = FindCell(a, op, dtype, mode, n, layout);
  if (!cell || cell->unrunnable) {
    return DefaultChoice(op, dtype, mode, n, a->info.accuracy_class,
                         [&](const Variant& v) { return a->machine.Runs(&v); });
  }
  const auto& [best, one_thread] = a->choices[size_t(cell->entry)];
  return AtSize(a->machine, best, cell->one_thread.variant ? &*one_thread : nullptr, cell->rule, dtype, n, MaxThreads(),
                !a->info.own);
}

}  // namespace actgrad
