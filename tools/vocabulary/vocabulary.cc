// actgrad-vocabulary: the names the scripts and the Python reports share with
// the C++ (ops, dtypes, targets in order of preference), as JSON.
//   actgrad-vocabulary               prints it (reports/vocabulary.json is this output)
//   actgrad-vocabulary --check FILE  exit 1 when FILE differs (ctest vocabulary.fresh)
// Committed rather than generated into the build: the Python tests and
// bench/goals.py run without a build.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "actgrad/types.h"
#include "variants/targets.h"

namespace {

std::string List(const std::vector<std::string_view>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", \"" : "\"") + std::string(items[i]) + "\"";
  return s + "]";
}

std::string Vocabulary() {
  using namespace actgrad;
  std::vector<std::string_view> ops, dtypes, float_dtypes, targets, highway_targets, native_targets;
  for (int i = 0; i < kNumOps; ++i) ops.push_back(OpName(Op(i)));
  for (int i = 0; i < kNumDTypes; ++i) {
    dtypes.push_back(DTypeName(DType(i)));
    if (IsFloat(DType(i))) float_dtypes.push_back(DTypeName(DType(i)));
  }
  for (const TargetInfo& t : kTargets) {
    targets.push_back(t.name);
    if (t.kind == TargetKind::kHighway) highway_targets.push_back(t.name);
    if (t.kind == TargetKind::kNative) native_targets.push_back(t.name);
  }
  return "{\n"
         "  \"generated_by\": \"actgrad-vocabulary (tools/vocabulary) from include/actgrad/types.h and "
         "kernels/variants/targets.h: do not edit\",\n"
         "  \"ops\": " + List(ops) + ",\n"
         "  \"dtypes\": " + List(dtypes) + ",\n"
         "  \"float_dtypes\": " + List(float_dtypes) + ",\n"
         "  \"targets\": " + List(targets) + ",\n"
         "  \"highway_targets\": " + List(highway_targets) + ",\n"
         "  \"native_targets\": " + List(native_targets) + "\n"
         "}\n";
}

int Check(const char* path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  if (f && text.str() == Vocabulary()) return 0;
  std::fprintf(stderr, "%s is stale: regenerate it with actgrad-vocabulary > %s\n", path, path);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--check") == 0) return Check(argv[2]);
  if (argc != 1) {
    std::fprintf(stderr, "usage: actgrad-vocabulary [--check FILE]\n");
    return 2;
  }
  std::fputs(Vocabulary().c_str(), stdout);
  return 0;
}
