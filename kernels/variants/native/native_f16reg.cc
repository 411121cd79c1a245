// reg (fp16): fp16 converted to fp32 in registers with vcvtph2ps, computed in
// fp32 (native_f32_ops.h), rounded back with vcvtps2ph (nearest even).
// Needs only AVX512F (+FMA); compile with the native flag set or a subset
// (see native_variants.h).
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

template <class F32Op>
struct F16Reg {
  F32Op op;
  explicit F16Reg(const OpParams& p) : op(p, DType::kF16) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i g, __m512i x) const {
    const __m512 g_lo = _mm512_cvtph_ps(_mm512_castsi512_si256(g));
    const __m512 g_hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(g, 1));
    const __m512 x_lo = _mm512_cvtph_ps(_mm512_castsi512_si256(x));
    const __m512 x_hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 1));
    const __m256i r_lo = _mm512_cvtps_ph(op(g_lo, x_lo), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i r_hi = _mm512_cvtps_ph(op(g_hi, x_hi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_inserti64x4(_mm512_castsi256_si512(r_lo), r_hi, 1);
  }
};

// Claimed GELU bounds: the measured maximum (spec metric, g = 1, all 65,536
// inputs, tests/kernels/native_test.cc) 4.88e-4 (both): the fp16 rounding itself.
constexpr double kGeluErfClaim = 4.9e-4;
constexpr double kGeluTanhClaim = 4.9e-4;

#define ACTGRAD_NATIVE_F16REG_FAMILY(OP, OPT, APPROX, MODE, CLAIM)                                           \
  KernelEntry{OP, DType::kF16, "reg", APPROX, 1, false, MODE, &Kernel<F16Reg<OPT>, 1, false>, CLAIM},       \
      KernelEntry{OP, DType::kF16, "reg", APPROX, 2, false, MODE, &Kernel<F16Reg<OPT>, 2, false>, CLAIM},   \
      KernelEntry{OP, DType::kF16, "reg", APPROX, 4, false, MODE, &Kernel<F16Reg<OPT>, 4, false>, CLAIM},   \
      KernelEntry{OP, DType::kF16, "reg", APPROX, 4, true, MODE, &Kernel<F16Reg<OPT>, 4, true>, CLAIM}

constexpr KernelEntry kEntries[] = {
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kSeluBwd, SeluF32, "exact", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kHardswishBwd, HardswishF32, "exact", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kSoftshrinkBwd, SoftshrinkF32, "exact", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kLogitGrad, LogitF32, "div", GeluApprox::kNone, 0.0),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, GeluF32<GeluApprox::kNone>, "erf_as", GeluApprox::kNone, kGeluErfClaim),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, GeluF32<GeluApprox::kTanh>, "tanh_exp", GeluApprox::kTanh, kGeluTanhClaim),
    // The portable approximations that are cheaper than erf_as, on the native conversions.
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradErfR3>, "erf_r3", GeluApprox::kNone,
          hwyops::GeluGradErfR3::kClaimedMaxErr),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradErfR2>, "erf_r2", GeluApprox::kNone,
          hwyops::GeluGradErfR2::kClaimedMaxErr),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradErfPw5>, "erf_pw5", GeluApprox::kNone,
          hwyops::GeluGradErfPw5::kClaimedMaxErr),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, HwyGelu<hwyops::GeluGradTanhPw5>, "tanh_pw5", GeluApprox::kTanh,
          hwyops::GeluGradTanhPw5::kClaimedMaxErr),
    // Piecewise on 32 half-unit segments (native_f32_ops.h); degree 3 (7.1e-4) is bf16-only.
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, GeluErfPw4h, "erf_pw4h",
          GeluApprox::kNone, 2.3e-5),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kGeluBwd, GeluTanhPw4h, "tanh_pw4h",
          GeluApprox::kTanh, 2.3e-5),
    ACTGRAD_NATIVE_F16REG_FAMILY(Op::kLogitGrad, HwyLogit<hwyops::DivRcpNR>, "rcp_nr", GeluApprox::kNone,
          hwyops::DivRcpNR::kClaimedMaxErr),
};
#undef ACTGRAD_NATIVE_F16REG_FAMILY

}  // namespace

extern const KernelTable kF16RegTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                         ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512"};

}  // namespace actgrad::native
