#include "tiling/tuner/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

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
              {"rep", r.rep},  {"ns", r.ns},     {"sec", r.sec}};
}

bool MeasurementLog::FromJson(const json& j, LogRecord* r) {
  try {
    if (!j.is_object() || j.value("type", "") != "m") return false;
    r->cell = j.at("cell").get<std::string>();
    r->cand = j.at("cand").get<std::string>();
    r->round = j.at("round").get<int>();
    r->rep = j.at("rep").get<int>();
    r->ns = j.at("ns").get<std::vector<double>>();
    r->sec = j.at("sec").get<double>();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

void MeasurementLog::OpenInMemory(const json&) {
  Close();
  path_.clear();
  records_.clear();
  loaded_ = appended_ = torn_ = duplicates_ = 0;
}

bool MeasurementLog::Open(const std::string& path, const json& config, bool fresh, std::string* error,
                          SyncMode sync) {
  namespace fs = std::filesystem;
  Close();
  sync_ = sync;
  path_ = path;
  records_.clear();
  loaded_ = appended_ = torn_ = duplicates_ = 0;
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);

  std::string text;
  if (fs::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  // Parse complete lines; remember where the last good one ends.
  size_t good_end = 0;
  bool have_header = false;
  std::string mismatch;
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {  // no newline: torn last line
      ++torn_;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++torn_;  // corrupt line in the middle: skip it
    } else if (j.value("type", "") == "header") {
      if (!have_header && j.value("config", json()) != config) {
        mismatch = "log " + path + " was written by a run with different settings:\n  log:  " +
                   j.value("config", json()).dump() + "\n  this: " + config.dump();
      }
      have_header = true;
    } else {
      LogRecord r;
      if (!FromJson(j, &r)) {
        ++torn_;
      } else {
        Key k{r.cell, r.cand, r.round, r.rep};
        if (records_.count(k)) ++duplicates_;
        else records_.emplace(std::move(k), std::move(r));
      }
    }
    pos = nl + 1;
    good_end = pos;
  }
  if (!have_header && records_.empty() && torn_ <= 1) {
    // Nothing usable (empty, or killed while writing the header): start over.
    text.clear();
    good_end = 0;
    torn_ = 0;
  } else if (!have_header && mismatch.empty()) {
    mismatch = "log " + path + " has no header line (not a tuner log?)";
  }
  if (!mismatch.empty()) {
    if (!fresh) {
      if (error) *error = mismatch + "\nUse --fresh to start a new log (the old one is kept as .old) or --log to choose another file.";
      return false;
    }
    fs::rename(path, path + ".old", ec);
    records_.clear();
    text.clear();
    good_end = 0;
    torn_ = duplicates_ = 0;
  } else if (fresh && !text.empty()) {
    fs::rename(path, path + ".old", ec);
    records_.clear();
    text.clear();
    good_end = 0;
    torn_ = duplicates_ = 0;
  }
  loaded_ = records_.size();
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd_ < 0) {
    if (error) *error = path + ": cannot open for writing: " + std::strerror(errno);
    return false;
  }
  // Cut a torn tail so that new lines start on a line boundary.
  if (::ftruncate(fd_, off_t(good_end)) != 0 || ::lseek(fd_, off_t(good_end), SEEK_SET) < 0) {
    if (error) *error = path + ": cannot truncate the torn tail: " + std::strerror(errno);
    return false;
  }
  if (text.empty()) {
    const std::string header =
        json{{"type", "header"}, {"format", "actgrad-tune-log"}, {"version", 1}, {"config", config}}.dump() + "\n";
    if (::write(fd_, header.data(), header.size()) != ssize_t(header.size()) || ::fdatasync(fd_) != 0) {
      if (error) *error = path + ": cannot write: " + std::strerror(errno);
      return false;
    }
  }
  if (sync_ == SyncMode::kBackground) syncer_ = std::thread([this] { SyncLoop(); });
  return true;
}

const LogRecord* MeasurementLog::Find(const std::string& cell, const std::string& cand, int round, int rep) const {
  const auto it = records_.find(Key{cell, cand, round, rep});
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
