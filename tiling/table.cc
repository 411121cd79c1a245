#include "tiling/table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "variants/variant.h"

namespace actgrad::tables {

const char* LayoutName(Layout l) {
  switch (l) {
    case Layout::kContig: return "contig";
    case Layout::kBcast: return "bcast";
    case Layout::kStrided: return "strided";
    case Layout::kTransposed: return "transposed";
  }
  return "?";
}

bool ParseLayout(const std::string& s, Layout* out) {
  if (s == "contig") return *out = Layout::kContig, true;
  if (s == "bcast") return *out = Layout::kBcast, true;
  if (s == "strided") return *out = Layout::kStrided, true;
  if (s == "transposed") return *out = Layout::kTransposed, true;
  return false;
}

Choice Entry::At(uint64_t n, int available) const {
  Choice c = choice;
  c.split.threads = rule ? rule->Threads(n, available) : std::min(c.split.threads, std::max(available, 1));
  return c;
}

std::string Table::IsaFamily() const {
  if (!provenance.is_object()) return "";
  const auto it = provenance.find("isa_family");
  return it != provenance.end() && it->is_string() ? it->get<std::string>() : "";
}

namespace {

using json = nlohmann::json;

bool Err(std::string* error, const std::string& msg) {
  if (error) *error = msg;
  return false;
}

// A JSON value in a message: numbers, booleans and null as written, the rest by type.
std::string Shown(const json& v) {
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  return std::string(v.is_array() || v.is_object() ? "an " : "a ") + v.type_name();
}

bool HasControlCharacter(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// Reads the fields of one JSON object with their exact JSON types: nothing is
// converted (nlohmann's get<int> would turn 2.9, true and 2^32+2 into 2, 1, 2).
// Errors read "<where>: field "<key>" ...".
class Fields {
 public:
  Fields(const json& object, std::string where, std::string* error)
      : object_(object), where_(std::move(where)), error_(error) {}

  bool String(const char* key, std::string* out, bool required = true) {
    const json* v = Find(key);
    if (!v) return !required || Missing(key);
    if (!v->is_string()) return Wrong(key, "a string", *v);
    *out = v->get<std::string>();
    return true;
  }
  // A JSON integer in lo..hi.
  template <typename T>
  bool Int(const char* key, int64_t lo, int64_t hi, T* out, bool required = true) {
    const json* v = Find(key);
    if (!v) return !required || Missing(key);
    if (!v->is_number_integer()) return Wrong(key, "an integer", *v);
    // nlohmann keeps non-negative integers as unsigned (up to 2^64-1), negative ones as signed.
    const bool in_range = v->is_number_unsigned()
                              ? v->get<uint64_t>() <= uint64_t(hi) && (lo <= 0 || v->get<uint64_t>() >= uint64_t(lo))
                              : v->get<int64_t>() >= lo && v->get<int64_t>() <= hi;
    if (!in_range)
      return Err(error_, where_ + ": field \"" + key + "\" is " + v->dump() + ", out of range " + std::to_string(lo) +
                             ".." + std::to_string(hi));
    *out = T(v->is_number_unsigned() ? int64_t(v->get<uint64_t>()) : v->get<int64_t>());
    return true;
  }
  // A JSON boolean (nothing else: 1 and "true" are refused).
  bool Bool(const char* key, bool* out, bool required = true) {
    const json* v = Find(key);
    if (!v) return !required || Missing(key);
    if (!v->is_boolean()) return Wrong(key, "true or false", *v);
    *out = v->get<bool>();
    return true;
  }
  // A finite number >= 0 (medians, spreads).
  bool Number(const char* key, double* out, bool required = true) {
    const json* v = Find(key);
    if (!v) return !required || Missing(key);
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
      return Wrong(key, "a finite number >= 0", *v);
    *out = v->get<double>();
    return true;
  }
  // An object or null, kept as it is (runner_up before it is read, extra).
  bool ObjectOrNull(const char* key, json* out) {
    const json* v = Find(key);
    if (!v) return true;
    if (!v->is_object() && !v->is_null()) return Wrong(key, "an object or null", *v);
    *out = *v;
    return true;
  }
  const json* Find(const char* key) const {
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

 private:
  bool Missing(const char* key) { return Err(error_, where_ + ": missing field \"" + key + "\""); }
  bool Wrong(const char* key, const char* expected, const json& v) {
    return Err(error_, where_ + ": field \"" + key + "\" has the wrong type (" + expected + " is expected, it is " +
                           Shown(v) + ")");
  }
  const json& object_;
  std::string where_;
  std::string* error_;
};

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

// The whole file, if it is a regular file of at most kMaxTableBytes.
bool ReadBoundedFile(const std::string& path, std::string* text, std::string* error) {
  // O_NONBLOCK: opening a FIFO does not wait for a writer. The checks are on
  // what was opened (fstat), so a file swapped in after them is not read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Err(error, path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Err(error, path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Err(error, path + ": not a regular file (" + FileKind(st.st_mode) + ")");
  const std::string too_big = path + ": larger than the " + std::to_string(kMaxTableBytes >> 20) +
                              " MiB a tiling table may have (kMaxTableBytes, docs/conventions.md)";
  if (uint64_t(st.st_size) > kMaxTableBytes) return Err(error, too_big);
  text->clear();
  text->reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Err(error, path + ": read failed: " + std::strerror(errno));
    if (r == 0) return true;
    if (text->size() + size_t(r) > kMaxTableBytes) return Err(error, too_big);  // it grew since fstat
    text->append(buf, size_t(r));
  }
}

// The split fields of a choice in object `f` (an entry, its one_thread or its
// runner_up): v3 "chunk" and "stage_tile"; v1/v2 "tile", the chunk of a CPU
// table and the stage tile (UB tile length) of another backend's.
bool SplitFields(Fields& f, int version, bool cpu, Split* out) {
  // v4 adds the optional "tile_rows", "tile_cols" and "transpose_result" (a transposed layout's tile)
  if (version >= 3)
    return f.Int("chunk", 0, INT64_MAX, &out->chunk, false) && f.Int("stage_tile", 0, INT64_MAX, &out->stage_tile, false) &&
           f.Int("tile_rows", 0, kMaxTileExtent, &out->tile_rows, false) &&
           f.Int("tile_cols", 0, kMaxTileExtent, &out->tile_cols, false) &&
           f.Bool("transpose_result", &out->transpose_result, false);
  return f.Int("tile", 0, INT64_MAX, cpu ? &out->chunk : &out->stage_tile, false);
}

// v4: "grain" (optional; an integer >= 0): the entry's ThreadRule.
bool GrainField(Fields& f, std::optional<ThreadRule>* out) {
  if (!f.Find("grain")) return true;
  ThreadRule r;
  if (!f.Int("grain", 0, INT64_MAX, &r.grain)) return false;
  *out = r;
  return true;
}

// Does variant `name` exist and compute the entry's op, dtype and GELU mode?
bool CheckVariant(const std::string& name, const Entry& en, const std::string& what, const std::string& where,
                  std::string* error) {
  const Variant* v = FindVariant(name);
  const std::string op(OpName(en.op)), dtype(DTypeName(en.dtype));
  const std::string mode = en.mode == GeluApprox::kTanh ? "tanh" : "none";
  if (!v) return Err(error, where + ": unknown " + what + " \"" + name + "\"");
  if (v->op != en.op || v->dtype != en.dtype || (en.op == Op::kGeluBwd && v->gelu_mode != en.mode))
    return Err(error, where + ": " + what + " \"" + name + "\" does not compute " + op + " " + dtype +
                          (en.op == Op::kGeluBwd ? " gelu_approx=" + mode : ""));
  return true;
}

// One entry (v1: up to two octaves) of a table of `version`, appended to
// t->entries; `seen` holds the cells so far.
bool ParseEntry(const json& e, const std::string& where, int version, bool check_variants,
                std::set<std::tuple<int, int, int, int, int>>* seen, Table* t, std::string* error) {
  if (!e.is_object()) return Err(error, where + ": not an object");
  const bool cpu = t->backend == "cpu";
  Fields f(e, where, error);
  Entry en;
  std::string op, dtype, layout = "contig", mode = "none";
  if (!f.String("op", &op) || !f.String("dtype", &dtype) || !f.String("layout", &layout, false) ||
      !f.String("gelu_approx", &mode, false) || !f.String("variant", &en.choice.variant) ||
      !SplitFields(f, version, cpu, &en.choice.split) || !f.Int("threads", 1, 4096, &en.choice.split.threads, false) ||
      !(version < 4 || GrainField(f, &en.rule)) ||
      !f.Number("median_ns", &en.median_ns, false) || !f.Number("spread_pct", &en.spread_pct, false) ||
      !f.ObjectOrNull("extra", &en.extra))
    return false;
  if (en.choice.variant.empty()) return Err(error, where + ": variant is empty");
  if (!ParseOp(op, &en.op)) return Err(error, where + ": unknown op \"" + op + "\"");
  if (!ParseDType(dtype, &en.dtype)) return Err(error, where + ": unknown dtype \"" + dtype + "\"");
  if (!ParseLayout(layout, &en.layout)) return Err(error, where + ": unknown layout \"" + layout + "\"");
  if (mode != "none" && mode != "tanh") return Err(error, where + ": gelu_approx must be \"none\" or \"tanh\"");
  en.mode = mode == "tanh" ? GeluApprox::kTanh : GeluApprox::kNone;
  if (en.op != Op::kGeluBwd && en.mode != GeluApprox::kNone)
    return Err(error, where + ": gelu_approx \"" + mode + "\" is for gelu_bwd entries only");
  // The size range: v2+ an octave h, [2^h, 2^(h+1)); v1 a 4x bucket k,
  // [4^k, 4^(k+1)), which is octaves 2k and 2k+1.
  const char* range_key = version == 1 ? "bucket" : "octave";
  const int max_range = version == 1 ? kMaxOctaveIndex / 2 : kMaxOctaveIndex;
  int range = 0;
  if (!f.Int(range_key, 0, max_range, &range)) return false;
  const int first = version == 1 ? 2 * range : range, count = version == 1 ? 2 : 1;
  const uint64_t want_lo = OctaveLo(first), want_hi = OctaveLo(first + count);
  uint64_t lo = want_lo, hi = want_hi;
  if (!f.Int("size_lo", 0, INT64_MAX, &lo, false) || !f.Int("size_hi", 0, INT64_MAX, &hi, false)) return false;
  if (version < 4) {
    if (lo != want_lo) return Err(error, where + ": size_lo does not match " + range_key + " " + std::to_string(range));
    if (hi != want_hi) return Err(error, where + ": size_hi does not match " + range_key + " " + std::to_string(range));
  } else {
    // A crossover moves a boundary by less than an octave either way.
    if (lo <= want_lo / 2 || lo >= want_hi)
      return Err(error, where + ": size_lo " + std::to_string(lo) + " is outside octave " + std::to_string(range) +
                            " and the half octave below it");
    if (hi <= want_lo || hi > 2 * want_hi || hi <= lo)
      return Err(error, where + ": size_hi " + std::to_string(hi) + " is not above size_lo and within octave " +
                            std::to_string(range) + " or the one above it");
    en.size_lo = lo, en.size_hi = hi;
  }
  if (const json* o = f.Find("one_thread")) {
    const char* fields = version >= 3 ? "{variant, chunk, stage_tile}" : "{variant, tile}";
    if (!o->is_object()) return Err(error, where + ": one_thread must be " + fields);
    Fields g(*o, where + ".one_thread", error);
    Choice one;
    if (!g.String("variant", &one.variant) || !SplitFields(g, version, cpu, &one.split)) return false;
    // (An empty one would not be written back: ToJson writes one_thread only with a variant.)
    if (one.variant.empty()) return Err(error, where + ": one_thread.variant is empty");
    en.one_thread = std::move(one);
  }
  json runner_up;
  if (!f.ObjectOrNull("runner_up", &runner_up)) return false;
  if (runner_up.is_object()) {
    Fields g(runner_up, where + ".runner_up", error);
    Measured m;
    if (!g.String("variant", &m.choice.variant) || !SplitFields(g, version, cpu, &m.choice.split) ||
        !g.Int("threads", 1, 4096, &m.choice.split.threads, false) || !g.Number("median_ns", &m.median_ns, false))
      return false;
    if (m.choice.variant.empty()) return Err(error, where + ": runner_up.variant is empty");
    en.runner_up = std::move(m);
  }
  if (check_variants && cpu) {
    if (!CheckVariant(en.choice.variant, en, "variant", where, error)) return false;
    if (en.one_thread && !CheckVariant(en.one_thread->variant, en, "one_thread variant", where, error)) return false;
  }
  for (int h = first; h < first + count; ++h) {
    if (!seen->insert(std::make_tuple(int(en.op), int(en.dtype), int(en.mode), int(en.layout), h)).second)
      return Err(error, where + ": duplicate size range (" + op + ", " + dtype + ", " + layout + ", " + range_key + " " +
                            std::to_string(range) + ")");
    en.octave = h;
    t->entries.push_back(en);
  }
  return true;
}

// Neighbouring octaves of one series (op, dtype, mode, layout) must agree on
// where one's sizes end and the other's begin.
bool CheckBoundaries(const Table& t, std::string* error) {
  std::map<CellKey, const Entry*> by_cell;
  for (const Entry& e : t.entries) by_cell[CellOf(e)] = &e;
  for (const auto& [cell, e] : by_cell) {
    auto next = cell;
    std::get<4>(next) += 1;
    const auto it = by_cell.find(next);
    if (it == by_cell.end()) continue;
    if (e->Hi() != it->second->Lo())
      return Err(error, std::string(OpName(e->op)) + " " + std::string(DTypeName(e->dtype)) + " " +
                            LayoutName(e->layout) + ": octave " + std::to_string(e->octave) + " ends at " +
                            std::to_string(e->Hi()) + " but octave " + std::to_string(e->octave + 1) +
                            " begins at " + std::to_string(it->second->Lo()));
  }
  return true;
}

bool ParseTableJson(const json& j, Table* out, std::string* error, bool check_variants) {
  if (!j.is_object()) return Err(error, "top level must be a JSON object");
  Fields f(j, "table", error);
  std::string schema;
  int64_t version = 0;
  if (!f.String("schema", &schema)) return false;
  if (schema != kSchemaName) return Err(error, "schema is \"" + schema + "\", expected \"" + kSchemaName + "\"");
  if (!f.Int("version", INT64_MIN, INT64_MAX, &version)) return false;
  if (version < 1 || version > kSchemaVersion)
    return Err(error, "schema version " + std::to_string(version) + " is not supported (this build reads versions 1 to " +
                          std::to_string(kSchemaVersion) + ")");
  Table t;
  t.source_version = int(version);
  if (!f.String("machine_id", &t.machine_id)) return false;
  if (t.machine_id.empty()) return Err(error, "machine_id is empty");
  // The table generator writes machine_id and isa_family into C++ string literals.
  if (HasControlCharacter(t.machine_id)) return Err(error, "machine_id contains a control character");
  if (!f.String("backend", &t.backend, false)) return false;
  std::string cls = "rule";
  if (!f.String("accuracy_class", &cls, false)) return false;
  if (!ParseAccuracyClass(cls, &t.accuracy_class))
    return Err(error, "accuracy_class is \"" + cls + "\", expected \"rule\" or \"near-exact\"");
  if (const json* p = f.Find("provenance")) {
    if (!p->is_object()) return Err(error, "provenance must be an object");
    std::string isa;
    if (!Fields(*p, "provenance", error).String("isa_family", &isa, false)) return false;
    if (HasControlCharacter(isa)) return Err(error, "provenance: isa_family contains a control character");
    t.provenance = *p;
  }
  const json* entries = f.Find("entries");
  if (!entries || !entries->is_array()) return Err(error, "missing array \"entries\"");
  std::set<std::tuple<int, int, int, int, int>> seen;
  for (size_t i = 0; i < entries->size(); ++i)
    if (!ParseEntry((*entries)[i], "entry " + std::to_string(i), t.source_version, check_variants, &seen, &t, error))
      return false;
  if (!CheckBoundaries(t, error)) return false;
  *out = std::move(t);
  return true;
}

}  // namespace

bool ParseBoundedJson(const std::string& text, json* out, std::string* error) {
  // Containers deeper than the limit are dropped as they come (the callback
  // returns false), so a deep document costs no more memory than its text.
  bool too_deep = false;
  const json::parser_callback_t limit = [&too_deep](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      too_deep = true;
    return !too_deep;
  };
  try {
    json j = json::parse(text, limit);
    if (too_deep) return Err(error, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    *out = std::move(j);
    return true;
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number that overflows (1e999)
    return Err(error, std::string("not valid JSON (truncated or corrupt?): ") + e.what());
  }
}

bool ParseTable(const std::string& text, Table* out, std::string* error, bool check_variants) {
  json j;
  if (!ParseBoundedJson(text, &j, error)) return false;
  try {
    return ParseTableJson(j, out, error, check_variants);
  } catch (const json::exception& e) {  // not expected: every access above checks the type first
    return Err(error, std::string("malformed table: ") + e.what());
  }
}

bool LoadTableFile(const std::string& path, Table* out, std::string* error, bool check_variants) {
  std::string text, inner;
  if (!ReadBoundedFile(path, &text, error)) return false;
  if (!ParseTable(text, out, &inner, check_variants)) return Err(error, path + ": " + inner);
  return true;
}

namespace {
// A split's tile, written only when it has one (tables without stay as they were).
void AddTile(const Split& s, json* x) {
  if (s.transpose_result) (*x)["transpose_result"] = true;
  if (!s.tile_rows && !s.tile_cols) return;
  (*x)["tile_rows"] = s.tile_rows;
  (*x)["tile_cols"] = s.tile_cols;
}
}  // namespace

json ToJson(const Table& t) {
  json j;
  j["schema"] = kSchemaName;
  j["version"] = kSchemaVersion;
  j["machine_id"] = t.machine_id;
  j["backend"] = t.backend;
  // Absent means the rule (every table before the classes).
  if (t.accuracy_class != AccuracyClass::kRule) j["accuracy_class"] = std::string(AccuracyClassName(t.accuracy_class));
  j["provenance"] = t.provenance;
  j["entries"] = json::array();
  for (const Entry& e : t.entries) {
    json x;
    x["op"] = std::string(OpName(e.op));
    x["dtype"] = std::string(DTypeName(e.dtype));
    if (e.op == Op::kGeluBwd) x["gelu_approx"] = e.mode == GeluApprox::kTanh ? "tanh" : "none";
    x["layout"] = LayoutName(e.layout);
    x["octave"] = e.octave;
    x["size_lo"] = e.Lo();
    x["size_hi"] = e.Hi();
    x["variant"] = e.choice.variant;
    if (e.rule)
      x["grain"] = e.rule->grain;
    else
      x["threads"] = e.choice.split.threads;
    x["chunk"] = e.choice.split.chunk;
    x["stage_tile"] = e.choice.split.stage_tile;
    AddTile(e.choice.split, &x);
    x["median_ns"] = e.median_ns;
    x["spread_pct"] = e.spread_pct;
    if (e.one_thread) {
      x["one_thread"] = {{"variant", e.one_thread->variant},
                         {"chunk", e.one_thread->split.chunk},
                         {"stage_tile", e.one_thread->split.stage_tile}};
      AddTile(e.one_thread->split, &x["one_thread"]);
    }
    x["runner_up"] = nullptr;
    if (e.runner_up) {
      x["runner_up"] = {{"variant", e.runner_up->choice.variant},
                        {"threads", e.runner_up->choice.split.threads},
                        {"chunk", e.runner_up->choice.split.chunk},
                        {"stage_tile", e.runner_up->choice.split.stage_tile},
                        {"median_ns", e.runner_up->median_ns}};
      AddTile(e.runner_up->choice.split, &x["runner_up"]);
    }
    if (!e.extra.is_null()) x["extra"] = e.extra;
    j["entries"].push_back(std::move(x));
  }
  return j;
}

size_t ResetDisagreeingBoundaries(std::vector<Entry>* entries) {
  std::map<CellKey, Entry*> by_cell;
  for (Entry& e : *entries) by_cell[CellOf(e)] = &e;
  size_t moved = 0;
  for (auto& [cell, e] : by_cell) {
    auto next = cell;
    std::get<4>(next) += 1;
    const auto it = by_cell.find(next);
    if (it == by_cell.end() || e->Hi() == it->second->Lo()) continue;
    e->size_hi = OctaveHi(e->octave);
    it->second->size_lo = OctaveLo(it->second->octave);
    ++moved;
  }
  return moved;
}

bool SaveTableFile(const std::string& path, const Table& t, std::string* error) {
  std::string text;
  try {
    text = ToJson(t).dump(2) + "\n";
  } catch (const json::exception& e) {  // a string that is not UTF-8 (a path from the command line)
    return Err(error, path + ": cannot write the table: " + e.what());
  }
  const std::string tmp = path + ".tmp";
  // A stale temporary file (a run killed while writing) goes first, whatever
  // it is: O_EXCL then never writes through a symlink nor opens a FIFO.
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return Err(error, tmp + ": cannot create: " + std::strerror(errno));
  // From here on every failure removes the temporary file.
  auto fail = [&](const std::string& what) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return Err(error, what + ": " + std::strerror(e));
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return fail(tmp + ": write failed");
    done += size_t(w);
  }
  if (::fsync(fd) != 0) return fail(tmp + ": write failed (fsync)");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail(tmp + ": write failed (close)");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(path + ": cannot rename the temporary file into place");
  return true;
}

}  // namespace actgrad::tables
