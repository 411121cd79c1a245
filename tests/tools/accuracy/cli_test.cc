// accuracy.cli.*: the actgrad-accuracy command line. Bad arguments give a
// clear error, status 2 and no output; a small run (GELU f32, fp32 count 2000)
// writes the JSON and markdown it promises, with the fields of
// docs/conventions.md, and its verdicts are the library's CheckVariant ones.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/accuracy/check.h"
#include "variants/variant.h"

namespace actgrad::acc {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string out, err;
};

std::string ReadText(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class AccuracyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("actgrad_acc_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs the tool with `args` (no shell), stdout and stderr to files.
  Outcome Run(const std::vector<std::string>& args) const {
    const std::string out = Path("stdout"), err = Path("stderr");
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(127);
      std::vector<char*> argv{const_cast<char*>(ACTGRAD_ACCURACY_TOOL)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    int ws = 0;
    ::waitpid(pid, &ws, 0);
    return {WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, ReadText(out), ReadText(err)};
  }

  // The outputs a rejected command must not have written.
  void ExpectNoOutputs() const {
    EXPECT_FALSE(fs::exists(Path("a.json")));
    EXPECT_FALSE(fs::exists(Path("a.md")));
  }

  fs::path dir_;
};

TEST_F(AccuracyCli, BadArgumentsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"--ops", "gelu_bwd,nope"}, "unknown op \"nope\" in --ops"},
      {{"--dtypes", "f64"}, "unknown dtype \"f64\" in --dtypes"},
      {{"--filter", "("}, "--filter \"(\" is not a valid regular expression"},
      {{"--filter", "^no_such_variant$"}, "no variant matches the selection"},
      {{"--threads", "0"}, "--threads"},
      {{"--threads", "many"}, "--threads"},
      {{"--fp32-count", "0"}, "--fp32-count"},
      {{"--fp32-count", "10", "--quick"}, "excludes"},
      {{"--seed", "-1"}, "--seed"},
      {{"--seed", "abc"}, "--seed"},
      {{"--bogus"}, "--bogus"},
  };
  for (const Case& c : cases) {
    // A small selection, so that an argument wrongly accepted costs a second.
    std::vector<std::string> args = c.args;
    for (const char* a : {"--ops", "gelu_bwd", "--dtypes", "f32"}) args.push_back(a);
    if (c.args[0] != "--fp32-count") args.insert(args.end(), {"--fp32-count", "2000"});
    args.insert(args.end(), {"--json", Path("a.json"), "--md", Path("a.md")});
    const Outcome r = Run(args);
    SCOPED_TRACE(c.args[0] + " " + (c.args.size() > 1 ? c.args[1] : ""));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("actgrad-accuracy: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
    ExpectNoOutputs();
  }
}

TEST_F(AccuracyCli, UnwritableOutputIsAnErrorBeforeTheRun) {
  const std::string missing_dir = Path("no/such/dir/a.json");
  const std::string cases[][3] = {
      {"--json", missing_dir, "directory " + Path("no/such/dir") + " does not exist"},
      {"--md", dir_.string(), "it is a directory"},
  };
  for (const auto& c : cases) {
    const Outcome r = Run({"--ops", "gelu_bwd", "--dtypes", "f32", c[0], c[1]});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("cannot write " + c[0] + " " + c[1] + ": " + c[2]), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("variants checked"), std::string::npos) << "it ran before refusing:\n" << r.err;
  }
}

TEST_F(AccuracyCli, HelpListsTheOptions) {
  const Outcome r = Run({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* opt : {"--ops", "--dtypes", "--filter", "--fp32-count", "--quick", "--md", "--json", "--threads",
                          "--seed"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

TEST_F(AccuracyCli, SmallRunWritesTheDocumentsWithTheLibrarysVerdicts) {
  const Outcome r = Run({"--ops", "gelu_bwd", "--dtypes", "f32", "--fp32-count", "2000", "--threads", "2", "--json",
                         Path("a.json"), "--md", Path("a.md")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + Path("a.json")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + Path("a.md")), std::string::npos) << r.out;

  const nlohmann::json doc = nlohmann::json::parse(ReadText(Path("a.json")));
  EXPECT_EQ(doc.at("schema"), "actgrad-accuracy");
  EXPECT_EQ(doc.at("fp32_count"), 2000);
  EXPECT_NE(doc.at("command").get<std::string>().find("--ops gelu_bwd --dtypes f32"), std::string::npos);
  AccuracyOptions opt;
  opt.fp32_count = 2000;
  opt.seed = doc.at("seed").get<uint64_t>();
  EXPECT_EQ(opt.seed, AccuracyOptions{}.seed);  // the default seed

  // Every GELU f32 variant appears once: run here, or not run for lack of the target.
  std::set<std::string> expected, seen;
  for (const Variant& v : Variants())
    if (v.op == Op::kGeluBwd && v.dtype == DType::kF32) expected.insert(v.name);
  const std::string md = ReadText(Path("a.md"));
  size_t shippable = 0;
  for (const nlohmann::json& j : doc.at("results")) {
    for (const char* field : {"op", "dtype", "variant", "count", "share", "max_err", "max_ulp", "shippable"})
      ASSERT_TRUE(j.contains(field)) << field << " missing in " << j.dump();
    const std::string name = j.at("variant");
    SCOPED_TRACE(name);
    EXPECT_TRUE(seen.insert(name).second) << "listed twice";
    EXPECT_EQ(j.at("op"), "gelu_bwd");
    EXPECT_EQ(j.at("dtype"), "f32");
    const Variant* v = FindVariant(name);
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->supported);
    const VariantAccuracy lib = CheckVariant(*v, opt);
    EXPECT_EQ(j.at("shippable").get<bool>(), lib.pass) << lib.first_failure;
    EXPECT_EQ(j.at("count").get<uint64_t>(), lib.count);
    EXPECT_DOUBLE_EQ(j.at("share").get<double>(), lib.share);
    if (std::isfinite(lib.max_err)) EXPECT_DOUBLE_EQ(j.at("max_err").get<double>(), lib.max_err);
    EXPECT_EQ(j.at("first_failure").get<std::string>(), lib.first_failure);
    shippable += lib.pass;
    EXPECT_NE(md.find(name), std::string::npos) << "not in the markdown";
  }
  for (const nlohmann::json& j : doc.at("not_run")) {
    const std::string name = j.at("variant");
    EXPECT_TRUE(seen.insert(name).second) << name << " listed twice";
    const Variant* v = FindVariant(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_FALSE(v->supported) << name;
    EXPECT_NE(j.at("reason").get<std::string>().find("not run"), std::string::npos);
  }
  EXPECT_EQ(seen, expected);
  // The console summary and the markdown's header agree with the results.
  const std::string tally = std::to_string(shippable) + "/" + std::to_string(doc.at("results").size());
  EXPECT_NE(r.out.find("gelu_bwd         f32   " + tally), std::string::npos) << r.out;
  EXPECT_EQ(md.rfind("# Accuracy of the kernel variants", 0), 0u);
  EXPECT_NE(md.find(doc.at("command").get<std::string>()), std::string::npos);
  EXPECT_NE(md.find(doc.at("machine_id").get<std::string>()), std::string::npos);
}

}  // namespace
}  // namespace actgrad::acc
