// The layouts of the tiling table's cells (a small header: the runtime's
// dispatch includes it without the table's JSON machinery).
#pragma once
#include <cstdint>
#include <string>

namespace actgrad::tables {

// The cell a call's kernel comes from, by how phase two walks its views
// (runtime/plan.h PlanPath): contig (every operand contiguous), bcast (an
// input broadcast: a splat per run, or gathered blocks), strided (runs of a
// contiguous innermost dim in every operand), transposed (an input gathered
// tile by tile: no contiguous innermost dim).
enum class Layout : uint8_t { kContig = 0, kBcast = 1, kStrided = 2, kTransposed = 3 };
inline constexpr int kNumLayouts = 4;
const char* LayoutName(Layout l);
bool ParseLayout(const std::string& s, Layout* out);

}  // namespace actgrad::tables
