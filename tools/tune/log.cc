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
  return json{{"type", "m"}, {"cell", r.cell}, {"cand", r.cand}, {"round", r.round},
              {"rep", r.rep},  {"ns", r.ns},     {"sec", r.sec},    {"placement", r.placement}};
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
    if (out.records.count(k)) ++out.duplicates;
    else out.records.emplace(std::move(k), std::move(r));
  }
  return out;
}

void MeasurementLog::OpenInMemory(const json&) {
  Close();
  path_.clear();
  records_.clear();
  problems_.clear();
  loaded_ = appended_ = torn_ = rejected_ = duplicates_ = 0;
}

namespace {

// Moves a log measured under another key aside to "<path>.stale-<old
// hash>[-i]" (never over an existing file). Returns the new name, "" on
// failure (*error says why); *diffs: the keys' differences, joined.
std::string MoveAside(const std::string& path, const json& old_key, const json& key, std::string* diffs,
                      std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
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
  const std::string base = path + ".stale-" + old_hash;
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
      if (error) *error = path + ": the measurement key changed (" + *diffs +
                          ") and the old log cannot be moved aside to " + aside + ": " + ec.message();
      return "";
    }
    return aside;
  }
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
  std::string header;
  try {
    json h{{"type", "header"}, {"format", "actgrad-tune-log"}, {"version", 1}, {"config", config}};
    if (!key.is_null()) h["measurement_key"] = key;
    header = h.dump() + "\n";
  } catch (const json::exception& e) {  // a string in the config that is not UTF-8
    if (error) *error = path + ": cannot write the header: " + e.what();
    return false;
  }
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);

  std::string text;
  if (fs::exists(path)) {
    // A FIFO would block, a device never end.
    if (!fs::is_regular_file(path, ec)) {
      if (error) *error = path + ": not a regular file; --log takes the log's file";
      return false;
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  LogReplay replay = Replay(text, path);
  records_ = std::move(replay.records);
  torn_ = replay.torn;
  rejected_ = replay.rejected;
  duplicates_ = replay.duplicates;
  problems_ = std::move(replay.problems);
  size_t good_end = replay.good_end;
  std::string mismatch;
  if (replay.have_header && replay.config != config) {
    // (Shown with U+FFFD for bytes that are not UTF-8: dump() would throw.)
    const auto shown = [](const json& c) { return c.dump(-1, ' ', false, json::error_handler_t::replace); };
    mismatch = "log " + path + " was written by a run with different settings:\n  log:  " + shown(replay.config) +
               "\n  this: " + shown(config);
  } else if (!replay.have_header && (replay.start_over || text.empty())) {
    // Nothing usable (empty, or killed while writing the header): start over.
    text.clear();
    good_end = 0;
    torn_ = 0;
    problems_.clear();
  } else if (!replay.have_header) {
    mismatch = "log " + path + " has no header line (not a tuner log?)";
  }
  if (!mismatch.empty()) {
    if (!fresh) {
      if (error) *error = mismatch + "\nUse --fresh to start a new log (the old one is kept as .old) or --log to choose another file.";
      return false;
    }
    fs::rename(path, path + ".old", ec);
    records_.clear();
    problems_.clear();
    text.clear();
    good_end = 0;
    torn_ = rejected_ = duplicates_ = 0;
  } else if (!fresh && !key.is_null() && replay.have_header && replay.key != key) {
    // Measured under another key (build, commit, environment, cores): its
    // samples must not mix with this run's. Kept aside, never overwritten.
    std::string diffs;
    const std::string aside = MoveAside(path, replay.key, key, &diffs, error);
    if (aside.empty()) return false;
    stale_note_ = "measurement key changed (" + diffs + "): the old log is kept as " + aside +
                  "; starting fresh";
    records_.clear();
    problems_.clear();
    text.clear();
    good_end = 0;
    torn_ = rejected_ = duplicates_ = 0;
  } else if (fresh && !text.empty()) {
    fs::rename(path, path + ".old", ec);
    records_.clear();
    problems_.clear();
    text.clear();
    good_end = 0;
    torn_ = rejected_ = duplicates_ = 0;
  }
  loaded_ = records_.size();
  fd_ = OpenForAppend(path, good_end, text.empty() ? &header : nullptr, error);
  if (fd_ < 0) return false;
  if (sync_ == SyncMode::kBackground) syncer_ = std::thread([this] { SyncLoop(); });
  return true;
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
