// Tiling table format: round trip, schema validation, bad tables; and the
// table committed for this machine (if any) validates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tiling/machine.h"
#include "tiling/table.h"
#include "tiling/tuner/tuner.h"
#include "variants/variant.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;
using tables::Entry;
using tables::Table;

const Variant* AnyVariant(Op op, DType t, GeluApprox mode, bool want_non_default = false) {
  const Variant* def = DefaultVariant(op, t, mode);
  for (const Variant& v : Variants())
    if (v.op == op && v.dtype == t && v.supported && (op != Op::kGeluBwd || v.gelu_mode == mode) &&
        (!want_non_default || &v != def))
      return &v;
  return nullptr;
}

Table Sample() {
  Table t;
  t.machine_id = "genuineintel-6-143";
  t.provenance = {{"cpu_model", "test"}, {"isa_family", "x86-avx512"}, {"cores", 2}};
  Entry a;
  a.op = Op::kGeluBwd;
  a.dtype = DType::kF32;
  a.mode = GeluApprox::kTanh;
  a.layout = tables::Layout::kBcast;
  a.octave = 17;
  a.variant = AnyVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kTanh)->name;
  a.tile = 16384;
  a.threads = 2;
  a.median_ns = 1234.5;
  a.spread_pct = 1.25;
  a.runner_up = {{"variant", a.variant}, {"tile", 0}, {"threads", 1}, {"median_ns", 1300.0}};
  a.extra = {{"tuning", {{"n", 131072}}}};
  Entry b;
  b.op = Op::kSeluBwd;
  b.dtype = DType::kBF16;
  b.octave = 26;
  b.variant = AnyVariant(Op::kSeluBwd, DType::kBF16, GeluApprox::kNone)->name;
  b.threads = 1;
  b.median_ns = 9.5e6;
  t.entries = {a, b};
  return t;
}

void ExpectEqual(const Table& x, const Table& y) {
  EXPECT_EQ(x.machine_id, y.machine_id);
  EXPECT_EQ(x.backend, y.backend);
  EXPECT_EQ(x.provenance, y.provenance);
  ASSERT_EQ(x.entries.size(), y.entries.size());
  for (size_t i = 0; i < x.entries.size(); ++i) {
    const Entry &a = x.entries[i], &b = y.entries[i];
    EXPECT_EQ(int(a.op), int(b.op));
    EXPECT_EQ(int(a.dtype), int(b.dtype));
    EXPECT_EQ(int(a.mode), int(b.mode));
    EXPECT_EQ(int(a.layout), int(b.layout));
    EXPECT_EQ(a.octave, b.octave);
    EXPECT_EQ(a.variant, b.variant);
    EXPECT_EQ(a.tile, b.tile);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.one_thread_variant, b.one_thread_variant);
    EXPECT_EQ(a.one_thread_tile, b.one_thread_tile);
    EXPECT_DOUBLE_EQ(a.median_ns, b.median_ns);
    EXPECT_DOUBLE_EQ(a.spread_pct, b.spread_pct);
    EXPECT_EQ(a.runner_up, b.runner_up);
    if (!a.extra.is_null()) EXPECT_EQ(a.extra, b.extra);
  }
}

TEST(Table, RoundTripThroughTextAndFile) {
  const Table t = Sample();
  Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(2), &back, &err)) << err;
  ExpectEqual(t, back);
  const std::string path = (fs::temp_directory_path() / ("actgrad_table_" + std::to_string(getpid()) + ".json")).string();
  ASSERT_TRUE(tables::SaveTableFile(path, t, &err)) << err;
  EXPECT_FALSE(fs::exists(path + ".tmp"));  // written atomically
  Table loaded;
  ASSERT_TRUE(tables::LoadTableFile(path, &loaded, &err)) << err;
  ExpectEqual(t, loaded);
  // Human-readable: indented, one field per line.
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "{");
  EXPECT_NE(second.find("  \""), std::string::npos);
  fs::remove(path);
}

TEST(Table, TunerEntriesRoundTrip) {
  CellOutcome o;
  o.bucket = Bucket{Op::kSoftshrinkBwd, DType::kF16, "bcast", 19, 741376, GeluApprox::kNone};
  o.chosen.cand.variant = AnyVariant(Op::kSoftshrinkBwd, DType::kF16, GeluApprox::kNone)->name;
  o.chosen.cand.threads = 2;
  o.chosen.median = 1000;
  o.chosen.spread_pct = 0.5;
  o.incumbent = o.chosen;
  o.incumbent.median = 1500;
  o.runner_up = o.incumbent;
  // The best-ranked one-thread candidate becomes the entry's one_thread choice.
  const std::string v1 = AnyVariant(Op::kSoftshrinkBwd, DType::kF16, GeluApprox::kNone)->name;
  o.ranking = {o.chosen.cand.Key(), v1 + "|4096|1", v1 + "|0|1"};
  Table t;
  t.machine_id = "m";
  t.entries.push_back(ToEntry(o));
  Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(), &back, &err)) << err;
  ExpectEqual(t, back);
  EXPECT_DOUBLE_EQ(back.entries[0].extra["tuning"]["speedup_vs_default"].get<double>(), 1.5);
  EXPECT_EQ(back.entries[0].one_thread_variant, v1);
  EXPECT_EQ(back.entries[0].one_thread_tile, 4096);
}

std::string Mutate(const std::function<void(nlohmann::json&)>& f) {
  nlohmann::json j = tables::ToJson(Sample());
  f(j);
  return j.dump(2);
}

void ExpectRejected(const std::string& text, const std::string& needle) {
  Table t;
  std::string err;
  EXPECT_FALSE(tables::ParseTable(text, &t, &err)) << "accepted, expected: " << needle;
  EXPECT_NE(err.find(needle), std::string::npos) << "error: " << err;
}

TEST(Table, BadTablesAreRejectedWithAMessage) {
  const std::string good = tables::ToJson(Sample()).dump(2);
  ExpectRejected(good.substr(0, good.size() / 2), "not valid JSON");
  ExpectRejected("", "not valid JSON");
  ExpectRejected("[]", "JSON object");
  ExpectRejected(Mutate([](auto& j) { j["version"] = 3; }), "version 3");
  ExpectRejected(Mutate([](auto& j) { j.erase("version"); }), "version");
  ExpectRejected(Mutate([](auto& j) { j["schema"] = "something-else"; }), "schema");
  ExpectRejected(Mutate([](auto& j) { j["machine_id"] = ""; }), "machine_id");
  ExpectRejected(Mutate([](auto& j) { j.erase("entries"); }), "entries");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["variant"] = "gelu_bwd.f32.none.nope.u4.avx3"; }),
                 "unknown variant");
  ExpectRejected(Mutate([](auto& j) { j["entries"][1]["variant"] = j["entries"][0]["variant"]; }),
                 "does not compute");
  ExpectRejected(Mutate([](auto& j) { j["entries"].push_back(j["entries"][0]); }), "duplicate size range");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["layout"] = "diagonal"; }), "unknown layout");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["op"] = "relu_bwd"; }), "unknown op");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["dtype"] = "f64"; }), "unknown dtype");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["size_lo"] = 1000; }), "size_lo");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["threads"] = 0; }), "threads");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["tile"] = -1; }), "tile");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["octave"] = "eight"; }), "wrong type");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["octave"] = 48; }), "out of range");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0].erase("octave"); }), "octave");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["size_hi"] = 1 << 19; }), "size_hi");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["gelu_approx"] = "sigmoid"; }), "gelu_approx");
  // A GELU erf entry naming a tanh variant computes the wrong formula.
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["gelu_approx"] = "none"; }), "does not compute");
}

// Version 1 tables (4x buckets) still load: bucket k is octaves 2k and 2k+1
// with the same choice; a v1 bucket overlapping another is a duplicate.
TEST(Table, VersionOneBucketsLoadAsTwoOctaves) {
  nlohmann::json j = tables::ToJson(Sample());
  j["version"] = 1;
  for (auto& e : j["entries"]) {
    const int h = e["octave"].get<int>();
    e.erase("octave");
    e["bucket"] = h / 2;
    e["size_lo"] = uint64_t(1) << (2 * (h / 2));
    e["size_hi"] = uint64_t(1) << (2 * (h / 2) + 2);
  }
  Table t;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(j.dump(), &t, &err)) << err;
  EXPECT_EQ(t.source_version, 1);
  ASSERT_EQ(t.entries.size(), 4u);
  EXPECT_EQ(t.entries[0].octave, 16);  // bucket 8 = [64K, 256K)
  EXPECT_EQ(t.entries[1].octave, 17);
  EXPECT_EQ(t.entries[0].variant, t.entries[1].variant);
  EXPECT_EQ(t.entries[2].octave, 26);  // bucket 13
  EXPECT_EQ(t.entries[3].octave, 27);
  // Written back, it is a version-2 table with four octave entries.
  Table back;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(), &back, &err)) << err;
  EXPECT_EQ(back.source_version, 2);
  EXPECT_EQ(back.entries.size(), 4u);
  j["entries"][0]["size_lo"] = 1 << 17;
  ExpectRejected(j.dump(), "size_lo does not match bucket 8");
  j["entries"][0]["size_lo"] = 1 << 16;
  j["entries"].push_back(j["entries"][0]);
  ExpectRejected(j.dump(), "duplicate size range");
}

TEST(Table, DuplicateOnlyWithinTheSameCell) {
  // Same octave but another layout or GELU mode is a different cell.
  const std::string text = Mutate([](auto& j) {
    auto e = j["entries"][0];
    e["layout"] = "contig";
    j["entries"].push_back(e);
  });
  Table t;
  std::string err;
  EXPECT_TRUE(tables::ParseTable(text, &t, &err)) << err;
}

TEST(Table, CommittedTableOfThisMachineValidates) {
  const fs::path p = fs::path(ACTGRAD_SOURCE_DIR) / "tiling/tables" / (MachineId() + ".json");
  if (!fs::exists(p)) GTEST_SKIP() << "no table committed for " << MachineId();
  Table t;
  std::string err;
  ASSERT_TRUE(tables::LoadTableFile(p.string(), &t, &err)) << err;
  EXPECT_EQ(t.machine_id, MachineId());
  EXPECT_EQ(t.backend, "cpu");
  for (const char* key : {"cpu_model", "cpu_flags", "cores", "caches", "compiler", "git_commit", "date",
                          "tool_version", "isa_family"})
    EXPECT_TRUE(t.provenance.contains(key)) << key;
  for (const auto& e : t.entries) {
    EXPECT_GE(e.octave, tables::kMinOctave);
    EXPECT_LE(e.octave, tables::kMaxOctave);
    EXPECT_GT(e.median_ns, 0);
    const Variant* v = FindVariant(e.variant);
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v->supported) << e.variant;
  }
}

}  // namespace
}  // namespace actgrad::tune
