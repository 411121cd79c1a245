// actgrad-atlas-gentable --in TABLE.json --out TABLE.cc: turns an Atlas
// tiling table (docs/conventions.md; written by `actgrad-tune --backend
// atlas-model`) into the C++ table compiled into the host tiling. The table
// is read by the shared parser (tiling/table.h), which checks the schema,
// the fields and the size cells; this tool then checks what only the Atlas
// track knows: the backend (never a table timed on the emulator), and that
// each variant is an Atlas kernel of the entry's op, dtype and GELU form with
// a tile the kernels can take. A missing input file gives an empty table
// (the built-in default rule). Any problem stops the build with a message
// naming the file, the entry and the field.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "atlas_tiling_data.h"
#include "atlas_variants.h"
#include "tiling/table.h"

using namespace actgrad;
using namespace actgrad::atlas;

namespace {

// Most AI cores a launch may ask for.
constexpr int kMaxBlockDim = 1024;

int Fail(const std::string& what) {
  std::fprintf(stderr, "actgrad-atlas-gentable: error: %s\n", what.c_str());
  return 1;
}

std::string Quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// What is wrong with entry `e` of a table of schema `version` for the Atlas
// host tiling ("" if nothing). Its choice: an Atlas variant, threads = block
// dim, stage_tile = UB tile length (before version 3: "tile"), no chunk.
std::string CheckEntry(const tables::Entry& e, int version) {
  const Choice& c = e.choice;
  const std::string cell = std::string(OpName(e.op)) + " " + std::string(DTypeName(e.dtype)) +
                           (e.mode == GeluApprox::kTanh ? " gelu_approx=tanh" : "");
  if (e.layout != tables::Layout::kContig)
    return std::string("layout: \"") + tables::LayoutName(e.layout) + "\": the Atlas kernels take contiguous operands";
  const AtlasVariant* v = FindAtlasVariant(c.variant);
  if (!v) return "variant: unknown Atlas variant \"" + c.variant + "\"";
  if (v->op != e.op || v->dtype != e.dtype || (e.op == Op::kGeluBwd && v->approx != e.mode))
    return "variant: \"" + c.variant + "\" does not compute " + cell;
  const int64_t tile = c.split.stage_tile;
  if (tile <= 0 || tile % kTileAlign != 0 || tile > int64_t(UINT32_MAX))
    return std::string(version >= 3 ? "stage_tile" : "tile") + ": " + std::to_string(tile) + " is not a UB tile length (a positive multiple of " +
           std::to_string(kTileAlign) + " elements)";
  if (c.split.chunk != 0) return "chunk: " + std::to_string(c.split.chunk) + ": the Atlas kernels have no chunk (0)";
  if (c.split.threads > kMaxBlockDim)
    return "threads: block dim " + std::to_string(c.split.threads) + " is more than " + std::to_string(kMaxBlockDim);
  // (one_thread, the tuner's best one-core choice, is ignored: a launch is
  // not capped at one AI core the way a caller caps the CPU threads.)
  // Tables before schema 3 carried the buffer count beside the variant.
  if (e.extra.is_object() && e.extra.contains("buffers")) {
    const auto& b = e.extra["buffers"];
    if (!b.is_number_integer() || b.get<int64_t>() != v->buffers)
      return "extra.buffers: " + b.dump() + " disagrees with variant \"" + c.variant + "\" (" +
             std::to_string(v->buffers) + " buffers)";
  }
  return "";
}

// Why table t was timed on the emulator ("" if it was not): the device
// backend of a build without CANN names itself "atlas-device(emulator)" and
// says provenance.timing "emulator"; an atlas-device table must say "device".
std::string EmulatorTimed(const tables::Table& t) {
  const nlohmann::json& p = t.provenance;
  const nlohmann::json timing = p.is_object() && p.contains("timing") ? p["timing"] : nlohmann::json();
  const std::string emulated = ": timed on the AscendC emulator, whose times are its host time, not an NPU's";
  if (t.backend == "atlas-device(emulator)") return "backend \"atlas-device(emulator)\"" + emulated;
  if (timing == "emulator") return "provenance.timing \"emulator\"" + emulated;
  if (t.backend == "atlas-device" && timing != "device")
    return "backend \"atlas-device\" without provenance.timing \"device\" (" + timing.dump() +
           "): not known to be timed on an NPU";
  return "";
}

}  // namespace

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
  tables::Table t;
  t.machine_id = "default";
  t.backend = "";
  std::string source = "built-in default rule";
  std::error_code ec;
  if (std::filesystem::exists(in, ec)) {
    std::string err;
    if (!tables::LoadTableFile(in, &t, &err, /*check_variants=*/false)) return Fail(err);
    if (const std::string why = EmulatorTimed(t); !why.empty())
      return Fail(in + ": " + why + "; not a table to compile in (tune on an NPU with a CANN build, "
                  "-DACTGRAD_ATLAS_CANN=ON and actgrad-tune --backend atlas-device, or price the tilings with "
                  "--backend atlas-model)");
    if (t.backend != "atlas-model" && t.backend != "atlas-device")
      return Fail(in + ": backend \"" + t.backend + "\" is not an Atlas backend (atlas-model or atlas-device)");
    source = in;
    for (size_t i = 0; i < t.entries.size(); ++i) {
      const tables::Entry& e = t.entries[i];
      // A version-1 entry (a 4x bucket) loads as two octave entries.
      const size_t index = t.source_version == 1 ? i / 2 : i;
      const std::string what = CheckEntry(e, t.source_version);
      if (!what.empty()) return Fail(in + ": entry " + std::to_string(index) + ": " + what);
      rows << "  {Op(" << int(e.op) << "), DType(" << int(e.dtype) << "), GeluApprox(" << int(e.mode) << "), "
           << e.octave << ", " << Quote(e.choice.variant) << ", " << e.choice.split.stage_tile << "u, "
           << e.choice.split.threads << "u, " << e.median_ns << "},\n";
    }
  }
  std::ofstream o(out);
  o << "// Generated by actgrad-atlas-gentable from " << source << ". Do not edit.\n"
    << "#include \"tiling_table.h\"\n\nnamespace actgrad::atlas {\n\n"
    << "const AtlasTableEntry kAtlasTilingTable[] = {\n"
    << rows.str() << "  {Op::kSeluBwd, DType::kF32, GeluApprox::kNone, -1, \"\", 0u, 0u, 0.0},  // sentinel\n};\n"
    << "const size_t kAtlasTilingTableSize = " << t.entries.size() << ";\n"
    << "const char* const kAtlasTilingTableSource = " << Quote(source) << ";\n"
    << "const char* const kAtlasTilingTableMachine = " << Quote(t.machine_id) << ";\n"
    << "const char* const kAtlasTilingTableBackend = " << Quote(t.backend) << ";\n\n"
    << "}  // namespace actgrad::atlas\n";
  if (!o) return Fail(out + ": cannot write");
  return 0;
}
