#include "tiling/dispatch.h"

#include <cstdio>
#include <bit>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "tiling/compiled_tables.h"
#include "tiling/machine.h"
#include "tiling/table.h"
#include "variants/thread_pool.h"

namespace actgrad {

int SizeOctave(uint64_t n) { return n < 2 ? 0 : int(std::bit_width(n)) - 1; }

KernelChoice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n) {
  KernelChoice c;
  c.variant = DefaultVariant(op, dtype, mode);
  c.threads = n >= (uint64_t(1) << 16) ? MaxThreads() : 1;
  return c;
}

namespace {

constexpr int kOctaves = tables::kMaxOctaveIndex + 1;
struct Cell {
  const Variant* variant = nullptr;
  int64_t tile = 0;
  int threads = 1;
  const Variant* one_thread = nullptr;  // when the caller allows 1 thread only
  int64_t one_thread_tile = 0;
  bool unrunnable = false;  // the entry names a variant this CPU cannot run: the default at n
};
// cells[op][dtype][mode][layout][octave]
struct Grid {
  Cell cells[kNumOps][kNumDTypes][2][2][kOctaves];
};

struct Active {
  ActiveTableInfo info;
  std::unique_ptr<Grid> grid = std::make_unique<Grid>();
};

Active* g_active = nullptr;
std::once_flag g_once;

// Entries naming a variant this CPU cannot run (a table of another machine
// of the ISA family: AVX512-FP16 variants on an AVX-512 CPU without it) give
// the default choice in their octave; they are counted for one message.
struct Skipped {
  size_t count = 0;
  std::string first;
};

void Add(Active* a, int op, int dtype, int mode, int layout, int octave, const char* name, int64_t tile, int threads,
         const char* one_thread_name, int64_t one_thread_tile, Skipped* skipped) {
  if (op >= kNumOps || dtype >= kNumDTypes || mode > 1 || layout > 1 || octave < 0 || octave >= kOctaves) return;
  Cell& cell = a->grid->cells[op][dtype][mode][layout][octave];
  const Variant* v = FindVariant(name);
  if (!v || !v->supported) {
    if (skipped->count++ == 0) skipped->first = name;
    cell = Cell{};
    cell.unrunnable = true;
    return;
  }
  const Variant* v1 = one_thread_name && *one_thread_name ? FindVariant(one_thread_name) : nullptr;
  if (v1 && !v1->supported) v1 = nullptr;
  cell = Cell{v, tile, threads, v1, one_thread_tile};
  ++a->info.entries;
}

void ReportSkipped(const Active* a, const Skipped& s) {
  if (s.count == 0) return;
  std::fprintf(stderr,
               "actgrad: tiling table %s: %zu entries name variants this CPU cannot run (first: %s); "
               "those cells use the default\n",
               a->info.source.c_str(), s.count, s.first.c_str());
}

// Entries of a compiled table this CPU can run.
size_t RunnableEntries(const tables::CompiledTable& t) {
  size_t k = 0;
  for (size_t i = 0; i < t.count; ++i) {
    const Variant* v = FindVariant(t.entries[i].variant);
    k += v && v->supported;
  }
  return k;
}

Active* Select(const std::string& id_override, const std::string& isa_override) {
  auto* a = new Active;
  // 1. the run-time override, for experiments; a bad file falls back.
  if (const char* path = std::getenv("ACTGRAD_TILING_TABLE"); path && *path) {
    tables::Table t;
    std::string error;
    if (tables::LoadTableFile(path, &t, &error) && t.backend == "cpu") {
      a->info = {t.machine_id, std::string("env:") + path, "ACTGRAD_TILING_TABLE", 0};
      Skipped skipped;
      for (const auto& e : t.entries)
        Add(a, int(e.op), int(e.dtype), int(e.mode), int(e.layout), e.octave, e.variant.c_str(), e.tile, e.threads,
            e.one_thread_variant.c_str(), e.one_thread_tile, &skipped);
      ReportSkipped(a, skipped);
      return a;
    }
    std::fprintf(stderr, "actgrad: ignoring ACTGRAD_TILING_TABLE: %s; using the compiled-in table\n",
                 error.empty() ? "not a CPU table" : error.c_str());
  }
  // 2. compiled-in: exact machine id, then ISA family, then the default.
  const std::string id = id_override.empty() ? MachineId() : id_override;
  const std::string isa = isa_override.empty() ? IsaFamily() : isa_override;
  const tables::CompiledTable* pick = nullptr;
  std::string reason;
  for (size_t i = 0; i < tables::kNumCompiledTables && !pick; ++i)
    if (id == tables::kCompiledTables[i].machine_id) pick = &tables::kCompiledTables[i], reason = "exact machine id";
  // Of several tables of the family (e.g. two AVX-512 CPUs, one with
  // AVX512-FP16), the one with the most entries this CPU can run.
  if (!pick && !isa.empty()) {
    size_t best = 0;
    for (size_t i = 0; i < tables::kNumCompiledTables; ++i) {
      const auto& t = tables::kCompiledTables[i];
      if (isa != t.isa_family) continue;
      const size_t k = RunnableEntries(t);
      if (!pick || k > best) pick = &t, best = k, reason = "ISA family " + isa;
    }
  }
  for (size_t i = 0; i < tables::kNumCompiledTables && !pick; ++i)
    if (std::string("default") == tables::kCompiledTables[i].machine_id)
      pick = &tables::kCompiledTables[i], reason = "portable default";
  if (!pick) return a;
  a->info = {pick->machine_id, std::string("compiled:") + pick->source, reason, 0};
  Skipped skipped;
  for (size_t i = 0; i < pick->count; ++i) {
    const auto& e = pick->entries[i];
    Add(a, e.op, e.dtype, e.mode, e.layout, e.octave, e.variant, e.tile, e.threads, e.one_thread_variant,
        e.one_thread_tile, &skipped);
  }
  ReportSkipped(a, skipped);
  return a;
}

Active* Get() {
  std::call_once(g_once, [] { g_active = Select("", ""); });
  return g_active;
}

}  // namespace

const ActiveTableInfo& ActiveTable() { return Get()->info; }
std::string ActiveTableName() { return Get()->info.machine_id + " (" + Get()->info.source + ")"; }

void ReloadTilingTable(const std::string& id, const std::string& isa) {
  bool first = false;  // the first selection is this one (not a default one thrown away, messages and all)
  std::call_once(g_once, [&] { g_active = Select(id, isa), first = true; });
  if (first) return;
  Active* old = g_active;
  g_active = Select(id, isa);
  delete old;
}

namespace {
thread_local const KernelChoice* t_forced = nullptr;
}

ScopedKernelOverride::ScopedKernelOverride(const KernelChoice& forced) : previous_(t_forced), forced_(forced) {
  t_forced = &forced_;
}
ScopedKernelOverride::~ScopedKernelOverride() { t_forced = previous_; }

KernelChoice ChooseKernel(Op op, DType dtype, GeluApprox mode, uint64_t n, bool broadcast) {
  if (t_forced && t_forced->variant && t_forced->variant->op == op && t_forced->variant->dtype == dtype)
    return *t_forced;
  const Active* a = Get();
  const auto& cells = a->grid->cells[int(op)][int(dtype)][int(mode)][broadcast ? 1 : 0];
  // The entry of n's octave, else the nearest tuned octave (tables cover
  // 1K..128M; smaller and larger sizes use the end octaves).
  const int b = SizeOctave(n);
  for (int d = 0; d < kOctaves; ++d) {
    for (int s : {b - d, b + d}) {
      if (s < 0 || s >= kOctaves || (!cells[s].variant && !cells[s].unrunnable)) continue;
      const Cell& cell = cells[s];
      if (cell.unrunnable) return DefaultChoice(op, dtype, mode, n);
      KernelChoice c;
      const int cap = MaxThreads();
      if (cap == 1 && cell.threads > 1 && cell.one_thread) {  // the entry's one-thread choice
        c.variant = cell.one_thread;
        c.threads = 1;
        c.chunk = size_t(cell.one_thread_tile);
      } else {
        c.variant = cell.variant;
        c.threads = std::min(cell.threads, cap);
        c.chunk = size_t(cell.tile);
      }
      c.from_table = true;
      return c;
    }
  }
  return DefaultChoice(op, dtype, mode, n);
}

}  // namespace actgrad
