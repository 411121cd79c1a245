// The results document: JSON round trip, the loader's error handling, the
// markdown, the atomic write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "tools/accuracy/results.h"

namespace actgrad::acc {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "actgrad_acc_" + std::to_string(::getpid()) + "_" + name;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

AccuracyDocument SampleDoc() {
  AccuracyDocument d;
  d.machine_id = "genuineintel-6-143";
  d.cpu_model = "Test CPU";
  d.isa_family = "x86-avx512";
  d.date = "2026-11-22T01:00:00Z";
  d.command = "actgrad-accuracy --quick";
  d.tool_version = "0.1.0";
  d.fp32_count = 100000;
  d.seed = 42;
  VariantAccuracy a;
  a.variant = "gelu_bwd.f32.none.erf_as.u4.avx3";
  a.op = Op::kGeluBwd;
  a.dtype = DType::kF32;
  a.gelu_mode = GeluApprox::kTanh;
  a.approx = "erf_as";
  a.target = "avx3";
  a.run = true;
  a.count = 123456;
  a.share = 0.99995;
  a.max_err = 2.5e-4;
  a.max_ulp = 7;
  a.pass = true;
  a.claimed_max_err = 3e-7;
  a.g1_max_err = 2e-7;
  a.claim_allowance = 3.6e-7;
  a.meets_claim = true;
  VariantAccuracy b = a;
  b.variant = "logit_grad.f16.reg.rcp.u2.avx2";
  b.op = Op::kLogitGrad;
  b.dtype = DType::kF16;
  b.gelu_mode = GeluApprox::kNone;
  b.pass = false;
  b.meets_claim = false;
  b.special_mismatch = 3;
  b.max_err = std::numeric_limits<double>::infinity();
  b.first_failure = "eps=-1: x=0.5 g=1: got inf, reference 4 (err inf)";
  VariantAccuracy c;
  c.variant = "selu_bwd.f16.f16native.exact.u2.avx512fp16";
  c.op = Op::kSeluBwd;
  c.dtype = DType::kF16;
  c.target = "avx512fp16";
  c.run = false;
  c.first_failure = "not run (CPU lacks avx512fp16)";
  d.results = {a, b};
  d.not_run = {c};
  return d;
}

TEST(Results, JsonRoundTrip) {
  const AccuracyDocument d = SampleDoc();
  const nlohmann::json j = ToJson(d);
  EXPECT_EQ(j["schema"], "actgrad-accuracy");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["machine_id"], "genuineintel-6-143");
  ASSERT_EQ(j["results"].size(), 2u);
  for (const char* key : {"op", "dtype", "variant", "count", "share", "max_err", "max_ulp", "shippable",
                          "claimed_max_err", "meets_claim", "special_mismatch", "first_failure"})
    EXPECT_TRUE(j["results"][0].contains(key)) << key;
  EXPECT_TRUE(j["results"][1]["max_err"].is_null());  // Inf -> null
  const AccuracyDocument back = AccuracyDocumentFromJson(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.machine_id, d.machine_id);
  EXPECT_EQ(back.command, d.command);
  EXPECT_EQ(back.fp32_count, d.fp32_count);
  ASSERT_EQ(back.results.size(), 2u);
  const auto& a = back.results[0];
  EXPECT_EQ(a.variant, d.results[0].variant);
  EXPECT_EQ(a.op, Op::kGeluBwd);
  EXPECT_EQ(a.gelu_mode, GeluApprox::kTanh);
  EXPECT_EQ(a.count, 123456u);
  EXPECT_EQ(a.share, 0.99995);
  EXPECT_EQ(a.max_ulp, 7);
  EXPECT_TRUE(a.pass);
  EXPECT_EQ(a.claimed_max_err, 3e-7);
  EXPECT_TRUE(a.meets_claim);
  const auto& b = back.results[1];
  EXPECT_FALSE(b.pass);
  EXPECT_EQ(b.special_mismatch, 3u);
  EXPECT_TRUE(std::isinf(b.max_err));
  EXPECT_EQ(b.first_failure, d.results[1].first_failure);
  ASSERT_EQ(back.not_run.size(), 1u);
  EXPECT_FALSE(back.not_run[0].run);
  EXPECT_EQ(back.not_run[0].first_failure, "not run (CPU lacks avx512fp16)");
}

TEST(Results, FileTextIsTheSameDocument) {
  const AccuracyDocument d = SampleDoc();
  const std::string text = ToJsonText(d);
  EXPECT_EQ(nlohmann::json::parse(text), ToJson(d));
  EXPECT_EQ(text.rfind("{\n  \"schema\": \"actgrad-accuracy\",\n", 0), 0u) << text;
  AccuracyDocument empty = d;
  empty.results.clear();
  empty.not_run.clear();
  EXPECT_EQ(nlohmann::json::parse(ToJsonText(empty)), ToJson(empty));
}

// --keep: earlier results fill in what this run did not check (here a
// variant this CPU could not run); renamed variants are dropped; the kept
// lines survive the JSON round trip and show in the markdown.
TEST(Results, KeepEarlierCarriesOverUncheckedVariants) {
  AccuracyDocument earlier = SampleDoc();
  earlier.machine_id = "genuineintel-6-143";
  earlier.date = "2026-11-20T00:00:00Z";
  VariantAccuracy native = earlier.not_run[0];
  native.run = true;
  native.pass = true;
  native.first_failure.clear();
  earlier.results.push_back(native);  // checked there, not run here
  earlier.not_run.clear();
  AccuracyDocument now;
  now.machine_id = "authenticamd-25-17";
  now.results = {SampleDoc().results[0]};  // checked again here
  now.results[0].max_ulp = 1;
  now.not_run = {SampleDoc().not_run[0]};
  const std::vector<std::string> known = {now.results[0].variant, native.variant};  // results[1] was renamed
  size_t dropped = 0;
  EXPECT_EQ(KeepEarlier(earlier, known, &now, &dropped), 1u);
  EXPECT_EQ(dropped, 1u);
  ASSERT_EQ(now.results.size(), 2u);
  EXPECT_TRUE(now.not_run.empty());
  AccuracyCache cache;
  cache.doc = now;
  cache.Index();
  EXPECT_TRUE(cache.Shippable(native.variant));
  ASSERT_NE(cache.Find(SampleDoc().results[0].variant), nullptr);
  EXPECT_EQ(cache.Find(SampleDoc().results[0].variant)->max_ulp, 1);  // this run's result wins
  ASSERT_EQ(now.kept_from.size(), 1u);
  EXPECT_NE(now.kept_from[0].find("1 results of genuineintel-6-143"), std::string::npos) << now.kept_from[0];
  const AccuracyDocument back = AccuracyDocumentFromJson(nlohmann::json::parse(ToJsonText(now)));
  EXPECT_EQ(back.kept_from, now.kept_from);
  // A second --keep run names the original run, not the one in between.
  AccuracyDocument later;
  later.machine_id = "authenticamd-25-17";
  later.date = "2026-11-27T00:00:00Z";
  size_t dropped2 = 0;
  EXPECT_EQ(KeepEarlier(back, known, &later, &dropped2), 2u);
  ASSERT_EQ(later.kept_from.size(), 2u);  // one per original run
  const std::string lines = later.kept_from[0] + "\n" + later.kept_from[1];
  EXPECT_NE(lines.find("1 results of genuineintel-6-143 ("), std::string::npos) << lines;
  EXPECT_NE(lines.find("), 2026-11-20"), std::string::npos) << lines;
  EXPECT_NE(lines.find("1 results of authenticamd-25-17"), std::string::npos) << lines;
  EXPECT_NE(ToMarkdown(now).find("kept from an earlier run"), std::string::npos);
}

TEST(Results, LoaderFindsShippableVariants) {
  const std::string path = TempPath("ok.json");
  WriteFileAtomic(path, ToJsonText(SampleDoc()));
  const AccuracyCache c = LoadAccuracyCache(path);
  EXPECT_TRUE(c.Shippable("gelu_bwd.f32.none.erf_as.u4.avx3"));
  EXPECT_FALSE(c.Shippable("logit_grad.f16.reg.rcp.u2.avx2"));             // failed
  EXPECT_FALSE(c.Shippable("selu_bwd.f16.f16native.exact.u2.avx512fp16"));  // not run
  EXPECT_FALSE(c.Shippable("no.such.variant"));
  ASSERT_NE(c.Find("logit_grad.f16.reg.rcp.u2.avx2"), nullptr);
  EXPECT_EQ(c.Find("no.such.variant"), nullptr);
  std::remove(path.c_str());
}

TEST(Results, LoaderReportsBadFilesClearly) {
  std::string error;
  AccuracyCache c;
  // Missing file.
  const std::string missing = TempPath("missing.json");
  EXPECT_FALSE(TryLoadAccuracyCache(missing, &c, &error));
  EXPECT_NE(error.find(missing), std::string::npos) << error;
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  EXPECT_NE(error.find("actgrad-accuracy --json"), std::string::npos) << error;
  EXPECT_THROW(LoadAccuracyCache(missing), AccuracyCacheError);
  // Truncated JSON.
  const std::string path = TempPath("bad.json");
  const std::string good = ToJson(SampleDoc()).dump();
  WriteText(path, good.substr(0, good.size() / 2));
  EXPECT_FALSE(TryLoadAccuracyCache(path, &c, &error));
  EXPECT_NE(error.find("not valid JSON"), std::string::npos) << error;
  // Wrong schema / version / field types.
  const std::pair<std::string, std::string> cases[] = {
      {R"({"schema":"actgrad-tiling-table","version":1,"machine_id":"x","results":[]})", "schema"},
      {R"({"schema":"actgrad-accuracy","version":2,"machine_id":"x","results":[]})", "version"},
      {R"({"schema":"actgrad-accuracy","version":1,"machine_id":"x"})", "results"},
      {R"({"schema":"actgrad-accuracy","version":1,"machine_id":"x","results":{}})", "results"},
      {R"({"schema":"actgrad-accuracy","version":1,"machine_id":"x","results":[{"variant":"a"}]})", "op"},
      {R"({"schema":"actgrad-accuracy","version":1,"machine_id":"x","results":[{"variant":"a","op":"gelu_bwd",
          "dtype":"f32","count":1,"share":1,"max_err":0,"max_ulp":0,"shippable":"yes"}]})", "shippable"},
      {R"({"schema":"actgrad-accuracy","version":1,"machine_id":"x","results":[{"variant":"a","op":"nope",
          "dtype":"f32","count":1,"share":1,"max_err":0,"max_ulp":0,"shippable":true}]})", "unknown op"},
      {R"([1,2,3])", "object"},
  };
  for (const auto& [text, expect] : cases) {
    WriteText(path, text);
    error.clear();
    EXPECT_FALSE(TryLoadAccuracyCache(path, &c, &error)) << text;
    EXPECT_NE(error.find(expect), std::string::npos) << "error: " << error << "\nfor: " << text;
  }
  std::remove(path.c_str());
}

TEST(Results, MarkdownHasHeaderTablesAndFailures) {
  const std::string md = ToMarkdown(SampleDoc());
  for (const char* s : {"actgrad-accuracy --quick", "2026-11-22T01:00:00Z", "genuineintel-6-143", "Test CPU",
                        "| f32 | 0.0001 | 99.99 % | 0.001 |", "## gelu_bwd", "## logit_grad",
                        "| op | dtype | variant | share passing | max error | max ULP | claimed |",
                        "`gelu_bwd.f32.none.erf_as.u4.avx3`", "## Failing variants",
                        "got inf, reference 4", "not run (CPU lacks avx512fp16)"})
    EXPECT_NE(md.find(s), std::string::npos) << "missing: " << s << "\n" << md;
}

TEST(Results, PercentNeverRoundsUpTo100) {
  AccuracyDocument d = SampleDoc();
  d.results[0].share = 0.9999999;
  const std::string md = ToMarkdown(d);
  EXPECT_NE(md.find("99.9999 %"), std::string::npos);
}

TEST(Results, AtomicWriteReplacesAndFailsCleanly) {
  const std::string path = TempPath("atomic.txt");
  WriteFileAtomic(path, "one");
  WriteFileAtomic(path, "two");
  EXPECT_EQ(ReadText(path), "two");
  std::remove(path.c_str());
  EXPECT_THROW(WriteFileAtomic("/nonexistent-dir/x/accuracy.json", "x"), std::runtime_error);
}

}  // namespace
}  // namespace actgrad::acc
