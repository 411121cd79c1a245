// The benchmark views (layouts.h).
#include "common/layouts.h"

namespace actgrad::bench {
namespace {

constexpr int64_t kBcastInner = 64;
constexpr int64_t kTransposeCols = 1024;  // the storage's row length
constexpr size_t kTransposeMin = 16 * 1024;

View Contiguous(std::vector<int64_t> dims) {
  View v;
  v.strides.assign(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * dims[i];
  v.dims = dims;
  v.storage_dims = std::move(dims);
  return v;
}

}  // namespace

const char* LayoutName(Layout l) {
  switch (l) {
    case Layout::kContig: return "contig";
    case Layout::kStrided: return "strided";
    case Layout::kBcast: return "bcast";
    case Layout::kTransposed: return "transposed";
  }
  return "?";
}

bool LayoutFits(Layout l, size_t n) {
  switch (l) {
    case Layout::kContig: return n > 0;
    case Layout::kStrided: return n >= 1024 && n % 1024 == 0;
    case Layout::kBcast: return n >= static_cast<size_t>(kBcastInner) && n % kBcastInner == 0;
    case Layout::kTransposed: return n >= kTransposeMin && n % kTransposeCols == 0;
  }
  return false;
}

bool LayoutAppliesTo(Layout l, Op op) { return l != Layout::kBcast || OpBroadcasts(op); }

LayoutViews ViewsOf(Layout l, size_t n) {
  const int64_t len = static_cast<int64_t>(n);
  LayoutViews v;
  switch (l) {
    case Layout::kContig:
      v.g = v.x = v.out = Contiguous({len});
      break;
    case Layout::kStrided: {
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
    case Layout::kBcast: {
      const int64_t rows = len / kBcastInner;
      v.g = v.out = Contiguous({rows, kBcastInner});
      v.x.dims = {rows, 1};
      v.x.strides = {1, 1};
      v.x.storage_dims = {rows, 1};
      break;
    }
    case Layout::kTransposed: {
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

double LayoutCallBytes(Layout l, DType dt, size_t n) {
  const double es = static_cast<double>(DTypeSize(dt));
  if (l == Layout::kBcast) return es * (2.0 * static_cast<double>(n) + static_cast<double>(n / kBcastInner));
  return 3.0 * es * static_cast<double>(n);
}

}  // namespace actgrad::bench
