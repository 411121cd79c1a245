// bf16cvt: bf16 loaded into fp32 (a shift), computed in fp32 (AVX-512F,
// native_f32_ops.h), rounded back to bf16 to nearest even with the native
// AVX512_BF16 vcvtne2ps2bf16 (NaN stays a quiet NaN). Compile with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mfma (the full
// native flag set is fine too; see native_variants.h).
#include "variants/native/native_warnings.h"  // first: the pragmas hold for the whole file
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

constexpr KernelEntry kEntries[] = {
#define ACTGRAD_NATIVE_F32(OP, APPROX, MODE, BODY, CLAIM_F16, CLAIM_BF16) \
  ACTGRAD_NATIVE_ENTRIES(OP, DType::kBF16, "bf16cvt", APPROX, MODE, CLAIM_BF16, BF16Cvt<BODY>)
#include "variants/native/native_families.inc"
};

}  // namespace

extern const KernelTable kBF16CvtTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                          ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512bf16"};

}  // namespace actgrad::native
