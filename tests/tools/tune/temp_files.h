// Per-process temporary files of the tuner tests: <tmp>/<prefix><pid>/<name>,
// the directory removed at exit by the process that made it (a forked child
// that _exits leaves it to its parent).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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

// The test binary's own directory, made before main (by the parent, never by
// a forked child) and shared by its test files: their names differ.
inline TempFiles test_files("actgrad_tuner_test_");
inline std::string TempPath(const std::string& name) { return test_files.Path(name); }

// A file's whole contents ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace actgrad::tune::testing
