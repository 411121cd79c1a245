// The benchmark and tuner views (views.h).
#include "tools/inputs/views.h"

namespace actgrad::inputs {
namespace {

constexpr int64_t kBcastInner = 64;
constexpr int64_t kTransposeCols = 1024;  // the storage's row length
constexpr size_t kTransposeMin = 16 * 1024;
constexpr size_t kTransposeLineQuantum = 32 * kTransposeCols;

View Contiguous(std::vector<int64_t> dims) {
  View v;
  v.strides.assign(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * dims[i];
  v.dims = dims;
  v.storage_dims = std::move(dims);
  return v;
}

}  // namespace

const char* ViewLayoutName(ViewLayout l) {
  switch (l) {
    case ViewLayout::kContig: return "contig";
    case ViewLayout::kStrided: return "strided";
    case ViewLayout::kBcast: return "bcast";
    case ViewLayout::kTransposed: return "transposed";
  }
  return "?";
}

bool ParseViewLayout(const std::string& name, ViewLayout* out) {
  for (ViewLayout l : kViewLayouts)
    if (name == ViewLayoutName(l)) return *out = l, true;
  return false;
}

bool LayoutFits(ViewLayout l, size_t n) {
  switch (l) {
    case ViewLayout::kContig: return n > 0;
    case ViewLayout::kStrided: return n >= 1024 && n % 1024 == 0;
    case ViewLayout::kBcast: return n >= static_cast<size_t>(kBcastInner) && n % kBcastInner == 0;
    case ViewLayout::kTransposed: return n >= kTransposeMin && n % kTransposeCols == 0;
  }
  return false;
}

size_t FitDown(ViewLayout l, size_t n) {
  size_t q = 1;  // the layout's quantum
  if (l == ViewLayout::kStrided || l == ViewLayout::kTransposed) q = 1024;
  // Transposed out rows of n/1024 elements: a multiple of 32 from 32K up
  // makes them whole 64-byte lines for the 16- and 32-bit dtypes (an i8 row
  // is then a multiple of half a line), as the benchmarks' views
  // and most a framework hands over; the tuner then measures the streaming
  // stores the runtime takes there (StreamingOnWholeLines, tiling/dispatch.h).
  if (l == ViewLayout::kTransposed && n >= kTransposeLineQuantum) q = kTransposeLineQuantum;
  if (l == ViewLayout::kBcast) q = size_t(kBcastInner);
  const size_t m = n / q * q;
  return LayoutFits(l, m) ? m : 0;
}

bool LayoutAppliesTo(ViewLayout l, Op op) { return l != ViewLayout::kBcast || OpBroadcasts(op); }

LayoutViews ViewsOf(ViewLayout l, size_t n) {
  const int64_t len = static_cast<int64_t>(n);
  LayoutViews v;
  switch (l) {
    case ViewLayout::kContig:
      v.g = v.x = v.out = Contiguous({len});
      break;
    case ViewLayout::kStrided: {
      // Storage [a, c, b, d] contiguous; the view [a, b, c, d] swaps dims 1, 2.
      const int64_t a = len / 1024, b = 4, c = 4, d = 64;
      View in;
      in.dims = {a, b, c, d};
      in.strides = {c * b * d, d, b * d, 1};
      in.storage_dims = {a, c, b, d};
      v.g = v.x = in;
      v.out = Contiguous({a, b, c, d});
      break;
    }
    case ViewLayout::kBcast: {
      const int64_t rows = len / kBcastInner;
      v.g = v.out = Contiguous({rows, kBcastInner});
      v.x.dims = {rows, 1};
      v.x.strides = {1, 1};
      v.x.storage_dims = {rows, 1};
      break;
    }
    case ViewLayout::kTransposed: {
      const int64_t rows = len / kTransposeCols;  // of the storage
      View in;
      in.dims = {kTransposeCols, rows};
      in.strides = {1, kTransposeCols};
      in.storage_dims = {rows, kTransposeCols};
      v.g = v.x = in;
      v.out = Contiguous({kTransposeCols, rows});
      break;
    }
  }
  return v;
}

double LayoutCallBytes(ViewLayout l, DType dt, size_t n) {
  const double es = static_cast<double>(DTypeSize(dt));
  if (l == ViewLayout::kBcast) return es * (2.0 * static_cast<double>(n) + static_cast<double>(n / kBcastInner));
  return 3.0 * es * static_cast<double>(n);
}

}  // namespace actgrad::inputs
