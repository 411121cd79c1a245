// Tiling table format: round trip, schema validation, bad tables; and the
// table committed for this machine (if any) validates.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tiling/machine.h"
#include "tiling/table.h"
#include "variants/variant.h"

namespace actgrad {
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
  a.choice = {AnyVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kTanh)->name, Split{2, 16384, 4096}};
  a.one_thread = Choice{a.choice.variant, Split{1, 0, 8192}};
  a.median_ns = 1234.5;
  a.spread_pct = 1.25;
  a.runner_up = tables::Measured{{a.choice.variant, Split{1, 0, 0}}, 1300.0};
  a.extra = {{"tuning", {{"n", 131072}}}};
  Entry b;
  b.op = Op::kSeluBwd;
  b.dtype = DType::kBF16;
  b.octave = 26;
  b.choice.variant = AnyVariant(Op::kSeluBwd, DType::kBF16, GeluApprox::kNone)->name;
  b.median_ns = 9.5e6;
  t.entries = {a, b};
  return t;
}

void ExpectEqual(const Table& x, const Table& y) {
  EXPECT_EQ(x.machine_id, y.machine_id);
  EXPECT_EQ(x.backend, y.backend);
  EXPECT_EQ(x.accuracy_class, y.accuracy_class);
  EXPECT_EQ(x.provenance, y.provenance);
  ASSERT_EQ(x.entries.size(), y.entries.size());
  for (size_t i = 0; i < x.entries.size(); ++i) {
    const Entry &a = x.entries[i], &b = y.entries[i];
    EXPECT_EQ(int(a.op), int(b.op));
    EXPECT_EQ(int(a.dtype), int(b.dtype));
    EXPECT_EQ(int(a.mode), int(b.mode));
    EXPECT_EQ(int(a.layout), int(b.layout));
    EXPECT_EQ(a.octave, b.octave);
    EXPECT_EQ(a.choice, b.choice);
    EXPECT_EQ(a.one_thread, b.one_thread);
    EXPECT_EQ(a.rule, b.rule);
    EXPECT_EQ(a.Lo(), b.Lo());
    EXPECT_EQ(a.Hi(), b.Hi());
    EXPECT_DOUBLE_EQ(a.median_ns, b.median_ns);
    EXPECT_DOUBLE_EQ(a.spread_pct, b.spread_pct);
    ASSERT_EQ(a.runner_up.has_value(), b.runner_up.has_value());
    if (a.runner_up) {
      EXPECT_EQ(a.runner_up->choice, b.runner_up->choice);
      EXPECT_DOUBLE_EQ(a.runner_up->median_ns, b.runner_up->median_ns);
    }
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

// The accuracy class: written only when it is not the rule (tables before
// the classes read as the rule), read back as written.
TEST(Table, AccuracyClassRoundTripsAndIsTheRuleWhenAbsent) {
  Table t = Sample();
  EXPECT_EQ(t.accuracy_class, AccuracyClass::kRule);
  EXPECT_FALSE(tables::ToJson(t).contains("accuracy_class"));
  t.accuracy_class = AccuracyClass::kNearExact;
  const nlohmann::json j = tables::ToJson(t);
  EXPECT_EQ(j["accuracy_class"], "near-exact");
  Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(j.dump(2), &back, &err)) << err;
  ExpectEqual(t, back);
  nlohmann::json rule = j;
  rule["accuracy_class"] = "rule";
  ASSERT_TRUE(tables::ParseTable(rule.dump(), &back, &err)) << err;
  EXPECT_EQ(back.accuracy_class, AccuracyClass::kRule);
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

// Version 4: a thread rule instead of a thread count, and a boundary moved
// to a crossover inside an octave (both neighbours agree).
TEST(Table, GrainsAndMovedBoundariesRoundTrip) {
  Table t = Sample();
  Entry lo = t.entries[0], hi = t.entries[0];
  hi.octave = 18;
  lo.rule = ThreadRule{0};       // one thread
  hi.rule = ThreadRule{40000};   // a thread per 40000 elements
  lo.size_hi = hi.size_lo = 300000;  // octave 17 ends past 2^18 = 262144
  lo.choice.split.threads = hi.choice.split.threads = 1;  // with a rule the count is not stored
  t.entries = {lo, hi, t.entries[1]};
  std::string err;
  Table back;
  const nlohmann::json j = tables::ToJson(t);
  EXPECT_FALSE(j["entries"][0].contains("threads"));  // a rule replaces the count
  EXPECT_EQ(j["entries"][1]["grain"], 40000);
  EXPECT_EQ(j["entries"][2]["threads"], 1);  // an entry without a rule keeps its count
  ASSERT_TRUE(tables::ParseTable(j.dump(), &back, &err)) << err;
  ExpectEqual(t, back);
  EXPECT_EQ(back.entries[0].At(250000, 64).split.threads, 1);
  EXPECT_EQ(back.entries[1].At(300000, 64).split.threads, 7);
  EXPECT_EQ(back.entries[1].At(300000, 2).split.threads, 2);
  EXPECT_EQ(back.entries[1].At(1 << 26, 64).split.threads, 64);
  EXPECT_EQ(back.entries[1].At(30000, 64).split.threads, 1);
  // Neighbours that disagree on their boundary are an error.
  nlohmann::json bad = j;
  bad["entries"][1]["size_lo"] = 290000;
  Table u;
  EXPECT_FALSE(tables::ParseTable(bad.dump(), &u, &err));
  EXPECT_NE(err.find("octave 17 ends at 300000 but octave 18 begins at 290000"), std::string::npos) << err;
  // A version-3 table's "grain" means nothing and is ignored.
  nlohmann::json v3 = j;
  v3["version"] = 3;
  for (auto& e : v3["entries"]) e["size_lo"] = uint64_t(1) << e["octave"].get<int>(), e["size_hi"] = uint64_t(2) << e["octave"].get<int>();
  ASSERT_TRUE(tables::ParseTable(v3.dump(), &u, &err)) << err;
  EXPECT_FALSE(u.entries[1].rule.has_value());
}

// A transposed view's tile: its extents and whether the result is
// transposed (Split::transpose_result) are written only where set, read
// back the same, and name the choice's key.
TEST(Table, TransposedTilesRoundTrip) {
  Table t = Sample();
  Entry e = t.entries[1];
  e.layout = tables::Layout::kTransposed;
  e.choice.split = Split{2, 0, 0, 1024, 64};
  e.choice.split.transpose_result = true;
  e.one_thread = Choice{e.choice.variant, Split{1, 0, 0, 512, 64}};
  t.entries.push_back(e);
  const nlohmann::json j = tables::ToJson(t);
  EXPECT_EQ(j["entries"][2]["transpose_result"], true);
  EXPECT_EQ(j["entries"][2]["tile_rows"], 1024);
  EXPECT_FALSE(j["entries"][2]["one_thread"].contains("transpose_result"));
  EXPECT_FALSE(j["entries"][0].contains("transpose_result"));
  Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(j.dump(), &back, &err)) << err;
  ExpectEqual(t, back);
  EXPECT_TRUE(back.entries[2].choice.split.transpose_result);
  EXPECT_FALSE(back.entries[2].one_thread->split.transpose_result);
  EXPECT_EQ(e.choice.Key(), e.choice.variant + "|t2|c0|s0|r1024x64|tr");
  EXPECT_EQ(e.one_thread->Key(), e.choice.variant + "|t1|c0|s0|r512x64");
}

TEST(ThreadRule, ThreadsPerGrainClampedToAvailable) {
  EXPECT_EQ(ThreadRule{0}.Threads(uint64_t(1) << 30, 96), 1);
  EXPECT_EQ(ThreadRule{1000}.Threads(999, 96), 1);
  EXPECT_EQ(ThreadRule{1000}.Threads(2999, 96), 2);
  EXPECT_EQ(ThreadRule{1000}.Threads(2999, 1), 1);
  EXPECT_EQ(ThreadRule{1}.Threads(uint64_t(1) << 40, 96), 96);
  // The default: one thread below 64K elements, a thread per 32K from there.
  EXPECT_EQ(kDefaultThreadRule.Threads(65535, 96), 1);
  EXPECT_EQ(kDefaultThreadRule.Threads(65536, 96), 2);
  EXPECT_EQ(kDefaultThreadRule.Threads(uint64_t(1) << 20, 96), 32);
  EXPECT_EQ(kDefaultThreadRule.Threads(uint64_t(1) << 24, 96), 96);
}

TEST(Table, BadTablesAreRejectedWithAMessage) {
  const std::string good = tables::ToJson(Sample()).dump(2);
  ExpectRejected(good.substr(0, good.size() / 2), "not valid JSON");
  ExpectRejected("", "not valid JSON");
  ExpectRejected("[]", "JSON object");
  ExpectRejected(Mutate([](auto& j) { j["version"] = tables::kSchemaVersion + 1; }),
                 "version " + std::to_string(tables::kSchemaVersion + 1));
  ExpectRejected(Mutate([](auto& j) { j["version"] = 0; }), "version 0");
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
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["chunk"] = -1; }), "chunk");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["stage_tile"] = -1; }), "stage_tile");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["one_thread"]["variant"] = "gelu_bwd.f32.none.nope.u4.avx3"; }),
                 "unknown one_thread variant");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["octave"] = "eight"; }), "wrong type");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["octave"] = 48; }), "out of range");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0].erase("octave"); }), "octave");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["size_hi"] = 1 << 20; }), "size_hi");  // two octaves up
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["size_lo"] = 1 << 15; }), "size_lo");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["grain"] = -5; }), "grain");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["grain"] = 4096.5; }), "grain");
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["gelu_approx"] = "sigmoid"; }), "gelu_approx");
  ExpectRejected(Mutate([](auto& j) { j["accuracy_class"] = "exact"; }), "accuracy_class is \"exact\"");
  ExpectRejected(Mutate([](auto& j) { j["accuracy_class"] = 1; }), "accuracy_class");
  // A GELU erf entry naming a tanh variant computes the wrong formula.
  ExpectRejected(Mutate([](auto& j) { j["entries"][0]["gelu_approx"] = "none"; }), "does not compute");
}

// The JSON of a table as version 2 wrote it: "tile" (the chunk), no stage tile.
nlohmann::json AsVersion2(nlohmann::json j) {
  j["version"] = 2;
  for (auto& e : j["entries"])
    for (auto* o : {&e, e.contains("one_thread") ? &e["one_thread"] : nullptr,
                    e["runner_up"].is_object() ? &e["runner_up"] : nullptr})
      if (o) {
        (*o)["tile"] = (*o)["chunk"];
        o->erase("chunk");
        o->erase("stage_tile");
      }
  return j;
}

// Version 2 tables still load: "tile" is the chunk of a CPU table and the
// stage tile (UB tile length) of another backend's; written back, version 3.
TEST(Table, VersionTwoTileIsTheChunk) {
  Table cpu = Sample();
  cpu.entries[0].choice.split.stage_tile = 0;
  cpu.entries[0].one_thread->split = Split{1, 4096, 0};
  Table t;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(AsVersion2(tables::ToJson(cpu)).dump(), &t, &err)) << err;
  EXPECT_EQ(t.source_version, 2);
  ExpectEqual(cpu, t);
  EXPECT_EQ(t.entries[0].choice.split, (Split{2, 16384, 0}));
  EXPECT_EQ(t.entries[0].one_thread->split, (Split{1, 4096, 0}));
  nlohmann::json atlas = AsVersion2(tables::ToJson(cpu));
  atlas["backend"] = "atlas-model";
  ASSERT_TRUE(tables::ParseTable(atlas.dump(), &t, &err)) << err;
  EXPECT_EQ(t.entries[0].choice.split, (Split{2, 0, 16384}));
  EXPECT_EQ(tables::ToJson(t)["version"], tables::kSchemaVersion);
  EXPECT_EQ(tables::ToJson(t)["entries"][0]["stage_tile"], 16384);
  // A v2 table's "tile" keeps its checks.
  atlas["entries"][0]["tile"] = -1;
  ExpectRejected(atlas.dump(), "entry 0: field \"tile\" is -1, out of range");
}

// Version 1 tables (4x buckets) still load: bucket k is octaves 2k and 2k+1
// with the same choice; a v1 bucket overlapping another is a duplicate.
TEST(Table, VersionOneBucketsLoadAsTwoOctaves) {
  nlohmann::json j = AsVersion2(tables::ToJson(Sample()));
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
  EXPECT_EQ(t.entries[0].choice, t.entries[1].choice);
  EXPECT_EQ(t.entries[2].octave, 26);  // bucket 13
  EXPECT_EQ(t.entries[3].octave, 27);
  // Written back, it is a table of this version with four octave entries.
  Table back;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(), &back, &err)) << err;
  EXPECT_EQ(back.source_version, tables::kSchemaVersion);
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

// A number that overflows a double raises nlohmann::json::out_of_range
// (not a parse_error): it must be a message, not an abort.
TEST(Table, NumbersThatOverflowAreRejected) {
  const std::string good = tables::ToJson(Sample()).dump();
  for (const char* number : {"1e999", "-1e999", "1E+400"}) {
    SCOPED_TRACE(number);
    std::string text = good;
    const size_t at = text.find("\"median_ns\":") + std::string("\"median_ns\":").size();
    text.insert(at, std::string(number) + ",\"x\":");
    ExpectRejected(text, "not valid JSON");
    ExpectRejected(text, number);
    ExpectRejected("{\"provenance\": {\"cores\": " + std::string(number) + "}}", "not valid JSON");
  }
}

// The sample table with a value nested `depth` deep in provenance or in an entry's extra.
std::string Nested(const std::string& where, size_t depth, bool objects) {
  const std::string text = Mutate([&](auto& j) {
    if (where == "provenance") j["provenance"]["deep"] = "@DEEP@";
    else j["entries"][0]["extra"] = "@DEEP@";
  });
  std::string open, close;
  for (size_t i = 0; i < depth; ++i) open += objects ? "{\"a\":" : "[", close += objects ? "}" : "]";
  const size_t at = text.find("\"@DEEP@\"");
  return text.substr(0, at) + open + "1" + close + text.substr(at + 8);
}

// Defect 4: 200,000 nested arrays inside provenance overflowed the stack
// (nlohmann copies, compares and prints recursively).
TEST(Table, DeepNestingIsRejected) {
  ExpectRejected(Nested("provenance", 200000, false), "nested deeper than");
  ExpectRejected(Nested("provenance", 200000, true), "nested deeper than");
  ExpectRejected(Nested("extra", 100000, false), "nested deeper than");
  ExpectRejected(std::string(100000, '['), "not valid JSON");
  // Sane nesting is fine.
  Table t;
  std::string err;
  EXPECT_TRUE(tables::ParseTable(Nested("provenance", 20, false), &t, &err)) << err;
}

// Defect 5: wrong types were converted silently (2.9 -> 2, 2^32+2 -> 2,
// true -> 1); every field now has its JSON type and range, or the table is refused.
TEST(Table, WrongTypesAreRejectedNotTruncated) {
  using J = nlohmann::json;
  struct Case {
    const char* field;
    J value;
    const char* needle;
  };
  const std::vector<Case> entry_cases = {
      {"threads", 2.9, "\"threads\""},
      {"threads", J(uint64_t(4294967298)), "\"threads\""},
      {"threads", true, "\"threads\""},
      {"threads", "2", "\"threads\""},
      {"threads", J(int64_t(-4294967294)), "\"threads\""},
      {"octave", 17.0, "\"octave\""},
      {"octave", J(uint64_t(4294967313)), "\"octave\""},
      {"octave", false, "\"octave\""},
      {"chunk", 16384.5, "\"chunk\""},
      {"chunk", 1e20, "\"chunk\""},
      {"chunk", J(uint64_t(18446744073709551615ull)), "\"chunk\""},
      {"chunk", true, "\"chunk\""},
      {"stage_tile", 4096.5, "\"stage_tile\""},
      {"stage_tile", "4K", "\"stage_tile\""},
      {"transpose_result", 1, "\"transpose_result\""},
      {"transpose_result", "true", "\"transpose_result\""},
      {"one_thread", J{{"variant", "v"}, {"transpose_result", nullptr}}, "one_thread"},
      {"size_lo", 131072.0, "\"size_lo\""},
      {"size_hi", J(uint64_t(262144) + (uint64_t(1) << 63)), "size_hi"},
      {"median_ns", "fast", "\"median_ns\""},
      {"median_ns", true, "\"median_ns\""},
      {"median_ns", -1.0, "\"median_ns\""},
      {"spread_pct", J::array({1.0}), "\"spread_pct\""},
      {"spread_pct", nullptr, "\"spread_pct\""},
      {"variant", 5, "\"variant\""},
      {"op", true, "\"op\""},
      {"layout", nullptr, "\"layout\""},
      {"runner_up", "x", "\"runner_up\""},
      {"extra", 5, "\"extra\""},
      {"one_thread", J{{"variant", "v"}, {"chunk", 2.5}}, "one_thread"},
      {"one_thread", J{{"variant", "v"}, {"stage_tile", -1}}, "one_thread"},
      {"one_thread", J{{"variant", ""}, {"chunk", 4096}}, "one_thread.variant is empty"},
      {"one_thread", J::array(), "one_thread must be {variant, chunk, stage_tile}"},
      {"runner_up", J{{"variant", "v"}, {"threads", 0}, {"median_ns", 1.0}}, "entry 0.runner_up: field \"threads\""},
      {"runner_up", J{{"variant", "v"}, {"chunk", 1.5}}, "entry 0.runner_up: field \"chunk\""},
      {"runner_up", J{{"variant", "v"}, {"median_ns", -1.0}}, "entry 0.runner_up: field \"median_ns\""},
      {"runner_up", J{{"threads", 1}}, "entry 0.runner_up: missing field \"variant\""},
      {"runner_up", J{{"variant", ""}}, "runner_up.variant is empty"},
      {"variant", "", "variant is empty"},
  };
  for (const Case& c : entry_cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + c.value.dump());
    ExpectRejected(Mutate([&](auto& j) { j["entries"][0][c.field] = c.value; }), "entry 0");
    ExpectRejected(Mutate([&](auto& j) { j["entries"][0][c.field] = c.value; }), c.needle);
  }
  const std::vector<Case> table_cases = {
      {"version", 2.0, "\"version\""},       {"version", true, "\"version\""},
      {"version", "2", "\"version\""},       {"version", J(uint64_t(4294967298)), "version"},
      {"machine_id", 5, "\"machine_id\""},   {"backend", J::array(), "\"backend\""},
      {"schema", nullptr, "\"schema\""},     {"provenance", "x", "provenance"},
      {"machine_id", "a\nb", "machine_id"},
  };
  for (const Case& c : table_cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + c.value.dump());
    ExpectRejected(Mutate([&](auto& j) { j[c.field] = c.value; }), c.needle);
  }
  // provenance.isa_family is read by the dispatch and the table generator.
  ExpectRejected(Mutate([](auto& j) { j["provenance"]["isa_family"] = 5; }), "isa_family");
  // gelu_approx belongs to GELU entries: a SELU entry with "tanh" would never be used.
  ExpectRejected(Mutate([](auto& j) { j["entries"][1]["gelu_approx"] = "tanh"; }), "gelu_approx");
  // The right types still load (integers as JSON integers, medians as any number).
  Table t;
  std::string err;
  EXPECT_TRUE(tables::ParseTable(Mutate([](auto& j) {
                                   j["entries"][0]["median_ns"] = 1234;
                                   j["entries"][1]["gelu_approx"] = "none";
                                 }),
                                 &t, &err))
      << err;
}

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() / ("actgrad_table_" + std::to_string(getpid()) + "_" + name)).string();
}

// Defect 6: a FIFO hung the first op call, /dev/zero ended in bad_alloc, and
// a huge file was read whole. Only regular files of at most 16 MiB are read.
TEST(Table, LoadReadsOnlyRegularFilesOfBoundedSize) {
  Table t;
  std::string err;
  const std::string fifo = TempPath("fifo.json");
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(tables::LoadTableFile(fifo, &t, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  EXPECT_NE(err.find(fifo), std::string::npos) << err;
  fs::remove(fifo);
  for (const char* path : {"/dev/zero", "/dev/null", "/tmp"}) {
    SCOPED_TRACE(path);
    EXPECT_FALSE(tables::LoadTableFile(path, &t, &err));
    EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  }
  // A (sparse) file one byte over the cap is refused before it is read.
  const std::string big = TempPath("big.json");
  {
    std::ofstream(big, std::ios::trunc) << "{}";
  }
  fs::resize_file(big, (uint64_t(16) << 20) + 1);
  EXPECT_FALSE(tables::LoadTableFile(big, &t, &err));
  EXPECT_NE(err.find("16 MiB"), std::string::npos) << err;
  fs::remove(big);
  EXPECT_FALSE(tables::LoadTableFile(TempPath("missing.json"), &t, &err));
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

// Defect 9 (part): a failed rename or write left <path>.tmp behind.
TEST(Table, SaveLeavesNoTemporaryFileWhenItFails) {
  const Table t = Sample();
  std::string err;
  // The path names a (non-empty) directory: the rename fails.
  const std::string dir = TempPath("dir.json");
  fs::create_directories(dir + "/inside");
  EXPECT_FALSE(tables::SaveTableFile(dir, t, &err));
  EXPECT_NE(err.find(dir), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir + ".tmp"));
  EXPECT_TRUE(fs::is_directory(dir + "/inside"));
  fs::remove_all(dir);

  // The write fails (file size limit, as a full disk would): the table that
  // was there is untouched and no temporary file is left.
  const std::string path = TempPath("full.json");
  ASSERT_TRUE(tables::SaveTableFile(path, t, &err)) << err;
  std::stringstream before;
  before << std::ifstream(path).rdbuf();
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 100;  // the hard limit stays: the soft one can be raised back
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const bool saved_ok = tables::SaveTableFile(path, t, &err);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(saved_ok);
  EXPECT_NE(err.find("write"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  std::stringstream after;
  after << std::ifstream(path).rdbuf();
  EXPECT_EQ(after.str(), before.str());

  // A provenance string that is not UTF-8 (a path from the command line):
  // an error, not a json::type_error out of a half-written .tmp.
  Table bad = t;
  bad.provenance["log"] = "/data/\xff.jsonl";
  EXPECT_FALSE(tables::SaveTableFile(path, bad, &err));
  EXPECT_NE(err.find("cannot write the table"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  std::stringstream unchanged;
  unchanged << std::ifstream(path).rdbuf();
  EXPECT_EQ(unchanged.str(), before.str());

  // A stale temporary file of any kind (a FIFO would block the open) is replaced.
  ASSERT_EQ(mkfifo((path + ".tmp").c_str(), 0600), 0);
  ASSERT_TRUE(tables::SaveTableFile(path, t, &err)) << err;
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  fs::remove(path);
}

#ifdef ACTGRAD_REDUCED_TARGETS
constexpr bool kReducedTargets = true;
#else
constexpr bool kReducedTargets = false;
#endif

TEST(Table, CommittedTableOfThisMachineValidates) {
  const fs::path p = fs::path(ACTGRAD_SOURCE_DIR) / "tiling/tables" / (MachineId() + ".json");
  if (!fs::exists(p)) GTEST_SKIP() << "no table committed for " << MachineId();
  Table t;
  std::string err;
  // A sanitizer build that compiles its own kernels has one SIMD target
  // (kernels/CMakeLists.txt), so it lacks some names the table holds; the
  // other builds check them all.
  ASSERT_TRUE(tables::LoadTableFile(p.string(), &t, &err, /*check_variants=*/!kReducedTargets)) << err;
  EXPECT_EQ(t.machine_id, MachineId());
  EXPECT_EQ(t.backend, "cpu");
  for (const char* key : {"cpu_model", "cpu_flags", "cores", "caches", "compiler", "git_commit", "date",
                          "tool_version", "isa_family"})
    EXPECT_TRUE(t.provenance.contains(key)) << key;
  for (const auto& e : t.entries) {
    EXPECT_GE(e.octave, kMinOctave);
    EXPECT_LE(e.octave, kMaxOctave);
    EXPECT_GT(e.median_ns, 0);
    const Variant* v = FindVariant(e.choice.variant);
    if (kReducedTargets && v == nullptr) continue;
    ASSERT_NE(v, nullptr) << e.choice.variant;
    EXPECT_TRUE(v->supported) << e.choice.variant;
  }
}

}  // namespace
}  // namespace actgrad
