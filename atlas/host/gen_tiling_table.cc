// actgrad-atlas-gentable: turns an Atlas tiling table (docs/conventions.md,
// schema v1, backend atlas-model or atlas-device) into the C++ tiling-key
// table compiled into the host tiling. A missing input file gives an empty
// table (the built-in default rule). Any problem in the JSON stops the build
// with a message naming the file and the entry.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "atlas_variants.h"

using namespace actgrad;
using namespace actgrad::atlas;

static int Fail(const std::string& file, const std::string& what) {
  std::fprintf(stderr, "actgrad-atlas-gentable: error: %s: %s\n", file.c_str(), what.c_str());
  return 1;
}

static std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

static const char* OpEnum(Op op) {
  switch (op) {
    case Op::kSeluBwd: return "Op::kSeluBwd";
    case Op::kHardswishBwd: return "Op::kHardswishBwd";
    case Op::kGeluBwd: return "Op::kGeluBwd";
    case Op::kSoftshrinkBwd: return "Op::kSoftshrinkBwd";
    case Op::kLogitGrad: return "Op::kLogitGrad";
  }
  return "?";
}
static const char* DTypeEnum(DType t) {
  switch (t) {
    case DType::kF32: return "DType::kF32";
    case DType::kF16: return "DType::kF16";
    case DType::kBF16: return "DType::kBF16";
    case DType::kI32: return "DType::kI32";
    case DType::kI8: return "DType::kI8";
  }
  return "?";
}

int main(int argc, char** argv) {
  std::string in, out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--in") in = argv[i + 1];
    else if (a == "--out") out = argv[i + 1];
  }
  if (in.empty() || out.empty()) {
    std::fprintf(stderr, "usage: actgrad-atlas-gentable --in table.json --out table.cc\n");
    return 2;
  }
  std::ostringstream rows;
  size_t count = 0;
  std::string machine = "default", backend = "", source = "built-in default rule";
  std::ifstream f(in);
  if (f) {
    nlohmann::json j;
    try {
      f >> j;
    } catch (const std::exception& e) {
      return Fail(in, std::string("invalid JSON: ") + e.what());
    }
    if (!j.is_object() || j.value("schema", "") != "actgrad-tiling-table")
      return Fail(in, "\"schema\" must be \"actgrad-tiling-table\"");
    const int version = j.value("version", 0);
    if (version != 1 && version != 2) return Fail(in, "\"version\" must be 1 or 2");
    backend = j.value("backend", "");
    if (backend != "atlas-model" && backend != "atlas-device")
      return Fail(in, "\"backend\" must be \"atlas-model\" or \"atlas-device\", not \"" + backend + "\"");
    machine = j.value("machine_id", "");
    if (machine.empty()) return Fail(in, "\"machine_id\" missing");
    if (!j.contains("entries") || !j["entries"].is_array()) return Fail(in, "\"entries\" must be an array");
    source = in;
    int idx = 0;
    for (const auto& e : j["entries"]) {
      const std::string where = "entry " + std::to_string(idx++);
      try {
        Op op;
        DType dt;
        const std::string ops = e.at("op").get<std::string>();
        const std::string dts = e.at("dtype").get<std::string>();
        if (!ParseOpName(ops, &op)) return Fail(in, where + ": unknown op \"" + ops + "\"");
        if (!ParseDTypeName(dts, &dt)) return Fail(in, where + ": unknown dtype \"" + dts + "\"");
        if (e.value("layout", "contig") != "contig") continue;  // the kernels are contiguous
        // The host table has 4x buckets (bucket k: [4^k, 4^(k+1)), tuned at
        // 2*4^k). A version-2 table (actgrad-tune) has octaves: octave 2k+1
        // holds bucket k's centre and stands for it; even octaves are skipped.
        int bucket = 0;
        if (version == 1) {
          bucket = e.at("bucket").get<int>();
        } else {
          const int octave = e.at("octave").get<int>();
          if (octave % 2 == 0) continue;
          bucket = (octave - 1) / 2;
        }
        if (bucket < 0 || bucket > 20) return Fail(in, where + ": bucket out of range");
        const std::string vname = e.at("variant").get<std::string>();
        const AtlasVariant* v = FindAtlasVariant(vname);
        if (!v) return Fail(in, where + ": unknown Atlas variant \"" + vname + "\"");
        if (v->op != op || v->dtype != dt) return Fail(in, where + ": variant \"" + vname + "\" is not " + ops + "/" + dts);
        const int64_t tile = e.at("tile").get<int64_t>();
        const int64_t threads = e.at("threads").get<int64_t>();
        if (tile <= 0 || tile % 256 != 0) return Fail(in, where + ": tile must be a positive multiple of 256");
        if (threads <= 0 || threads > 1024) return Fail(in, where + ": threads (block dim) out of range");
        int64_t buffers = v->buffers;
        if (e.contains("extra") && e["extra"].contains("buffers")) buffers = e["extra"]["buffers"].get<int64_t>();
        if (e.contains("buffers")) buffers = e["buffers"].get<int64_t>();
        if (buffers != v->buffers)
          return Fail(in, where + ": buffers " + std::to_string(buffers) + " disagrees with variant " + vname);
        const double ns = e.value("median_ns", 0.0);
        rows << "  {" << OpEnum(op) << ", " << DTypeEnum(dt) << ", " << bucket << ", \"" << Escape(vname) << "\", "
             << tile << "u, " << threads << "u, " << buffers << "u, " << ns << "},\n";
        ++count;
      } catch (const std::exception& ex) {
        return Fail(in, where + ": " + ex.what());
      }
    }
  }
  std::ofstream o(out);
  o << "// Generated by actgrad-atlas-gentable from " << source << ". Do not edit.\n"
    << "#include \"tiling_table.h\"\n\nnamespace actgrad::atlas {\n\n"
    << "const AtlasTableEntry kAtlasTilingTable[] = {\n"
    << rows.str() << "  {Op::kSeluBwd, DType::kF32, -1, \"\", 0u, 0u, 0u, 0.0},  // sentinel\n};\n"
    << "const size_t kAtlasTilingTableSize = " << count << ";\n"
    << "const char* const kAtlasTilingTableSource = \"" << Escape(source) << "\";\n"
    << "const char* const kAtlasTilingTableMachine = \"" << Escape(machine) << "\";\n"
    << "const char* const kAtlasTilingTableBackend = \"" << Escape(backend) << "\";\n\n"
    << "}  // namespace actgrad::atlas\n";
  if (!o) return Fail(out, "cannot write");
  return 0;
}
