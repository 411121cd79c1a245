// The table fallback chain and that the dispatch runs what the table names:
// ReloadTilingTable with machine/ISA overrides, ACTGRAD_TILING_TABLE with
// good and bad files, ChooseKernel and real aclnn calls.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "acl/acl.h"
#include "actgrad/half.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "tiling/compiled_tables.h"
#include "tiling/dispatch.h"
#include "tiling/machine.h"
#include "tiling/table.h"
#include "tests/tiling/posed_machines.h"
#include "variants/cache.h"
#include "variants/variant.h"

namespace actgrad {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class Dispatch : public ::testing::Test {
 protected:
  // The user cache is a test's own directory (absent until a test makes
  // it): a table in the real one does not change what the tests see.
  void SetUp() override {
    unsetenv("ACTGRAD_TILING_TABLE");
    cache_ = (fs::temp_directory_path() / ("actgrad_dispatch_cache_" + std::to_string(getpid()))).string();
    fs::remove_all(cache_);
    setenv("ACTGRAD_TABLE_CACHE", cache_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("ACTGRAD_TILING_TABLE");
    unsetenv("ACTGRAD_TABLE_CACHE");
    ReloadTilingTable();
    for (const auto& p : files_) fs::remove(p);
    std::error_code ec;
    fs::permissions(cache_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(cache_, ec);
  }
  std::string cache_;

 public:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p =
        (fs::temp_directory_path() / ("actgrad_dispatch_" + std::to_string(getpid()) + "_" + name)).string();
    std::ofstream(p, std::ios::trunc) << text;
    files_.push_back(p);
    return p;
  }
  std::vector<std::string> files_;
};

json TableJson(const std::vector<json>& entries, const std::string& machine = "test-machine") {
  return json{{"schema", "actgrad-tiling-table"},
              {"version", 3},
              {"machine_id", machine},
              {"backend", "cpu"},
              {"provenance", {{"isa_family", "test"}}},
              {"entries", entries}};
}

json EntryJson(const Variant& v, const char* layout, int octave, int threads, int64_t chunk) {
  json e{{"op", std::string(OpName(v.op))}, {"dtype", std::string(DTypeName(v.dtype))}, {"layout", layout},
         {"octave", octave}, {"variant", v.name}, {"chunk", chunk}, {"threads", threads}, {"median_ns", 1.0},
         {"spread_pct", 0.0}};
  if (v.op == Op::kGeluBwd) e["gelu_approx"] = v.gelu_mode == GeluApprox::kTanh ? "tanh" : "none";
  return e;
}

const Variant* ScalarGelu() {
  for (const Variant& v : Variants())
    if (v.op == Op::kGeluBwd && v.dtype == DType::kF32 && v.gelu_mode == GeluApprox::kNone &&
        v.target == "scalar" && v.supported)
      return &v;
  return nullptr;
}

std::vector<float> RunOn(const Variant& v, const std::vector<float>& g, const std::vector<float>& x) {
  std::vector<float> out(g.size());
  KernelArgs a{g.data(), x.data(), out.data(), g.size(), OpParams{}, 0};
  RunVariant(v, a, Split{});
  return out;
}

TEST_F(Dispatch, FallbackChainOverCompiledTables) {
  ASSERT_GE(tables::kNumCompiledTables, 1u);
  bool has_default = false;
  size_t default_entries = 0;
  for (size_t i = 0; i < tables::kNumCompiledTables; ++i) {
    const auto& t = tables::kCompiledTables[i];
    if (std::string(t.machine_id) == "default") has_default = true, default_entries = t.count;
    ReloadTilingTable(t.machine_id, "no-such-isa");
    EXPECT_EQ(ActiveTable().machine_id, t.machine_id);
    EXPECT_EQ(ActiveTable().reason, "exact machine id");
    EXPECT_EQ(ActiveTable().source, std::string("compiled:") + t.source);
    if (std::string(t.machine_id) != "default" && *t.isa_family) {
      ReloadTilingTable("no-such-machine", t.isa_family);
      EXPECT_EQ(ActiveTable().reason, std::string("nearest machine facts in ISA family ") + t.isa_family);
      bool same_family = false;
      for (size_t j = 0; j < tables::kNumCompiledTables; ++j)
        same_family |= ActiveTable().machine_id == tables::kCompiledTables[j].machine_id &&
                       std::string(tables::kCompiledTables[j].isa_family) == t.isa_family;
      EXPECT_TRUE(same_family);
    }
  }
  EXPECT_TRUE(has_default);
  ReloadTilingTable("no-such-machine", "no-such-isa");
  EXPECT_EQ(ActiveTable().machine_id, "default");
  EXPECT_EQ(ActiveTable().reason, "portable default");
  if (default_entries == 0) {  // without entries every choice is the untuned default
    const KernelChoice c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig);
    const KernelChoice d = Resolve(DefaultChoice(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000));
    EXPECT_EQ(c.variant, d.variant);
    EXPECT_EQ(c.split.threads, d.split.threads);
    EXPECT_FALSE(c.from_table);
  }
  // This machine: its own table if compiled in, else its ISA family's, else the default.
  ReloadTilingTable();
  bool own = false;
  for (size_t i = 0; i < tables::kNumCompiledTables; ++i) own |= MachineId() == tables::kCompiledTables[i].machine_id;
  if (own) EXPECT_EQ(ActiveTable().reason, "exact machine id");
}

TEST_F(Dispatch, EnvTableIsUsedByChooseKernel) {
  const Variant* scalar = ScalarGelu();
  ASSERT_NE(scalar, nullptr);
  const Variant* other = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone);
  ASSERT_NE(other, nullptr);
  const std::string path = Write("good.json", TableJson({EntryJson(*scalar, "contig", 16, 1, 0),
                                                         EntryJson(*other, "contig", 18, 2, 8192),
                                                         EntryJson(*scalar, "bcast", 14, 1, 0)})
                                                  .dump(2));
  setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  ReloadTilingTable();
  EXPECT_EQ(ActiveTable().reason, "ACTGRAD_TILING_TABLE");
  EXPECT_EQ(ActiveTable().source, "env:" + path);
  EXPECT_EQ(ActiveTable().machine_id, "test-machine");
  EXPECT_EQ(ActiveTable().entries, 3u);
  EXPECT_NE(ActiveTableName().find("test-machine"), std::string::npos);

  KernelChoice c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig);  // octave 16
  EXPECT_EQ(c.variant, scalar);
  EXPECT_TRUE(c.from_table);
  EXPECT_EQ(c.split.threads, 1);
  c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 300000, tables::Layout::kContig);  // octave 18
  EXPECT_EQ(c.variant, other);
  EXPECT_EQ(c.split.threads, std::min(2, omp_get_max_threads()));
  EXPECT_EQ(c.split.chunk, 8192);
  // Broadcast has its own entries.
  c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 20000, tables::Layout::kBcast);  // octave 14
  EXPECT_EQ(c.variant, scalar);
  // The tanh formula has no entry: the default for it.
  c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kTanh, 100000, tables::Layout::kContig);
  EXPECT_EQ(c.variant, DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kTanh));
}

// A near-exact table (a user's own, in the user cache): its entries run as
// any table's, and a cell it has no entry for takes the class's default
// (GELU erf_r6 / tanh_exp), not the rule's; TableChoice says the same, and
// the table's name says its class. A rule table afterwards: the rule's.
TEST_F(Dispatch, NearExactTableCellsWithoutEntriesTakeTheClassDefault) {
  const Variant* scalar = ScalarGelu();
  ASSERT_NE(scalar, nullptr);
  ASSERT_TRUE(fs::create_directories(cache_));
  json t = TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}, MachineId());
  t["accuracy_class"] = "near-exact";
  std::ofstream(cache_ + "/" + MachineId() + ".json") << t.dump(2);
  ReloadTilingTable();
  ASSERT_EQ(ActiveTable().reason, "user cache (this machine's id)");
  EXPECT_EQ(ActiveTable().accuracy_class, AccuracyClass::kNearExact);
  EXPECT_NE(ActiveTableName().find("accuracy class near-exact"), std::string::npos) << ActiveTableName();
  EXPECT_EQ(ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig).variant, scalar);
  for (GeluApprox m : {GeluApprox::kNone, GeluApprox::kTanh})
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      const Variant* near = DefaultVariant(Op::kGeluBwd, dt, m, AccuracyClass::kNearExact);
      ASSERT_NE(near, nullptr);
      EXPECT_EQ(near->approx, m == GeluApprox::kTanh ? "tanh_exp" : "erf_r6");
      EXPECT_EQ(ChooseKernel(Op::kGeluBwd, dt, m, 1 << 20, tables::Layout::kStrided).variant, near) << near->name;
      EXPECT_EQ(TableChoice(Op::kGeluBwd, dt, m, 1 << 20, tables::Layout::kStrided).variant, near->name);
    }
  // Ops whose rule default is already near exact keep it.
  EXPECT_EQ(ChooseKernel(Op::kSeluBwd, DType::kF32, GeluApprox::kNone, 4096, tables::Layout::kContig).variant,
            DefaultVariant(Op::kSeluBwd, DType::kF32));
  t.erase("accuracy_class");
  std::ofstream(cache_ + "/" + MachineId() + ".json", std::ios::trunc) << t.dump(2);
  ReloadTilingTable();
  EXPECT_EQ(ActiveTable().accuracy_class, AccuracyClass::kRule);
  EXPECT_EQ(ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 1 << 20, tables::Layout::kStrided).variant,
            DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone));
}

// Schema v4: the threads follow the entry's grain for each n (capped by
// omp_set_num_threads), and a crossover moves the boundary between two
// octaves' entries.
TEST_F(Dispatch, GrainsAndCrossoversPickThreadsAndCells) {
  const Variant* scalar = ScalarGelu();
  const Variant* other = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone);
  ASSERT_NE(scalar, nullptr);
  ASSERT_NE(other, nullptr);
  json lo = EntryJson(*scalar, "contig", 17, 1, 0), hi = EntryJson(*other, "contig", 18, 1, 0);
  lo.erase("threads"), hi.erase("threads");
  lo["grain"] = 0;          // one thread
  hi["grain"] = 100000;     // a thread per 100000 elements
  lo["size_lo"] = 1 << 17;  // octave 17 ends at 300000, past 2^18
  lo["size_hi"] = hi["size_lo"] = 300000;
  hi["size_hi"] = 1 << 19;
  json t = TableJson({lo, hi});
  t["version"] = 4;
  setenv("ACTGRAD_TILING_TABLE", Write("v4.json", t.dump(2)).c_str(), 1);
  ReloadTilingTable();
  ASSERT_EQ(ActiveTable().entries, 2u);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(64);
  KernelChoice c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 280000, tables::Layout::kContig);  // octave 18, below 300000
  EXPECT_EQ(c.variant, scalar);
  EXPECT_EQ(c.split.threads, 1);
  c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 300000, tables::Layout::kContig);
  EXPECT_EQ(c.variant, other);
  EXPECT_EQ(c.split.threads, 3);
  c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 1 << 24, tables::Layout::kContig);  // past the table: octave 18's rule
  EXPECT_EQ(c.variant, other);
  EXPECT_EQ(c.split.threads, 64);
  EXPECT_EQ(TableChoice(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 1 << 24, tables::Layout::kContig).split.threads, 64);
  omp_set_num_threads(2);
  EXPECT_EQ(ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 1 << 24, tables::Layout::kContig).split.threads, 2);
  omp_set_num_threads(saved);
}

// A table of another machine of the family may name variants this CPU cannot
// run (AVX512-FP16 ones on an AVX-512 CPU without it): those cells take the
// default for their size, with one message for the table, not one per entry.
void ExpectUnrunnableTakesTheDefault(Dispatch* t, const Variant* unrunnable, const MachineFacts* posed) {
  const auto runs = [&](const Variant& v) { return posed ? RunsOn(v, *posed) : v.supported; };
  const Variant* runnable = DefaultVariant(Op::kSeluBwd, unrunnable->dtype, GeluApprox::kNone, AccuracyClass::kRule, runs);
  ASSERT_NE(runnable, nullptr);
  const std::string path = t->Write("unrunnable.json", TableJson({EntryJson(*unrunnable, "contig", 12, 1, 0),
                                                                  EntryJson(*unrunnable, "contig", 20, 2, 0),
                                                                  EntryJson(*runnable, "contig", 16, 1, 0)})
                                                           .dump(2));
  setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  testing::internal::CaptureStderr();
  if (posed) PoseAsMachine(*posed);
  else ReloadTilingTable();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(ActiveTable().reason, "ACTGRAD_TILING_TABLE");
  EXPECT_EQ(ActiveTable().entries, 1u);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const std::string who = posed ? "the posed machine " + posed->id : "this CPU";
  EXPECT_NE(err.find("2 entries name variants " + who + " cannot run"), std::string::npos) << err;
  EXPECT_NE(err.find(unrunnable->name), std::string::npos) << err;
  for (uint64_t n : {uint64_t(5000), uint64_t(1) << 20}) {  // octaves 12 and 20: the default at n
    const KernelChoice c = ChooseKernel(Op::kSeluBwd, unrunnable->dtype, GeluApprox::kNone, n, tables::Layout::kContig);
    const Choice d = DefaultChoice(Op::kSeluBwd, unrunnable->dtype, GeluApprox::kNone, n, AccuracyClass::kRule, runs);
    ASSERT_NE(c.variant, nullptr) << n;
    EXPECT_EQ(c.variant->name, d.variant) << n;
    EXPECT_EQ(c.split.threads, d.split.threads) << n;
    EXPECT_FALSE(c.from_table) << n;
  }
  // The runnable entry still counts; the neighbours' defaults do not spread into it.
  const KernelChoice c = ChooseKernel(Op::kSeluBwd, unrunnable->dtype, GeluApprox::kNone, 70000, tables::Layout::kContig);
  EXPECT_EQ(c.variant, runnable);
  EXPECT_TRUE(c.from_table);
}

TEST_F(Dispatch, UnrunnableEntriesTakeTheDefaultWithOneMessage) {
  const Variant* unrunnable = nullptr;
  for (const Variant& v : Variants())
    if (!v.supported && v.op == Op::kSeluBwd) {
      unrunnable = &v;
      break;
    }
  if (!unrunnable)
    GTEST_SKIP() << "needs a CPU that lacks a SELU variant's features: this one runs every SELU variant "
                    "(UnrunnableEntriesTakeTheDefaultOnAFakeMachine runs on every CPU)";
  ExpectUnrunnableTakesTheDefault(this, unrunnable, nullptr);
}

// The same on a fake machine: this one without the last feature the widest
// SELU variant here needs (AVX512-FP16 on an Intel with it), on any CPU.
TEST_F(Dispatch, UnrunnableEntriesTakeTheDefaultOnAFakeMachine) {
  const Variant* widest = nullptr;
  for (const Variant& v : Variants())
    if (v.supported && v.op == Op::kSeluBwd && !TargetFeatures(v.target).empty() &&
        (!widest || TargetRank(v.target) < TargetRank(widest->target)))
      widest = &v;
  if (!widest) GTEST_SKIP() << "no SIMD SELU variant in this build";
  MachineFacts fake = ThisMachineFacts();
  fake.id = "fakevendor-1-2";
  const std::string drop = TargetFeatures(widest->target).back();
  std::erase(fake.features, drop);
  ASSERT_FALSE(RunsOn(*widest, fake)) << drop;
  ExpectUnrunnableTakesTheDefault(this, widest, &fake);
}

// A machine posing as new (actgrad-tune --as-new-machine) never gets the
// table of its own id, nor ACTGRAD_TILING_TABLE or its user-cache table.
TEST_F(Dispatch, AsNewMachineHidesTheOwnTable) {
  const Variant* scalar = ScalarGelu();
  ASSERT_NE(scalar, nullptr);
  const std::string path = Write("env.json", TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}).dump(2));
  setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  for (size_t i = 0; i < tables::kNumCompiledTables; ++i) {
    const auto& t = tables::kCompiledTables[i];
    if (std::string(t.machine_id) == "default") continue;
    ReloadTilingTable(t.machine_id, t.isa_family, /*as_new_machine=*/true);
    EXPECT_NE(ActiveTable().machine_id, t.machine_id);
    EXPECT_NE(ActiveTable().reason, "ACTGRAD_TILING_TABLE");
    EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u) << ActiveTable().source;
  }
}

// Posing as each committed table's machine (tests/tiling/posed_machines.h).
class PosedDispatch : public Dispatch, public ::testing::WithParamInterface<const tables::CompiledTable*> {
 protected:
  MachineFacts Facts() const { return CompiledTableFacts(*GetParam()); }
  void PoseAsNew() {
    testing::internal::CaptureStderr();
    PoseAsMachine(Facts(), /*as_new_machine=*/true);
    testing::internal::GetCapturedStderr();
  }
};
INSTANTIATE_TEST_SUITE_P(CommittedTables, PosedDispatch, ::testing::ValuesIn(PosedTables()), PosedName);

// A fallback covers every series (op, dtype, GELU formula, layout) that a
// table of the chain has: the series the first table lacks come from the
// next ones (ActiveTableInfo::gap_tables), never the default.
TEST_P(PosedDispatch, FallbackFillsTheSeriesItsFirstTableLacks) {
  using Series = tables::SeriesKey;
  const tables::CompiledTable& t = *GetParam();
  const MachineFacts facts = Facts();
  PoseAsNew();
  if (ActiveTable().reason == "portable default") GTEST_SKIP() << t.machine_id << " as new gets the default";
  // Per series of the family's other tables: the sizes of the entries the
  // posed machine runs. A series is served where one of them comes from the
  // table (a cell whose serving entry it cannot run takes the default:
  // UnrunnableEntriesTakeTheDefault*).
  std::map<Series, std::vector<uint64_t>> runnable_at;
  std::set<Series> first;
  for (const tables::CompiledTable* f : PosedTables()) {
    if (std::string(f->isa_family) != t.isa_family || std::string(f->machine_id) == t.machine_id) continue;
    for (size_t k = 0; k < f->count; ++k) {
      const auto& e = f->entries[k];
      const Series series{e.op, e.dtype, e.mode, e.layout};
      if (ActiveTable().machine_id == f->machine_id) first.insert(series);
      const Variant* v = FindVariant(e.variant);
      if (v && RunsOn(*v, facts)) runnable_at[series].push_back(e.size_lo);
    }
  }
  for (const auto& [series, sizes] : runnable_at) {
    const auto& [op, dtype, mode, layout] = series;
    const bool served = std::any_of(sizes.begin(), sizes.end(), [&, &op = op, &dtype = dtype, &mode = mode,
                                                                 &layout = layout](uint64_t n) {
      return ChooseKernel(Op(op), DType(dtype), GeluApprox(mode), n, tables::Layout(layout)).from_table;
    });
    EXPECT_TRUE(served) << t.machine_id << " as new: series " << op << "/" << dtype << "/" << mode << "/"
                              << layout << " not served by " << ActiveTableName();
  }
  if (first.size() < runnable_at.size()) EXPECT_FALSE(ActiveTable().gap_tables.empty()) << t.machine_id;
}

// A table of another machine: where a thread's share of a call exceeds its
// part of the machine's last-level cache, a plain-store choice that has a
// streaming twin is never run (BeyondCacheTwin). (A machine's own table
// runs what it names: compiled_dispatch_test.)
TEST_P(PosedDispatch, ForeignPlainStoresStreamBeyondTheMachinesCache) {
  const MachineFacts facts = Facts();
  PoseAsNew();
  const std::string foreign = ActiveTable().machine_id;
  if (ActiveTable().reason == "portable default") GTEST_SKIP() << facts.id << " as new gets the default";
  const auto runs = [&](const Variant& v) { return RunsOn(v, facts); };
  size_t checked = 0;
  for (const tables::CompiledTable* f : PosedTables()) {
    if (foreign != f->machine_id) continue;
    for (size_t k = 0; k < f->count; ++k) {
      const auto& e = f->entries[k];
      const uint64_t n = e.size_hi - 1;
      const KernelChoice c = ChooseKernel(Op(e.op), DType(e.dtype), GeluApprox(e.mode), n, tables::Layout(e.layout));
      // (The untuned default, where the posed machine cannot run the entry, streams as it is.)
      if (!c.from_table || !c.variant || c.variant->nt_stores || !StreamingTwin(*c.variant, runs)) continue;
      EXPECT_TRUE(RunsOn(*c.variant, facts)) << c.variant->name;
      const uint64_t share = 3 * n * DTypeSize(DType(e.dtype)) / uint64_t(std::max(1, c.split.threads));
      EXPECT_LE(share, LlcPartBytes(facts)) << foreign << " entry " << k << " runs " << c.variant->name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

// Posing changes the machine, not only its id: every choice of the posed
// machine's fallback is one it runs, and the runtime runs this CPU's default
// where that is one this CPU cannot run (an AVX512-FP16 table on Zen 4).
TEST_P(PosedDispatch, ChoicesRunOnThePosedMachineAndTheAPIStaysCorrect) {
  const MachineFacts facts = Facts();
  PoseAsNew();
  for (Op op : {Op::kSeluBwd, Op::kGeluBwd, Op::kLogitGrad})
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16})
      for (uint64_t n : {uint64_t(1000), uint64_t(1) << 16, uint64_t(1) << 24}) {
        const KernelChoice c = ChooseKernel(op, dt, GeluApprox::kNone, n, tables::Layout::kContig);
        ASSERT_NE(c.variant, nullptr) << OpName(op) << " " << DTypeName(dt) << " " << n;
        EXPECT_TRUE(RunsOn(*c.variant, facts)) << facts.id << " would run " << c.variant->name;
      }
  // GELU f16 through aclnn (fp16 arithmetic where the posed machine has it):
  // the rule against the double reference, the guard past out untouched.
  const int64_t n = 1 << 16;
  std::vector<uint16_t> g(n), x(n), out(n + 64, 0x7e5a);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  for (int64_t i = 0; i < n; ++i) g[size_t(i)] = FloatToHalf(u(rng)), x[size_t(i)] = FloatToHalf(u(rng));
  const int64_t stride = 1;
  aclTensor* tg = aclCreateTensor(&n, 1, ACL_FLOAT16, &stride, 0, ACL_FORMAT_ND, &n, 1, g.data());
  aclTensor* tx = aclCreateTensor(&n, 1, ACL_FLOAT16, &stride, 0, ACL_FORMAT_ND, &n, 1, x.data());
  aclTensor* to = aclCreateTensor(&n, 1, ACL_FLOAT16, &stride, 0, ACL_FORMAT_ND, &n, 1, out.data());
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnGeluBackwardGetWorkspaceSize(tg, tx, to, &ws, &e), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  std::vector<char> w(ws + 64);
  ASSERT_EQ(aclnnGeluBackward(w.data(), ws, e, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  aclDestroyTensor(tg);
  aclDestroyTensor(tx);
  aclDestroyTensor(to);
  AccuracyChecker check(DType::kF16);
  for (int64_t i = 0; i < n; ++i) {
    const double gi = HalfToFloat(g[size_t(i)]), xi = HalfToFloat(x[size_t(i)]);
    check.Add(HalfToFloat(out[size_t(i)]), ref::Reference(Op::kGeluBwd, gi, xi, OpParams{}), gi, xi);
  }
  EXPECT_TRUE(check.Report().pass) << facts.id << ": " << check.Report().first_failure;
  for (size_t i = size_t(n); i < out.size(); ++i) ASSERT_EQ(out[i], 0x7e5a) << "written past out at " << i;
}

// The aclnn API computes with the variant the table names: pick a variant
// whose results differ bitwise from the default's on these inputs, name it in
// the table, and compare what aclnnGeluBackward writes.
TEST_F(Dispatch, OneThreadChoiceWhenTheCallerAllowsOneThread) {
  const Variant* scalar = ScalarGelu();
  const Variant* other = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone);
  ASSERT_NE(scalar, nullptr);
  ASSERT_NE(other, nullptr);
  json e = EntryJson(*other, "contig", 18, 2, 8192);
  e["one_thread"] = {{"variant", scalar->name}, {"chunk", 0}, {"stage_tile", 4096}};
  const std::string path = Write("one_thread.json", TableJson({e}).dump(2));
  setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  ReloadTilingTable();
  ASSERT_EQ(ActiveTable().entries, 1u);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  KernelChoice c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 300000, tables::Layout::kContig);  // octave 18
  EXPECT_EQ(c.variant, scalar);
  EXPECT_EQ(c.split.threads, 1);
  EXPECT_EQ(c.split.chunk, 0);
  EXPECT_EQ(c.split.stage_tile, 4096);
  omp_set_num_threads(2);
  c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 300000, tables::Layout::kContig);
  EXPECT_EQ(c.variant, other);
  EXPECT_EQ(c.split.threads, 2);
  omp_set_num_threads(saved);
  // A one_thread variant that does not compute the entry's op is refused.
  const Variant* selu = DefaultVariant(Op::kSeluBwd, DType::kF32);
  ASSERT_NE(selu, nullptr);
  e["one_thread"]["variant"] = selu->name;
  tables::Table t;
  std::string err;
  EXPECT_FALSE(tables::ParseTable(TableJson({e}).dump(), &t, &err));
  EXPECT_NE(err.find("one_thread"), std::string::npos) << err;
}

// StreamingTwin: a streaming variant is its own; a plain one's twin computes
// the same (op, dtype, upcast, approximation, target) with streaming stores,
// its own unroll where it has one (u1 and u8 have none: u2 or u4).
TEST_F(Dispatch, StreamingTwinsComputeTheSameWithStreamingStores) {
  int twins = 0, own = 0;
  for (const Variant& v : Variants()) {
    if (!v.supported) continue;
    const Variant* t = StreamingTwin(v);
    if (v.nt_stores) {
      EXPECT_EQ(t, &v) << v.name;
      continue;
    }
    const Variant* named = FindVariant(v.name + ".nt");
    if (!t) {
      EXPECT_TRUE(!named || !named->supported) << v.name;
      continue;
    }
    ++twins;
    EXPECT_TRUE(t->nt_stores && t->supported) << v.name << " -> " << t->name;
    EXPECT_TRUE(t->op == v.op && t->dtype == v.dtype && t->upcast == v.upcast && t->approx == v.approx &&
                t->target == v.target && t->gelu_mode == v.gelu_mode)
        << v.name << " -> " << t->name;
    if (named && named->supported) {
      EXPECT_EQ(t, named) << v.name;
      ++own;
    } else {
      // No own twin: the Highway families' u1 and u8, the native ones' u1
      // and u2 (their only streaming variant is u4.nt). The u2 twin first.
      EXPECT_TRUE(t->unroll == 2 || t->unroll == 4) << v.name << " -> " << t->name;
      EXPECT_NE(t->unroll, v.unroll) << v.name << " -> " << t->name;
      if (t->unroll == 4) {
        std::string u2 = t->name;
        u2.replace(u2.find(".u4."), 4, ".u2.");
        const Variant* u2nt = FindVariant(u2);
        EXPECT_TRUE(!u2nt || !u2nt->supported) << v.name << " -> " << t->name;
      }
    }
  }
  // Every x86 target from SSE4 up and the native 16-bit variants have streaming twins.
  EXPECT_GT(own, 0);
  EXPECT_GT(twins, own);
}

// The whole-line rule (runtime/plan.cc, transposed views): a plain choice
// whose call (g, x and out) exceeds the last-level cache takes its streaming
// twin; within it, already streaming, or under a ScopedKernelOverride it stays.
TEST_F(Dispatch, StreamingOnWholeLinesBeyondTheCache) {
  const Variant* plain = DefaultVariant(Op::kSeluBwd, DType::kF32);
  ASSERT_NE(plain, nullptr);
  ASSERT_FALSE(plain->nt_stores);
  const Variant* nt = StreamingTwin(*plain);
  ASSERT_NE(nt, nullptr) << plain->name;
  ASSERT_GE(LastLevelCacheBytes(), L2CacheBytes());
  KernelChoice c;
  c.variant = plain;
  c.split.threads = 2;
  c.split.chunk = 4096;
  const uint64_t within = LastLevelCacheBytes() / 12, beyond = within + 1;  // g, x, out: 12 bytes an element
  const KernelChoice got = StreamingOnWholeLines(c, DType::kF32, beyond);
  EXPECT_EQ(got.variant, nt);
  EXPECT_EQ(got.split.threads, 2);  // the split stays
  EXPECT_EQ(got.split.chunk, 4096);
  EXPECT_EQ(StreamingOnWholeLines(c, DType::kF32, within).variant, plain);
  EXPECT_EQ(StreamingOnWholeLines(c, DType::kBF16, 2 * within).variant, plain);  // 6 bytes an element
  EXPECT_EQ(StreamingOnWholeLines(c, DType::kBF16, 2 * beyond).variant, nt);
  {
    const ScopedKernelOverride forced(c);
    EXPECT_EQ(StreamingOnWholeLines(c, DType::kF32, 4 * beyond).variant, plain);
  }
  KernelChoice s = c;
  s.variant = nt;
  EXPECT_EQ(StreamingOnWholeLines(s, DType::kF32, 4 * beyond).variant, nt);
  for (const Variant& v : Variants())  // a staged variant has no twin: it stays
    if (v.supported && v.upcast == "staged") {
      KernelChoice st;
      st.variant = &v;
      EXPECT_EQ(StreamingOnWholeLines(st, v.dtype, 4 * beyond).variant, &v) << v.name;
      break;
    }
}

TEST_F(Dispatch, AclnnRunsTheVariantTheTableNames) {
  const size_t n = 4096;  // octave 12
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> g(n), x(n);
  for (size_t i = 0; i < n; ++i) g[i] = nd(rng), x[i] = nd(rng);
  const Variant* def = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone);
  const std::vector<float> ref = RunOn(*def, g, x);
  const Variant* pick = nullptr;
  std::vector<float> expect;
  for (const Variant& v : Variants()) {
    if (v.op != Op::kGeluBwd || v.dtype != DType::kF32 || v.gelu_mode != GeluApprox::kNone || !v.supported ||
        &v == def)
      continue;
    auto out = RunOn(v, g, x);
    if (std::memcmp(out.data(), ref.data(), n * 4) != 0) {
      pick = &v;
      expect = std::move(out);
      break;
    }
  }
  if (!pick) GTEST_SKIP() << "every GELU f32 variant gives the default's bits on these inputs";
  const std::string path = Write("pick.json", TableJson({EntryJson(*pick, "contig", 12, 1, 0),
                                                         EntryJson(*pick, "bcast", 12, 1, 0)})
                                                  .dump());
  setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  ReloadTilingTable();
  ASSERT_EQ(ActiveTable().reason, "ACTGRAD_TILING_TABLE");
  EXPECT_EQ(ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, n, tables::Layout::kContig).variant, pick);

  auto run = [&](const std::vector<int64_t>& gdims, const std::vector<float>& gv, const std::vector<int64_t>& xdims,
                 const std::vector<float>& xv) {
    std::vector<float> out(n, -1.f);
    auto strides = [](const std::vector<int64_t>& d) {
      std::vector<int64_t> s(d.size(), 1);
      for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
      return s;
    };
    const std::vector<int64_t> odims = {int64_t(n)};
    const auto gs = strides(gdims), xs = strides(xdims), os = strides(odims);
    aclTensor* tg = aclCreateTensor(gdims.data(), gdims.size(), ACL_FLOAT, gs.data(), 0, ACL_FORMAT_ND, gdims.data(),
                                    gdims.size(), const_cast<float*>(gv.data()));
    aclTensor* tx = aclCreateTensor(xdims.data(), xdims.size(), ACL_FLOAT, xs.data(), 0, ACL_FORMAT_ND, xdims.data(),
                                    xdims.size(), const_cast<float*>(xv.data()));
    const std::vector<int64_t> od = gdims.size() == 2 ? gdims : odims;
    const auto ods = strides(od);
    aclTensor* to = aclCreateTensor(od.data(), od.size(), ACL_FLOAT, ods.data(), 0, ACL_FORMAT_ND, od.data(),
                                    od.size(), out.data());
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(aclnnGeluBackwardGetWorkspaceSize(tg, tx, to, &ws, &e), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    std::vector<char> w(ws + 64);
    EXPECT_EQ(aclnnGeluBackward(w.data(), ws, e, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    aclDestroyTensor(tg);
    aclDestroyTensor(tx);
    aclDestroyTensor(to);
    return out;
  };
  // Contiguous: the fast path.
  std::vector<float> out = run({int64_t(n)}, g, {int64_t(n)}, x);
  EXPECT_EQ(std::memcmp(out.data(), expect.data(), n * 4), 0) << "aclnn did not run " << pick->name;
  // Row broadcast: g [64, 64], x [64, 1] (a splat per run) -> the bcast entry.
  std::vector<float> xb(x.begin(), x.begin() + 64), xfull(n);
  for (size_t i = 0; i < n; ++i) xfull[i] = xb[i / 64];
  const std::vector<float> expect_b = RunOn(*pick, g, xfull);
  const std::vector<float> ref_b = RunOn(*def, g, xfull);
  out = run({64, 64}, g, {64, 1}, xb);
  EXPECT_EQ(std::memcmp(out.data(), expect_b.data(), n * 4), 0) << "aclnn (bcast) did not run " << pick->name;
  if (std::memcmp(expect_b.data(), ref_b.data(), n * 4) != 0) {
    // And without the table the default runs: the dispatch really switches.
    unsetenv("ACTGRAD_TILING_TABLE");
    ReloadTilingTable("no-such-machine", "no-such-isa");
    out = run({64, 64}, g, {64, 1}, xb);
    EXPECT_EQ(std::memcmp(out.data(), ref_b.data(), n * 4), 0);
  }
}

TEST_F(Dispatch, BadEnvTablesFallBackWithAMessage) {
  const Variant* scalar = ScalarGelu();
  ASSERT_NE(scalar, nullptr);
  const std::string good = TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}).dump(2);
  json wrong_version = json::parse(good);
  wrong_version["version"] = 99;
  json unknown = json::parse(good);
  unknown["entries"][0]["variant"] = "gelu_bwd.f32.none.bogus.u2.avx2";
  json dup = json::parse(good);
  dup["entries"].push_back(dup["entries"][0]);
  json atlas = json::parse(good);
  atlas["backend"] = "atlas-model";
  std::vector<std::pair<std::string, std::string>> bad = {
      {"truncated", good.substr(0, good.size() / 3)},
      {"version", wrong_version.dump()},
      {"unknown variant", unknown.dump()},
      {"duplicate", dup.dump()},
      {"not a CPU table", atlas.dump()},
      {"empty", ""},
  };
  // A number that overflows, deep nesting, wrong types: each is refused
  // with a message, never a crash or a silent truncation.
  std::string overflow = good;
  overflow.replace(overflow.find("1.0"), 3, "1e999");
  std::string deep = good;
  deep.replace(deep.find("\"provenance\": {") + 15, 0,
               "\"deep\": " + std::string(200000, '[') + std::string(200000, ']') + ",");
  auto threads = [&](const json& v) {
    json j = json::parse(good);
    j["entries"][0]["threads"] = v;
    return j.dump();
  };
  const std::vector<std::pair<std::string, std::string>> issue20 = {
      {"1e999", overflow},
      {"nested deeper than", deep},
      {"\"threads\"", threads(2.9)},
      {"\"threads\"", threads(uint64_t(4294967298))},
      {"\"threads\"", threads(true)},
  };
  bad.insert(bad.end(), issue20.begin(), issue20.end());
  for (const auto& [what, text] : bad) {
    SCOPED_TRACE(what);
    const std::string path = Write("bad.json", text);
    setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
    ::testing::internal::CaptureStderr();
    ReloadTilingTable("no-such-machine", "no-such-isa");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignoring ACTGRAD_TILING_TABLE"), std::string::npos) << err;
    if (what == "1e999" || what == "nested deeper than" || what == "\"threads\"")  // the message says why
      EXPECT_NE(err.find(what), std::string::npos) << err;
    EXPECT_NE(ActiveTable().reason, "ACTGRAD_TILING_TABLE");
    EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u) << ActiveTable().source;
    EXPECT_EQ(ActiveTable().machine_id, "default");
    const KernelChoice c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig);
    ASSERT_NE(c.variant, nullptr);
    EXPECT_NE(c.variant, scalar);
  }
  // A file that does not exist.
  setenv("ACTGRAD_TILING_TABLE", "/nonexistent/actgrad/table.json", 1);
  ::testing::internal::CaptureStderr();
  ReloadTilingTable();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ignoring ACTGRAD_TILING_TABLE"), std::string::npos) << err;
  EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u);
}

// Defect 6: ACTGRAD_TILING_TABLE naming a FIFO hung the first op call,
// /dev/zero ended in bad_alloc; neither is read now, nor a file over the cap.
TEST_F(Dispatch, EnvTableThatIsNotARegularFileFallsBack) {
  const std::string fifo = Write("fifo.json", "");
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = Write("big.json", "{}");
  fs::resize_file(big, (uint64_t(16) << 20) + 1);
  for (const std::string& path : {fifo, std::string("/dev/zero"), fs::temp_directory_path().string(), big}) {
    SCOPED_TRACE(path);
    setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
    ::testing::internal::CaptureStderr();
    ReloadTilingTable("no-such-machine", "no-such-isa");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignoring ACTGRAD_TILING_TABLE"), std::string::npos) << err;
    EXPECT_NE(err.find(path == big ? "16 MiB" : "not a regular file"), std::string::npos) << err;
    EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u) << ActiveTable().source;
    EXPECT_EQ(ActiveTable().machine_id, "default");
  }
}

// This machine's table in the user cache
// (ACTGRAD_TABLE_CACHE here) comes after ACTGRAD_TILING_TABLE and before the
// compiled-in tables.
TEST_F(Dispatch, UserCacheTableOfThisMachineIsUsed) {
  const Variant* scalar = ScalarGelu();
  ASSERT_NE(scalar, nullptr);
  ASSERT_TRUE(fs::create_directories(cache_));
  const std::string path = cache_ + "/" + MachineId() + ".json";
  std::ofstream(path) << TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}, MachineId()).dump(2);
  ::testing::internal::CaptureStderr();
  ReloadTilingTable();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(ActiveTable().source, "cache:" + path);
  EXPECT_EQ(ActiveTable().reason, "user cache (this machine's id)");
  EXPECT_EQ(ActiveTable().machine_id, MachineId());
  EXPECT_EQ(ActiveTable().entries, 1u);
  const KernelChoice c = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig);
  EXPECT_EQ(c.variant, scalar);
  EXPECT_TRUE(c.from_table);
  // Another machine id (the override) looks for its own file.
  ReloadTilingTable("no-such-machine", "no-such-isa");
  EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u) << ActiveTable().source;
  std::ofstream(cache_ + "/no-such-machine.json") << TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}, "no-such-machine").dump(2);
  ReloadTilingTable("no-such-machine", "no-such-isa");
  EXPECT_EQ(ActiveTable().source, "cache:" + cache_ + "/no-such-machine.json");
  // ACTGRAD_TILING_TABLE still wins.
  const Variant* other = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone);
  const std::string env = Write("env.json", TableJson({EntryJson(*other, "contig", 16, 1, 0)}).dump(2));
  setenv("ACTGRAD_TILING_TABLE", env.c_str(), 1);
  ReloadTilingTable();
  EXPECT_EQ(ActiveTable().reason, "ACTGRAD_TILING_TABLE");
  EXPECT_EQ(ActiveTable().source, "env:" + env);
  EXPECT_EQ(ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig).variant, other);
  // A bad ACTGRAD_TILING_TABLE falls back to the cache's table.
  setenv("ACTGRAD_TILING_TABLE", "/nonexistent/actgrad/table.json", 1);
  ::testing::internal::CaptureStderr();
  ReloadTilingTable();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ignoring ACTGRAD_TILING_TABLE"), std::string::npos) << err;
  EXPECT_EQ(ActiveTable().source, "cache:" + path);
}

TEST_F(Dispatch, MissingUserCacheTableIsSilent) {
  for (bool make_dir : {false, true}) {
    SCOPED_TRACE(make_dir ? "empty directory" : "no directory");
    if (make_dir) fs::create_directories(cache_);
    ::testing::internal::CaptureStderr();
    ReloadTilingTable();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u) << ActiveTable().source;
  }
}

TEST_F(Dispatch, BadUserCacheTablesFallBackWithOneMessage) {
  const Variant* scalar = ScalarGelu();
  ASSERT_NE(scalar, nullptr);
  const std::string id = "test-cache-machine";
  const std::string good = TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}, id).dump(2);
  json atlas = json::parse(good);
  atlas["backend"] = "atlas-model";
  const std::string path = cache_ + "/" + id + ".json";
  struct Case {
    std::string what, text, says;
  };
  const std::vector<Case> cases = {
      {"corrupt JSON", good.substr(0, good.size() / 3), path},
      {"foreign machine id", TableJson({EntryJson(*scalar, "contig", 16, 1, 0)}, "other-machine").dump(2),
       "is not this machine's"},
      {"not a CPU table", atlas.dump(), "not a CPU table"},
      {"oversized", "", "16 MiB"},
      {"a directory", "", "not a regular file"},
      {"unreadable", good, path},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    fs::remove_all(cache_);
    ASSERT_TRUE(fs::create_directories(cache_));
    if (c.what == "a directory") {
      fs::create_directory(path);
    } else {
      std::ofstream(path) << c.text;
      if (c.what == "oversized") fs::resize_file(path, tables::kMaxTableBytes + 1);
      if (c.what == "unreadable") {
        if (geteuid() == 0) continue;  // root reads a mode-000 file: nothing to test
        fs::permissions(path, fs::perms::none);
      }
    }
    ::testing::internal::CaptureStderr();
    ReloadTilingTable(id, "no-such-isa");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignoring the user-cache table"), std::string::npos) << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(ActiveTable().source.rfind("compiled:", 0), 0u) << ActiveTable().source;
    EXPECT_EQ(ActiveTable().machine_id, "default");
    const KernelChoice k = ChooseKernel(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 100000, tables::Layout::kContig);
    ASSERT_NE(k.variant, nullptr);
    EXPECT_NE(k.variant, scalar);
  }
}

}  // namespace
}  // namespace actgrad
