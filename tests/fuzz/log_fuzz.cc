// libFuzzer target: the tuner's measurement-log reader (MeasurementLog::Replay,
// what Open parses a log with) on arbitrary bytes as a log file's content.
// Invariants: it never crashes or throws; new lines would go after a newline;
// every skipped line is counted and the first ones named; every record it
// keeps has finite positive samples and survives ToJson/FromJson unchanged;
// the header's config prints (Open's settings-mismatch message does).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/tune/log.h"

namespace {

using actgrad::tune::LogRecord;
using actgrad::tune::LogReplay;
using actgrad::tune::MeasurementLog;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "log_fuzz: %s %s\n", what, detail.c_str());
  std::abort();
}

bool Same(const LogRecord& a, const LogRecord& b) {
  return a.cell == b.cell && a.cand == b.cand && a.round == b.round && a.rep == b.rep && a.ns == b.ns &&
         a.sec == b.sec && a.placement == b.placement;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const LogReplay r = MeasurementLog::Replay(text, "fuzz.jsonl");
  if (r.good_end > text.size() || (r.good_end > 0 && text[r.good_end - 1] != '\n')) Fail("good_end is not after a newline");
  const size_t skipped = r.torn + r.rejected;
  if (r.problems.size() != std::min(skipped, LogReplay::kMaxProblems)) Fail("a skipped line is not named");
  if (r.start_over && (r.have_header || !r.records.empty() || r.good_end != 0)) Fail("start_over with content");
  for (const auto& [key, rec] : r.records) {
    if (rec.ns.empty() || rec.round < 0 || rec.rep < 0 || rec.placement < 0 || !std::isfinite(rec.sec) ||
        rec.sec < 0)
      Fail("a bad record was kept", rec.cell);
    for (double ns : rec.ns)
      if (!std::isfinite(ns) || !(ns > 0)) Fail("a bad sample was kept", std::to_string(ns));
    LogRecord back;
    std::string why;
    const auto j = nlohmann::json::parse(MeasurementLog::ToJson(rec).dump());
    if (!MeasurementLog::FromJson(j, &back, &why)) Fail("ToJson's line is refused:", why);
    if (!Same(rec, back)) Fail("the round trip changed a record");
  }
  if (r.have_header) (void)r.config.dump();
  return 0;
}
