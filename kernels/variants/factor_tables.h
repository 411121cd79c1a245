// Exact factor tables for the 16-bit ops. For fp16 and bf16 every
// op but Softshrink is out = g * factor(x) with a factor of the one 16-bit
// input x, so the factor can be looked up instead of computed: 65,536 fp32
// entries (256 KiB) indexed by x's bit pattern, each the double-precision
// reference's factor rounded once to fp32. The gather kernels
// (native/native_gather.cc) multiply it by g in fp32 and round once to the
// output dtype.
//
// Two entries are not factors (NaN bit patterns no factor has; a NaN factor is
// stored as the canonical 0x7FC00000):
//   kFactorZero: the output is +0 whatever g is (Inf and NaN too): Hardswish
//                below -3, LogitGrad outside [eps, 1 - eps].
//   kFactorSlow: the fp32 product would be wrong: the factor overflows fp32
//                (LogitGrad bf16 near 0 and 1), or it is nonzero and below
//                FLT_MIN, where a bf16 g up to 2^128 could still give a
//                representable result and an infinite g gives +-Inf, not NaN
//                (GELU below about -13). The kernel
//                computes such elements in double (ReferenceLanes), correctly
//                rounded.
//
// Tables are built lazily on first use, once per process, thread-safe (about
// 1-3 ms each; GELU erf's, with std::erfc, is the slowest), and never freed:
//   fixed tables: SELU, Hardswish, GELU erf, GELU tanh, per fp16 and bf16
//                 (at most 8, 2 MiB);
//   LogitGrad:    one per (dtype, eps) value, at most kMaxLogitTables per dtype
//                 (4 MiB each dtype at most); beyond them FactorTable returns
//                 nullptr and the kernel computes without a table.
// The runtime calls PrepareFactorTable in phase one, so the first phase two
// does not pay the build.
#pragma once
#include <cstddef>
#include <cstdint>

#include "actgrad/types.h"

namespace actgrad {

inline constexpr uint32_t kFactorZero = 0xFFC00001u;
inline constexpr uint32_t kFactorSlow = 0xFFC00002u;
inline constexpr size_t kFactorEntries = 65536;
inline constexpr int kMaxLogitTables = 16;

// True for the ops and dtypes with a table form (fp16/bf16; not Softshrink).
bool HasFactorTable(Op op, DType dtype);
// The table for (op, dtype, params: gelu_approx for GELU, eps for LogitGrad),
// built on first use; 64-byte aligned. nullptr when there is no table form or
// the LogitGrad cache is full.
const float* FactorTable(Op op, DType dtype, const OpParams& p);
// Builds the table now if it has a table form (phase one's hook).
void PrepareFactorTable(Op op, DType dtype, const OpParams& p);
// out[i] for the lanes i < 32 set in `lanes`: the double reference, correctly
// rounded to the 16-bit dtype (the gather kernels' path for kFactorSlow).
void ReferenceLanes(Op op, DType dtype, const OpParams& p, const uint16_t* g, const uint16_t* x, uint16_t* out,
                    uint32_t lanes);
// Bytes held by the tables built so far, and how many there are.
size_t FactorTableBytes();
int FactorTableCount();

}  // namespace actgrad
