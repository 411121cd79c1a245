// The views the benchmarks run on: the one definition is
// tools/inputs/views.h (shared with actgrad-tune's layouts); these are its
// names as the benchmark code spells them. See views.h for the geometry of
// contig, strided, bcast and transposed.
#pragma once
#include "tools/inputs/views.h"

namespace actgrad::bench {

using Layout = inputs::ViewLayout;
inline constexpr auto& kLayouts = inputs::kViewLayouts;
inline const char* LayoutName(Layout l) { return inputs::ViewLayoutName(l); }
using inputs::LayoutAppliesTo;
using inputs::LayoutCallBytes;
using inputs::LayoutFits;
using inputs::LayoutViews;
using inputs::View;
using inputs::ViewsOf;

}  // namespace actgrad::bench
