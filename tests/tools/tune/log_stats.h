// What a measurement log file holds, counted line by line as the tests see
// it: records that parse, distinct (cell, cand, round, rep) keys, records
// taken from a cache, and the last header.
#pragma once
#include <cstddef>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tools/tune/log.h"

namespace actgrad::tune::testing {

struct LogStats {
  size_t records = 0, distinct = 0, cached = 0;
  nlohmann::json header;
};

inline LogStats CountLog(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::set<std::tuple<std::string, std::string, int, int>> keys;
  LogStats s;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == "header") s.header = j;
    LogRecord r;
    if (j.is_discarded() || !MeasurementLog::FromJson(j, &r)) continue;
    ++s.records;
    s.cached += r.cached;
    keys.insert({r.cell, r.cand, r.round, r.rep});
  }
  s.distinct = keys.size();
  return s;
}

}  // namespace actgrad::tune::testing
