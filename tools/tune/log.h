// The tuner's append-only measurement log (JSON Lines). Every measurement is
// written to the file (one write(2) per line) as it is taken, so a killed
// process loses nothing; a resumed run replays the log so that nothing
// measured is lost and nothing is measured twice. Durability against power
// loss: with SyncMode::kEveryLine each line is fdatasync'ed before Append
// returns; the default kBackground has a thread fdatasync continuously (an
// fsync costs ~5 ms on the VMs we tune on, more than a sample), so a power
// loss can cost at most the lines of the last fsync interval.
//
//   {"type":"header","format":"actgrad-tune-log","version":1,"config":{...}}
//   {"type":"m","cell":"gelu_bwd/f32/none/contig/k8","cand":"<Choice::Key()>",
//    "round":0,"rep":0,"ns":[12345.6],"sec":0.0021,"placement":0}
//
// "placement" (the operand layout of the sample, inputs::PlacementAt) is
// optional: lines without it (logs of search_version 8 and before) read as
// placement 0, and readers that predate it ignore it. "cached":true (absent:
// false) marks a sample taken from the log's cache, not measured by its run.
//
// The cache: a log whose header differs from the run's in search settings
// only (same measurement key, same measured part of the config:
// SetMeasuredPart) is renamed to <path>.cache-<hash of its config> and a new
// log is started whose header names it ("cache": its file name, in the log's
// directory). Its samples, per (cell, candidate, placement) in the order
// logged, are handed out once each (TakeCached) to requests the new log has
// no record for; a resumed log with a "cache" header loads that file again
// and skips the samples its "cached" records already took.
//
// A torn last line (power loss, kill during a write) is ignored and cut off
// before new lines are appended. Other bad lines (not JSON, nested deeper
// than 64, fields of the wrong type, samples that are not finite numbers > 0)
// are skipped, each with a message naming the line (problems()).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace actgrad::tune {

// One logged sample. `cell` and `cand` are keys, as in the log's JSON: the
// cell's key (CellKey, "<op>/<dtype>/<mode>/<layout>/o<octave>[@n]", or a
// stage's "<key>/split", "screen/...") and the candidate's Choice::Key
// (ParseChoiceKey reads it back).
struct LogRecord {
  std::string cell;
  std::string cand;
  int round = 0;
  int rep = 0;
  std::vector<double> ns;  // samples (ns per call)
  double sec = 0;          // wall time the measurement took (for the budget)
  int placement = 0;       // where the operands sat (inputs::PlacementAt)
  bool cached = false;     // taken from the log's cache (another search's log), not measured by this run
};

// A logged record that contradicts the run's settings (a log edited by hand,
// or written by another tuner version under the same header): the run stops
// with this message instead of replaying it or skipping its cell.
class LogMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the text of a log holds (MeasurementLog::Replay).
struct LogReplay {
  using Key = std::tuple<std::string, std::string, int, int>;  // cell, cand, round, rep
  std::map<Key, LogRecord> records;  // the first of duplicates
  std::vector<Key> order;            // the keys of `records` in the order logged
  bool have_header = false;
  nlohmann::json config;  // the first header's
  nlohmann::json key;     // the first header's "measurement_key" (null if it has none)
  nlohmann::json cache;   // the first header's "cache" (null if it has none)
  size_t good_end = 0;    // where the last complete line ends: new lines go there
  size_t torn = 0;        // lines that are not JSON: the torn last one, corrupt ones
  size_t rejected = 0;    // JSON lines that are neither a header nor a valid record
  size_t duplicates = 0;
  bool start_over = false;  // nothing but a torn first line (killed while writing the header)
  std::vector<std::string> problems;  // "<name>:<line>: why", the first kMaxProblems skipped lines
  static constexpr size_t kMaxProblems = 10;
};

class MeasurementLog {
 public:
  enum class SyncMode { kBackground, kEveryLine };
  MeasurementLog() = default;
  ~MeasurementLog();
  MeasurementLog(const MeasurementLog&) = delete;
  MeasurementLog& operator=(const MeasurementLog&) = delete;

  // Opens (creating directories and the file as needed). An existing log
  // whose header config differs from `config` is an error unless `fresh`, in
  // which case it is renamed to <path>.old and a new log is started, or
  // unless it differs in search settings only (SetMeasuredPart): then it
  // becomes the cache of a new log (cache_note() says so).
  // `key` (MeasurementKey::ToJson; null: not checked) goes into the header
  // ("measurement_key"); an existing log of the same config (or search
  // settings only) whose key differs (or that has none) is not resumed: it
  // is renamed to <path>.stale-<its key's hash> (never over an existing file)
  // and a new log is started; stale_note() says so and names the fields that
  // differ.
  bool Open(const std::string& path, const nlohmann::json& config, bool fresh, std::string* error,
            SyncMode sync = SyncMode::kBackground, const nlohmann::json& key = nlohmann::json());
  // The part of a header config that changes what a sample measures (the
  // rest are search settings: how the search chose what to measure). Set
  // before Open: an existing log of the same measurement key (non-null) whose
  // config differs from `config` but whose measured part equals this run's
  // becomes the new log's cache (see the top of this file) instead of being
  // refused; one whose key differs too is moved aside as stale. Unset: every
  // config difference is refused.
  void SetMeasuredPart(std::function<nlohmann::json(const nlohmann::json&)> measured) {
    measured_part_ = std::move(measured);
  }
  // In-memory only (no file): for --verify and tests.
  void OpenInMemory(const nlohmann::json& config);

  const LogRecord* Find(const std::string& key, const std::string& cand, int round, int rep) const;
  // The next cached sample of (cell key, candidate, placement) that no
  // request has taken yet, in the cache's log order; null when none is left.
  // The caller appends it as its own record (cached = true).
  const LogRecord* TakeCached(const std::string& key, const std::string& cand, int placement);  // Appends, flushes and fsyncs one record. Throws std::runtime_error on I/O failure.
  void Append(const LogRecord& r);
  // Blocks until everything appended so far is on disk.
  void Sync();
  void Close();

  const std::string& path() const { return path_; }
  size_t loaded() const { return loaded_; }  // records read from the file at Open
  size_t appended() const { return appended_; }
  size_t torn_lines() const { return torn_; }
  size_t rejected_lines() const { return rejected_; }
  size_t duplicate_lines() const { return duplicates_; }
  // A message for each line skipped at Open (the first LogReplay::kMaxProblems).
  const std::vector<std::string>& problems() const { return problems_; }
  // Set by Open when the log's measurement key differed: "measurement key
  // changed (...): the old log is kept as X; starting fresh". Empty otherwise.
  const std::string& stale_note() const { return stale_note_; }
  // The cache file ("" when none), its samples still untaken at Open, the
  // lines of it that were skipped (torn or bad; their messages are in
  // problems()), and a note for the user when Open started a new log beside
  // it or could not load it ("" otherwise).
  const std::string& cache_path() const { return cache_path_; }
  size_t cache_available() const { return cache_available_; }
  size_t cache_skipped_lines() const { return cache_skipped_; }
  const std::string& cache_note() const { return cache_note_; }

  static nlohmann::json ToJson(const LogRecord& r);
  // A measurement line: "type" "m", strings cell and cand, integers round and
  // rep in 0..INT_MAX, "ns" a non-empty array of finite numbers > 0, "sec" a
  // finite number >= 0, "placement" (optional, default 0) an integer in
  // 0..INT_MAX. Nothing is converted; `why` says what is wrong.
  static bool FromJson(const nlohmann::json& j, LogRecord* r, std::string* why = nullptr);
  // Parses a log's text (`name` is used in messages); never throws (but bad_alloc).
  static LogReplay Replay(const std::string& text, const std::string& name);

 private:
  using Key = LogReplay::Key;
  std::string path_;
  int fd_ = -1;
  std::map<Key, LogRecord> records_;
  size_t loaded_ = 0, appended_ = 0, torn_ = 0, rejected_ = 0, duplicates_ = 0;
  std::vector<std::string> problems_;
  std::string stale_note_;
  std::function<nlohmann::json(const nlohmann::json&)> measured_part_;
  struct CacheList {
    std::vector<LogRecord> samples;  // in log order
    size_t next = 0;                 // the first not yet taken
  };
  std::map<std::tuple<std::string, std::string, int>, CacheList> cache_;  // (cell, cand, placement)
  std::string cache_path_, cache_note_;
  size_t cache_available_ = 0, cache_skipped_ = 0;
  // Loads `path` (a log of the same measurement key and measured part) as
  // the cache; false (cache_note_ says why) when it is not usable.
  bool LoadCache(const std::string& path, const nlohmann::json& config, const nlohmann::json& key);
  void ClearCache();
  SyncMode sync_ = SyncMode::kBackground;
  // Background fdatasync.
  void SyncLoop();
  std::thread syncer_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t written_ = 0, synced_ = 0;  // line counters
  bool quit_ = false;
  int sync_error_ = 0;
};

}  // namespace actgrad::tune
