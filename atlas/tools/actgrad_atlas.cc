// actgrad-atlas: the Atlas track's command line.
//   model      modelled times as Google-Benchmark-shaped JSON
//              (names atlas/<variant>/n:N/tile:T, real_time in ns)
//   calibrate  fit the model parameters to device times (CSV) -> SoC file
//   synth      write a synthetic "device" CSV from a SoC file (tests calibrate)
//   log2csv    a tuner measurement log (actgrad-tune --backend atlas-device) -> the CSV calibrate reads
//   tune       retired: says to run actgrad-tune --backend atlas-model
//   tiling     print the tiling the host code computes for op/dtype/n
//   compare    our tiling against Ascend's, both priced by the model (Markdown/CSV)
//   soc        the SoC file's parameters with their sources (Markdown/CSV)
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "atlas_backend.h"
#include "cost_model.h"
#include "host_tiling.h"
#include "tiling_compare.h"
#include "tiling/size_cells.h"
#include "tiling_table.h"

using namespace actgrad;
using namespace actgrad::atlas;

namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<Op> ParseOps(const std::string& s) {
  std::vector<Op> ops;
  if (s.empty() || s == "all") return {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad};
  for (const auto& name : Split(s)) {
    Op op;
    if (!ParseOp(name, &op)) throw std::runtime_error("unknown op " + name);
    ops.push_back(op);
  }
  return ops;
}

SocInfo LoadOrDie(const std::string& path) {
  SocInfo soc;
  std::string err;
  if (!LoadSoc(path, &soc, &err)) throw std::runtime_error(err);
  return soc;
}

void WriteJson(const std::string& path, const nlohmann::json& j) {
  if (path == "-") {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::ofstream o(path);
  if (!o) throw std::runtime_error("cannot write " + path);
  o << j.dump(2) << "\n";
}

nlohmann::json StatsCounters(const AscendEmu::CoreStats& s) {
  nlohmann::json c = {{"gm_to_ub_bytes", s.gm_to_ub_bytes}, {"ub_to_gm_bytes", s.ub_to_gm_bytes},
                      {"dma_in", s.dma_in}, {"dma_out", s.dma_out}, {"vec_instr", s.VecInstrTotal()},
                      {"vec_repeats", s.VecRepeatsTotal()}, {"ub_peak_bytes", s.ub_peak_bytes}};
  for (int k = 0; k < AscendEmu::kNumVecKinds; ++k)
    if (s.vec_instr[k]) c[std::string("instr_") + AscendEmu::VecKindName(AscendEmu::VecKind(k))] = s.vec_instr[k];
  return c;
}

int CmdModel(const std::string& soc_path, const std::string& ops_s, const std::string& dtypes_s,
             const std::string& sizes_s, const std::string& tiles_s, bool all_variants, const std::string& out) {
  const SocInfo soc = LoadOrDie(soc_path);
  std::vector<uint64_t> sizes;
  for (const auto& s : Split(sizes_s)) sizes.push_back(std::stoull(s));
  if (sizes.empty())
    for (int h = kMinOctave; h <= kMaxOctave; ++h) sizes.push_back(RepresentativeN(h, OctaveLo(kMaxOctave)));
  std::vector<int64_t> tiles;
  for (const auto& s : Split(tiles_s)) tiles.push_back(std::stoll(s));
  std::vector<DType> dtypes;
  for (const auto& s : Split(dtypes_s)) {
    DType t;
    if (!ParseDType(s, &t)) throw std::runtime_error("unknown dtype " + s);
    dtypes.push_back(t);
  }
  nlohmann::json benches = nlohmann::json::array();
  for (Op op : ParseOps(ops_s)) {
    for (DType dt : dtypes.empty() ? AtlasDTypes(op) : dtypes) {
      std::vector<const AtlasVariant*> vs;
      if (all_variants) {
        for (const auto& v : AtlasVariants())
          if (v.op == op && v.dtype == dt) vs.push_back(&v);
      }
      for (uint64_t n : sizes) {
        std::vector<std::pair<const AtlasVariant*, int64_t>> runs;
        if (all_variants) {
          for (auto* v : vs)
            for (int64_t t : tiles.empty() ? std::vector<int64_t>{0} : tiles) runs.push_back({v, t});
        } else {
          // what the shipping host tiling picks (table or default rule), plus the tile sweep
          TilingDecision d;
          std::string err;
          if (!ComputeTiling(op, dt, n, soc, OpParams{}, &d, &err)) continue;
          if (tiles.empty()) runs.push_back({d.variant, 0});
          for (int64_t t : tiles) runs.push_back({d.variant, t});
        }
        for (const auto& [v, tile] : runs) {
          AtlasTilingData t;
          std::string err;
          TilingOptions o;
          o.stage_tile = tile;
          if (tile == 0) {
            TilingDecision d;
            if (!all_variants && ComputeTiling(op, dt, n, soc, OpParams{}, &d, &err) && d.variant == v) {
              o.stage_tile = d.data.tileLength;
              o.block_dim = int(d.data.blockDim);
            }
          }
          if (!MakeTiling(*v, n, OpParams{}, soc, o, &t, &err)) continue;  // e.g. tile beyond UB
          const ModelResult r = ModelLaunch(*v, t, soc);
          const double bytes = 3.0 * double(n) * double(DTypeSize(dt));
          nlohmann::json b = {{"name", "atlas/" + v->name + "/n:" + std::to_string(n) + "/tile:" + std::to_string(t.tileLength)},
                              {"run_name", "atlas/" + v->name + "/n:" + std::to_string(n) + "/tile:" + std::to_string(t.tileLength)},
                              {"run_type", "iteration"},
                              {"iterations", 1},
                              {"real_time", r.total_ns},
                              {"cpu_time", r.total_ns},
                              {"time_unit", "ns"},
                              {"bytes_per_second", bytes / (r.total_ns * 1e-9)},
                              {"items_per_second", double(n) / (r.total_ns * 1e-9)},
                              {"block_dim", t.blockDim},
                              {"tile", t.tileLength},
                              {"buffers", t.bufferNum},
                              {"bound", r.bound},
                              {"mte2_busy_ns", r.mte2_busy_ns},
                              {"v_busy_ns", r.v_busy_ns},
                              {"mte3_busy_ns", r.mte3_busy_ns}};
          const nlohmann::json counters = StatsCounters(r.slowest);
          for (auto it = counters.begin(); it != counters.end(); ++it) b["slowest_core_" + it.key()] = it.value();
          benches.push_back(b);
        }
      }
    }
  }
  nlohmann::json doc = {{"context",
                         {{"executable", "actgrad-atlas model"},
                          {"actgrad_machine_id", soc.name},
                          {"actgrad_backend", "atlas-model"},
                          {"actgrad_soc_file", soc.path},
                          {"actgrad_tiling_table", kAtlasTilingTableSource},
                          {"num_cpus", soc.vector_cores},
                          {"library_build_type", "model"}}},
                        {"benchmarks", benches}};
  WriteJson(out, doc);
  return 0;
}

int CmdCalibrate(const std::string& soc_path, const std::string& csv, const std::string& out,
                 const std::string& params_s) {
  SocInfo soc = LoadOrDie(soc_path);
  std::vector<Measurement> rows;
  std::string err;
  if (!ReadMeasurementsCsv(csv, &rows, &err)) throw std::runtime_error(err);
  const auto params = params_s.empty() ? DefaultFitParams() : Split(params_s);
  const FitResult fr = Calibrate(&soc, rows, params, OpParams{});
  nlohmann::json j = SocToJson(soc);
  for (size_t i = 0; i < fr.names.size(); ++i) {
    auto& node = j["params"][fr.names[i]];
    if (node.is_object()) {
      node["source"] = "fitted by actgrad-atlas calibrate to " + csv + " (was " + std::to_string(fr.before[i]) + ")";
      node["uncertainty"] = "fit; RMS log error " + std::to_string(fr.rms_log_after);
    }
  }
  j["calibration"] = {{"csv", csv}, {"points", fr.points}, {"parameters", fr.names},
                      {"rms_log_error_before", fr.rms_log_before}, {"rms_log_error_after", fr.rms_log_after},
                      {"iterations", fr.iterations}};
  WriteJson(out, j);
  std::printf("calibrated %zu parameters on %zu points: RMS log error %.4g -> %.4g\n", fr.names.size(), fr.points,
              fr.rms_log_before, fr.rms_log_after);
  for (size_t i = 0; i < fr.names.size(); ++i)
    std::printf("  %-26s %12.6g -> %12.6g\n", fr.names[i].c_str(), fr.before[i], fr.after[i]);
  return 0;
}

// Synthetic device times: the model of `soc` (optionally with parameters
// scaled) over a spread of variants, sizes, tiles and block dims.
int CmdSynth(const std::string& soc_path, const std::string& scale_s, const std::string& out, double noise) {
  SocInfo soc = LoadOrDie(soc_path);
  for (const auto& kv : Split(scale_s)) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw std::runtime_error("--scale wants name=factor");
    double* r = ModelParamRef(soc.model, kv.substr(0, eq));
    if (!r) throw std::runtime_error("unknown parameter " + kv.substr(0, eq));
    *r *= std::stod(kv.substr(eq + 1));
  }
  std::vector<Measurement> rows;
  const char* names[] = {"selu_bwd.f32.atlas.none.exact.db2", "gelu_bwd.f32.atlas.none.erf.db2",
                         "gelu_bwd.f16.atlas.upcast_f32.erf.db1", "softshrink_bwd.f16.atlas.upcast_f32.exact.db2",
                         "hardswish_bwd.bf16.atlas.upcast_f32.exact.db1"};
  uint32_t seed = 12345;
  for (const char* name : names)
    for (uint64_t n : {uint64_t(4096), uint64_t(262144), uint64_t(4194304), uint64_t(67108864)})
      for (int64_t tile : {512, 2048})
        for (int dim : {1, 8, int(soc.vector_cores)}) {
          Measurement m{name, n, tile, dim, 0};
          try {
            m.time_ns = ModelRow(m, soc, OpParams{});
          } catch (const std::exception&) {
            continue;
          }
          seed = seed * 1664525u + 1013904223u;
          const double u = double(seed >> 8) / double(1u << 24) - 0.5;
          m.time_ns *= 1.0 + noise * u;
          rows.push_back(m);
        }
  std::string err;
  if (!WriteMeasurementsCsv(out, rows, &err)) throw std::runtime_error(err);
  std::printf("wrote %zu synthetic measurements to %s\n", rows.size(), out.c_str());
  return 0;
}

// The tuner's log of an atlas-device run as the calibration CSV.
int CmdLog2Csv(const std::string& log, const std::string& out) {
  std::vector<Measurement> rows;
  size_t skipped = 0;
  std::string err, backend;
  if (!ReadTuneLog(log, &rows, &skipped, &err, &backend)) throw std::runtime_error(err);
  if (backend.find("emulator") != std::string::npos)
    std::fprintf(stderr,
                 "actgrad-atlas: %s is a log of %s: its times are the emulator's host time; calibrating to "
                 "them fits the model to the emulator, not to a device\n",
                 log.c_str(), backend.c_str());
  else if (backend == "atlas-model")
    std::fprintf(stderr, "actgrad-atlas: %s is a log of the model itself (atlas-model)\n", log.c_str());
  if (!WriteMeasurementsCsv(out, rows, &err)) throw std::runtime_error(err);
  std::printf("wrote %zu measurements to %s (%zu log lines skipped: not Atlas contiguous measurements)\n",
              rows.size(), out.c_str(), skipped);
  return 0;
}

// The Atlas table comes from the project tuner, like the CPU tables.
int CmdTuneRetired() {
  std::fprintf(stderr,
               "actgrad-atlas: 'tune' is retired; the Atlas tiling table is written by the project tuner:\n"
               "  actgrad-tune --backend atlas-model [--soc atlas/soc/ascend910b.json] --layouts contig \\\n"
               "      --dtypes f32,f16,bf16,i32,i8 --out tiling/tables/ascend910b.json\n"
               "(docs/atlas.md, docs/tuning.md)\n");
  return 2;
}

int CmdTiling(const std::string& soc_path, const std::string& op_s, const std::string& dt_s, uint64_t n) {
  const SocInfo soc = LoadOrDie(soc_path);
  Op op;
  DType dt;
  if (!ParseOp(op_s, &op) || !ParseDType(dt_s, &dt)) throw std::runtime_error("unknown op or dtype");
  TilingDecision d;
  std::string err;
  if (!ComputeTiling(op, dt, n, soc, OpParams{}, &d, &err)) throw std::runtime_error(err);
  const auto& t = d.data;
  std::printf("variant %s (%s, octave %d, table %s)\n", d.variant->name.c_str(), d.source.c_str(), d.octave,
              kAtlasTilingTableSource);
  std::printf("blockDim %u  tile %u  buffers %u  big cores %u x %llu  small cores x %llu  UB %u of %llu bytes\n",
              t.blockDim, t.tileLength, t.bufferNum, t.bigCoreNum, (unsigned long long)t.bigCoreLength,
              (unsigned long long)t.smallCoreLength, UbBytesFor(*d.variant, t.tileLength),
              (unsigned long long)soc.UbBudget());
  const ModelResult r = ModelLaunch(*d.variant, t, soc);
  std::printf("modelled %.1f ns (slowest core %.1f ns, %s-bound)\n", r.total_ns, r.slowest_core_ns, r.bound);
  return 0;
}

// Our tiling of (op, dtype, n): the shipping host tiling (compiled table or
// default rule), or the best of the tuner's candidates under the model.
bool OurTiling(Op op, DType dt, uint64_t n, const SocInfo& soc, bool best, const AtlasVariant** v,
               AtlasTilingData* t, std::string* label, std::string* err) {
  if (!best) {
    TilingDecision d;
    if (!ComputeTiling(op, dt, n, soc, OpParams{}, &d, err)) return false;
    *v = d.variant;
    *t = d.data;
    *label = d.source == "table" ? "table (octave " + std::to_string(d.octave) + ")" : "default rule";
    return true;
  }
  AtlasModelBackend backend(soc);
  const tune::Cell cell{op, dt, "contig", SizeOctave(n), n};
  double best_ns = 0;
  size_t count = 0;
  for (const Choice& c : backend.Candidates(cell)) {
    const AtlasVariant* cv;
    AtlasTilingData ct;
    std::string why;
    if (!CandidateTiling(soc, cell, c, OpParams{}, &cv, &ct, &why)) continue;
    const double ns = ModelLaunch(*cv, ct, soc).total_ns;
    ++count;
    if (count == 1 || ns < best_ns) {
      best_ns = ns;
      *v = cv;
      *t = ct;
    }
  }
  if (count == 0) {
    *err = "no candidate tiling";
    return false;
  }
  *label = "model best of " + std::to_string(count);
  return true;
}

int CmdCompare(const std::string& soc_path, const std::string& ops_s, const std::string& dtypes_s,
               const std::string& sizes_s, const std::string& ours, const std::string& l2, const std::string& format,
               const std::string& out) {
  SocInfo soc = LoadOrDie(soc_path);
  if (ours != "table" && ours != "best") throw std::runtime_error("--ours wants table or best");
  if (l2 != "cold" && l2 != "model") throw std::runtime_error("--l2 wants cold or model");
  if (format != "md" && format != "csv") throw std::runtime_error("--format wants md or csv");
  // cold: every launch reads and writes HBM, as when L2 is flushed between
  // timed calls; model: the model's rule (L2 bandwidth when the set fits L2).
  if (l2 == "cold") soc.model.l2_bytes = 0;
  std::vector<uint64_t> sizes;
  for (const auto& s : Split(sizes_s)) sizes.push_back(std::stoull(s));
  if (sizes.empty()) throw std::runtime_error("--sizes is empty");
  std::vector<TilingComparison> rows;
  for (Op op : ParseOps(ops_s)) {
    for (const auto& name : Split(dtypes_s)) {
      DType dt;
      if (!ParseDType(name, &dt)) throw std::runtime_error("unknown dtype " + name);
      const auto dts = AtlasDTypes(op);
      if (std::find(dts.begin(), dts.end(), dt) == dts.end()) continue;
      for (uint64_t n : sizes) {
        const AtlasVariant* v = nullptr;
        AtlasTilingData t;
        std::string label, err;
        if (!OurTiling(op, dt, n, soc, ours == "best", &v, &t, &label, &err))
          throw std::runtime_error(std::string(OpName(op)) + " " + name + " n=" + std::to_string(n) + ": " + err);
        rows.push_back(CompareWithAscend(*v, t, label, soc));
      }
    }
  }
  const std::string text = format == "md" ? ComparisonMarkdown(rows) : ComparisonCsv(rows);
  if (out == "-") {
    std::cout << text;
  } else {
    std::ofstream o(out);
    if (!o) throw std::runtime_error("cannot write " + out);
    o << text;
  }
  return 0;
}

int CmdSoc(const std::string& soc_path, const std::string& format) {
  const SocInfo soc = LoadOrDie(soc_path);
  if (format != "md" && format != "csv") throw std::runtime_error("--format wants md or csv");
  const auto rows = SocParamRows(soc);
  if (format == "md") {
    std::printf("| parameter | value | unit | source | uncertainty |\n|---|---:|---|---|---|\n");
    for (const auto& r : rows)
      std::printf("| %s | %s | %s | %s | %s |\n", r.name.c_str(), r.value.c_str(), r.doc.unit.c_str(),
                  r.doc.source.c_str(), r.doc.uncertainty.c_str());
    return 0;
  }
  auto q = [](std::string s) {
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  std::printf("parameter,value,unit,source,uncertainty\n");
  for (const auto& r : rows)
    std::printf("%s,%s,%s,%s,%s\n", r.name.c_str(), q(r.value).c_str(), q(r.doc.unit).c_str(),
                q(r.doc.source).c_str(), q(r.doc.uncertainty).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-atlas: Atlas NPU track (emulator, host tiling, cost model)"};
  app.require_subcommand(1);
  const std::string def_soc = DefaultSocDir() + "/ascend910b.json";

  std::string soc = def_soc, ops, dtypes, sizes, tiles, out = "-", csv, params, scale, op1, dt1;
  std::string cmp_dtypes = "f32", cmp_sizes = "16777216", cmp_ours = "table", cmp_l2 = "cold", format = "md";
  bool all_variants = false;
  double noise = 0.0;
  uint64_t n = 1 << 20;

  auto* model = app.add_subcommand("model", "modelled times as Google-Benchmark-shaped JSON");
  model->add_option("--soc", soc, "SoC parameter file");
  model->add_option("--ops", ops, "ops (comma-separated, default all)");
  model->add_option("--dtypes", dtypes, "dtypes (default: each op's)");
  model->add_option("--sizes", sizes, "element counts (default: the size each table octave is tuned at, 1.4K..64M)");
  model->add_option("--tiles", tiles, "tile lengths to sweep (default: the host tiling's)");
  model->add_flag("--all-variants", all_variants, "every variant, not only the host tiling's pick");
  model->add_option("--out", out, "output JSON ('-' for stdout)");

  auto* cal = app.add_subcommand("calibrate", "fit model parameters to measured device times");
  cal->add_option("--soc", soc, "SoC parameter file (starting point)");
  cal->add_option("--csv", csv, "measurements: variant,n,tile,block_dim,time_ns")->required();
  cal->add_option("--out", out, "fitted SoC file")->required();
  cal->add_option("--params", params, "parameters to fit (default: launch, bandwidths, DMA setup, vector scale)");

  auto* syn = app.add_subcommand("synth", "synthetic device CSV from the model (for testing calibrate)");
  syn->add_option("--soc", soc, "SoC parameter file");
  syn->add_option("--scale", scale, "name=factor,... applied to the parameters first");
  syn->add_option("--noise", noise, "relative uniform noise (e.g. 0.02)");
  syn->add_option("--out", out, "CSV to write")->required();

  std::string log;
  auto* l2c = app.add_subcommand("log2csv", "a tuner measurement log of an Atlas backend -> the CSV calibrate reads");
  l2c->add_option("--log", log, "actgrad-tune measurement log (build/tune/<machine>-<backend>-<hash>.log.jsonl)")
      ->required();
  l2c->add_option("--out", out, "CSV to write (variant,n,tile,block_dim,time_ns)")->required();

  auto* tune = app.add_subcommand("tune", "retired: use actgrad-tune --backend atlas-model");
  tune->allow_extras();

  auto* til = app.add_subcommand("tiling", "print the host tiling of one call");
  til->add_option("--soc", soc, "SoC parameter file");
  til->add_option("--op", op1, "op")->required();
  til->add_option("--dtype", dt1, "dtype")->required();
  til->add_option("--n", n, "elements");

  auto* cmp = app.add_subcommand("compare", "our tiling against Ascend's published one, both priced by the model");
  cmp->add_option("--soc", soc, "SoC parameter file");
  cmp->add_option("--ops", ops, "ops (comma-separated, default all)");
  cmp->add_option("--dtypes", cmp_dtypes, "dtypes (default f32)");
  cmp->add_option("--sizes", cmp_sizes, "element counts (default 16777216)");
  cmp->add_option("--ours", cmp_ours, "our tiling: table (the shipping host tiling) or best (model-best candidate)");
  cmp->add_option("--l2", cmp_l2, "cold (HBM every launch, default) or model (L2 when the working set fits)");
  cmp->add_option("--format", format, "md or csv");
  cmp->add_option("--out", out, "output file ('-' for stdout)");

  auto* socc = app.add_subcommand("soc", "print the SoC file's parameters with their sources");
  socc->add_option("--soc", soc, "SoC parameter file");
  socc->add_option("--format", format, "md or csv");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*model) return CmdModel(soc, ops, dtypes, sizes, tiles, all_variants, out);
    if (*cal) return CmdCalibrate(soc, csv, out, params);
    if (*syn) return CmdSynth(soc, scale, out, noise);
    if (*l2c) return CmdLog2Csv(log, out);
    if (*tune) return CmdTuneRetired();
    if (*til) return CmdTiling(soc, op1, dt1, n);
    if (*cmp) return CmdCompare(soc, ops, cmp_dtypes, cmp_sizes, cmp_ours, cmp_l2, format, out);
    if (*socc) return CmdSoc(soc, format);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actgrad-atlas: %s\n", e.what());
    return 1;
  }
  return 0;
}
