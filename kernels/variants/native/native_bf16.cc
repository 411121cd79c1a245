// bf16cvt: bf16 loaded into fp32 (a shift), computed in fp32 (AVX-512F,
// native_f32_ops.h), rounded back to bf16 to nearest even with the native
// AVX512_BF16 vcvtne2ps2bf16 (NaN stays a quiet NaN). Compile with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mfma (the full
// native flag set is fine too; see native_variants.h).
// GCC 12 reports its own _mm512_undefined_*() (self-initialized) as "maybe
// uninitialized" / "uninitialized" once many intrinsics are inlined into one
// function (a false positive).
#if !defined(__clang__)  // a GCC-only warning (clang, in the sanitizer builds, has none)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "variants/native/native_driver.h"
#include "variants/native/native_f32_ops.h"
#include "variants/native/native_hwy_ops.h"
#include "variants/native/native_kernels.h"

namespace actgrad::native {
namespace {

// 32 bf16 lanes: the even ones are the low halves of the 32-bit lanes, the odd
// ones the high halves, so each half becomes fp32 with one shift or one AND
// (no cross-lane shuffle). The results come back from vcvtne2ps2bf16 as
// [even | odd] and one vpermw interleaves them.
template <class F32Op>
struct BF16Cvt {
  F32Op op;
  __m512i hi_mask = _mm512_set1_epi32(int(0xFFFF0000u));
  __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                        23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  explicit BF16Cvt(const OpParams& p) : op(p, DType::kBF16) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i g, __m512i x) const {
    const __m512 g_even = _mm512_castsi512_ps(_mm512_slli_epi32(g, 16));
    const __m512 x_even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    const __m512 g_odd = _mm512_castsi512_ps(_mm512_and_si512(g, hi_mask));
    const __m512 x_odd = _mm512_castsi512_ps(_mm512_and_si512(x, hi_mask));
    const __m512 r_even = op(g_even, x_even);
    const __m512 r_odd = op(g_odd, x_odd);
    // vcvtne2ps2bf16 flushes subnormal results to zero; lanes with one (rare:
    // |result| < 2^-126) take the integer rounding instead.
    const __mmask16 tiny = _kor_mask16(_mm512_fpclass_ps_mask(r_even, 0x20), _mm512_fpclass_ps_mask(r_odd, 0x20));
    if (__builtin_expect(!_ktestz_mask16_u8(tiny, tiny), 0)) return RoundByInteger(r_even, r_odd);
    const __m512i packed = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(r_odd, r_even));
    return _mm512_permutexvar_epi16(interleave, packed);
  }
  ACTGRAD_NATIVE_INLINE __m512i RoundByInteger(__m512 r_even, __m512 r_odd) const {
    const __m512i even = _mm512_srli_epi32(RoundToBF16Bits(r_even), 16);
    const __m512i odd = _mm512_and_si512(RoundToBF16Bits(r_odd), hi_mask);
    return _mm512_or_si512(even, odd);
  }
};

// Claimed GELU bounds: the measured maximum (spec metric, g = 1, all 65,536
// inputs, tests/kernels/native_test.cc) 3.881e-3 (erf), 3.882e-3 (tanh): the bf16 rounding itself.
constexpr double kGeluErfClaim = 3.9e-3;
constexpr double kGeluTanhClaim = 3.9e-3;

#define ACTGRAD_NATIVE_BF16_FAMILY(OP, OPT, APPROX, MODE, CLAIM)                                                 \
  KernelEntry{OP, DType::kBF16, "bf16cvt", APPROX, 1, false, MODE, &Kernel<BF16Cvt<OPT>, 1, false>, CLAIM},     \
      KernelEntry{OP, DType::kBF16, "bf16cvt", APPROX, 2, false, MODE, &Kernel<BF16Cvt<OPT>, 2, false>, CLAIM}, \
      KernelEntry{OP, DType::kBF16, "bf16cvt", APPROX, 4, false, MODE, &Kernel<BF16Cvt<OPT>, 4, false>, CLAIM}, \
      KernelEntry{OP, DType::kBF16, "bf16cvt", APPROX, 4, true, MODE, &Kernel<BF16Cvt<OPT>, 4, true>, CLAIM}

constexpr KernelEntry kEntries[] = {
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kSeluBwd, SeluF32, "exact", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kHardswishBwd, HardswishF32, "exact", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kSoftshrinkBwd, SoftshrinkF32, "exact", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kLogitGrad, LogitF32, "div", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, GeluF32<GeluApprox::kNone>, "erf_as", GeluApprox::kNone, kGeluErfClaim),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, GeluF32<GeluApprox::kTanh>, "tanh_exp", GeluApprox::kTanh, kGeluTanhClaim),
    // The portable approximations that are cheaper than erf_as, on the native conversions.
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradErfR3>, "erf_r3", GeluApprox::kNone,
          hwyops::GeluGradErfR3::kClaimedMaxErr),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradErfR2>, "erf_r2", GeluApprox::kNone,
          hwyops::GeluGradErfR2::kClaimedMaxErr),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradErfPw5>, "erf_pw5", GeluApprox::kNone,
          hwyops::GeluGradErfPw5::kClaimedMaxErr),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradTanhPw5>, "tanh_pw5", GeluApprox::kTanh,
          hwyops::GeluGradTanhPw5::kClaimedMaxErr),
    // Piecewise on 32 half-unit segments (native_f32_ops.h): fewer operations than erf_pw5.
    // No degree-3 forms (erf_pw3h, tanh_pw3h): their 7.1e-4 plus the bf16 rounding reaches
    // 0.0041-0.0042 at a few x, over the rule's 0.004 threshold: shippable by the share over
    // the accuracy tool's inputs, but one such element in an array under 1,000 fails it.
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, GeluErfPw4h, "erf_pw4h",
          GeluApprox::kNone, 2.3e-5),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kGeluBwd, GeluTanhPw4h, "tanh_pw4h",
          GeluApprox::kTanh, 2.3e-5),
    ACTGRAD_NATIVE_BF16_FAMILY(Op::kLogitGrad, HwyLogit<hwyops::DivRcpNR>, "rcp_nr", GeluApprox::kNone,
          hwyops::DivRcpNR::kClaimedMaxErr),
};
#undef ACTGRAD_NATIVE_BF16_FAMILY

}  // namespace

extern const KernelTable kBF16CvtTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                          ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512bf16"};

}  // namespace actgrad::native
