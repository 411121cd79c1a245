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

#include "variants/native/native_kernels.h"

namespace actgrad {
namespace {

using native::KernelEntry;
using native::KernelTable;

// The NativeFeature bits this CPU (and OS: __builtin_cpu_supports reports the
// AVX/AVX-512 features only when XGETBV says the OS saves their state) has.
uint32_t CpuFeatures() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  uint32_t f = 0;
  if (__builtin_cpu_supports("sse4.2")) f |= native::kFeatSSE42;
  if (__builtin_cpu_supports("avx")) f |= native::kFeatAVX;
  if (__builtin_cpu_supports("avx2")) f |= native::kFeatAVX2;
  if (__builtin_cpu_supports("fma")) f |= native::kFeatFMA;
  if (__builtin_cpu_supports("f16c")) f |= native::kFeatF16C;
  if (__builtin_cpu_supports("bmi")) f |= native::kFeatBMI;
  if (__builtin_cpu_supports("bmi2")) f |= native::kFeatBMI2;
  if (__builtin_cpu_supports("avx512f")) f |= native::kFeatAVX512F;
  if (__builtin_cpu_supports("avx512bw")) f |= native::kFeatAVX512BW;
  if (__builtin_cpu_supports("avx512vl")) f |= native::kFeatAVX512VL;
  if (__builtin_cpu_supports("avx512dq")) f |= native::kFeatAVX512DQ;
  if (__builtin_cpu_supports("avx512cd")) f |= native::kFeatAVX512CD;
  if (__builtin_cpu_supports("avx512fp16")) f |= native::kFeatAVX512FP16;
  if (__builtin_cpu_supports("avx512bf16")) f |= native::kFeatAVX512BF16;
  if (__builtin_cpu_supports("avx512vbmi")) f |= native::kFeatAVX512VBMI;
  if (__builtin_cpu_supports("avx512vbmi2")) f |= native::kFeatAVX512VBMI2;
  if (__builtin_cpu_supports("avx512vnni")) f |= native::kFeatAVX512VNNI;
  if (__builtin_cpu_supports("avx512bitalg")) f |= native::kFeatAVX512BITALG;
  if (__builtin_cpu_supports("avx512vpopcntdq")) f |= native::kFeatAVX512VPOPCNTDQ;
  if (__builtin_cpu_supports("avx512ifma")) f |= native::kFeatAVX512IFMA;
  if (__builtin_cpu_supports("gfni")) f |= native::kFeatGFNI;
  if (__builtin_cpu_supports("vaes")) f |= native::kFeatVAES;
  if (__builtin_cpu_supports("vpclmulqdq")) f |= native::kFeatVPCLMULQDQ;
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
             e.approx + ".u" + std::to_string(e.unroll) + ".avx512fp16" + (e.nt_stores ? ".nt" : "");
    v.op = e.op;
    v.dtype = e.dtype;
    v.upcast = e.upcast;
    v.approx = e.approx;
    v.unroll = e.unroll;
    v.target = "avx512fp16";
    v.nt_stores = e.nt_stores;
    v.gelu_mode = e.gelu_mode;
    v.fn = e.fn;
    v.supported = supported;
    v.claimed_max_err = e.claimed_max_err;
    out->push_back(std::move(v));
  }
}

}  // namespace

void AppendNativeVariants(std::vector<Variant>* out) {
  const uint32_t cpu = CpuFeatures();
  AppendTable(native::kF16NativeTable, cpu, out);
  AppendTable(native::kBF16CvtTable, cpu, out);
  AppendTable(native::kF16RegTable, cpu, out);
}

}  // namespace actgrad
