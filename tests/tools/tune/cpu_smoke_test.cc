// A tiny real tuning run on this CPU (two cells), the CPU backend's pieces,
// the accuracy gate and the progress display.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>
#include <set>

#include "runtime/plan.h"
#include "tiling/dispatch.h"
#include "tiling/machine.h"
#include "tiling/table.h"
#include "tools/tune/accuracy_gate.h"
#include "tools/tune/cpu_backend.h"
#include "tools/tune/progress.h"
#include "tools/tune/tuner.h"

namespace actgrad::tune {
namespace {

// Chunks of a threaded winner and stage tiles of a staged one, sized from
// this machine's caches (provenance.caches), for contiguous cells only; each
// refinement can be measured.
TEST(CpuBackend, SplitRefinementsFromTheCaches) {
  CpuBackendOptions opts;
  opts.max_threads = 2;
  CpuBackend be(nullptr, opts);
  const Variant* staged = nullptr;
  for (const Variant& v : Variants())
    if (v.supported && v.op == Op::kHardswishBwd && v.dtype == DType::kF16 && v.upcast == "staged") staged = &v;
  ASSERT_NE(staged, nullptr);
  const Cell b{Op::kHardswishBwd, DType::kF16, "contig", 20, RepresentativeN(20, uint64_t(1) << 26)};
  const Choice best{staged->name, Split{2, 0, 0}};
  const std::vector<Choice> refs = be.SplitRefinements(b, best);
  int chunks = 0, stages = 0;
  for (const Choice& c : refs) {
    SCOPED_TRACE(c.Key());
    EXPECT_EQ(c.variant, best.variant);
    EXPECT_EQ(c.split.threads, 2);
    EXPECT_NE(c, best);
    EXPECT_TRUE((c.split.chunk != 0) != (c.split.stage_tile != 0));  // one dimension at a time
    if (c.split.chunk) {
      ++chunks;
      EXPECT_EQ(c.split.chunk % 64, 0);
      EXPECT_LE(uint64_t(c.split.chunk) * 4, b.n);  // two pieces per thread at least
    } else {
      ++stages;
      EXPECT_EQ(std::popcount(uint64_t(c.split.stage_tile)), 1);
      EXPECT_LE(c.split.stage_tile, int64_t(kMaxStageTile));
      EXPECT_NE(c.split.stage_tile, int64_t(kDefaultStageTile));
    }
    EXPECT_EQ(be.Measure(b, c, 1, 1e-4).size(), 1u);
  }
  EXPECT_GT(chunks, 0);
  EXPECT_GT(stages, 0);
  // One thread: no chunks. Broadcast and strided cells: chunks only (the
  // elements of a tile of runs), no tile; transposed cells: the gathered
  // tile's extents only.
  for (const Choice& c : be.SplitRefinements(b, Choice{staged->name, Split{1, 0, 0}})) EXPECT_EQ(c.split.chunk, 0);
  for (const char* layout : {"bcast", "strided"}) {
    const Cell bc{Op::kSoftshrinkBwd, DType::kF16, layout, 20, RepresentativeN(20, uint64_t(1) << 26)};
    const auto refs = be.SplitRefinements(bc, Choice{DefaultVariant(Op::kSoftshrinkBwd, DType::kF16)->name, Split{2, 0, 0}});
    EXPECT_FALSE(refs.empty()) << layout;
    for (const Choice& c : refs) {
      EXPECT_GT(c.split.chunk, 0) << layout;
      EXPECT_EQ(c.split.tile_rows, 0) << layout;
    }
  }
  const Cell tc{Op::kSeluBwd, DType::kF32, "transposed", 20, RepresentativeN(20, uint64_t(1) << 26)};
  const auto tiles = be.SplitRefinements(tc, Choice{DefaultVariant(Op::kSeluBwd, DType::kF32)->name, Split{2, 0, 0}});
  EXPECT_FALSE(tiles.empty());
  int transposed_results = 0;
  for (const Choice& c : tiles) {
    EXPECT_GT(c.split.tile_rows, 0);
    EXPECT_GT(c.split.tile_cols, 0);
    EXPECT_EQ(c.split.chunk, 0);
    EXPECT_EQ(be.Measure(tc, c, 1, 1e-4).size(), 1u);  // through the API on the transposed view
    if (!c.split.transpose_result) continue;
    ++transposed_results;  // the variant writes the scratch tile: plain stores
    EXPECT_FALSE(FindVariant(c.variant)->nt_stores) << c.Key();
  }
  EXPECT_GE(transposed_results, 2);
  // From a streaming variant, the result-transposed tiles take its plain twin.
  if (const Variant* nt = StreamingTwin(*DefaultVariant(Op::kSeluBwd, DType::kF32)); nt && nt->nt_stores) {
    int plain = 0;
    for (const Choice& c : be.SplitRefinements(tc, Choice{nt->name, Split{1, 0, 0}}))
      if (c.split.transpose_result) plain += c.variant == nt->name.substr(0, nt->name.size() - 3);
    EXPECT_GE(plain, 2) << nt->name;
  }
  // The tiles in bytes: out pieces of 256 B at least, within the runtime's
  // packed-tile bound; from a u1 variant (which has no streaming twin) the
  // u2 one's streaming twin is tried too, where the CPU runs it.
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const std::string def = DefaultVariant(Op::kSeluBwd, dt)->name;
    std::string u1 = def;
    if (const size_t at = u1.find(".u2."); at != std::string::npos) u1.replace(at, 4, ".u1.");
    const Variant* best = FindVariant(u1);
    ASSERT_NE(best, nullptr) << u1;
    const Cell c{Op::kSeluBwd, dt, "transposed", 24, RepresentativeN(24, uint64_t(1) << 26)};
    bool streaming = false;
    for (const Choice& r : be.SplitRefinements(c, Choice{best->name, Split{1, 0, 0}})) {
      EXPECT_GE(r.split.tile_cols * int64_t(DTypeSize(dt)), 256) << r.Key();
      EXPECT_LE(r.split.tile_rows * r.split.tile_cols, rt::kMaxTileElems) << r.Key();
      streaming |= FindVariant(r.variant)->nt_stores;
    }
    const Variant* twin = FindVariant(def + ".nt");
    if (def.find(".u2.") != std::string::npos && twin && twin->supported) EXPECT_TRUE(streaming) << u1;
  }
}

TEST(CpuBackend, CandidatesPointsAndMeasure) {
  AccuracyGate gate;
  gate.AllowAll();
  CpuBackend be(&gate);
  const Cell b{Op::kGeluBwd, DType::kF32, "contig", 16, RepresentativeN(16, uint64_t(1) << 26), GeluApprox::kNone};
  const auto cands = be.Candidates(b);
  ASSERT_FALSE(cands.empty());
  EXPECT_EQ(cands.front().variant, DefaultVariant(Op::kGeluBwd, DType::kF32)->name);  // the default first
  std::set<std::string> keys;
  for (const auto& c : cands) {
    EXPECT_TRUE(keys.insert(c.Key()).second) << "duplicate " << c.Key();
    const Variant* v = FindVariant(c.variant);
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v->supported);
    EXPECT_EQ(int(v->gelu_mode), int(GeluApprox::kNone));
    EXPECT_LE(c.split.threads, be.ThreadCap());
  }
  for (uint64_t n : be.Points(b)) {
    EXPECT_GE(n, uint64_t(1) << 16);
    EXPECT_LT(n, uint64_t(1) << 17);
  }
  const Cell bc{Op::kSoftshrinkBwd, DType::kF16, "bcast", 11, RepresentativeN(11, uint64_t(1) << 26),
                  GeluApprox::kNone};
  for (uint64_t n : be.Points(bc)) EXPECT_EQ(n % 64, 0u);  // the bcast view: [n/64, 64]
  for (const char* layout : {"strided", "transposed"}) {
    const Cell sc{Op::kSeluBwd, DType::kF32, layout, 15, RepresentativeN(15, uint64_t(1) << 26)};
    for (uint64_t n : be.Points(sc)) {
      EXPECT_EQ(n % 1024, 0u) << layout;
      EXPECT_GE(n, uint64_t(1) << 14) << layout;
    }
    EXPECT_EQ(be.Measure(sc, be.Default(sc), 1, 1e-4).size(), 1u) << layout;
  }
  const Choice d = be.Default(b);
  EXPECT_EQ(d.variant, DefaultVariant(Op::kGeluBwd, DType::kF32)->name);
  const auto s = be.Measure(b, d, 3, 0.0005);
  ASSERT_EQ(s.size(), 3u);
  for (double x : s) EXPECT_GT(x, 0);
  const auto sb = be.Measure(bc, be.Default(bc), 2, 0.0005);  // through the aclnn API
  ASSERT_EQ(sb.size(), 2u);
  EXPECT_GT(sb[0], 0);
  // A bcast cell of an op that does not broadcast is an error, not a crash.
  const Cell bad{Op::kSeluBwd, DType::kF32, "bcast", 13, 8192, GeluApprox::kNone};
  EXPECT_THROW(be.Measure(bad, be.Default(bad), 1, 0.0005), std::runtime_error);
}

// The operands sit at the placement's offsets within their pages
// (contiguous and broadcast cells, switching placements back and forth), and
// the kernel measured reads g and x and writes out there.
TEST(CpuBackend, OperandsSitAtThePlacementOffsets) {
  CpuBackend be(nullptr);
  const Cell contig{Op::kHardswishBwd, DType::kF32, "contig", 12, RepresentativeN(12, uint64_t(1) << 26)};
  const Cell bcast{Op::kSoftshrinkBwd, DType::kF16, "bcast", 12, RepresentativeN(12, uint64_t(1) << 26)};
  auto page_offset = [](const void* p) { return int64_t(reinterpret_cast<uintptr_t>(p) % 4096); };
  std::vector<char> first_g;
  for (const Cell& b : {contig, bcast})
    for (int k : {1, 0, 2, 3, 5, 1}) {
      SCOPED_TRACE(b.layout + " placement " + std::to_string(k));
      be.SetPlacement(k);
      const Choice d = be.Default(b);
      std::vector<double> s = be.Measure(b, d, 1, 1e-4);  // switches the arena itself
      ASSERT_EQ(s.size(), 1u);
      EXPECT_GT(s[0], 0);
      const CpuBackend::OperandView ops = be.Operands();
      const inputs::Placement want = inputs::PlacementAt(k);
      EXPECT_EQ(ops.placement, want);
      EXPECT_EQ(page_offset(ops.g), want.g);
      EXPECT_EQ(page_offset(ops.x), want.x);
      EXPECT_EQ(page_offset(ops.out), want.out);
      if (b.layout != "contig") continue;
      // What the measured kernel left at out() is its result on g() and x().
      const size_t bytes = size_t(b.n) * DTypeSize(b.dtype);
      std::vector<char> expect(bytes);
      RunVariant(*FindVariant(d.variant), KernelArgs{ops.g, ops.x, expect.data(), size_t(b.n), OpParams{}, 0},
                 Split{1, 0, 0});
      EXPECT_EQ(std::memcmp(expect.data(), ops.out, bytes), 0);
      // Moved, not regenerated: g and x hold the same values at every placement.
      if (first_g.empty()) first_g.assign(static_cast<const char*>(ops.g), static_cast<const char*>(ops.g) + bytes);
      EXPECT_EQ(std::memcmp(first_g.data(), ops.g, bytes), 0);
    }
  // Prepare switches too (the search calls it first, so that no sample pays).
  be.SetPlacement(2);
  be.Prepare(contig);
  EXPECT_EQ(be.Operands().placement.index, 2);
  EXPECT_EQ(page_offset(be.Operands().out), 2048);
  EXPECT_THROW(be.SetPlacement(-1), std::invalid_argument);
}

TEST(CpuBackend, Provenance) {
  CpuBackend be(nullptr);
  const auto p = be.Provenance();
  for (const char* key : {"cpu_model", "cpu_flags", "cores", "caches", "compiler", "isa_family"})
    EXPECT_TRUE(p.contains(key)) << key;
  EXPECT_EQ(p["isa_family"], IsaFamily());
  EXPECT_GE(p["cores"].get<long>(), 1);
  EXPECT_EQ(be.MachineId(), MachineId());
}

TEST(AccuracyGate, OnlyPassingVariantsAreCandidates) {
  const Variant* def = DefaultVariant(Op::kHardswishBwd, DType::kF32);
  const Variant* other = nullptr;
  const Variant* absent = nullptr;
  for (const Variant& v : Variants())
    if (v.op == Op::kHardswishBwd && v.dtype == DType::kF32 && v.supported && &v != def) {
      if (!other) other = &v;
      else if (!absent) absent = &v;
    }
  ASSERT_NE(other, nullptr);
  ASSERT_NE(absent, nullptr);
  AccuracyGate gate;
  std::string err;
  ASSERT_TRUE(gate.Parse(nlohmann::json{{"results",
                                          {{{"variant", def->name}, {"shippable", true}},
                                           {{"variant", other->name}, {"shippable", false}}}}}
                             .dump(),
                         &err))
      << err;
  EXPECT_FALSE(gate.Allowed(*other));
  EXPECT_FALSE(gate.Allowed(*absent));
  EXPECT_TRUE(gate.absent().count(absent->name));
  CpuBackend be(&gate);
  const Cell b{Op::kHardswishBwd, DType::kF32, "contig", 14, RepresentativeN(14, uint64_t(1) << 26),
                 GeluApprox::kNone};
  std::set<std::string> vs;
  for (const auto& c : be.Candidates(b)) vs.insert(c.variant);
  EXPECT_EQ(vs, std::set<std::string>{def->name});
  // The plain array form, and "pass" when "shippable" is missing.
  AccuracyGate g2;
  ASSERT_TRUE(g2.Parse(nlohmann::json::array({{{"variant", other->name}, {"pass", true}}}).dump(), &err)) << err;
  EXPECT_TRUE(g2.Allowed(*other));
  EXPECT_FALSE(g2.Parse("{\"nothing\": 1}", &err));
  EXPECT_FALSE(g2.Load("/nonexistent/accuracy.json", &err));
  EXPECT_NE(err.find("cannot open"), std::string::npos);
}

// Under the near-exact class only shippable variants whose max_err is within
// the class's bound compete (a result without max_err does not), a variant
// listed twice counts with its larger error, and the default is the class's
// (erf_r6 for GELU erf): the rule's default drops out of the candidates.
TEST(AccuracyGate, NearExactClassFiltersOnTheMeasuredError) {
  const Variant* rule_def = DefaultVariant(Op::kGeluBwd, DType::kF32);
  const Variant* near_def = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, AccuracyClass::kNearExact);
  ASSERT_TRUE(rule_def && near_def);
  ASSERT_NE(rule_def, near_def);
  std::vector<const Variant*> others;
  for (const Variant& v : Variants())
    if (v.op == Op::kGeluBwd && v.dtype == DType::kF32 && v.gelu_mode == GeluApprox::kNone && v.supported &&
        &v != rule_def && &v != near_def && others.size() < 3)
      others.push_back(&v);
  ASSERT_EQ(others.size(), 3u);
  const double bound = ClassBound(AccuracyClass::kNearExact, DType::kF32);
  nlohmann::json results = {
      {{"variant", rule_def->name}, {"shippable", true}, {"max_err", 2.45e-6}},
      {{"variant", near_def->name}, {"shippable", true}, {"max_err", 2.8e-7}},
      {{"variant", others[0]->name}, {"shippable", true}, {"max_err", bound}},   // at the bound: in
      {{"variant", others[1]->name}, {"shippable", true}},                       // no max_err: out
      {{"variant", others[2]->name}, {"shippable", true}, {"max_err", 5e-7}},
      {{"variant", others[2]->name}, {"shippable", true}, {"max_err", 3e-6}},    // again, larger: out
  };
  AccuracyGate gate;
  std::string err;
  ASSERT_TRUE(gate.Parse(nlohmann::json{{"results", results}}.dump(), &err)) << err;
  for (const Variant* v : {rule_def, near_def, others[0], others[1], others[2]}) EXPECT_TRUE(gate.Allowed(*v)) << v->name;
  gate.SetClass(AccuracyClass::kNearExact);
  EXPECT_FALSE(gate.Allowed(*rule_def));
  EXPECT_TRUE(gate.Allowed(*near_def));
  EXPECT_TRUE(gate.Allowed(*others[0]));
  EXPECT_FALSE(gate.Allowed(*others[1]));
  EXPECT_FALSE(gate.Allowed(*others[2]));
  CpuBackend be(&gate);
  EXPECT_EQ(be.Class(), AccuracyClass::kNearExact);
  const Cell cell{Op::kGeluBwd, DType::kF32, "contig", 14, RepresentativeN(14, uint64_t(1) << 26), GeluApprox::kNone};
  EXPECT_EQ(be.Default(cell).variant, near_def->name);
  std::set<std::string> vs;
  for (const auto& c : be.Candidates(cell)) vs.insert(c.variant);
  EXPECT_EQ(vs, (std::set<std::string>{near_def->name, others[0]->name}));
  EXPECT_EQ(be.Candidates(cell).front().variant, near_def->name);  // the default first
}

TEST(CpuTuning, TwoCellSmokeRun) {
  AccuracyGate gate;
  gate.AllowAll();
  CpuBackend be(&gate);
  TuneConfig cfg = TuneConfig::Defaults(true);
  cfg.ops = {Op::kGeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.gelu_modes = {GeluApprox::kNone};
  cfg.octaves = {12};
  cfg.layouts = {"contig", "bcast"};
  cfg.budget_sec = 4;
  MeasurementLog log;
  log.OpenInMemory(cfg.ToJson());
  auto progress = Progress::Silent();
  const TuneResult r = RunTuning(be, log, cfg, *progress);
  ASSERT_EQ(r.table.entries.size(), 2u) << (r.notes.empty() ? "" : r.notes[0]);
  EXPECT_EQ(r.table.machine_id, MachineId());
  EXPECT_EQ(r.table.backend, "cpu");
  EXPECT_GT(r.measured, 0) << "a fresh log: the samples are measured";
  EXPECT_EQ(r.replayed, 0) << "nothing to replay from an empty log";
  for (const auto& e : r.table.entries) {
    const Variant* v = FindVariant(e.choice.variant);
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v->supported);
    EXPECT_EQ(int(v->op), int(Op::kGeluBwd));
    EXPECT_EQ(int(v->gelu_mode), int(GeluApprox::kNone));
    EXPECT_EQ(e.octave, 12);
    EXPECT_GT(e.median_ns, 0);
  }
  tables::Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(r.table).dump(2), &back, &err)) << err;
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    auto p = Progress::Make(f);
    p->Begin("title", 10);
    p->Update(5, "working");
    p->Line("cell done");
    p->End("finished");
  }
  std::rewind(f);
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), f)) text += buf;
  std::fclose(f);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find("\033["), std::string::npos);
  EXPECT_NE(text.find("cell done"), std::string::npos);
  EXPECT_NE(text.find("[ 50%"), std::string::npos) << text;
  EXPECT_EQ(FormatDuration(65), "1:05");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
}

}  // namespace
}  // namespace actgrad::tune
