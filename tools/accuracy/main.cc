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

// The command line's values (CLI11 writes them while parsing).
struct CommandLine {
  std::vector<std::string> ops_arg, dtypes_arg;
  std::string filter, md_path, json_path, keep_path;
  size_t fp32_count = 1000000;
  bool quick = false;
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t seed = AccuracyOptions{}.seed;
  bool verbose = false;
};

void AddOptions(CLI::App& app, CommandLine& c) {
  app.add_option("--ops", c.ops_arg, "ops to check, comma-separated (default: all): selu_bwd,hardswish_bwd,"
                                     "gelu_bwd,softshrink_bwd,logit_grad");
  app.add_option("--dtypes", c.dtypes_arg, "dtypes to check, comma-separated (default: all): f32,f16,bf16,i32,i8");
  app.add_option("--filter", c.filter, "only variants whose name matches this regular expression (ECMAScript, search)");
  auto* count_opt = app.add_option("--fp32-count", c.fp32_count, "fp32 values per parameter case (default 1000000)")
                        ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  app.add_flag("--quick", c.quick, "fp32 count 100000 (for a fast look)")->excludes(count_opt);
  app.add_option("--md", c.md_path, "write the markdown report here (e.g. docs/accuracy.md)");
  app.add_option("--json", c.json_path, "write the JSON results here (e.g. docs/accuracy.json)");
  app.add_option("--keep", c.keep_path,
                 "an earlier results file (e.g. docs/accuracy.json): its results for variants this run does not "
                 "check (filtered out, or not run on this CPU) are carried over; renamed or removed variants dropped");
  app.add_option("--threads", c.threads, "worker threads over variants (default: all cores)")
      ->check(CLI::Range(1, 1024));
  // CLI11 would read "-1" as 2^64 - 1.
  const CLI::Validator no_sign(
      [](std::string& v) { return v.find('-') == std::string::npos ? std::string() : "must not be negative"; }, "");
  app.add_option("--seed", c.seed, "seed of the random inputs")->check(no_sign);
  app.add_flag("-v,--verbose", c.verbose, "print every variant's result as it finishes");
}

// Which variants to check: --ops, --dtypes (all when empty) and --filter.
struct Selection {
  std::set<Op> ops;
  std::set<DType> dtypes;
  std::regex re;
};

// The selection, or why the command line does not give one.
std::string ParseSelection(const CommandLine& c, Selection* s) {
  for (const auto& name : SplitList(c.ops_arg)) {
    Op op;
    if (!ParseOp(name, &op)) return "unknown op \"" + name + "\" in --ops";
    s->ops.insert(op);
  }
  if (s->ops.empty())
    for (int i = 0; i < kNumOps; ++i) s->ops.insert(Op(i));
  for (const auto& name : SplitList(c.dtypes_arg)) {
    DType t;
    if (!ParseDType(name, &t)) return "unknown dtype \"" + name + "\" in --dtypes";
    s->dtypes.insert(t);
  }
  if (s->dtypes.empty())
    for (int i = 0; i < kNumDTypes; ++i) s->dtypes.insert(DType(i));
  try {
    s->re = std::regex(c.filter.empty() ? std::string(".*") : c.filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return "--filter \"" + c.filter + "\" is not a valid regular expression: " + e.what();
  }
  return "";
}

// Checks that the outputs can be written and reads --keep's file (before
// the run, and before --json may overwrite the same file); why not, or "".
std::string PrepareFiles(const CommandLine& c, AccuracyDocument* earlier) {
  for (const auto& [opt, path] : {std::pair{"--json", c.json_path}, std::pair{"--md", c.md_path}})
    if (!path.empty())
      if (std::string why = CannotWrite(opt, path); !why.empty()) return why;
  if (!c.keep_path.empty()) {
    AccuracyCache cache;
    std::string error;
    if (!TryLoadAccuracyCache(c.keep_path, &cache, &error)) return "--keep " + c.keep_path + ": " + error;
    *earlier = std::move(cache.doc);
  }
  return "";
}

// The selected variants this CPU runs; the others go to doc->not_run.
std::vector<const Variant*> SelectVariants(const Selection& s, AccuracyDocument* doc) {
  std::vector<const Variant*> to_run;
  for (const Variant& v : Variants()) {
    if (!s.ops.count(v.op) || !s.dtypes.count(v.dtype) || !std::regex_search(v.name, s.re)) continue;
    if (v.supported && v.fn) {
      to_run.push_back(&v);
    } else {
      VariantAccuracy r;
      r.variant = v.name, r.op = v.op, r.dtype = v.dtype, r.gelu_mode = v.gelu_mode, r.approx = v.approx;
      r.target = v.target, r.run = false, r.first_failure = "not run (CPU lacks " + v.target + ")";
      doc->not_run.push_back(r);
    }
  }
  return to_run;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Builds the inputs (in parallel over op/dtype/mode) and returns the order
// to check the variants in: costliest inputs first.
std::vector<size_t> PrepareInputs(const std::vector<const Variant*>& to_run, const AccuracyOptions& opt, int threads,
                                  std::chrono::steady_clock::time_point t0) {
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
               combos.size(), SecondsSince(t0), to_run.size(), threads);
  std::vector<size_t> order(to_run.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto cost_of = [&](size_t i) { return cost[{to_run[i]->op, to_run[i]->dtype, to_run[i]->gelu_mode}]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost_of(a) > cost_of(b); });
  return order;
}

// Checks the variants in `order` on `threads` threads, reporting progress
// (and failures, or every result with verbose) on stderr.
std::vector<VariantAccuracy> CheckVariants(const std::vector<const Variant*>& to_run, const std::vector<size_t>& order,
                                           const AccuracyOptions& opt, int threads, bool verbose,
                                           std::chrono::steady_clock::time_point t0) {
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
                       SecondsSince(t0));
      }
    }
  });
  return results;
}

// The run's details and results into doc, sorted; with --keep, the earlier
// run's results for the variants this run did not check.
void CompleteDocument(const CommandLine& c, const std::string& command, std::vector<VariantAccuracy> results,
                      const AccuracyDocument& earlier, AccuracyDocument* doc) {
  doc->machine_id = MachineId();
  doc->cpu_model = CpuModelName();
  doc->isa_family = IsaFamily();
  doc->date = UtcNow();
  doc->command = command;
  doc->tool_version = ACTGRAD_VERSION;
  doc->fp32_count = c.fp32_count;
  doc->seed = c.seed;
  doc->results = std::move(results);
  SortResults(&doc->results);
  SortResults(&doc->not_run);
  if (!c.keep_path.empty()) {
    std::vector<std::string> known;
    for (const Variant& v : Variants()) known.push_back(v.name);
    size_t dropped = 0;
    const size_t kept = KeepEarlier(earlier, known, doc, &dropped);
    std::fprintf(stderr, "actgrad-accuracy: kept %zu results from %s (%s); dropped %zu of variants no longer listed\n",
                 kept, c.keep_path.c_str(), earlier.machine_id.c_str(), dropped);
  }
}

// The console summary: shippable/run per op and dtype, then the totals.
void PrintSummary(const AccuracyDocument& doc, std::chrono::steady_clock::time_point t0) {
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
              doc.results.size(), doc.results.size() - size_t(ship), claim_miss, doc.not_run.size(), SecondsSince(t0));
}

// Writes --json and --md; 0, or 1 when one cannot be written.
int WriteOutputs(const CommandLine& c, const AccuracyDocument& doc) {
  try {
    if (!c.json_path.empty()) {
      WriteFileAtomic(c.json_path, ToJsonText(doc));
      std::printf("wrote %s\n", c.json_path.c_str());
    }
    if (!c.md_path.empty()) {
      WriteFileAtomic(c.md_path, ToMarkdown(doc));
      std::printf("wrote %s\n", c.md_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actgrad-accuracy: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-accuracy: accuracy of every kernel variant against the double reference "
               "(spec rule), written to markdown and JSON"};
  CommandLine c;
  AddOptions(app, c);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Usage(e.what());
  }
  if (c.quick) c.fp32_count = 100000;
  Selection selection;
  if (const std::string why = ParseSelection(c, &selection); !why.empty()) return Usage(why);
  AccuracyDocument earlier;
  if (const std::string why = PrepareFiles(c, &earlier); !why.empty()) return Usage(why);

  std::string command = "actgrad-accuracy";
  for (int i = 1; i < argc; ++i) command += " " + Quote(argv[i]);

  AccuracyDocument doc;
  const std::vector<const Variant*> to_run = SelectVariants(selection, &doc);
  if (to_run.empty() && doc.not_run.empty()) return Usage("no variant matches the selection (--ops/--dtypes/--filter)");

  AccuracyOptions opt;
  opt.fp32_count = c.fp32_count;
  opt.seed = c.seed;
  const auto t0 = std::chrono::steady_clock::now();
  // Inputs first, then the variants, costliest first.
  const std::vector<size_t> order = PrepareInputs(to_run, opt, c.threads, t0);
  std::vector<VariantAccuracy> results = CheckVariants(to_run, order, opt, c.threads, c.verbose, t0);
  ClearInputCache();

  CompleteDocument(c, command, std::move(results), earlier, &doc);
  PrintSummary(doc, t0);
  return WriteOutputs(c, doc);
}
