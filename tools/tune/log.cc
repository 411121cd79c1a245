#include "tools/tune/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tiling/table.h"
#include "tools/inputs/hash.h"
#include "tools/tune/measurement_key.h"

namespace actgrad::tune {

using json = nlohmann::json;

MeasurementLog::~MeasurementLog() { Close(); }

void MeasurementLog::Close() {
  if (syncer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    syncer_.join();
  }
  if (fd_ >= 0) {
    ::fdatasync(fd_);
    ::close(fd_);
  }
  fd_ = -1;
  quit_ = false;
  written_ = synced_ = 0;
}

void MeasurementLog::SyncLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return quit_ || synced_ < written_; });
    if (synced_ >= written_ && quit_) return;
    const uint64_t target = written_;
    lock.unlock();
    const int rc = ::fdatasync(fd_);
    lock.lock();
    if (rc != 0) sync_error_ = errno;
    synced_ = target;
    cv_.notify_all();
  }
}

void MeasurementLog::Sync() {
  if (!syncer_.joinable()) return;
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = written_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return synced_ >= target; });
}

json MeasurementLog::ToJson(const LogRecord& r) {
  json j{{"type", "m"}, {"cell", r.cell}, {"cand", r.cand}, {"round", r.round},
         {"rep", r.rep},  {"ns", r.ns},     {"sec", r.sec},    {"placement", r.placement}};
  if (r.cached) j["cached"] = true;  // absent: measured by the log's own run
  return j;
}

bool MeasurementLog::FromJson(const json& j, LogRecord* r, std::string* why) {
  auto fail = [why](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  if (!j.is_object()) return fail("not a JSON object");
  const auto type = j.find("type");
  if (type == j.end() || !type->is_string() || type->get_ref<const std::string&>() != "m")
    return fail("not a measurement (\"type\" is not \"m\")");
  auto field = [&](const char* key) -> const json* {
    const auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  };
  auto string = [&](const char* key, std::string* out) {
    const json* v = field(key);
    if (!v || !v->is_string()) return fail(std::string("\"") + key + "\" is missing or not a string");
    *out = v->get<std::string>();
    return true;
  };
  // JSON integers only: get<int> would turn 2.5, true and 2^32 into 2, 1 and 0.
  auto count = [&](const char* key, int* out) {
    const json* v = field(key);
    if (!v || !v->is_number_integer() || (v->is_number_unsigned() ? v->get<uint64_t>() > uint64_t(INT_MAX)
                                                                  : v->get<int64_t>() < 0))
      return fail(std::string("\"") + key + "\" is missing or not an integer in 0.." + std::to_string(INT_MAX));
    *out = v->get<int>();
    return true;
  };
  auto finite = [](const json& v, bool positive) {
    return v.is_number() && std::isfinite(v.get<double>()) && (positive ? v.get<double>() > 0 : v.get<double>() >= 0);
  };
  LogRecord rec;
  if (!string("cell", &rec.cell) || !string("cand", &rec.cand) || !count("round", &rec.round) ||
      !count("rep", &rec.rep))
    return false;
  const json* ns = field("ns");
  if (!ns || !ns->is_array() || ns->empty()) return fail("\"ns\" is missing or not a non-empty array");
  for (size_t k = 0; k < ns->size(); ++k) {
    if (!finite((*ns)[k], true)) return fail("\"ns\"[" + std::to_string(k) + "] is not a finite number > 0");
    rec.ns.push_back((*ns)[k].get<double>());
  }
  const json* sec = field("sec");
  if (!sec || !finite(*sec, false)) return fail("\"sec\" is missing or not a finite number >= 0");
  rec.sec = sec->get<double>();
  if (field("placement") && !count("placement", &rec.placement)) return false;  // absent: 0 (older logs)
  if (const json* cached = field("cached")) {
    if (!cached->is_boolean()) return fail("\"cached\" is not a boolean");
    rec.cached = cached->get<bool>();
  }
  *r = std::move(rec);
  return true;
}

LogReplay MeasurementLog::Replay(const std::string& text, const std::string& name) {
  LogReplay out;
  size_t line_no = 0;
  auto skip = [&](size_t* counter, const std::string& why) {
    ++*counter;
    if (out.problems.size() < LogReplay::kMaxProblems)
      out.problems.push_back(name + ":" + std::to_string(line_no) + ": " + why);
  };
  // Parse complete lines; remember where the last one ends.
  for (size_t pos = 0; pos < text.size();) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    json j;
    std::string why;
    const bool parsed = tables::ParseBoundedJson(text.substr(pos, nl == std::string::npos ? nl : nl - pos), &j, &why);
    if (nl == std::string::npos) {  // no newline: torn last line
      skip(&out.torn, "torn last line (an interrupted write), cut off");
      // Nothing else (killed while writing the header): start over. A last
      // line that parses is not torn: whatever the file is, it stays.
      out.start_over = out.good_end == 0 && !parsed;
      break;
    }
    pos = nl + 1;
    out.good_end = pos;
    if (!parsed) {
      skip(&out.torn, why);  // a corrupt line in the middle
      continue;
    }
    const auto type = j.is_object() ? j.find("type") : j.end();
    if (type != j.end() && type->is_string() && type->get_ref<const std::string&>() == "header") {
      if (!out.have_header) {
        const auto config = j.find("config");
        out.config = config == j.end() ? json() : *config;
        const auto key = j.find("measurement_key");
        out.key = key == j.end() ? json() : *key;
        const auto cache = j.find("cache");
        out.cache = cache == j.end() ? json() : *cache;
      }
      out.have_header = true;
      continue;
    }
    LogRecord r;
    if (!MeasurementLog::FromJson(j, &r, &why)) {
      skip(&out.rejected, why);
      continue;
    }
    LogReplay::Key k{r.cell, r.cand, r.round, r.rep};
    if (out.records.count(k)) {
      ++out.duplicates;
    } else {
      out.order.push_back(k);
      out.records.emplace(std::move(k), std::move(r));
    }
  }
  return out;
}

void MeasurementLog::OpenInMemory(const json&) {
  Close();
  path_.clear();
  records_.clear();
  problems_.clear();
  loaded_ = appended_ = torn_ = rejected_ = duplicates_ = 0;
  ClearCache();
}

void MeasurementLog::ClearCache() {
  cache_.clear();
  cache_path_.clear();
  cache_note_.clear();
  cache_available_ = cache_skipped_ = 0;
}

namespace {

// Moves a log aside to "<path>.<tag>[-i]" (never over an existing file).
// Returns the new name, "" on failure (*error says why, after `why`).
std::string MoveAside(const std::string& path, const std::string& tag, const std::string& why, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string base = path + "." + tag;
  for (int i = 1;; ++i) {
    const std::string aside = i == 1 ? base : base + "-" + std::to_string(i);
    if (::link(path.c_str(), aside.c_str()) == 0) {  // claims the name: fails if it exists
      ::unlink(path.c_str());
      return aside;
    }
    if (errno == EEXIST) continue;
    // No hard links here (some file systems): check, then rename.
    if (fs::exists(aside, ec)) continue;
    fs::rename(path, aside, ec);
    if (ec) {
      if (error) *error = path + ": " + why + " and the old log cannot be moved aside to " + aside + ": " + ec.message();
      return "";
    }
    return aside;
  }
}

// Moves a log measured under another key aside to "<path>.stale-<old
// hash>[-i]". *diffs: the keys' differences, joined.
std::string MoveStale(const std::string& path, const json& old_key, const json& key, std::string* diffs,
                      std::string* error) {
  const auto hash_of = [](const json& k, const char* none) {
    const auto it = k.is_object() ? k.find("hash") : k.end();
    return it != k.end() && it->is_string() ? it->get<std::string>() : std::string(none);
  };
  std::vector<std::string> d = KeyDifferences(old_key, key);
  if (d.empty()) d.push_back("hash " + hash_of(old_key, "absent") + " -> " + hash_of(key, "absent"));
  *diffs = JoinDifferences(d);
  std::string old_hash = hash_of(old_key, "nokey");
  if (old_hash.empty() || old_hash.size() > 32 ||  // a name part, whatever a hand-edited header holds
      !std::all_of(old_hash.begin(), old_hash.end(), [](unsigned char c) { return std::isalnum(c); }))
    old_hash = "other";
  return MoveAside(path, "stale-" + old_hash, "the measurement key changed (" + *diffs + ")", error);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Opens the log for appending after its last whole line (a torn tail is
// cut, so new lines start on a line boundary) and writes `header` when set.
// Returns the descriptor, -1 on failure (*error says why).
int OpenForAppend(const std::string& path, size_t good_end, const std::string* header, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) {
    if (error) *error = path + ": cannot open for writing: " + std::strerror(errno);
    return -1;
  }
  if (::ftruncate(fd, off_t(good_end)) != 0 || ::lseek(fd, off_t(good_end), SEEK_SET) < 0) {
    if (error) *error = path + ": cannot truncate the torn tail: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (header && (::write(fd, header->data(), header->size()) != ssize_t(header->size()) || ::fdatasync(fd) != 0)) {
    if (error) *error = path + ": cannot write: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool MeasurementLog::Open(const std::string& path, const json& config, bool fresh, std::string* error,
                          SyncMode sync, const json& key) {
  namespace fs = std::filesystem;
  Close();
  sync_ = sync;
  path_ = path;
  records_.clear();
  problems_.clear();
  loaded_ = appended_ = torn_ = rejected_ = duplicates_ = 0;
  stale_note_.clear();
  ClearCache();
  const auto make_header = [&](const std::string& cache, std::string* out) {
    try {
      json h{{"type", "header"}, {"format", "actgrad-tune-log"}, {"version", 1}, {"config", config}};
      if (!key.is_null()) h["measurement_key"] = key;
      if (!cache.empty()) h["cache"] = cache;
      *out = h.dump() + "\n";
      return true;
    } catch (const json::exception& e) {  // a string in the config that is not UTF-8
      if (error) *error = path + ": cannot write the header: " + e.what();
      return false;
    }
  };
  std::string header;
  if (!make_header("", &header)) return false;
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);

  std::string text;
  if (fs::exists(path)) {
    // A FIFO would block, a device never end.
    if (!fs::is_regular_file(path, ec)) {
      if (error) *error = path + ": not a regular file; --log takes the log's file";
      return false;
    }
    text = ReadFile(path);
  }
  LogReplay replay = Replay(text, path);
  records_ = std::move(replay.records);
  torn_ = replay.torn;
  rejected_ = replay.rejected;
  duplicates_ = replay.duplicates;
  problems_ = std::move(replay.problems);
  size_t good_end = replay.good_end;
  const auto start_new = [&] {
    records_.clear();
    problems_.clear();
    text.clear();
    good_end = 0;
    torn_ = rejected_ = duplicates_ = 0;
  };
  // Other search settings, same measured part: the samples stay usable.
  const bool search_only = replay.have_header && replay.config != config && !fresh && measured_part_ &&
                           !key.is_null() && measured_part_(replay.config) == measured_part_(config);
  std::string mismatch;
  if (replay.have_header && replay.config != config && !search_only) {
    // (Shown with U+FFFD for bytes that are not UTF-8: dump() would throw.)
    const auto shown = [](const json& c) { return c.dump(-1, ' ', false, json::error_handler_t::replace); };
    mismatch = "log " + path + " was written by a run with different settings:\n  log:  " + shown(replay.config) +
               "\n  this: " + shown(config);
  } else if (!replay.have_header && (replay.start_over || text.empty())) {
    // Nothing usable (empty, or killed while writing the header): start over.
    start_new();
  } else if (!replay.have_header) {
    mismatch = "log " + path + " has no header line (not a tuner log?)";
  }
  if (!mismatch.empty()) {
    if (!fresh) {
      if (error) *error = mismatch + "\nUse --fresh to start a new log (the old one is kept as .old) or --log to choose another file.";
      return false;
    }
    fs::rename(path, path + ".old", ec);
    start_new();
  } else if (!fresh && !key.is_null() && replay.have_header && replay.key != key) {
    // Measured under another key (build, commit, environment, cores): its
    // samples must not mix with this run's. Kept aside, never overwritten.
    std::string diffs;
    const std::string aside = MoveStale(path, replay.key, key, &diffs, error);
    if (aside.empty()) return false;
    stale_note_ = "measurement key changed (" + diffs + "): the old log is kept as " + aside +
                  "; starting fresh";
    start_new();
  } else if (search_only) {
    // The old log is never written again: it is renamed, and the new log
    // names it in its header, so that a resumed run finds it.
    const std::string tag =
        "cache-" + inputs::Hex12(inputs::Fnv1a(replay.config.dump(-1, ' ', false, json::error_handler_t::replace)));
    const std::string aside = MoveAside(path, tag, "the search settings changed", error);
    if (aside.empty()) return false;
    start_new();
    if (!make_header(fs::path(aside).filename().string(), &header)) return false;
    if (LoadCache(aside, config, key))
      cache_note_ = "the log was written with other search settings: it is kept as " + aside + ", a cache of " +
                    std::to_string(cache_available_) + " samples for this run, which starts a new log";
  } else if (fresh && !text.empty()) {
    fs::rename(path, path + ".old", ec);
    start_new();
  } else if (replay.have_header && !replay.cache.is_null()) {
    // Resuming a log started beside a cache: the cache, minus what it gave.
    const std::string name = replay.cache.is_string() ? replay.cache.get<std::string>() : "";
    if (name.empty() || name.find('/') != std::string::npos)
      cache_note_ = "the log's header names no usable cache file: its samples are measured";
    else
      LoadCache((fs::path(path).parent_path() / name).string(), config, key);
  }
  loaded_ = records_.size();
  fd_ = OpenForAppend(path, good_end, text.empty() ? &header : nullptr, error);
  if (fd_ < 0) return false;
  if (sync_ == SyncMode::kBackground) syncer_ = std::thread([this] { SyncLoop(); });
  return true;
}

bool MeasurementLog::LoadCache(const std::string& path, const json& config, const json& key) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    cache_note_ = "the cache " + path + " named by the log's header is missing: what it held is measured";
    return false;
  }
  LogReplay c = Replay(ReadFile(path), path);
  if (!c.have_header || key.is_null() || c.key != key || !measured_part_ ||
      measured_part_(c.config) != measured_part_(config)) {
    cache_note_ = "the cache " + path + " was not measured under this run's measurement key and settings: not used";
    return false;
  }
  cache_path_ = path;
  cache_skipped_ = c.torn + c.rejected;
  for (auto& p : c.problems)
    if (problems_.size() < LogReplay::kMaxProblems) problems_.push_back(std::move(p));
  for (const Key& k : c.order) {
    LogRecord& r = c.records.at(k);
    cache_[{r.cell, r.cand, r.placement}].samples.push_back(std::move(r));
  }
  // Taken ones are this log's "cached" records: the first ones of each list,
  // since they are handed out in order.
  for (const auto& [k, r] : records_)
    if (r.cached)
      if (const auto it = cache_.find({r.cell, r.cand, r.placement}); it != cache_.end()) ++it->second.next;
  for (auto& [k, list] : cache_) {
    list.next = std::min(list.next, list.samples.size());
    cache_available_ += list.samples.size() - list.next;
  }
  return true;
}

const LogRecord* MeasurementLog::TakeCached(const std::string& key, const std::string& cand, int placement) {
  const auto it = cache_.find({key, cand, placement});
  if (it == cache_.end() || it->second.next >= it->second.samples.size()) return nullptr;
  return &it->second.samples[it->second.next++];
}

const LogRecord* MeasurementLog::Find(const std::string& key, const std::string& cand, int round, int rep) const {
  const auto it = records_.find(Key{key, cand, round, rep});
  return it == records_.end() ? nullptr : &it->second;
}

void MeasurementLog::Append(const LogRecord& r) {
  Key k{r.cell, r.cand, r.round, r.rep};
  if (fd_ >= 0) {
    const std::string line = ToJson(r).dump() + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
      }
      p += w;
      left -= size_t(w);
    }
    if (sync_ == SyncMode::kEveryLine) {
      if (::fdatasync(fd_) != 0) throw std::runtime_error(path_ + ": fsync failed: " + std::strerror(errno));
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      if (sync_error_) throw std::runtime_error(path_ + ": fsync failed: " + std::strerror(sync_error_));
      ++written_;
      cv_.notify_all();
    }
  }
  records_.insert_or_assign(std::move(k), r);
  ++appended_;
}

}  // namespace actgrad::tune
