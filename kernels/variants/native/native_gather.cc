// gather (fp16, bf16): the exact factor tables of variants/factor_tables.h.
// Per 32 elements: two 16-lane gathers of the factor by x's bit pattern, g
// widened to fp32, one multiply, one rounding to the output dtype (fp16:
// vcvtps2ph; bf16: round to nearest even on the bits, so no AVX512_BF16 is
// needed). Entries kFactorZero give +0; kFactorSlow elements are computed in
// double (ReferenceLanes). A call without a table (LogitGrad's cache full)
// runs the op's fp32 kernel (native_f32_ops.h).
// Needs AVX-512 F/BW/VL/DQ only (see native_variants.h).
#include "variants/native/native_warnings.h"  // first: the pragmas hold for the whole file
#include <immintrin.h>

#include "variants/factor_tables.h"
#include "variants/native/native_driver.h"
#include "variants/native/native_f32_ops.h"
#include "variants/native/native_kernels.h"

namespace actgrad::native {
namespace {

// 16-bit lanes 0-15 and 16-31 of v, zero-extended to 32 bits.
ACTGRAD_NATIVE_INLINE __m512i Lo32(__m512i v) { return _mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)); }
ACTGRAD_NATIVE_INLINE __m512i Hi32(__m512i v) { return _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)); }

// The 16-bit dtype's conversions on 16 lanes.
template <DType kD>
struct Lanes16;
template <>
struct Lanes16<DType::kF16> {
  static ACTGRAD_NATIVE_INLINE __m512 Widen(__m256i h) { return _mm512_cvtph_ps(h); }
  static ACTGRAD_NATIVE_INLINE __m256i Narrow(__m512 r) {
    return _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
};
template <>
struct Lanes16<DType::kBF16> {
  static ACTGRAD_NATIVE_INLINE __m512 Widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static ACTGRAD_NATIVE_INLINE __m256i Narrow(__m512 r) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(RoundToBF16Bits(r), 16));
  }
};

ACTGRAD_NATIVE_INLINE __m512i Join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The op's fp32 kernel on 32 16-bit lanes: the path without a table.
template <DType kD, class F32Op>
struct ViaF32 {
  F32Op op;
  explicit ViaF32(const OpParams& p) : op(p, kD) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i g, __m512i x) const {
    using L = Lanes16<kD>;
    const __m256i lo = L::Narrow(op(L::Widen(_mm512_castsi512_si256(g)), L::Widen(_mm512_castsi512_si256(x))));
    const __m256i hi = L::Narrow(op(L::Widen(_mm512_extracti64x4_epi64(g, 1)), L::Widen(_mm512_extracti64x4_epi64(x, 1))));
    return Join(lo, hi);
  }
};

template <Op kOp, DType kD>
struct Gather {
  const float* table;
  OpParams params;
  explicit Gather(const OpParams& p) : table(FactorTable(kOp, kD, p)), params(p) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i g, __m512i x) const {
    using L = Lanes16<kD>;
    const __m512 f_lo = _mm512_i32gather_ps(Lo32(x), table, 4);
    const __m512 f_hi = _mm512_i32gather_ps(Hi32(x), table, 4);
    const __m512i slow_bits = _mm512_set1_epi32(int(kFactorSlow));
    const __mmask16 s_lo = _mm512_cmpeq_epi32_mask(_mm512_castps_si512(f_lo), slow_bits);
    const __mmask16 s_hi = _mm512_cmpeq_epi32_mask(_mm512_castps_si512(f_hi), slow_bits);
    const __m512i zero_bits = _mm512_set1_epi32(int(kFactorZero));
    const __mmask16 keep_lo = _mm512_cmpneq_epi32_mask(_mm512_castps_si512(f_lo), zero_bits);
    const __mmask16 keep_hi = _mm512_cmpneq_epi32_mask(_mm512_castps_si512(f_hi), zero_bits);
    const __m512 r_lo = _mm512_maskz_mul_ps(keep_lo, L::Widen(_mm512_castsi512_si256(g)), f_lo);
    const __m512 r_hi = _mm512_maskz_mul_ps(keep_hi, L::Widen(_mm512_extracti64x4_epi64(g, 1)), f_hi);
    const __m512i r = Join(L::Narrow(r_lo), L::Narrow(r_hi));
    if (__builtin_expect(_kortestz_mask16_u8(s_lo, s_hi), 1)) return r;
    return SlowLanes(r, g, x, _mm512_kunpackw(s_hi, s_lo));
  }
  // The marked lanes in double (rare: see factor_tables.h).
  __attribute__((noinline)) __m512i SlowLanes(__m512i r, __m512i g, __m512i x, __mmask32 lanes) const {
    alignas(64) uint16_t gs[32], xs[32], rs[32];
    _mm512_store_si512(gs, g);
    _mm512_store_si512(xs, x);
    _mm512_store_si512(rs, r);
    ReferenceLanes(kOp, kD, params, gs, xs, rs, _cvtmask32_u32(lanes));
    return _mm512_load_si512(rs);
  }
};

// The gather kernel, or the fp32 one when there is no table.
template <Op kOp, DType kD, class F32Op, int U>
void GatherKernel(const KernelArgs& a) {
  if (FactorTable(kOp, kD, a.params) == nullptr) return Kernel<ViaF32<kD, F32Op>, U, false>(a);
  Kernel<Gather<kOp, kD>, U, false>(a);
}

// Factor tables have no streaming variants: u1, u2, u4 with plain stores.
constexpr KernelEntry kEntries[] = {
#define ACTGRAD_NATIVE_GATHER(DT, OP, APPROX, MODE, BODY, CLAIM)                                \
  KernelEntry{OP, DT, "gather", APPROX, 1, false, MODE, &GatherKernel<OP, DT, BODY, 1>, CLAIM},     \
      KernelEntry{OP, DT, "gather", APPROX, 2, false, MODE, &GatherKernel<OP, DT, BODY, 2>, CLAIM}, \
      KernelEntry{OP, DT, "gather", APPROX, 4, false, MODE, &GatherKernel<OP, DT, BODY, 4>, CLAIM},
#include "variants/native/native_families.inc"
};

}  // namespace

extern const KernelTable kGatherTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                         ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512"};

}  // namespace actgrad::native
