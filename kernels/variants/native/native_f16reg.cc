// reg (fp16): fp16 converted to fp32 in registers with vcvtph2ps, computed in
// fp32 (native_f32_ops.h), rounded back with vcvtps2ph (nearest even).
// Needs only AVX512F (+FMA); compile with the native flag set or a subset
// (see native_variants.h).
#include "variants/native/native_warnings.h"  // first: the pragmas hold for the whole file
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

constexpr KernelEntry kEntries[] = {
#define ACTGRAD_NATIVE_F32(OP, APPROX, MODE, BODY, CLAIM_F16, CLAIM_BF16) \
  ACTGRAD_NATIVE_ENTRIES(OP, DType::kF16, "reg", APPROX, MODE, CLAIM_F16, F16Reg<BODY>)
#include "variants/native/native_families.inc"
};

}  // namespace

extern const KernelTable kF16RegTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                         ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512"};

}  // namespace actgrad::native
