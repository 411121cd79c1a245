// Builds the factor tables of factor_tables.h from the double reference.
// Plain x86-64/Arm code (no ISA flags): the reference's inline functions must
// not be compiled with AVX-512 (see native_driver.h).
#include "variants/factor_tables.h"

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>

#include "actgrad/half.h"
#include "reference/reference.h"

namespace actgrad {
namespace {

// What the table holds for one x: see factor_tables.h.
float Entry(Op op, double x, const OpParams& p) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // An output that does not depend on g (NaN g gives a number) is a constant:
  // the spec's zero regions.
  const double fixed = ref::Reference(op, nan, x, p);
  if (!std::isnan(fixed)) return BitsFloat(kFactorZero);
  const double f = ref::Reference(op, 1.0, x, p);
  if (std::isnan(f)) return BitsFloat(0x7FC00000u);
  if (std::isinf(f)) return float(f);
  if (std::fabs(f) > double(FLT_MAX)) return BitsFloat(kFactorSlow);
  // Below FLT_MIN the fp32 factor loses precision or becomes 0, which a bf16
  // g up to 2^128 would show, and an infinite g too (Inf * 0 is NaN where the
  // reference has +-Inf).
  if (f != 0.0 && std::fabs(f) < double(FLT_MIN)) return BitsFloat(kFactorSlow);
  return float(f);
}

float* Build(Op op, DType dtype, const OpParams& p) {
  auto* t = static_cast<float*>(::operator new(kFactorEntries * sizeof(float), std::align_val_t(64)));
  for (uint32_t b = 0; b < kFactorEntries; ++b) {
    const auto h = uint16_t(b);
    const double x = dtype == DType::kF16 ? double(HalfToFloat(h)) : double(BF16ToFloat(h));
    t[b] = Entry(op, x, p);
  }
  return t;
}

// d rounded to fp32 toward zero with a sticky last bit (round to odd): a
// second rounding to fp16 or bf16 (nearest even) is then correct.
float RoundToOdd(double d) {
  float f = float(d);
  if (std::isnan(d) || std::isinf(d) || double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return BitsFloat(FloatBits(f) | 1u);
}

int DTypeSlot(DType d) { return d == DType::kF16 ? 0 : 1; }

int FixedSlot(Op op, const OpParams& p) {
  switch (op) {
    case Op::kSeluBwd: return 0;
    case Op::kHardswishBwd: return 1;
    case Op::kGeluBwd: return p.gelu_approx == GeluApprox::kTanh ? 3 : 2;
    default: return -1;
  }
}

struct LogitSlot {
  std::atomic<const float*> table{nullptr};
  uint32_t eps_bits = 0;  // written before `table` is published
};

struct Cache {
  std::mutex build;
  std::atomic<const float*> fixed[2][4] = {};
  LogitSlot logit[2][kMaxLogitTables];
  std::atomic<int> logit_count[2] = {0, 0};
  std::atomic<size_t> bytes{0};
  std::atomic<int> count{0};
};

Cache& TheCache() {
  static Cache* c = new Cache;  // never destroyed: kernels may run during exit
  return *c;
}

const float* Published(float* t, Cache& c) {
  c.bytes.fetch_add(kFactorEntries * sizeof(float), std::memory_order_relaxed);
  c.count.fetch_add(1, std::memory_order_relaxed);
  return t;
}

const float* LogitTable(Cache& c, DType dtype, const OpParams& p) {
  const int d = DTypeSlot(dtype);
  uint32_t eps_bits;
  std::memcpy(&eps_bits, &p.eps, 4);
  const auto find = [&](int n) -> const float* {
    for (int i = 0; i < n; ++i) {
      const float* t = c.logit[d][i].table.load(std::memory_order_acquire);
      if (t && c.logit[d][i].eps_bits == eps_bits) return t;
    }
    return nullptr;
  };
  if (const float* t = find(c.logit_count[d].load(std::memory_order_acquire))) return t;
  std::lock_guard<std::mutex> lock(c.build);
  const int n = c.logit_count[d].load(std::memory_order_relaxed);
  if (const float* t = find(n)) return t;
  if (n == kMaxLogitTables) return nullptr;
  LogitSlot& s = c.logit[d][n];
  s.eps_bits = eps_bits;
  s.table.store(Published(Build(Op::kLogitGrad, dtype, p), c), std::memory_order_release);
  c.logit_count[d].store(n + 1, std::memory_order_release);
  return s.table.load(std::memory_order_relaxed);
}

}  // namespace

bool HasFactorTable(Op op, DType dtype) {
  return (dtype == DType::kF16 || dtype == DType::kBF16) && op != Op::kSoftshrinkBwd;
}

const float* FactorTable(Op op, DType dtype, const OpParams& p) {
  if (!HasFactorTable(op, dtype)) return nullptr;
  Cache& c = TheCache();
  if (op == Op::kLogitGrad) return LogitTable(c, dtype, p);
  std::atomic<const float*>& slot = c.fixed[DTypeSlot(dtype)][FixedSlot(op, p)];
  if (const float* t = slot.load(std::memory_order_acquire)) return t;
  std::lock_guard<std::mutex> lock(c.build);
  if (const float* t = slot.load(std::memory_order_relaxed)) return t;
  OpParams q;
  q.gelu_approx = p.gelu_approx;
  const float* t = Published(Build(op, dtype, q), c);
  slot.store(t, std::memory_order_release);
  return t;
}

void PrepareFactorTable(Op op, DType dtype, const OpParams& p) { (void)FactorTable(op, dtype, p); }

void ReferenceLanes(Op op, DType dtype, const OpParams& p, const uint16_t* g, const uint16_t* x, uint16_t* out,
                    uint32_t lanes) {
  const auto decode = [&](uint16_t h) { return dtype == DType::kF16 ? double(HalfToFloat(h)) : double(BF16ToFloat(h)); };
  for (int i = 0; i < 32; ++i) {
    if (!((lanes >> i) & 1u)) continue;
    const float r = RoundToOdd(ref::Reference(op, decode(g[i]), decode(x[i]), p));
    out[i] = dtype == DType::kF16 ? FloatToHalf(r) : FloatToBF16(r);
  }
}

size_t FactorTableBytes() { return TheCache().bytes.load(std::memory_order_relaxed); }
int FactorTableCount() { return TheCache().count.load(std::memory_order_relaxed); }

}  // namespace actgrad
