// bits (fp16, bf16): Softshrink on the 16-bit patterns, no conversion. The
// output is g or 0, so only the comparison -lambd <= x <= lambd needs x's
// value; fp16 and bf16 are sign-magnitude, so for lambd >= 0 it is
// |x|'s 15 bits <= those of the largest 16-bit value <= lambd, one unsigned
// compare (NaN patterns lie above +Inf's and compare out of range, as the
// reference's NaN x -> g). Per 32 elements: an AND, a compare, a masked
// move: the loop runs at memory speed. Needs AVX-512 F/BW (see
// native_variants.h).
#include "variants/native/native_warnings.h"  // first: the pragmas hold for the whole file
#include <immintrin.h>

#include "variants/native/native_driver.h"
#include "variants/native/native_kernels.h"

namespace actgrad::native {
namespace {

// The 15 magnitude bits of the largest 16-bit value <= lambd (lambd >= 0, not NaN).
template <DType kD>
uint16_t MagnitudeLimit(float lambd) {
  if constexpr (kD == DType::kBF16) {
    return uint16_t(F32Bits(lambd) >> 16);  // truncation: toward zero, so <= lambd (+Inf stays +Inf)
  } else {
    return uint16_t(FloorToHalfBits(lambd) & 0x7FFFu);
  }
}

template <DType kD>
struct SoftshrinkBits {
  __m512i magnitude = _mm512_set1_epi16(0x7FFF);
  __m512i limit;
  __mmask32 can_zero;  // 0 when no x is in range (lambd < 0 or NaN): out = g
  explicit SoftshrinkBits(const OpParams& p) {
    const bool any = p.lambd >= 0.0f;  // false for NaN
    limit = _mm512_set1_epi16(short(any ? MagnitudeLimit<kD>(p.lambd) : 0));
    can_zero = any ? __mmask32(0xFFFFFFFFu) : __mmask32(0);
  }
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i g, __m512i x) const {
    const __mmask32 in = _mm512_mask_cmple_epu16_mask(can_zero, _mm512_and_si512(x, magnitude), limit);
    return _mm512_mask_mov_epi16(g, in, _mm512_setzero_si512());
  }
};

constexpr KernelEntry kEntries[] = {
#define ACTGRAD_NATIVE_BITS(DT, OP, APPROX, MODE, BODY, CLAIM) \
  ACTGRAD_NATIVE_ENTRIES(OP, DT, "bits", APPROX, MODE, CLAIM, BODY)
#include "variants/native/native_families.inc"
};

}  // namespace

extern const KernelTable kBitsTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                       ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512"};

}  // namespace actgrad::native
