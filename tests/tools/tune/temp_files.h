// Per-process temporary files of the tuner tests: <tmp>/<prefix><pid>/<name>,
// the directory removed at exit by the process that made it (a forked child
// that _exits leaves it to its parent).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace actgrad::tune::testing {

class TempFiles {
 public:
  explicit TempFiles(const std::string& prefix)
      : dir_(std::filesystem::temp_directory_path() / (prefix + std::to_string(getpid()))) {}
  ~TempFiles() {
    std::error_code ec;
    if (getpid() == pid_) std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const {
    std::filesystem::create_directories(dir_);
    return (dir_ / name).string();
  }

 private:
  pid_t pid_ = getpid();
  std::filesystem::path dir_;
};

}  // namespace actgrad::tune::testing
