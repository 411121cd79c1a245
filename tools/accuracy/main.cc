// actgrad-accuracy: checks every kernel variant (of the selection) against
// the double reference under the spec's accuracy rule and writes
// docs/accuracy.md and docs/accuracy.json. See tools/accuracy/results.h
// for the JSON format and inputs.h for the inputs.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/accuracy/check.h"
#include "tools/accuracy/inputs.h"
#include "variants/thread_pool.h"
#include "tools/accuracy/results.h"
#include "tiling/machine.h"
#include "variants/variant.h"

#ifndef ACTGRAD_VERSION
#define ACTGRAD_VERSION "0.0.0"
#endif

namespace {

using namespace actgrad;
using namespace actgrad::acc;

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+") ==
                        std::string::npos)
    return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

std::vector<std::string> SplitList(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& s : in) {
    size_t start = 0;
    while (start <= s.size()) {
      const size_t comma = s.find(',', start);
      const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

int Usage(const std::string& msg) {
  std::fprintf(stderr, "actgrad-accuracy: %s\nRun with --help for the options.\n", msg.c_str());
  return 2;
}

// Why `path` (of option `opt`) cannot be written, or "": checked before the
// run, which can take half an hour, rather than at its end.
std::string CannotWrite(const char* opt, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path), dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string why;
  if (!fs::is_directory(dir, ec)) why = "directory " + dir.string() + " does not exist";
  else if (fs::is_directory(p, ec)) why = "it is a directory";
  else if (::access(dir.c_str(), W_OK) != 0) why = "directory " + dir.string() + ": " + std::strerror(errno);
  return why.empty() ? why : std::string("cannot write ") + opt + " " + path + ": " + why;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-accuracy: accuracy of every kernel variant against the double reference "
               "(spec rule), written to markdown and JSON"};
  std::vector<std::string> ops_arg, dtypes_arg;
  std::string filter, md_path, json_path, keep_path;
  size_t fp32_count = 1000000;
  bool quick = false;
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t seed = AccuracyOptions{}.seed;
  bool verbose = false;
  app.add_option("--ops", ops_arg, "ops to check, comma-separated (default: all): selu_bwd,hardswish_bwd,"
                                   "gelu_bwd,softshrink_bwd,logit_grad");
  app.add_option("--dtypes", dtypes_arg, "dtypes to check, comma-separated (default: all): f32,f16,bf16,i32,i8");
  app.add_option("--filter", filter, "only variants whose name matches this regular expression (ECMAScript, search)");
  auto* count_opt = app.add_option("--fp32-count", fp32_count, "fp32 values per parameter case (default 1000000)")
                        ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  app.add_flag("--quick", quick, "fp32 count 100000 (for a fast look)")->excludes(count_opt);
  app.add_option("--md", md_path, "write the markdown report here (e.g. docs/accuracy.md)");
  app.add_option("--json", json_path, "write the JSON results here (e.g. docs/accuracy.json)");
  app.add_option("--keep", keep_path,
                 "an earlier results file (e.g. docs/accuracy.json): its results for variants this run does not "
                 "check (filtered out, or not run on this CPU) are carried over; renamed or removed variants dropped");
  app.add_option("--threads", threads, "worker threads over variants (default: all cores)")
      ->check(CLI::Range(1, 1024));
  // CLI11 would read "-1" as 2^64 - 1.
  const CLI::Validator no_sign(
      [](std::string& v) { return v.find('-') == std::string::npos ? std::string() : "must not be negative"; }, "");
  app.add_option("--seed", seed, "seed of the random inputs")->check(no_sign);
  app.add_flag("-v,--verbose", verbose, "print every variant's result as it finishes");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Usage(e.what());
  }
  if (quick) fp32_count = 100000;

  std::set<Op> ops;
  for (const auto& s : SplitList(ops_arg)) {
    Op op;
    if (!ParseOp(s, &op)) return Usage("unknown op \"" + s + "\" in --ops");
    ops.insert(op);
  }
  if (ops.empty())
    for (int i = 0; i < kNumOps; ++i) ops.insert(Op(i));
  std::set<DType> dtypes;
  for (const auto& s : SplitList(dtypes_arg)) {
    DType t;
    if (!ParseDType(s, &t)) return Usage("unknown dtype \"" + s + "\" in --dtypes");
    dtypes.insert(t);
  }
  if (dtypes.empty())
    for (int i = 0; i < kNumDTypes; ++i) dtypes.insert(DType(i));
  std::regex re;
  try {
    re = std::regex(filter.empty() ? std::string(".*") : filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Usage("--filter \"" + filter + "\" is not a valid regular expression: " + e.what());
  }

  for (const auto& [opt, path] : {std::pair{"--json", json_path}, std::pair{"--md", md_path}})
    if (!path.empty())
      if (const std::string why = CannotWrite(opt, path); !why.empty()) return Usage(why);
  // Read before the run (and before --json may overwrite the same file).
  AccuracyDocument earlier;
  if (!keep_path.empty()) {
    AccuracyCache cache;
    std::string error;
    if (!TryLoadAccuracyCache(keep_path, &cache, &error)) return Usage("--keep " + keep_path + ": " + error);
    earlier = std::move(cache.doc);
  }

  std::string command = "actgrad-accuracy";
  for (int i = 1; i < argc; ++i) command += " " + Quote(argv[i]);

  // The selection.
  std::vector<const Variant*> to_run;
  AccuracyDocument doc;
  for (const Variant& v : Variants()) {
    if (!ops.count(v.op) || !dtypes.count(v.dtype) || !std::regex_search(v.name, re)) continue;
    if (v.supported && v.fn) {
      to_run.push_back(&v);
    } else {
      VariantAccuracy r;
      r.variant = v.name, r.op = v.op, r.dtype = v.dtype, r.gelu_mode = v.gelu_mode, r.approx = v.approx;
      r.target = v.target, r.run = false, r.first_failure = "not run (CPU lacks " + v.target + ")";
      doc.not_run.push_back(r);
    }
  }
  if (to_run.empty() && doc.not_run.empty()) return Usage("no variant matches the selection (--ops/--dtypes/--filter)");

  AccuracyOptions opt;
  opt.fp32_count = fp32_count;
  opt.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();

  // Inputs first (in parallel over op/dtype/mode), then the variants, costliest first.
  std::vector<std::tuple<Op, DType, GeluApprox>> combos;
  for (const Variant* v : to_run) combos.emplace_back(v->op, v->dtype, v->gelu_mode);
  std::sort(combos.begin(), combos.end());
  combos.erase(std::unique(combos.begin(), combos.end()), combos.end());
  std::map<std::tuple<Op, DType, GeluApprox>, size_t> cost;
  // The library's pool hands out pieces (one index each) in increasing order.
  ParallelFor(threads, int64_t(combos.size()), [&](int64_t first, int64_t last, int) {
    for (int64_t i = first; i < last; ++i) {
      const auto& [op, dt, mode] = combos[size_t(i)];
      GetInputs(op, dt, mode, opt);
    }
  });
  for (const auto& c : combos) cost[c] = GetInputs(std::get<0>(c), std::get<1>(c), std::get<2>(c), opt)->total;
  std::fprintf(stderr, "actgrad-accuracy: inputs ready (%zu op/dtype/mode sets) in %.1f s; checking %zu variants on %d threads\n",
               combos.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               to_run.size(), threads);
  std::vector<size_t> order(to_run.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto cost_of = [&](size_t i) { return cost[{to_run[i]->op, to_run[i]->dtype, to_run[i]->gelu_mode}]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost_of(a) > cost_of(b); });

  std::vector<VariantAccuracy> results(to_run.size());
  size_t done = 0;
  std::mutex progress_mu;
  ParallelFor(threads, int64_t(order.size()), [&](int64_t first, int64_t last, int) {
    for (int64_t k = first; k < last; ++k) {
      const size_t i = order[size_t(k)];
      results[i] = CheckVariant(*to_run[i], opt);
      {
        std::lock_guard<std::mutex> lock(progress_mu);
        ++done;
        const auto& r = results[i];
        if (verbose || !r.pass)
          std::fprintf(stderr, "  %-52s %s  max_err %.3g%s%s\n", r.variant.c_str(), r.pass ? "pass" : "FAIL", r.max_err,
                       r.pass ? "" : "  ", r.pass ? "" : r.first_failure.c_str());
        if (done % 100 == 0 || done == order.size())
          std::fprintf(stderr, "actgrad-accuracy: %zu/%zu variants checked (%.1f s)\n", done, order.size(),
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
  });
  ClearInputCache();

  doc.machine_id = MachineId();
  doc.cpu_model = CpuModelName();
  doc.isa_family = IsaFamily();
  doc.date = UtcNow();
  doc.command = command;
  doc.tool_version = ACTGRAD_VERSION;
  doc.fp32_count = fp32_count;
  doc.seed = seed;
  doc.results = std::move(results);
  SortResults(&doc.results);
  SortResults(&doc.not_run);
  if (!keep_path.empty()) {
    std::vector<std::string> known;
    for (const Variant& v : Variants()) known.push_back(v.name);
    size_t dropped = 0;
    const size_t kept = KeepEarlier(earlier, known, &doc, &dropped);
    std::fprintf(stderr, "actgrad-accuracy: kept %zu results from %s (%s); dropped %zu of variants no longer listed\n",
                 kept, keep_path.c_str(), earlier.machine_id.c_str(), dropped);
  }

  // Console summary.
  std::map<std::pair<Op, DType>, std::pair<int, int>> tally;  // shippable, run
  int ship = 0, claim_miss = 0;
  for (const auto& r : doc.results) {
    auto& t = tally[{r.op, r.dtype}];
    t.first += r.pass;
    ++t.second;
    ship += r.pass;
    claim_miss += !r.meets_claim && r.claimed_max_err > 0;
  }
  std::printf("%-16s %-5s %s\n", "op", "dtype", "shippable/run");
  for (const auto& [k, t] : tally)
    std::printf("%-16s %-5s %d/%d\n", std::string(OpName(k.first)).c_str(), std::string(DTypeName(k.second)).c_str(),
                t.first, t.second);
  std::printf("%d of %zu variants shippable, %zu failing, %d claims not met, %zu not run on this CPU (%.1f s)\n", ship,
              doc.results.size(), doc.results.size() - size_t(ship), claim_miss, doc.not_run.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  int rc = 0;
  try {
    if (!json_path.empty()) {
      WriteFileAtomic(json_path, ToJsonText(doc));
      std::printf("wrote %s\n", json_path.c_str());
    }
    if (!md_path.empty()) {
      WriteFileAtomic(md_path, ToMarkdown(doc));
      std::printf("wrote %s\n", md_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actgrad-accuracy: %s\n", e.what());
    rc = 1;
  }
  return rc;
}
