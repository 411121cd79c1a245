// The compiled-in tables dispatch what their JSON says: for every committed
// CPU table (compiled by actgrad-tablegen into CompiledEntry data), posing
// as the machine it was tuned on (PoseAsMachine: its flags and caches, on
// any CPU), every entry, sizes at both ends of the range it serves and its middle, and thread
// caps 1, 2 and 64 (omp_set_num_threads), ChooseKernel and TableChoice give
// what the same table read through tables::LoadTableFile prescribes: the
// entry's Choice with its thread rule evaluated at n (tables::Entry::At), at
// a cap of 1 its one-thread choice where the rule wants more threads, and the
// default where that machine cannot run the entry's variant; a streaming-store
// (.nt) choice takes its plain twin where a thread's share of the call (3
// tensors of n elements) fits one of its cores' L2.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "tiling/compiled_tables.h"
#include "tiling/dispatch.h"
#include "tiling/table.h"
#include "variants/thread_pool.h"
#include "tests/tiling/posed_machines.h"

namespace actgrad {
namespace {

// What the dispatch must give, as the machine `m` (a committed table's, posed as).
struct Expect {
  MachineFacts m;
  bool Runs(const Choice& c) const {
    const Variant* v = FindVariant(c.variant);
    return v && RunsOn(*v, m);
  }
  // c, or its plain twin where it streams and a thread's share fits the L2.
  Choice InCache(Choice c, DType dtype, uint64_t n) const {
    const std::string& v = c.variant;
    const bool nt = v.size() > 3 && v.compare(v.size() - 3, 3, ".nt") == 0;
    const uint64_t share = 3 * n * DTypeSize(dtype) / uint64_t(std::max(1, c.split.threads));
    Choice plain = c;
    plain.variant = v.substr(0, v.size() - 3);
    return nt && share <= (m.l2 ? m.l2 : L2CacheBytes()) && Runs(plain) ? plain : c;
  }
  // For entry e at n under cap (omp_get_max_threads).
  Choice At(const tables::Entry& e, uint64_t n, int cap) const {
    if (!Runs(e.choice))
      return DefaultChoice(e.op, e.dtype, e.mode, n, AccuracyClass::kRule,
                           [&](const Variant& v) { return RunsOn(v, m); });
    const int wanted = e.rule ? e.rule->Threads(n, 1 << 30) : e.choice.split.threads;
    if (cap == 1 && wanted > 1 && e.one_thread && Runs(*e.one_thread)) {
      Choice c = *e.one_thread;
      c.split.threads = 1;
      return InCache(c, e.dtype, n);
    }
    Choice c = e.At(n, cap);
    c.split.threads = std::max(1, std::min(wanted, cap));
    return InCache(c, e.dtype, n);
  }
};

// Once per committed table, posing as its machine (tests/tiling/posed_machines.h).
class CompiledDispatch : public ::testing::TestWithParam<const tables::CompiledTable*> {
 protected:
  void TearDown() override {
    omp_set_num_threads(saved_threads_);
    ReloadTilingTable();
  }
  int saved_threads_ = omp_get_max_threads();
};
INSTANTIATE_TEST_SUITE_P(CommittedTables, CompiledDispatch, ::testing::ValuesIn(PosedTables()), PosedName);

TEST_P(CompiledDispatch, DispatchesWhatItsJsonSays) {
  const tables::CompiledTable& ct = *GetParam();
  if (ct.count == 0) GTEST_SKIP() << ct.machine_id << " has no entries";
  size_t checked = 0, from_table = 0, failures = 0;
  tables::Table t;
  std::string err;
  const std::string path = std::string(ACTGRAD_SOURCE_DIR) + "/" + ct.source;
  // Variants are not checked here: a sanitizer build compiles fewer SIMD
  // targets (kernels/CMakeLists.txt), and the default covers those entries
  // (Expect::At); the Release build's actgrad-tablegen checks every name.
  ASSERT_TRUE(tables::LoadTableFile(path, &t, &err, /*check_variants=*/false)) << err;
  ASSERT_EQ(t.entries.size(), ct.count) << path;
  const Expect expect{CompiledTableFacts(ct)};
  testing::internal::CaptureStderr();
  PoseAsMachine(expect.m);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(ActiveTable().machine_id, ct.machine_id);
  ASSERT_EQ(ActiveTable().reason, "exact machine id");
  for (const tables::Entry& e : t.entries) {
    for (uint64_t n : {e.Lo(), (e.Lo() + e.Hi()) / 2, e.Hi() - 1})
      for (int cap : {1, 2, 64}) {
        omp_set_num_threads(cap);
        const Choice want = expect.At(e, n, cap);
        const KernelChoice got = ChooseKernel(e.op, e.dtype, e.mode, n, e.layout);
        const Choice named = TableChoice(e.op, e.dtype, e.mode, n, e.layout);
        const std::string got_name = got.variant ? got.variant->name : std::string();
        const bool ok = got_name == want.variant && got.split == want.split && named == want &&
                        got.from_table == expect.Runs(e.choice);
        ++checked;
        from_table += got.from_table;
        if (!ok && ++failures <= 20)
          ADD_FAILURE() << ct.machine_id << " " << OpName(e.op) << " " << DTypeName(e.dtype) << " "
                        << tables::LayoutName(e.layout) << " octave " << e.octave << " n " << n << " cap " << cap
                        << ": expected " << want.Key() << ", ChooseKernel gave " << got_name << " t"
                        << got.split.threads << " c" << got.split.chunk << " s" << got.split.stage_tile
                        << ", TableChoice " << named.Key();
      }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(checked, 1000u);
  std::printf("%s: %zu dispatches checked, %zu from the table\n", ct.machine_id, checked, from_table);
}

// Every committed table of a real machine is posed as above.
TEST(CompiledDispatchTables, EveryRealMachinesTableIsPosedAs) {
  size_t with_entries = 0;
  for (const tables::CompiledTable* t : PosedTables()) with_entries += t->count > 0;
  EXPECT_GE(with_entries, 2u);
}

}  // namespace
}  // namespace actgrad
