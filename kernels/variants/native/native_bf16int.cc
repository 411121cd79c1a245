// bf16int: bf16 computed in fp32 with integer conversions only, so AVX-512
// F/BW is enough (no AVX512_BF16). Per 32 lanes:
//   in:  the even lanes are the low halves of the 32-bit lanes, the odd ones
//        the high halves: one shift or one AND each makes them fp32;
//   out: 0x7FFF added to the fp32 bits rounds to nearest with ties toward
//        zero (a tie is half an ulp off either way, as with ties to even);
//        the even results' high halves shift down and a word blend takes
//        the odd ones' in place (a vpermt2w would do both, on the port the
//        compares need).
// Integer rounding keeps bf16's subnormals (vcvtne2ps2bf16 flushes them, which
// costs bf16cvt a test per vector), and rounds fp32 values past bf16's
// largest finite to Inf. The one test per vector is on the output: a lane at
// the largest finite magnitude, Inf or NaN (the overflow threshold, where the
// fp32 result's own rounding can decide; an infinite g; NaN) is recomputed
// from the double reference. That lets the op bodies drop their overflow
// band (SeluF32Bare, HardswishF32Bare in native_f32_ops.h).
#include "variants/native/native_warnings.h"  // first: the pragmas hold for the whole file
#include <immintrin.h>

#include "reference/reference.h"
#include "variants/native/native_driver.h"
#include "variants/native/native_f32_ops.h"
#include "variants/native/native_hwy_ops.h"
#include "variants/native/native_kernels.h"

namespace actgrad::native {
namespace {

// The double reference's lanes of `redo` rounded once to bf16 (nearest even).
__attribute__((noinline)) __m512i RedoBF16(Op op, const OpParams& p, __m512i g, __m512i x, __m512i out,
                                           __mmask32 redo) {
  alignas(64) uint16_t gb[32], xb[32], ob[32];
  _mm512_store_si512(gb, g);
  _mm512_store_si512(xb, x);
  _mm512_store_si512(ob, out);
  for (uint32_t lanes = redo; lanes != 0; lanes &= lanes - 1) {
    const int i = __builtin_ctz(lanes);
    const double r = ref::Reference(op, BitsF32(uint32_t(gb[i]) << 16), BitsF32(uint32_t(xb[i]) << 16), p);
    ob[i] = DoubleToBF16Bits(r);
  }
  return _mm512_load_si512(ob);
}

// LogitGrad with P's range check made on the bf16 patterns of all 32 lanes
// at once (a subtract and one unsigned compare, where the fp32 op makes two
// compares per 16 lanes): with eps < 0 and every x in [2^-125, 1) (patterns
// 0x0100..0x3F7F; x's that are fp32 values of P's range [kRangeLo, kRangeHi])
// the quotient alone is the result; other vectors take the op's own checks.
template <class P>
struct LogitBits : HwyLogit<P> {
  static_assert(P::kRangeLo <= 0x1p-125f && P::kRangeHi >= 0x1.fep-1f, "the patterns' range must lie in P's");
  bool neg_mode;
  __m512i lo = _mm512_set1_epi16(0x0100), span = _mm512_set1_epi16(0x3F7F - 0x0100);
  LogitBits(const OpParams& p, DType out) : HwyLogit<P>(p, out), neg_mode(LogitModeOf(p.eps) == kLogitNeg) {}
  ACTGRAD_NATIVE_INLINE bool AllInRange(__m512i x) const {
    return neg_mode && _mm512_cmpgt_epu16_mask(_mm512_sub_epi16(x, lo), span) == 0;
  }
  ACTGRAD_NATIVE_INLINE __m512 Quotient(__m512 g, __m512 x) const {
    using D = typename HwyLogit<P>::D;
    using V = typename HwyLogit<P>::V;
    return P::Quotient(D(), V{g}, V{_mm512_fnmadd_ps(x, x, x)}).raw;
  }
};

template <Op kOp, GeluApprox kMode, class F32Op>
struct BF16Int {
  F32Op op;
  OpParams params;
  __m512i hi_mask = _mm512_set1_epi32(int(0xFFFF0000u));
  __m512i bias = _mm512_set1_epi32(0x7FFF);
  __m512i magnitude = _mm512_set1_epi16(0x7FFF);
  __m512i largest = _mm512_set1_epi16(0x7F7F);  // bf16's largest finite magnitude
  explicit BF16Int(const OpParams& p) : op(p, DType::kBF16), params(p) { params.gelu_approx = kMode; }
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i g, __m512i x) const {
    const __m512 g_even = _mm512_castsi512_ps(_mm512_slli_epi32(g, 16)), x_even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    const __m512 g_odd = _mm512_castsi512_ps(_mm512_and_si512(g, hi_mask)), x_odd = _mm512_castsi512_ps(_mm512_and_si512(x, hi_mask));
    if constexpr (requires { op.AllInRange(x); }) {
      if (__builtin_expect(op.AllInRange(x), 1)) return Round(g, x, op.Quotient(g_even, x_even), op.Quotient(g_odd, x_odd));
    }
    return Round(g, x, op(g_even, x_even), op(g_odd, x_odd));
  }
  // The fp32 results of the even and odd lanes as bf16, edge lanes redone.
  ACTGRAD_NATIVE_INLINE __m512i Round(__m512i g, __m512i x, __m512 r_even, __m512 r_odd) const {
    const __m512i even = _mm512_add_epi32(_mm512_castps_si512(r_even), bias);
    const __m512i odd = _mm512_add_epi32(_mm512_castps_si512(r_odd), bias);
    const __m512i out = _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(even, 16), odd);
    const __mmask32 edge = _mm512_cmpge_epu16_mask(_mm512_and_si512(out, magnitude), largest);
    if (__builtin_expect(edge != 0, 0)) return RedoBF16(kOp, params, g, x, out, edge);
    return out;
  }
};

constexpr KernelEntry kEntries[] = {
#define ACTGRAD_NATIVE_BF16INT(OP, APPROX, MODE, BODY, CLAIM) \
  ACTGRAD_NATIVE_ENTRIES(OP, DType::kBF16, "bf16int", APPROX, MODE, CLAIM, BF16Int<OP, MODE, BODY>)
#include "variants/native/native_families.inc"
};

}  // namespace

extern const KernelTable kBF16IntTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                          ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512"};

}  // namespace actgrad::native
