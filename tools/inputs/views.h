// The views the benchmarks run on and the tuner measures: one
// definition of each layout's geometry, shared by the API benchmark
// (api/<op>.<dtype>.<layout>.<phase>), the peers on the same views
// (peer/<peer>.<op>.<dtype>.<layout>) and actgrad-tune's layouts. Every
// view lies over the contiguous operands of GetOperands (n elements each of
// g, x and out): the strided and transposed views read the same n elements
// in another order, the broadcast self is the first n/64 elements of x, and
// every out view covers the n elements of out exactly once.
//
//   contig      g, x, out [n], stride 1
//   strided     g and x: 4-d views [n/1024, 4, 4, 64] of storages
//               [n/1024, 4, 4, 64] whose dims 1 and 2 are swapped (runs of 64
//               contiguous elements); out contiguous in view order
//   bcast       (ops that broadcast: GELU, Softshrink) g and out [n/64, 64],
//               self [n/64, 1] broadcast along the inner dimension
//   transposed  g and x: [n/1024, 1024] row-major storages viewed as their
//               transpose (dims [1024, n/1024], strides [1, 1024]); out
//               contiguous in view order ([1024, n/1024], strides [n/1024, 1])
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actgrad/types.h"

namespace actgrad::inputs {

enum class ViewLayout { kContig, kStrided, kBcast, kTransposed };
inline constexpr ViewLayout kViewLayouts[] = {ViewLayout::kContig, ViewLayout::kStrided, ViewLayout::kBcast, ViewLayout::kTransposed};

// "contig" | "strided" | "bcast" | "transposed" (the <layout> of the names).
const char* ViewLayoutName(ViewLayout l);
// The layout named so (false: no such name).
bool ParseViewLayout(const std::string& name, ViewLayout* out);

// One operand: its view (dims and strides in elements, offset 0) over a
// row-major storage of storage_dims.
struct View {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  std::vector<int64_t> storage_dims;
};
struct LayoutViews {
  View g, x, out;  // x: self (result y for SELU, x for LogitGrad)
};

// The layout is defined for n elements (strided: n % 1024 == 0; bcast:
// n % 64 == 0; transposed: n >= 16K and n % 1024 == 0, so at least 16 columns).
bool LayoutFits(ViewLayout l, size_t n);
// The largest n' <= n the layout fits (0: none); transposed from 32K up: a
// multiple of 32K, so that out's rows are whole cache lines.
size_t FitDown(ViewLayout l, size_t n);
// The layout applies to the op: bcast only to the ops whose API broadcasts
// (OpBroadcasts: GELU, Softshrink); every other layout to every op.
bool LayoutAppliesTo(ViewLayout l, Op op);
// The views of g, x and out for n elements (LayoutFits(l, n) must hold).
LayoutViews ViewsOf(ViewLayout l, size_t n);
// Bytes read + written by one call (logical: each element of each operand
// once; bcast reads n/64 elements of self).
double LayoutCallBytes(ViewLayout l, DType dt, size_t n);

}  // namespace actgrad::inputs
