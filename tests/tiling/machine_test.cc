// tiling/machine.cc: the machine id has the documented form and matches the
// kernel's view of the CPU (/proc/cpuinfo), the ISA family agrees with the CPU
// flags, and the model name is read as /proc/cpuinfo has it ("" if absent).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tiling/machine.h"

namespace actgrad {
namespace {

std::string ProcCpuinfo() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of the first "key<tabs/spaces>: value" line of cpuinfo, "" if none.
std::string Field(const std::string& cpuinfo, const std::string& key) {
  const std::regex re("^" + key + "[ \t]*:[ \t]*(.*)$", std::regex::multiline);
  std::smatch m;
  return std::regex_search(cpuinfo, m, re) ? m[1].str() : "";
}

std::string Lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(Machine, IdIsVendorFamilyModelInLowerCase) {
  const std::string id = MachineId();
  EXPECT_TRUE(std::regex_match(id, std::regex("[a-z0-9]+-[a-z0-9]+-[a-z0-9]+"))) << id;
  EXPECT_EQ(id, Lower(id));
  EXPECT_EQ(MachineId(), id);  // stable
}

#if defined(__x86_64__) || defined(__i386__)
TEST(Machine, IdMatchesTheKernelsCpuinfoOnX86) {
  const std::string info = ProcCpuinfo();
  if (Field(info, "vendor_id").empty()) GTEST_SKIP() << "no /proc/cpuinfo vendor_id here";
  // Linux computes "cpu family" and "model" from CPUID leaf 1 as MachineId does.
  EXPECT_EQ(MachineId(), Lower(Field(info, "vendor_id")) + "-" + Field(info, "cpu family") + "-" + Field(info, "model"));
}
#endif

TEST(Machine, ModelNameIsCpuinfosFirstModelName) {
  const std::string info = ProcCpuinfo();
  EXPECT_EQ(CpuModelName(), Field(info, "model name"));
#if defined(__x86_64__) || defined(__i386__)
  if (!info.empty()) EXPECT_FALSE(CpuModelName().empty()) << "x86 Linux always writes a model name";
#endif
}

TEST(Machine, ModelNameParsing) {
  EXPECT_EQ(CpuModelNameIn(""), "");
  EXPECT_EQ(CpuModelNameIn("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"), "");  // arm64
  EXPECT_EQ(CpuModelNameIn("processor\t: 0\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R): 8480+\n"
                           "model name\t: other\n"),
            "Intel(R) Xeon(R): 8480+");
  EXPECT_EQ(CpuModelNameIn("model name\t:"), "");  // no value: "", not a throw
  EXPECT_EQ(CpuModelNameIn("model name\t:   \n"), "");
  EXPECT_EQ(CpuModelNameIn("model name"), "");     // no colon
  EXPECT_EQ(CpuModelNameIn("model name: AMD EPYC"), "AMD EPYC");
}

TEST(Machine, IsaFamilyIsOneOfTheDocumentedOnes) {
  const std::set<std::string> known = {"x86-avx512", "x86-avx2", "x86-sse4", "arm-sve", "arm-neon", "generic"};
  EXPECT_TRUE(known.count(IsaFamily())) << IsaFamily();
}

#if defined(__x86_64__) || defined(__i386__)
TEST(Machine, IsaFamilyAgreesWithTheCpuFlagsOnX86) {
  const std::string flags = Field(ProcCpuinfo(), "flags");
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags here";
  std::set<std::string> has;
  std::istringstream in(flags);
  for (std::string f; in >> f;) has.insert(f);
  std::string want = "generic";
  if (has.count("avx512f") && has.count("avx512bw")) want = "x86-avx512";
  else if (has.count("avx2") && has.count("fma")) want = "x86-avx2";
  else if (has.count("sse4_2")) want = "x86-sse4";
  EXPECT_EQ(IsaFamily(), want) << flags;
}
#elif defined(__aarch64__)
TEST(Machine, IsaFamilyAgreesWithTheCpuFeaturesOnArm) {
  const std::string features = " " + Field(ProcCpuinfo(), "Features") + " ";
  if (features == "  ") GTEST_SKIP() << "no /proc/cpuinfo Features here";
  EXPECT_EQ(IsaFamily(), features.find(" sve ") != std::string::npos ? "arm-sve" : "arm-neon");
}
#endif

}  // namespace
}  // namespace actgrad
