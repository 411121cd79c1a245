#include "tiling/table.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "variants/variant.h"

namespace actgrad::tables {

const char* LayoutName(Layout l) { return l == Layout::kContig ? "contig" : "bcast"; }

bool ParseLayout(const std::string& s, Layout* out) {
  if (s == "contig") return *out = Layout::kContig, true;
  if (s == "bcast") return *out = Layout::kBcast, true;
  return false;
}

uint64_t OctaveLo(int octave) { return uint64_t(1) << octave; }

namespace {

using json = nlohmann::json;

bool Err(std::string* error, const std::string& msg) {
  if (error) *error = msg;
  return false;
}

template <typename T>
bool Field(const json& j, const char* key, T* out, const std::string& where, std::string* error, bool required = true) {
  if (!j.contains(key)) return required ? Err(error, where + ": missing field \"" + key + "\"") : true;
  try {
    *out = j.at(key).get<T>();
  } catch (const json::exception&) {
    return Err(error, where + ": field \"" + key + "\" has the wrong type");
  }
  return true;
}

}  // namespace

bool ParseTable(const std::string& text, Table* out, std::string* error, bool check_variants) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Err(error, std::string("not valid JSON (truncated or corrupt?): ") + e.what());
  }
  if (!j.is_object()) return Err(error, "top level must be a JSON object");
  std::string schema;
  int version = 0;
  if (!Field(j, "schema", &schema, "table", error)) return false;
  if (schema != kSchemaName) return Err(error, "schema is \"" + schema + "\", expected \"" + kSchemaName + "\"");
  if (!Field(j, "version", &version, "table", error)) return false;
  if (version != 1 && version != kSchemaVersion)
    return Err(error, "schema version " + std::to_string(version) + " is not supported (this build reads versions 1 and " +
                          std::to_string(kSchemaVersion) + ")");
  Table t;
  t.source_version = version;
  if (!Field(j, "machine_id", &t.machine_id, "table", error)) return false;
  if (t.machine_id.empty()) return Err(error, "machine_id is empty");
  if (!Field(j, "backend", &t.backend, "table", error, false)) return false;
  if (j.contains("provenance")) {
    if (!j["provenance"].is_object()) return Err(error, "provenance must be an object");
    t.provenance = j["provenance"];
  }
  if (!j.contains("entries") || !j["entries"].is_array()) return Err(error, "missing array \"entries\"");
  std::set<std::tuple<int, int, int, int, int>> seen;
  int index = 0;
  for (const json& e : j["entries"]) {
    const std::string where = "entry " + std::to_string(index++);
    if (!e.is_object()) return Err(error, where + ": not an object");
    Entry en;
    std::string op, dtype, layout = "contig", mode = "none";
    if (!Field(e, "op", &op, where, error) || !Field(e, "dtype", &dtype, where, error) ||
        !Field(e, "layout", &layout, where, error, false) || !Field(e, "gelu_approx", &mode, where, error, false) ||
        !Field(e, "variant", &en.variant, where, error) ||
        !Field(e, "tile", &en.tile, where, error, false) || !Field(e, "threads", &en.threads, where, error, false) ||
        !Field(e, "median_ns", &en.median_ns, where, error, false) ||
        !Field(e, "spread_pct", &en.spread_pct, where, error, false))
      return false;
    if (!ParseOp(op, &en.op)) return Err(error, where + ": unknown op \"" + op + "\"");
    if (!ParseDType(dtype, &en.dtype)) return Err(error, where + ": unknown dtype \"" + dtype + "\"");
    if (!ParseLayout(layout, &en.layout)) return Err(error, where + ": unknown layout \"" + layout + "\"");
    if (mode != "none" && mode != "tanh") return Err(error, where + ": gelu_approx must be \"none\" or \"tanh\"");
    en.mode = mode == "tanh" ? GeluApprox::kTanh : GeluApprox::kNone;
    // The size range: v2 an octave h, [2^h, 2^(h+1)); v1 a 4x bucket k,
    // [4^k, 4^(k+1)), which is octaves 2k and 2k+1.
    int first = 0, count = 1;
    const char* range_key = version == 1 ? "bucket" : "octave";
    int range = 0;
    if (!Field(e, range_key, &range, where, error)) return false;
    const int max_range = version == 1 ? kMaxOctaveIndex / 2 : kMaxOctaveIndex;
    if (range < 0 || range > max_range)
      return Err(error, where + ": " + range_key + " " + std::to_string(range) + " out of range 0.." + std::to_string(max_range));
    if (version == 1) first = 2 * range, count = 2;
    else first = range;
    const uint64_t want_lo = OctaveLo(first), want_hi = OctaveLo(first + count);
    uint64_t lo = 0, hi = 0;
    if (e.contains("size_lo") && (!Field(e, "size_lo", &lo, where, error) || lo != want_lo))
      return Err(error, where + ": size_lo does not match " + range_key + " " + std::to_string(range));
    if (e.contains("size_hi") && (!Field(e, "size_hi", &hi, where, error) || hi != want_hi))
      return Err(error, where + ": size_hi does not match " + range_key + " " + std::to_string(range));
    if (en.tile < 0) return Err(error, where + ": tile must be >= 0");
    if (en.threads < 1 || en.threads > 4096) return Err(error, where + ": threads must be in 1..4096");
    if (e.contains("one_thread")) {
      const json& o = e["one_thread"];
      if (!o.is_object() || !Field(o, "variant", &en.one_thread_variant, where + ".one_thread", error) ||
          !Field(o, "tile", &en.one_thread_tile, where + ".one_thread", error, false))
        return error && error->empty() ? Err(error, where + ": one_thread must be {variant, tile}") : false;
      if (en.one_thread_tile < 0) return Err(error, where + ": one_thread.tile must be >= 0");
    }
    if (e.contains("runner_up")) en.runner_up = e["runner_up"];
    if (e.contains("extra")) en.extra = e["extra"];
    if (check_variants && t.backend == "cpu") {
      const Variant* v = FindVariant(en.variant);
      if (!v) return Err(error, where + ": unknown variant \"" + en.variant + "\"");
      if (v->op != en.op || v->dtype != en.dtype || (en.op == Op::kGeluBwd && v->gelu_mode != en.mode))
        return Err(error, where + ": variant \"" + en.variant + "\" does not compute " + op + " " + dtype +
                              (en.op == Op::kGeluBwd ? " gelu_approx=" + mode : ""));
      if (!en.one_thread_variant.empty()) {
        const Variant* w = FindVariant(en.one_thread_variant);
        if (!w || w->op != en.op || w->dtype != en.dtype || (en.op == Op::kGeluBwd && w->gelu_mode != en.mode))
          return Err(error, where + ": one_thread variant \"" + en.one_thread_variant + "\" is unknown or does not compute " +
                                op + " " + dtype);
      }
    }
    for (int h = first; h < first + count; ++h) {
      const auto key = std::make_tuple(int(en.op), int(en.dtype), int(en.mode), int(en.layout), h);
      if (!seen.insert(key).second)
        return Err(error, where + ": duplicate size range (" + op + ", " + dtype + ", " + layout + ", " + range_key +
                              " " + std::to_string(range) + ")");
      en.octave = h;
      t.entries.push_back(en);
    }
  }
  *out = std::move(t);
  return true;
}

bool LoadTableFile(const std::string& path, Table* out, std::string* error, bool check_variants) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Err(error, path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string inner;
  if (!ParseTable(ss.str(), out, &inner, check_variants)) return Err(error, path + ": " + inner);
  return true;
}

json ToJson(const Table& t) {
  json j;
  j["schema"] = kSchemaName;
  j["version"] = kSchemaVersion;
  j["machine_id"] = t.machine_id;
  j["backend"] = t.backend;
  j["provenance"] = t.provenance;
  j["entries"] = json::array();
  for (const Entry& e : t.entries) {
    json x;
    x["op"] = std::string(OpName(e.op));
    x["dtype"] = std::string(DTypeName(e.dtype));
    if (e.op == Op::kGeluBwd) x["gelu_approx"] = e.mode == GeluApprox::kTanh ? "tanh" : "none";
    x["layout"] = LayoutName(e.layout);
    x["octave"] = e.octave;
    x["size_lo"] = OctaveLo(e.octave);
    x["size_hi"] = OctaveLo(e.octave + 1);
    x["variant"] = e.variant;
    x["tile"] = e.tile;
    x["threads"] = e.threads;
    x["median_ns"] = e.median_ns;
    x["spread_pct"] = e.spread_pct;
    if (!e.one_thread_variant.empty())
      x["one_thread"] = {{"variant", e.one_thread_variant}, {"tile", e.one_thread_tile}};
    x["runner_up"] = e.runner_up;
    if (!e.extra.is_null()) x["extra"] = e.extra;
    j["entries"].push_back(std::move(x));
  }
  return j;
}

bool SaveTableFile(const std::string& path, const Table& t, std::string* error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Err(error, tmp + ": cannot write");
    out << ToJson(t).dump(2) << "\n";
    if (!out.flush()) return Err(error, tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Err(error, path + ": cannot rename the temporary file into place");
  return true;
}

}  // namespace actgrad::tables
