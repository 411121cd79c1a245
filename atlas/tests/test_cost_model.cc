// The cost model: trace replay semantics, double-buffer overlap, the
// extrapolation against full emulation, calibration recovering known
// parameters, the tuner backend end to end on a few cells; Ascend's own
// tilings (hand-checked against their tiling sources), the comparison with
// ours and its tables; the SoC file's sources and the public-figure bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "atlas_runner.h"
#include "atlas_test_util.h"
#include "atlas_backend.h"
#include "tools/tune/tuner.h"
#include "ascend_tilings.h"
#include "cost_model.h"
#include "host_tiling.h"
#include "tiling/size_cells.h"
#include "tiling_compare.h"

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

// A tuner log of an Atlas backend read as calibration rows: Atlas candidates
// of contiguous cells, the median per (variant, n, tile, block dim); the
// rest skipped and counted.
TEST(CostModel, TuneLogAsCalibrationRows) {
  const std::string path = ::testing::TempDir() + "/atlas_tune.log.jsonl";
  {
    std::ofstream o(path);
    o << R"({"type":"header","format":"actgrad-tune-log","version":1,"config":{"max_n":1048576,"backend":"atlas-device"}})" << "\n"
      << R"({"type":"m","cell":"selu_bwd/f32/-/contig/o16","cand":"selu_bwd.f32.atlas.none.exact.db2|t48|c0|s2048","round":0,"rep":0,"ns":[3000,3100],"sec":0.1})" << "\n"
      << R"({"type":"m","cell":"selu_bwd/f32/-/contig/o16","cand":"selu_bwd.f32.atlas.none.exact.db2|t48|c0|s2048","round":1,"rep":0,"ns":[2900],"sec":0.1})" << "\n"
      << R"({"type":"m","cell":"gelu_bwd/f16/erf/contig/x20@1200000","cand":"gelu_bwd.f16.atlas.upcast_f32.erf.db1|t8|c0|s4096","round":0,"rep":0,"ns":[9000],"sec":0.1})" << "\n"
      << R"({"type":"m","cell":"selu_bwd/f32/-/contig/o26","cand":"selu_bwd.f32.atlas.none.exact.db1|t1|c0|s512","round":0,"rep":0,"ns":[5e6],"sec":0.1})" << "\n"
      << R"({"type":"m","cell":"selu_bwd/f32/-/contig/o16","cand":"selu_bwd.f32.avx2.exact|t4|c0|s0","round":0,"rep":0,"ns":[1],"sec":0.1})" << "\n"
      << R"({"type":"m","cell":"gelu_bwd/f32/erf/bcast/o16","cand":"gelu_bwd.f32.atlas.none.erf.db2|t48|c0|s2048","round":0,"rep":0,"ns":[1],"sec":0.1})" << "\n"
      << R"({"type":"m","cell":"selu_bwd/f32/-/contig/o1)" << "\n";  // torn
  }
  std::vector<Measurement> rows;
  size_t skipped = 0;
  std::string err, backend;
  ASSERT_TRUE(ReadTuneLog(path, &rows, &skipped, &err, &backend)) << err;
  EXPECT_EQ(backend, "atlas-device");
  EXPECT_EQ(skipped, 3u);
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, Measurement> by;
  for (const auto& r : rows) by[r.variant] = r;
  const Measurement& s2 = by.at("selu_bwd.f32.atlas.none.exact.db2");
  EXPECT_EQ(s2.n, RepresentativeN(16, 1048576));  // 92672: octave 16's size
  EXPECT_EQ(s2.tile, 2048);
  EXPECT_EQ(s2.block_dim, 48);
  EXPECT_DOUBLE_EQ(s2.time_ns, 3000.0);  // median of 3000, 3100, 2900
  EXPECT_EQ(by.at("gelu_bwd.f16.atlas.upcast_f32.erf.db1").n, 1200000u);  // a bisection point's own n
  EXPECT_EQ(by.at("selu_bwd.f32.atlas.none.exact.db1").n, uint64_t(1) << 26);  // max_n never below the octave
  // rows the calibration can price
  for (const auto& r : rows) EXPECT_GT(ModelRow(r, Soc("ascend910b"), OpParams{}), 0);
  // nothing usable: a clear error
  { std::ofstream o(path); o << R"({"type":"header","config":{}})" << "\n"; }
  EXPECT_FALSE(ReadTuneLog(path, &rows, &skipped, &err));
  EXPECT_NE(err.find("no Atlas measurements"), std::string::npos) << err;
  EXPECT_FALSE(ReadTuneLog(path + ".missing", &rows, &skipped, &err));
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
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
    // the fastest, or within the search's margin of it twice over: the tie
    // rule takes a simpler candidate within min_gain of the fastest, and the
    // default stays unless that one beats it by min_gain
    EXPECT_LE(o.chosen.median, def);
    const double g = cfg.search.min_gain;
    EXPECT_LE(o.chosen.median, best / ((1 - g) * (1 - g)) + 1e-9);
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

// ---------------------------------------------------------------- Ascend's tilings

uint64_t Sum(const std::vector<uint64_t>& v) { return std::accumulate(v.begin(), v.end(), uint64_t(0)); }

AscendTiling Ascend(Op op, DType dt, uint64_t n, const SocInfo& soc) {
  AscendTiling t;
  std::string why;
  EXPECT_TRUE(AscendTilingFor(op, dt, n, soc, &t, &why)) << why;
  return t;
}

int64_t Field(const AscendTiling& t, const std::string& name) {
  for (const auto& [k, v] : t.fields)
    if (k == name) return v;
  ADD_FAILURE() << "no field " << name << " in " << t.name;
  return -1;
}

// Core i's start as LogitGrad's and HardSwishGradV2's kernels compute it
// (Process(): loopNum * blockIdx * chunk, plus n % (chunk * cores) past the
// cores with the extra chunk), against the start of our contiguous lengths.
void ExpectKernelOffsets(const AscendTiling& t, uint64_t n, uint64_t chunk) {
  const uint64_t cores = t.block_dim, total = (n + chunk - 1) / chunk, extra = total % cores;
  uint64_t start = 0;
  for (uint64_t i = 0; i < cores; ++i) {
    const uint64_t loops = total / cores + (i < extra ? 1 : 0);
    uint64_t off = loops * i * chunk;
    if (extra > 0 && i >= extra) off += n % (chunk * cores);
    EXPECT_EQ(start, off) << t.name << " n=" << n << " core " << i;
    start += t.core_lengths[i];
  }
}

TEST(AscendTilings, LogitGradChunksOf8192InContiguousRuns) {
  const SocInfo soc = Soc("ascend910b");
  // 16M: 2048 chunks over 48 cores: 32 cores x 43 chunks, 16 x 42
  AscendTiling t = Ascend(Op::kLogitGrad, DType::kF32, 16777216, soc);
  EXPECT_EQ(t.name, "LogitGrad");
  EXPECT_EQ(t.block_dim, 48u);
  EXPECT_EQ(t.tile, 8192u);
  EXPECT_EQ(t.buffers, 2u);
  EXPECT_EQ(t.ub_bytes, 192u * 1024u);  // MAX_UB_SIZE: two 96 KiB ping-pong halves
  ASSERT_EQ(t.core_lengths.size(), 48u);
  EXPECT_EQ(t.core_lengths[0], 43u * 8192u);
  EXPECT_EQ(t.core_lengths[31], 43u * 8192u);
  EXPECT_EQ(t.core_lengths[32], 42u * 8192u);
  EXPECT_EQ(Field(t, "needCoreNum"), 48);
  ExpectKernelOffsets(t, 16777216, 8192);
  // 1,000,000: 123 chunks (the last 576 elements): 27 cores x 3, 21 x 2; the
  // partial chunk ends core 26, the last that got the extra chunk
  t = Ascend(Op::kLogitGrad, DType::kF16, 1000000, soc);
  EXPECT_EQ(t.block_dim, 48u);
  EXPECT_EQ(t.core_lengths[25], 3u * 8192u);
  EXPECT_EQ(t.core_lengths[26], 2u * 8192u + 576u);
  EXPECT_EQ(t.core_lengths[27], 2u * 8192u);
  EXPECT_EQ(Sum(t.core_lengths), 1000000u);
  ExpectKernelOffsets(t, 1000000, 8192);
  // 100,000: 13 cores, one chunk each, the last 1696 elements
  t = Ascend(Op::kLogitGrad, DType::kBF16, 100000, soc);
  EXPECT_EQ(t.block_dim, 13u);
  EXPECT_EQ(t.core_lengths.back(), 1696u);
  // empty: one core, nothing to do
  t = Ascend(Op::kLogitGrad, DType::kF32, 0, soc);
  EXPECT_EQ(t.block_dim, 1u);
  EXPECT_EQ(Sum(t.core_lengths), 0u);
}

TEST(AscendTilings, HardSwishGradV2ChunkIsUbOver40AlignedTo256) {
  const SocInfo soc = Soc("ascend910b");
  // 196608 / 10 = 19660; / 4 = 4915; / 256 * 256 = 4864
  AscendTiling t = Ascend(Op::kHardswishBwd, DType::kF32, 16777216, soc);
  EXPECT_EQ(t.name, "HardSwishGradV2");
  EXPECT_EQ(t.tile, 4864u);
  EXPECT_EQ(Field(t, "elementNumEachCore"), 4864);
  EXPECT_EQ(Field(t, "ubSize"), 196608);
  EXPECT_EQ(t.buffers, 2u);
  // 3450 chunks (3449 whole + 1280): 42 cores x 72, 6 x 71, core 41 short
  EXPECT_EQ(t.block_dim, 48u);
  EXPECT_EQ(t.core_lengths[40], 72u * 4864u);
  EXPECT_EQ(t.core_lengths[41], 71u * 4864u + 1280u);
  EXPECT_EQ(t.core_lengths[42], 71u * 4864u);
  EXPECT_EQ(Sum(t.core_lengths), 16777216u);
  ExpectKernelOffsets(t, 16777216, 4864);
  // the chunk follows the platform's UB: 262144 / 10 / 4 -> 6553 -> 6400
  SocInfo big = soc;
  big.ub_bytes = 262144;
  EXPECT_EQ(Ascend(Op::kHardswishBwd, DType::kF16, 100000, big).tile, 6400u);
  // 910B4: 40 cores
  EXPECT_EQ(Ascend(Op::kHardswishBwd, DType::kBF16, 16777216, Soc("ascend910b4")).block_dim, 40u);
}

TEST(AscendTilings, SeluGradCoresBy8Or32KiBAndUbByBytesPerElement) {
  const SocInfo soc = Soc("ascend910b");
  // 16M fp32 = 64 MiB: 8 KiB per core wants 8192 > 8 cores, so 32 KiB per
  // core: 2048, capped at 48; blockFactor = ceil(16777216 / 48) = 349526
  // aligned up to 128 (512 bytes) = 349568; ubFactor = (196608 - 8192) / 29
  // bytes per element = 6497 aligned down to 128 = 6400
  AscendTiling t = Ascend(Op::kSeluBwd, DType::kF32, 16777216, soc);
  EXPECT_EQ(t.name, "SeluGrad");
  EXPECT_EQ(t.block_dim, 48u);
  EXPECT_EQ(Field(t, "blockFactor"), 349568);
  EXPECT_EQ(Field(t, "ubFactor"), 6400);
  EXPECT_EQ(t.tile, 6400u);
  EXPECT_EQ(t.buffers, 2u);
  EXPECT_EQ(t.core_lengths.front(), 349568u);
  EXPECT_EQ(t.core_lengths.back(), 16777216u - 47u * 349568u);
  // 64K fp16 = 128 KiB: 16 cores by 8 KiB > 8, so 4 by 32 KiB; blockFactor
  // 16384; (188416 / 15) = 12561 aligned down to 256 = 12544 < 16384: two passes
  t = Ascend(Op::kSeluBwd, DType::kF16, 65536, soc);
  EXPECT_EQ(t.block_dim, 4u);
  EXPECT_EQ(Field(t, "blockFactor"), 16384);
  EXPECT_EQ(t.tile, 12544u);
  EXPECT_EQ(t.buffers, 2u);
  // 10000 fp32 = 40000 bytes: 5 cores by 8 KiB; blockFactor 2000 -> 2048; one pass each
  t = Ascend(Op::kSeluBwd, DType::kF32, 10000, soc);
  EXPECT_EQ(t.block_dim, 5u);
  EXPECT_EQ(t.tile, 2048u);
  EXPECT_EQ(t.buffers, 1u);
  EXPECT_EQ(t.core_lengths.back(), 10000u - 4u * 2048u);
  // int8 (compute in half): 1000 elements, 512-element alignment: one core, tile 1024
  t = Ascend(Op::kSeluBwd, DType::kI8, 1000, soc);
  EXPECT_EQ(t.block_dim, 1u);
  EXPECT_EQ(t.tile, 1024u);
  EXPECT_EQ(t.buffers, 1u);
  // bf16 (Cast to fp32: 6*2 + 4*4 + 1 = 29 bytes per element): 40000 -> 3 cores of 13568, tile 6400
  t = Ascend(Op::kSeluBwd, DType::kBF16, 40000, soc);
  EXPECT_EQ(t.block_dim, 3u);
  EXPECT_EQ(Field(t, "blockFactor"), 13568);
  EXPECT_EQ(t.tile, 6400u);
}

// The cases of Ascend's own tiling test (mirror-cann/ops-nn experimental/
// activation/softshrink_grad/tests/ut/op_host/test_softshrink_grad_tiling.cpp):
// UB 262144, 48 or 64 cores -> blockFactor, ubFactor, blockDim, buffering.
TEST(AscendTilings, SoftshrinkGradMatchesAscendsOwnTilingTest) {
  struct Case {
    DType dt;
    uint64_t n;
    uint32_t cores;
    int64_t block_factor, ub_factor;
    uint32_t block_dim, buffers;
  };
  const Case cases[] = {{DType::kF16, 4194304, 48, 87552, 11520, 48, 2},
                        {DType::kF32, 4096, 64, 4096, 4096, 1, 1},
                        {DType::kBF16, 257, 64, 257, 512, 1, 1},
                        {DType::kF32, 1, 64, 1, 128, 1, 1},
                        {DType::kF16, 15, 64, 15, 256, 1, 1}};
  for (const Case& c : cases) {
    SocInfo soc = Soc("ascend910b");
    soc.ub_bytes = 262144;
    soc.vector_cores = c.cores;
    const AscendTiling t = Ascend(Op::kSoftshrinkBwd, c.dt, c.n, soc);
    SCOPED_TRACE(std::string(DTypeName(c.dt)) + " n=" + std::to_string(c.n));
    EXPECT_EQ(Field(t, "blockFactor"), c.block_factor);
    EXPECT_EQ(Field(t, "ubFactor"), c.ub_factor);
    EXPECT_EQ(t.block_dim, c.block_dim);
    EXPECT_EQ(t.buffers, c.buffers);
    EXPECT_EQ(Sum(t.core_lengths), c.n);
  }
  // their "invalid_ub_size" case: an 8 KiB UB leaves nothing after the 16 KiB overhead
  SocInfo tiny = Soc("ascend910b");
  tiny.ub_bytes = 8192;
  AscendTiling t;
  std::string why;
  EXPECT_FALSE(AscendTilingFor(Op::kSoftshrinkBwd, DType::kF16, 65, tiny, &t, &why));
  EXPECT_NE(why.find("UB"), std::string::npos) << why;
  // 910B, 16M fp32: 48 cores of 349568; (196608 - 16384) / 25 = 7208 -> 7168, double-buffered
  t = Ascend(Op::kSoftshrinkBwd, DType::kF32, 16777216, Soc("ascend910b"));
  EXPECT_EQ(t.block_dim, 48u);
  EXPECT_EQ(Field(t, "blockFactor"), 349568);
  EXPECT_EQ(t.tile, 7168u);
  EXPECT_EQ(t.buffers, 2u);
}

TEST(AscendTilings, NoneForGeluOrDtypesTheirKernelsLack) {
  const SocInfo soc = Soc("ascend910b");
  AscendTiling t;
  std::string why;
  EXPECT_FALSE(AscendTilingFor(Op::kGeluBwd, DType::kF32, 1 << 20, soc, &t, &why));
  EXPECT_NE(why.find("arch35"), std::string::npos) << why;
  EXPECT_FALSE(AscendTilingFor(Op::kLogitGrad, DType::kI32, 1 << 20, soc, &t, &why));
  EXPECT_NE(why.find("i32"), std::string::npos) << why;
  EXPECT_FALSE(AscendTilingFor(Op::kSoftshrinkBwd, DType::kI8, 1 << 20, soc, &t, &why));
}

TEST(AscendTilings, EveryCoreCountedOnceAtAnySize) {
  for (const char* name : {"ascend910b", "ascend910b4"}) {
    const SocInfo soc = Soc(name);
    for (Op op : {Op::kSeluBwd, Op::kHardswishBwd, Op::kSoftshrinkBwd, Op::kLogitGrad})
      for (DType dt : {DType::kF32, DType::kF16, DType::kBF16})
        for (uint64_t n : {uint64_t(1), uint64_t(255), uint64_t(8192), uint64_t(8193), uint64_t(393217),
                           uint64_t(1) << 22, (uint64_t(1) << 24) + 3}) {
          const AscendTiling t = Ascend(op, dt, n, soc);
          SCOPED_TRACE(t.name + " " + std::string(DTypeName(dt)) + " n=" + std::to_string(n));
          EXPECT_EQ(Sum(t.core_lengths), n);
          EXPECT_EQ(t.core_lengths.size(), t.block_dim);
          EXPECT_GE(t.block_dim, 1u);
          EXPECT_LE(t.block_dim, soc.vector_cores);
          for (uint64_t l : t.core_lengths) EXPECT_GT(l, 0u);
          EXPECT_TRUE(t.buffers == 1 || t.buffers == 2);
          EXPECT_LE(t.ub_bytes, soc.ub_bytes);
          EXPECT_FALSE(t.source.empty());
        }
  }
}

// ---------------------------------------------------------------- the comparison

TEST(CostModel, ModelCoresOfOurSplitIsModelLaunch) {
  const SocInfo soc = Soc("ascend910b");
  const AtlasVariant& v = *FindAtlasVariant("selu_bwd.f16.atlas.upcast_f32.exact.db2");
  AtlasTilingData t;
  std::string err;
  ASSERT_TRUE(MakeTiling(v, 1000003, OpParams{}, soc, {}, &t, &err)) << err;
  std::vector<uint64_t> lengths(t.blockDim);
  for (uint32_t c = 0; c < t.blockDim; ++c) {
    uint64_t s;
    CoreRange(t, c, &s, &lengths[c]);
  }
  EXPECT_DOUBLE_EQ(ModelCores(v, t, lengths, soc).total_ns, ModelLaunch(v, t, soc).total_ns);
  // a tile longer than our UB layout holds is refused, unless the UB is widened for pricing
  AtlasTilingData big = t;
  big.tileLength = 16384;
  EXPECT_THROW(ModelCores(v, big, {100000}, soc), AscendEmu::Breach);
  EXPECT_GT(ModelCores(v, big, {100000}, soc, UbBytesFor(v, 16384)).total_ns, 0);
}

TEST(Compare, PricesOursAndAscendsOnTheSameModel) {
  SocInfo soc = Soc("ascend910b");
  soc.model.l2_bytes = 0;  // cold: HBM every launch
  const uint64_t n = 16777216;
  TilingDecision d;
  std::string err;
  ASSERT_TRUE(ComputeTiling(Op::kLogitGrad, DType::kF32, n, soc, OpParams{}, &d, &err)) << err;
  const TilingComparison c = CompareWithAscend(*d.variant, d.data, "table", soc);
  EXPECT_EQ(c.ours.ns, ModelLaunch(*d.variant, d.data, soc).total_ns);
  EXPECT_EQ(c.ours.block_dim, d.data.blockDim);
  ASSERT_TRUE(c.has_theirs);
  EXPECT_EQ(c.theirs.label, "LogitGrad");
  EXPECT_EQ(c.theirs.block_dim, 48u);
  EXPECT_EQ(c.theirs.tile, 8192u);
  EXPECT_EQ(c.theirs.variant, "logit_grad.f32.atlas.none.exact.db2");
  EXPECT_DOUBLE_EQ(c.ratio, c.theirs.ns / c.ours.ns);
  // % of HBM: 3 arrays of n floats over the modelled time, against the 1.6 TB/s peak
  EXPECT_DOUBLE_EQ(c.ours.pct_hbm, 100.0 * (3.0 * 4 * n / c.ours.ns) / 1600.0);
  EXPECT_LE(c.ours.pct_hbm, 100.0 * soc.model.hbm_bandwidth_gbps / 1600.0 + 1e-9);  // cold: at most the achievable
  // their 8192-element pass does not fit our UB layout (it does theirs): said so
  EXPECT_NE(c.note.find("priced as if it fitted"), std::string::npos) << c.note;
  // GELU: ours alone, with the reason
  ASSERT_TRUE(ComputeTiling(Op::kGeluBwd, DType::kF32, n, soc, OpParams{}, &d, &err)) << err;
  const TilingComparison g = CompareWithAscend(*d.variant, d.data, "table", soc);
  EXPECT_FALSE(g.has_theirs);
  EXPECT_GT(g.ours.ns, 0);
  EXPECT_NE(g.note.find("no Ascend GeluGrad tiling"), std::string::npos);
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Splits a CSV line, honouring quoted fields with doubled quotes.
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> f(1);
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (q && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      f.back() += '"';
      ++i;
    } else if (ch == '"') {
      q = !q;
    } else if (ch == ',' && !q) {
      f.emplace_back();
    } else {
      f.back() += ch;
    }
  }
  EXPECT_FALSE(q) << "unterminated quote: " << line;
  return f;
}

TEST(Compare, TablesAreWellFormed) {
  SocInfo soc = Soc("ascend910b");
  std::vector<TilingComparison> rows;
  for (Op op : {Op::kSeluBwd, Op::kGeluBwd, Op::kLogitGrad})
    for (DType dt : {DType::kF32, DType::kBF16}) {
      TilingDecision d;
      std::string err;
      ASSERT_TRUE(ComputeTiling(op, dt, 300000, soc, OpParams{}, &d, &err)) << err;
      rows.push_back(CompareWithAscend(*d.variant, d.data, "table, with a comma | and a bar", soc));
    }
  const auto md = Lines(ComparisonMarkdown(rows));
  ASSERT_EQ(md.size(), rows.size() + 2);
  const auto bars = [](const std::string& l) { return std::count(l.begin(), l.end(), '|'); };
  EXPECT_EQ(bars(md[0]), 14);  // 13 columns
  for (const auto& l : md) {
    EXPECT_EQ(bars(l), bars(md[0])) << l;
    EXPECT_EQ(l.front(), '|');
    EXPECT_EQ(l.back(), '|');
  }
  EXPECT_EQ(md[1].find_first_not_of("|-:"), std::string::npos) << md[1];
  const auto csv = Lines(ComparisonCsv(rows));
  ASSERT_EQ(csv.size(), rows.size() + 1);
  const auto header = CsvFields(csv[0]);
  ASSERT_EQ(header.size(), 18u);
  for (size_t i = 1; i < csv.size(); ++i) {
    const auto f = CsvFields(csv[i]);
    ASSERT_EQ(f.size(), header.size()) << csv[i];
    EXPECT_EQ(f[3], "table, with a comma | and a bar");
    EXPECT_EQ(std::stoull(f[2]), 300000u);
    EXPECT_GT(std::stod(f[8]), 0);  // ours_ns
    if (!f[10].empty()) EXPECT_NEAR(std::stod(f[16]), std::stod(f[14]) / std::stod(f[8]), 1e-3);
    else EXPECT_FALSE(f[17].empty()) << "a row without Ascend's tiling says why";
  }
}

// ---------------------------------------------------------------- the SoC files

TEST(SocFile, KeepsEachParametersSourceAndReadsOldFiles) {
  const SocInfo soc = Soc("ascend910b");
  for (const auto& r : SocParamRows(soc)) {
    EXPECT_FALSE(r.doc.source.empty()) << r.name;
    EXPECT_FALSE(r.doc.uncertainty.empty()) << r.name;
  }
  EXPECT_NE(soc.docs.at("hbm_peak_gbps").source.find("1.6 TB/s"), std::string::npos);
  EXPECT_DOUBLE_EQ(soc.HbmPeakGbps(), 1600.0);
  // written back and read again: values and sources survive
  SocInfo back;
  std::string err;
  ASSERT_TRUE(SocFromJson(SocToJson(soc), &back, &err)) << err;
  EXPECT_EQ(back.docs.at("launch_overhead_ns").source, soc.docs.at("launch_overhead_ns").source);
  EXPECT_DOUBLE_EQ(back.hbm_peak_gbps, 1600.0);
  // an older file: bare numbers, no sources, no peak
  nlohmann::json old = {{"schema", "actgrad-atlas-soc"}, {"version", 1}, {"name", "old"}, {"params", {}}};
  for (const char* k : {"vector_core_count", "ub_bytes", "ub_reserved_bytes", "block_bytes", "repeat_bytes"})
    old["params"][k] = soc.raw["params"][k]["value"];
  for (const auto& k : ModelParamNames()) old["params"][k] = *ModelParamRef(const_cast<ModelParams&>(soc.model), k);
  old["params"]["cycles_per_repeat"] = {{"default", 1}};
  SocInfo o;
  ASSERT_TRUE(SocFromJson(old, &o, &err)) << err;
  EXPECT_EQ(o.vector_cores, 48u);
  EXPECT_EQ(o.hbm_peak_gbps, 0.0);
  EXPECT_DOUBLE_EQ(o.HbmPeakGbps(), o.model.hbm_bandwidth_gbps);  // % of HBM falls back to the achievable
  EXPECT_TRUE(o.docs.at("clock_ghz").source.empty());
  // a negative peak is refused with the reason
  old["params"]["hbm_peak_gbps"] = -1;
  EXPECT_FALSE(SocFromJson(old, &o, &err));
  EXPECT_NE(err.find("hbm_peak_gbps"), std::string::npos) << err;
}

// The public figures the SoC files are bound to (docs/atlas.md, "SoC
// parameters and their sources"): a small-kernel floor of about 3 us, the
// achievable HBM bandwidth below the 1.6 TB/s peak, and a 16M fp32 launch
// (cold) never faster than the peak allows.
TEST(SocFile, ModelRespectsThePublicFigures) {
  for (const char* name : {"ascend910b", "ascend910b4"}) {
    SocInfo soc = Soc(name);
    SCOPED_TRACE(name);
    EXPECT_LE(soc.model.hbm_bandwidth_gbps, soc.HbmPeakGbps());
    TilingDecision d;
    std::string err;
    ASSERT_TRUE(ComputeTiling(Op::kSeluBwd, DType::kF32, 256, soc, OpParams{}, &d, &err)) << err;
    const double floor_ns = ModelLaunch(*d.variant, d.data, soc).total_ns;
    EXPECT_GT(floor_ns, 2500);
    EXPECT_LT(floor_ns, 3500);
    soc.model.l2_bytes = 0;
    ASSERT_TRUE(ComputeTiling(Op::kSoftshrinkBwd, DType::kF32, 16777216, soc, OpParams{}, &d, &err)) << err;
    const double ns = ModelLaunch(*d.variant, d.data, soc).total_ns;
    EXPECT_GE(ns, 3.0 * 4 * 16777216 / soc.HbmPeakGbps());
  }
  EXPECT_EQ(Soc("ascend910b").ub_bytes, 196608u);
  EXPECT_EQ(Soc("ascend910b").model.l2_bytes, 201326592.0);
}

}  // namespace
