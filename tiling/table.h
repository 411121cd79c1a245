// The tiling table (docs/conventions.md, schema version 4; versions 1 to 3
// still load): parse, validate, serialize. Used by the tuner (writes), the table generator (build time) and
// the ACTGRAD_TILING_TABLE override (run time).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "actgrad/types.h"
#include "tiling/choice.h"
#include "tiling/layout.h"
#include "tiling/size_cells.h"

namespace actgrad::tables {

inline constexpr int kSchemaVersion = 4;
inline constexpr const char* kSchemaName = "actgrad-tiling-table";
// Size ranges are octaves (tiling/size_cells.h). Version 1 tables used 4x
// buckets (bucket k = octaves 2k and 2k+1); they load as two octave entries
// with the same choice. Versions 1 and 2 name the split's chunk "tile" (CPU
// tables; Atlas tables: the stage tile, i.e. the UB tile length). Version 4
// CPU entries give a thread rule ("grain") instead of a thread count, and
// the boundary between two octaves' entries may sit where the tuner found
// their choices cross over (size_lo/size_hi), not at the power of two.
// Limits on what is read (docs/conventions.md): a full table (every cell of
// every op, dtype, mode and layout at 48 octaves) is about 5 MB; the largest
// committed one is 0.5 MB. A file over the cap is refused before it is read
// (parsing costs ~5 bytes of memory per byte of text).
inline constexpr uint64_t kMaxTableBytes = uint64_t(16) << 20;  // 16 MiB
// Tables nest 6 deep; nlohmann copies, compares and prints recursively, so a
// document nested 200,000 deep would overflow the stack.
inline constexpr int kMaxJsonDepth = 64;
// The largest tile extent (Split::tile_rows, tile_cols) a table may give.
inline constexpr int64_t kMaxTileExtent = 1 << 16;

// A choice with the time it measured (the runner-up of a cell).
struct Measured {
  Choice choice;
  double median_ns = 0;
};

struct Entry {
  Op op = Op::kSeluBwd;
  DType dtype = DType::kF32;
  GeluApprox mode = GeluApprox::kNone;  // GELU only: "gelu_approx": "none" | "tanh"
  Layout layout = Layout::kContig;
  int octave = kMinOctave;  // n in [2^octave, 2^(octave+1))
  Choice choice;
  // v4 CPU entries: how many threads a call of n gets (ThreadRule); then
  // choice.split.threads is not stored (read as 1; At() gives the choice for
  // a size, the tuner keeps the count it measured in extra.tuning). Absent (v1-v3 tables, Atlas tables, whose
  // threads are the block dim): choice.split.threads is the thread count.
  std::optional<ThreadRule> rule;
  // The sizes the entry serves, [size_lo, size_hi); 0: its octave's bounds.
  // A v4 entry's boundary with the next octave's entry moves to the
  // crossover the tuner bisected between them (both entries say the same).
  uint64_t size_lo = 0, size_hi = 0;
  uint64_t Lo() const { return size_lo ? size_lo : OctaveLo(octave); }
  uint64_t Hi() const { return size_hi ? size_hi : OctaveHi(octave); }
  // The choice for a call of n elements when `available` threads may run.
  Choice At(uint64_t n, int available) const;
  // The best one-thread choice of the search, for callers that cap the
  // threads at 1 (omp_set_num_threads(1)) when choice.split.threads > 1;
  // its split.threads is 1.
  std::optional<Choice> one_thread;
  double median_ns = 0;
  double spread_pct = 0;
  std::optional<Measured> runner_up;
  nlohmann::json extra;  // backend-specific notes (the tuner's "tuning" block)
};

// A table's cell, (op, dtype, GELU mode, layout, octave): at most one entry each.
using CellKey = std::tuple<int, int, int, int, int>;
inline CellKey CellOf(const Entry& e) { return {int(e.op), int(e.dtype), int(e.mode), int(e.layout), e.octave}; }
// A series, the cells of one op, dtype, GELU mode and layout over all octaves.
using SeriesKey = std::tuple<int, int, int, int>;
inline SeriesKey SeriesOf(const Entry& e) { return {int(e.op), int(e.dtype), int(e.mode), int(e.layout)}; }

struct Table {
  std::string machine_id;
  std::string backend = "cpu";
  // What the choices were gated on ("accuracy_class"; absent: the rule): the
  // dispatch's default for a cell without an entry is the class's.
  AccuracyClass accuracy_class = AccuracyClass::kRule;
  nlohmann::json provenance = nlohmann::json::object();
  std::vector<Entry> entries;
  int source_version = kSchemaVersion;  // the version of the file it was read from
  std::string IsaFamily() const;  // provenance.isa_family, "" if absent
};

// Parses JSON refusing nesting deeper than kMaxJsonDepth and numbers that
// overflow a double; never throws (but bad_alloc). Shared with the tuner log.
bool ParseBoundedJson(const std::string& text, nlohmann::json* out, std::string* error);

// Validates everything: schema name and version, required fields and their
// JSON types (integers must be JSON integers in range, numbers finite and
// >= 0: nothing is converted), known ops/dtypes/layouts, octave (v1: bucket)
// range and size bounds, no duplicate cell, and (for CPU tables, when
// check_variants) that each variant exists and computes the entry's op,
// dtype and GELU mode. Errors name the entry and the field. Never throws
// (but bad_alloc).
bool ParseTable(const std::string& text, Table* out, std::string* error, bool check_variants = true);
// Reads only a regular file of at most kMaxTableBytes (a FIFO would block,
// a device never end), then ParseTable. Errors start with the path.
bool LoadTableFile(const std::string& path, Table* out, std::string* error, bool check_variants = true);
nlohmann::json ToJson(const Table& t);
// Where two neighbouring octaves' entries of a series disagree on their
// boundary (entries of two runs merged), both move back to the power of two
// between them: the crossover of a pair that was never measured together is
// unknown. Returns how many boundaries it moved.
size_t ResetDisagreeingBoundaries(std::vector<Entry>* entries);
// Writes atomically (temporary file <path>.tmp, fsync, rename); on any error
// the temporary file is removed and a table already at `path` is untouched.
bool SaveTableFile(const std::string& path, const Table& t, std::string* error);

}  // namespace actgrad::tables
