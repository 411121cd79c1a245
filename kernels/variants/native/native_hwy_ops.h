// The portable op policies (kernels/ops/ops-inl.h with the approximations of
// kernels/math) on raw __m512 lanes, so the native conversion strategies
// (bf16cvt, fp16 reg) can run every approximation of the portable list
// without a second hand-written copy of its math: one definition, compiled
// here for Highway's static AVX3 target (the native kernel files are built
// with -mavx512f/bw/vl/dq). A native variant using one of these is one line
// in its file's entry table.
#pragma once
#include <immintrin.h>

#include "hwy/highway.h"
#include "math/approx_list-inl.h"
#include "ops/ops-inl.h"
#include "variants/native/native_driver.h"

static_assert(HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL,
              "native kernel files must be compiled with the AVX-512 flags (see native_variants.h)");

namespace actgrad::native {
namespace hwyops = ::actgrad::HWY_NAMESPACE;
namespace hn = hwy::HWY_NAMESPACE;
namespace {

template <class HwyOp>
struct HwyF32 {
  using D = hwy::HWY_NAMESPACE::Simd<float, 16, 0>;
  using V = hwy::HWY_NAMESPACE::Vec512<float>;
  hwyops::OpConsts<D> consts;
  HwyF32(const OpParams& p, DType out) : consts(hwyops::MakeConsts(D(), p, out)) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 x) const {
    return HwyOp::Apply(D(), V{g}, V{x}, consts).raw;
  }
};

// GELU without the test on |g| (GeluBwdOp's path for huge and infinite g):
// for bf16int, whose test on the output redoes every lane at the largest
// finite magnitude, Inf or NaN from the reference, which covers those g.
template <class Approx>
struct GeluBwdBareOp {
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> x, const hwyops::OpConsts<D>&) {
    return hn::Mul(g, Approx::Factor(d, x));
  }
};

template <class P>
using HwyGelu = HwyF32<hwyops::GeluBwdOp<P>>;
template <class P>
using HwyGeluBare = HwyF32<GeluBwdBareOp<P>>;
template <class P>
using HwyLogit = HwyF32<hwyops::LogitGradOp<P>>;

}  // namespace
}  // namespace actgrad::native
