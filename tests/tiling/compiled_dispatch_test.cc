// The compiled-in tables dispatch what their JSON says: for every committed
// CPU table (compiled by actgrad-tablegen into CompiledEntry data), every
// entry, sizes at both ends of the range it serves and its middle, and thread
// caps 1, 2 and 64 (omp_set_num_threads), ChooseKernel and TableChoice give
// what the same table read through tables::LoadTableFile prescribes: the
// entry's Choice with its thread rule evaluated at n (tables::Entry::At), at
// a cap of 1 its one-thread choice where the rule wants more threads, and the
// default where this CPU cannot run the entry's variant; a streaming-store
// (.nt) choice takes its plain twin where a thread's share of the call (3
// tensors of n elements) fits one core's L2.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "tiling/compiled_tables.h"
#include "tiling/dispatch.h"
#include "tiling/table.h"
#include "variants/thread_pool.h"

namespace actgrad {
namespace {

bool Runs(const Choice& c) {
  const Variant* v = FindVariant(c.variant);
  return v && v->supported;
}

// c, or its plain twin where it streams and a thread's share fits the L2.
Choice InCache(Choice c, DType dtype, uint64_t n) {
  const std::string& v = c.variant;
  const bool nt = v.size() > 3 && v.compare(v.size() - 3, 3, ".nt") == 0;
  const uint64_t share = 3 * n * DTypeSize(dtype) / uint64_t(std::max(1, c.split.threads));
  Choice plain = c;
  plain.variant = v.substr(0, v.size() - 3);
  return nt && share <= L2CacheBytes() && Runs(plain) ? plain : c;
}

// What the dispatch must give for entry e at n under cap (omp_get_max_threads).
Choice Expected(const tables::Entry& e, uint64_t n, int cap) {
  if (!Runs(e.choice)) return DefaultChoice(e.op, e.dtype, e.mode, n);
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

class CompiledDispatch : public ::testing::Test {
 protected:
  void TearDown() override {
    omp_set_num_threads(saved_threads_);
    ReloadTilingTable();
  }
  int saved_threads_ = omp_get_max_threads();
};

TEST_F(CompiledDispatch, CommittedTablesDispatchWhatTheirJsonSays) {
  size_t checked = 0, from_table = 0, failures = 0, tables_seen = 0;
  for (size_t i = 0; i < tables::kNumCompiledTables; ++i) {
    const tables::CompiledTable& ct = tables::kCompiledTables[i];
    if (ct.count == 0) continue;
    tables::Table t;
    std::string err;
    const std::string path = std::string(ACTGRAD_SOURCE_DIR) + "/" + ct.source;
    // Variants are not checked here: a sanitizer build compiles fewer SIMD
    // targets (kernels/CMakeLists.txt), and the default covers those entries
    // (Expected); the Release build's actgrad-tablegen checks every name.
    ASSERT_TRUE(tables::LoadTableFile(path, &t, &err, /*check_variants=*/false)) << err;
    ASSERT_EQ(t.entries.size(), ct.count) << path;
    ReloadTilingTable(ct.machine_id, "none");
    ASSERT_EQ(ActiveTable().machine_id, ct.machine_id);
    ++tables_seen;
    for (const tables::Entry& e : t.entries) {
      for (uint64_t n : {e.Lo(), (e.Lo() + e.Hi()) / 2, e.Hi() - 1})
        for (int cap : {1, 2, 64}) {
          omp_set_num_threads(cap);
          const Choice want = Expected(e, n, cap);
          const KernelChoice got = ChooseKernel(e.op, e.dtype, e.mode, n, e.layout);
          const Choice named = TableChoice(e.op, e.dtype, e.mode, n, e.layout);
          const std::string got_name = got.variant ? got.variant->name : std::string();
          const bool ok = got_name == want.variant && got.split == want.split && named == want &&
                          got.from_table == Runs(e.choice);
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
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GE(tables_seen, 2u);
  EXPECT_GT(checked, 5000u);
  std::printf("%zu dispatches checked over %zu tables, %zu from the table on this CPU\n", checked, tables_seen,
              from_table);
}

}  // namespace
}  // namespace actgrad
