// The dispatch picks what it picked before the Choice/Split types (issue 15):
// data/choices_v2.txt, recorded by data/record_choices.cc on the schema-2
// code, replayed for every committed CPU table, op, dtype, GELU mode, layout,
// size and thread cap. The list names the table's variant even where this
// CPU cannot run it; there the dispatch must give the default (DefaultChoice),
// or for a one-thread choice the entry's main variant at one thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tiling/dispatch.h"
#include "variants/thread_pool.h"

namespace actgrad {
namespace {

bool Runs(const Choice& c) {
  const Variant* v = FindVariant(c.variant);
  return v && v->supported;
}

// "variant,threads,chunk"
Choice ParseRecorded(const std::string& s) {
  Choice c;
  std::istringstream in(s);
  std::string threads, chunk;
  std::getline(in, c.variant, ',');
  std::getline(in, threads, ',');
  std::getline(in, chunk, ',');
  c.split.threads = std::stoi(threads);
  c.split.chunk = std::stoll(chunk);
  return c;
}

// What this CPU must get for a recorded result ("default", "A" or
// "A/B": A the one-thread choice, B the entry's own at one thread); nullopt: the default.
std::optional<Choice> Expected(const std::string& rec) {
  if (rec == "default") return std::nullopt;
  const size_t slash = rec.find('/');
  if (slash == std::string::npos) {
    const Choice a = ParseRecorded(rec);
    return Runs(a) ? std::optional<Choice>(a) : std::nullopt;
  }
  const Choice a = ParseRecorded(rec.substr(0, slash)), b = ParseRecorded(rec.substr(slash + 1));
  if (!Runs(b)) return std::nullopt;  // the entry itself is unrunnable: its cell is the default
  return Runs(a) ? a : b;
}

class Replay : public ::testing::Test {
 protected:
  void TearDown() override {
    omp_set_num_threads(saved_threads_);
    ReloadTilingTable();
  }
  int saved_threads_ = omp_get_max_threads();
};

TEST_F(Replay, CommittedTablesPickWhatSchemaTwoPicked) {
  std::ifstream in(std::string(ACTGRAD_SOURCE_DIR) + "/tests/tiling/data/choices_v2.txt");
  ASSERT_TRUE(in) << "tests/tiling/data/choices_v2.txt is missing";
  std::string line, table;
  size_t lines = 0, from_table = 0, failures = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string machine, op_name, dtype_name, layout;
    int mode = 0;
    uint64_t n = 0;
    std::string rec[3];
    f >> machine >> op_name >> dtype_name >> mode >> layout >> n >> rec[0] >> rec[1] >> rec[2];
    Op op;
    DType dtype;
    ASSERT_TRUE(f && ParseOp(op_name, &op) && ParseDType(dtype_name, &dtype)) << "bad line: " << line;
    if (machine != table) {
      ReloadTilingTable(machine, "none");
      ASSERT_EQ(ActiveTable().machine_id, machine);
      table = machine;
    }
    ++lines;
    const int caps[3] = {1, 2, 64};
    for (int i = 0; i < 3; ++i) {
      omp_set_num_threads(caps[i]);
      const std::optional<Choice> want = Expected(rec[i]);
      const Choice expect = want ? *want : DefaultChoice(op, dtype, GeluApprox(mode), n);
      const KernelChoice got = ChooseKernel(op, dtype, GeluApprox(mode), n, layout == "bcast");
      const Choice named = TableChoice(op, dtype, GeluApprox(mode), n, layout == "bcast");
      // (No variant computes some (op, dtype): hardswish i32; the default is then none.)
      const bool ok = (got.variant ? got.variant->name : std::string()) == expect.variant && got.split == expect.split &&
                      got.from_table == want.has_value() && named == expect;
      from_table += want.has_value();
      if (!ok && ++failures <= 20)
        ADD_FAILURE() << line << " (cap " << caps[i] << "): expected " << expect.Key() << ", ChooseKernel gave "
                      << (got.variant ? got.variant->name : "no variant") << " threads " << got.split.threads
                      << " chunk " << got.split.chunk << " stage_tile " << got.split.stage_tile
                      << (got.from_table ? " (table)" : " (default)") << ", TableChoice " << named.Key();
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(lines, 10000u);
  RecordProperty("from_table", int(from_table));
  std::printf("%zu lines x 3 caps replayed, %zu from the table on this CPU\n", lines, from_table);
}

}  // namespace
}  // namespace actgrad
