// The cost model: trace replay semantics, double-buffer overlap, the
// extrapolation against full emulation, calibration recovering known
// parameters, and the tuner backend end to end on a few cells.
#include <gtest/gtest.h>

#include <cmath>

#include "atlas_runner.h"
#include "atlas_test_util.h"
#include "atlas_backend.h"
#include "tools/tune/tuner.h"
#include "cost_model.h"
#include "host_tiling.h"

using namespace actgrad;
using namespace actgrad::atlas;
using namespace atlas_test;
using AscendEmu::TraceEvent;

namespace {

TEST(CostModel, ReplayOverlapsPipesThroughFlags) {
  ModelParams m;
  m.clock_ghz = 1.0;
  m.scalar_issue_ns = 0;
  m.flag_sync_ns = 0;
  m.dma_setup_ns = 0;
  m.vec_issue_cycles = 0;
  m.vector_cycle_scale = 1;
  m.cycles_per_repeat.fill(1);
  // MTE2 copy 100 bytes (100 ns at 1 B/ns) -> flag 0 -> V 50 repeats -> flag 2 -> MTE3 copy 100 bytes
  std::vector<TraceEvent> t = {
      {TraceEvent::kCopy, 1, 0, 0, 100},    {TraceEvent::kSetFlag, 1, 0, 0, 0}, {TraceEvent::kWaitFlag, 2, 0, 0, 0},
      {TraceEvent::kVec, 2, 0, 0, 50},      {TraceEvent::kSetFlag, 2, 0, 0, 2}, {TraceEvent::kWaitFlag, 3, 0, 0, 2},
      {TraceEvent::kCopy, 3, 0, 0, 100},
      // a second, independent MTE2 copy overlaps the vector work
      {TraceEvent::kCopy, 1, 0, 0, 100}};
  const CoreTime ct = ReplayTrace(t, m, 1.0);
  EXPECT_DOUBLE_EQ(ct.ns, 250.0);  // 100 + 50 + 100; the second load ends at 200
  EXPECT_DOUBLE_EQ(ct.busy[1], 200.0);
  EXPECT_DOUBLE_EQ(ct.busy[2], 50.0);
}

TEST(CostModel, DoubleBufferingHidesTheShorterPipe) {
  const SocInfo soc = Soc("ascend910b");
  for (const char* base : {"gelu_bwd.f32.atlas.none.erf", "softshrink_bwd.f16.atlas.upcast_f32.exact"}) {
    const AtlasVariant& v1 = *FindAtlasVariant(std::string(base) + ".db1");
    const AtlasVariant& v2 = *FindAtlasVariant(std::string(base) + ".db2");
    AtlasTilingData t1, t2;
    std::string err;
    TilingOptions o;
    o.stage_tile = 2048;
    o.block_dim = 8;
    ASSERT_TRUE(MakeTiling(v1, 1 << 20, OpParams{}, soc, o, &t1, &err));
    ASSERT_TRUE(MakeTiling(v2, 1 << 20, OpParams{}, soc, o, &t2, &err));
    const ModelResult r1 = ModelLaunch(v1, t1, soc), r2 = ModelLaunch(v2, t2, soc);
    EXPECT_LT(r2.total_ns, r1.total_ns) << base;
    // single buffering serialises: at least the sum of the busiest pipe and the vector pipe
    EXPECT_GE(r1.slowest_core_ns, r1.v_busy_ns + r1.mte2_busy_ns * 0.9) << base;
    EXPECT_GE(r2.slowest_core_ns, std::max({r2.v_busy_ns, r2.mte2_busy_ns, r2.mte3_busy_ns}) - 1e-6);
    EXPECT_EQ(r1.total.gm_to_ub_bytes, 2ull * (1 << 20) * DTypeSize(v1.dtype));
  }
}

TEST(CostModel, ExtrapolationMatchesFullEmulation) {
  const SocInfo soc = Soc("ascend910b");
  for (const char* name : {"hardswish_bwd.f32.atlas.none.exact.db2", "gelu_bwd.bf16.atlas.upcast_f32.tanh.db1",
                           "selu_bwd.i8.atlas.upcast_f32.exact.db2"}) {
    const AtlasVariant& v = *FindAtlasVariant(name);
    AtlasTilingData t;
    std::string err;
    TilingOptions o;
    o.stage_tile = 512;
    o.block_dim = 1;
    const uint64_t n = 40 * 512 + 77;  // 41 tiles on one core
    ASSERT_TRUE(MakeTiling(v, n, OpParams{}, soc, o, &t, &err));
    ClearTraceCache();
    const ModelResult est = ModelLaunch(v, t, soc);
    EmuOptions eo;
    eo.dry_run = true;
    eo.trace = true;
    const auto full = RunOnEmulator(v, t, nullptr, nullptr, nullptr, eo);
    const double bw = std::min(soc.model.core_dma_bandwidth_gbps, soc.model.l2_bandwidth_gbps);
    const CoreTime ct = ReplayTrace(full.trace[0], soc.model, bw);
    const double exact = soc.model.launch_overhead_ns + soc.model.core_start_ns + ct.ns;
    EXPECT_NEAR(est.total_ns / exact, 1.0, 1e-3) << name;
    EXPECT_EQ(est.total.gm_to_ub_bytes, full.stats[0].gm_to_ub_bytes);
    EXPECT_EQ(est.total.VecRepeatsTotal(), full.stats[0].VecRepeatsTotal());
    EXPECT_EQ(est.total.VecInstrTotal(), full.stats[0].VecInstrTotal());
  }
}

TEST(CostModel, SaneScaling) {
  const SocInfo soc = Soc("ascend910b");
  const AtlasVariant& v = *FindAtlasVariant("gelu_bwd.f16.atlas.upcast_f32.erf.db2");
  double prev = 0;
  for (uint64_t n : {uint64_t(1) << 12, uint64_t(1) << 16, uint64_t(1) << 20, uint64_t(1) << 24}) {
    AtlasTilingData t;
    std::string err;
    ASSERT_TRUE(MakeTiling(v, n, OpParams{}, soc, {}, &t, &err));
    const double ns = ModelLaunch(v, t, soc).total_ns;
    EXPECT_GT(ns, prev);
    prev = ns;
  }
  // 64M fp32 elements of a memory-bound op cannot beat HBM
  const AtlasVariant& s = *FindAtlasVariant("softshrink_bwd.f32.atlas.none.exact.db2");
  AtlasTilingData t;
  std::string err;
  ASSERT_TRUE(MakeTiling(s, uint64_t(1) << 26, OpParams{}, soc, {}, &t, &err));
  const ModelResult r = ModelLaunch(s, t, soc);
  EXPECT_GE(r.total_ns, 3.0 * 4 * double(uint64_t(1) << 26) / soc.model.hbm_bandwidth_gbps);
  EXPECT_STREQ(r.bound, "dma");
}

TEST(CostModel, CalibrationRecoversKnownParameters) {
  SocInfo truth = Soc("ascend910b");
  const std::vector<std::pair<std::string, double>> scale = {{"launch_overhead_ns", 1.7},
                                                             {"hbm_bandwidth_gbps", 0.6},
                                                             {"core_dma_bandwidth_gbps", 1.3},
                                                             {"dma_setup_ns", 2.0},
                                                             {"vector_cycle_scale", 1.5}};
  for (const auto& [k, f] : scale) *ModelParamRef(truth.model, k) *= f;
  std::vector<Measurement> rows;
  for (const char* name : {"selu_bwd.f32.atlas.none.exact.db2", "gelu_bwd.f32.atlas.none.erf.db2",
                           "gelu_bwd.f16.atlas.upcast_f32.erf.db1", "softshrink_bwd.f16.atlas.upcast_f32.exact.db2"})
    for (uint64_t n : {uint64_t(4096), uint64_t(262144), uint64_t(67108864)})
      for (int64_t tile : {512, 2048})
        for (int dim : {1, 8, 48}) {
          Measurement m{name, n, tile, dim, 0};
          m.time_ns = ModelRow(m, truth, OpParams{});
          rows.push_back(m);
        }
  SocInfo fit = Soc("ascend910b");
  std::vector<std::string> names;
  for (const auto& kv : scale) names.push_back(kv.first);
  const FitResult fr = Calibrate(&fit, rows, names, OpParams{});
  EXPECT_LT(fr.rms_log_after, 1e-3);
  EXPECT_GT(fr.rms_log_before, 0.1);
  for (const auto& [k, f] : scale) {
    const double want = *ModelParamRef(truth.model, k);
    EXPECT_NEAR(*ModelParamRef(fit.model, k) / want, 1.0, 0.02) << k;
  }
}

TEST(CostModel, CsvRoundTrip) {
  const std::string path = ::testing::TempDir() + "/atlas_rows.csv";
  std::vector<Measurement> rows = {{"gelu_bwd.f32.atlas.none.erf.db2", 1000, 512, 4, 1234.5}};
  std::string err;
  ASSERT_TRUE(WriteMeasurementsCsv(path, rows, &err)) << err;
  std::vector<Measurement> back;
  ASSERT_TRUE(ReadMeasurementsCsv(path, &back, &err)) << err;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].variant, rows[0].variant);
  EXPECT_EQ(back[0].block_dim, 4);
  EXPECT_DOUBLE_EQ(back[0].time_ns, 1234.5);
}

TEST(AtlasBackend, CandidatesDefaultMeasureProvenance) {
  auto b = MakeAtlasModelBackend(DefaultSocDir() + "/ascend910b.json");
  EXPECT_EQ(b->Name(), "atlas-model");
  EXPECT_TRUE(b->Deterministic());
  EXPECT_EQ(b->MachineId(), "ascend910b");
  const tune::Cell bk{Op::kGeluBwd, DType::kF16, "contig", 8, 2 << 16};
  const auto cands = b->Candidates(bk);
  ASSERT_FALSE(cands.empty());
  const SocInfo soc = Soc("ascend910b");
  for (const auto& c : cands) {
    const AtlasVariant* v;
    AtlasTilingData t;
    std::string err;
    ASSERT_TRUE(CandidateTiling(soc, bk, c, OpParams{}, &v, &t, &err)) << c.Key() << ": " << err;
    EXPECT_EQ(v->approx, GeluApprox::kNone) << "the cell's GELU form (erf)";
    EXPECT_EQ(c.split.chunk, 0);
    EXPECT_EQ(int64_t(t.tileLength), c.split.stage_tile);
    EXPECT_EQ(int(t.blockDim), c.split.threads);
  }
  EXPECT_TRUE(b->Candidates({Op::kGeluBwd, DType::kF16, "bcast", 8, 2 << 16}).empty());
  for (const auto& c : b->Candidates({Op::kGeluBwd, DType::kF16, "contig", 8, 2 << 16, GeluApprox::kTanh}))
    EXPECT_EQ(FindAtlasVariant(c.variant)->approx, GeluApprox::kTanh) << c.variant;
  {  // a choice the kernels cannot run is refused with the reason
    Choice bad = cands.front();
    bad.split.chunk = 4096;
    const AtlasVariant* v;
    AtlasTilingData t;
    std::string err;
    EXPECT_FALSE(CandidateTiling(soc, bk, bad, OpParams{}, &v, &t, &err));
    EXPECT_NE(err.find("no chunk"), std::string::npos) << err;
    bad = cands.front();
    bad.variant = "gelu_bwd.f16.atlas.upcast_f32.tanh.db2";
    EXPECT_FALSE(CandidateTiling(soc, bk, bad, OpParams{}, &v, &t, &err));
    EXPECT_NE(err.find("does not match the cell"), std::string::npos) << err;
  }
  const auto def = b->Default(bk);
  EXPECT_EQ(def.variant, "gelu_bwd.f16.atlas.upcast_f32.erf.db2");
  const auto m1 = b->Measure(bk, def, 3, 0.1), m2 = b->Measure(bk, def, 1, 0.0);
  ASSERT_EQ(m1.size(), 3u);
  EXPECT_GT(m1[0], 0);
  EXPECT_EQ(m1[0], m2[0]);
  const auto prov = b->Provenance();
  EXPECT_TRUE(prov.contains("model"));
  EXPECT_NE(prov.at("parameter_file").get<std::string>().find("ascend910b.json"), std::string::npos);
}

// The project tuner (tools/tune) drives the model backend: one sample per
// candidate (deterministic), every candidate priced, a table of octave cells
// that the shared parser reads back.
TEST(AtlasBackend, TheProjectTunerPicksTheFastest) {
  auto b = MakeAtlasModelBackend(DefaultSocDir() + "/ascend910b.json");
  tune::TuneConfig cfg;
  cfg.ops = {Op::kSoftshrinkBwd, Op::kGeluBwd};
  cfg.dtypes = {DType::kF32, DType::kF16};
  cfg.octaves = {10, 16, 22};
  cfg.layouts = {"contig"};
  cfg.gelu_modes = {GeluApprox::kNone, GeluApprox::kTanh};
  tune::MeasurementLog log;
  log.OpenInMemory(cfg.ToJson());
  auto progress = tune::Progress::Silent();
  const tune::TuneResult r = tune::RunTuning(*b, log, cfg, *progress);
  EXPECT_EQ(r.table.backend, "atlas-model");
  EXPECT_EQ(r.table.machine_id, "ascend910b");
  ASSERT_EQ(r.table.entries.size(), 3u * 2u * 3u);  // (softshrink, gelu erf, gelu tanh) x dtypes x octaves
  ASSERT_EQ(r.cells.size(), r.table.entries.size());
  for (const tune::CellOutcome& o : r.cells) {
    const tune::Cell& bk = o.cell;
    SCOPED_TRACE(o.key);
    // every candidate measured once, none cut by the budget
    EXPECT_EQ(o.candidates_searched, o.candidates_total);
    EXPECT_FALSE(o.budget_cut);
    double best = 1e300;
    for (const auto& c : b->Candidates(bk)) best = std::min(best, b->Measure(bk, c, 1, 0.0)[0]);
    const double def = b->Measure(bk, b->Default(bk), 1, 0.0)[0];
    // the fastest, or the default kept for a gain under the search's margin
    EXPECT_LE(o.chosen.median, def);
    EXPECT_LE(o.chosen.median, best * (1 + cfg.search.min_gain) + 1e-9);
    const AtlasVariant* v = FindAtlasVariant(o.chosen.cand.variant);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->approx, bk.op == Op::kGeluBwd ? bk.mode : GeluApprox::kNone);
  }
  // the table the tuner writes is one the shared parser takes back
  tables::Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(r.table).dump(), &back, &err, false)) << err;
  EXPECT_EQ(back.entries.size(), r.table.entries.size());
  // a launch's block dim is the table's own: no one-thread fallback
  for (const auto& e : back.entries) EXPECT_FALSE(e.one_thread.has_value());
}

}  // namespace
