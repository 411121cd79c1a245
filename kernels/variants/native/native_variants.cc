// Registration of the native (AVX512-FP16 / AVX512_BF16 intrinsics) variants.
// This file runs at start-up on any x86 CPU: it must not be compiled with
// -mavx* flags (it instantiates std::string / std::vector<Variant> code that
// is shared with the rest of the program). Only the kernel files
// native_f16.cc, native_bf16.cc and native_f16reg.cc need the AVX-512 flags;
// their tables are plain data, read here without running any of their code.
#if defined(__AVX__)
#warning "native_variants.cc should be compiled without -mavx* flags (see native_variants.h)"
#endif
#include "variants/native/native_variants.h"

#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "variants/native/native_kernels.h"

namespace actgrad {
namespace {

using native::KernelEntry;
using native::KernelTable;

// The NativeFeature bits this CPU (and OS: AVX and AVX-512 count only when
// XGETBV says the OS saves their register state) has. Read with CPUID rather
// than __builtin_cpu_supports, which clang 14 lacks for f16c, avx512fp16 and
// avx512bf16 (the sanitizer and fuzz builds use clang).
uint32_t CpuFeatures() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a1, b1, c1, d1, b7 = 0, c7 = 0, d7 = 0, a71 = 0, x;
  if (!__get_cpuid(1, &a1, &b1, &c1, &d1)) return 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, x, b7, c7, d7);
    unsigned b71, c71, d71;
    __cpuid_count(7, 1, a71, b71, c71, d71);
  }
  uint64_t xcr0 = 0;
  if (c1 & (1u << 27)) {  // OSXSAVE: XGETBV is available
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6) == 0x6;                // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM0-15 high, ZMM16-31
  const auto bit = [](unsigned reg, int b) { return (reg >> b) & 1u; };
  struct Feature { bool has; uint32_t flag; };
  const Feature features[] = {
      {bit(c1, 20) != 0, native::kFeatSSE42},
      {os_avx && bit(c1, 28), native::kFeatAVX},
      {os_avx && bit(b7, 5), native::kFeatAVX2},
      {os_avx && bit(c1, 12), native::kFeatFMA},
      {os_avx && bit(c1, 29), native::kFeatF16C},
      {bit(b7, 3) != 0, native::kFeatBMI},
      {bit(b7, 8) != 0, native::kFeatBMI2},
      {os_avx512 && bit(b7, 16), native::kFeatAVX512F},
      {os_avx512 && bit(b7, 30), native::kFeatAVX512BW},
      {os_avx512 && bit(b7, 31), native::kFeatAVX512VL},
      {os_avx512 && bit(b7, 17), native::kFeatAVX512DQ},
      {os_avx512 && bit(b7, 28), native::kFeatAVX512CD},
      {os_avx512 && bit(d7, 23), native::kFeatAVX512FP16},
      {os_avx512 && bit(a71, 5), native::kFeatAVX512BF16},
      {os_avx512 && bit(c7, 1), native::kFeatAVX512VBMI},
      {os_avx512 && bit(c7, 6), native::kFeatAVX512VBMI2},
      {os_avx512 && bit(c7, 11), native::kFeatAVX512VNNI},
      {os_avx512 && bit(c7, 12), native::kFeatAVX512BITALG},
      {os_avx512 && bit(c7, 14), native::kFeatAVX512VPOPCNTDQ},
      {os_avx512 && bit(b7, 21), native::kFeatAVX512IFMA},
      {bit(c7, 8) != 0, native::kFeatGFNI},
      {os_avx && bit(c7, 9), native::kFeatVAES},
      {os_avx && bit(c7, 10), native::kFeatVPCLMULQDQ},
  };
  uint32_t f = 0;
  for (const Feature& ft : features)
    if (ft.has) f |= ft.flag;
  return f;
#else
  return 0;
#endif
}

void AppendTable(const KernelTable& t, uint32_t cpu, std::vector<Variant>* out) {
  // A kernel file compiled without AVX-512 (not expected) registers nothing.
  const uint32_t kNeed = native::kFeatAVX512F | native::kFeatAVX512BW;
  if ((t.requires_features & kNeed) != kNeed) return;
  const bool supported = (t.requires_features & ~cpu) == 0;
  for (size_t i = 0; i < t.count; ++i) {
    const KernelEntry& e = t.entries[i];
    Variant v;
    v.name = std::string(OpName(e.op)) + "." + std::string(DTypeName(e.dtype)) + "." + e.upcast + "." +
             e.approx + ".u" + std::to_string(e.unroll) + "." + t.target + (e.nt_stores ? ".nt" : "");
    v.op = e.op;
    v.dtype = e.dtype;
    v.upcast = e.upcast;
    v.approx = e.approx;
    v.unroll = e.unroll;
    v.target = t.target;
    v.nt_stores = e.nt_stores;
    v.gelu_mode = e.gelu_mode;
    v.fn = e.fn;
    v.supported = supported;
    v.factor_table = v.upcast == "gather";
    v.claimed_max_err = e.claimed_max_err;
    out->push_back(std::move(v));
  }
}

}  // namespace

void AppendNativeVariants(std::vector<Variant>* out) {
  const uint32_t cpu = CpuFeatures();
  AppendTable(native::kF16NativeTable, cpu, out);
  AppendTable(native::kBF16CvtTable, cpu, out);
  AppendTable(native::kBF16IntTable, cpu, out);
  AppendTable(native::kF16RegTable, cpu, out);
  AppendTable(native::kGatherTable, cpu, out);
  AppendTable(native::kBitsTable, cpu, out);
}

}  // namespace actgrad
