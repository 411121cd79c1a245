// Realistic operands per op (value ranges of the spec's accuracy inputs), the
// same bytes for our kernels and for the peers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "actgrad/half.h"
#include "common/bench_common.h"

namespace actgrad::bench {
namespace {

constexpr size_t kPattern = size_t{1} << 20;  // elements of the base pattern

struct Rng {  // splitmix64
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  double Normal() {  // Box-Muller
    const double u1 = std::max(Uniform(), 1e-300);
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

double Selu(double x) { return x > 0 ? kSeluScale * x : kSeluScale * kSeluAlpha * std::expm1(x); }

// role 0: g, role 1: x. Values in double, before rounding to the dtype.
double Sample(Op op, DType dt, int role, Rng& r) {
  const bool integer = dt == DType::kI32 || dt == DType::kI8;
  if (role == 0) {
    if (integer) return std::floor(r.Uniform(dt == DType::kI8 ? -40.0 : -1000.0, dt == DType::kI8 ? 40.0 : 1000.0));
    return r.Normal();
  }
  switch (op) {
    case Op::kSeluBwd: {
      const double y = Selu(r.Uniform(-30.0, 5.0));
      return integer ? std::trunc(y) : y;
    }
    case Op::kHardswishBwd: return r.Uniform(-5.0, 5.0);
    case Op::kGeluBwd: return (r.Next() & 1) ? r.Uniform(-10.0, 10.0) : r.Normal();
    case Op::kSoftshrinkBwd: return r.Uniform(-2.0, 2.0);
    case Op::kLogitGrad: return r.Uniform(1e-6, 1.0 - 1e-6);
  }
  return 0.0;
}

// The pattern in the storage format of dt.
const std::vector<uint8_t>& Pattern(Op op, DType dt, int role) {
  static std::mutex mu;
  static std::map<int, std::vector<uint8_t>> patterns;
  const int key = (static_cast<int>(op) * kNumDTypes + static_cast<int>(dt)) * 2 + role;
  std::lock_guard<std::mutex> lock(mu);
  auto it = patterns.find(key);
  if (it != patterns.end()) return it->second;
  // The seed depends on op and role only: the f32, f16 and bf16 operands of
  // an op are the same values rounded to each dtype.
  Rng r{0x5EED0000ull + static_cast<uint64_t>(op) * 16 + static_cast<uint64_t>(role)};
  const size_t es = DTypeSize(dt);
  std::vector<uint8_t> p(kPattern * es);
  for (size_t i = 0; i < kPattern; ++i) {
    const double v = Sample(op, dt, role, r);
    uint8_t* d = p.data() + i * es;
    switch (dt) {
      case DType::kF32: { const float f = static_cast<float>(v); std::memcpy(d, &f, 4); break; }
      case DType::kF16: { const uint16_t h = FloatToHalf(static_cast<float>(v)); std::memcpy(d, &h, 2); break; }
      case DType::kBF16: { const uint16_t h = FloatToBF16(static_cast<float>(v)); std::memcpy(d, &h, 2); break; }
      case DType::kI32: { const int32_t k = static_cast<int32_t>(v); std::memcpy(d, &k, 4); break; }
      case DType::kI8: { const int8_t k = static_cast<int8_t>(std::clamp(v, -128.0, 127.0)); std::memcpy(d, &k, 1); break; }
    }
  }
  return patterns.emplace(key, std::move(p)).first->second;
}

void Fill(Op op, DType dt, int role, void* dst, size_t count) {
  const std::vector<uint8_t>& p = Pattern(op, dt, role);
  const size_t es = DTypeSize(dt);
  uint8_t* d = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < count;) {
    const size_t m = std::min(kPattern, count - done);
    std::memcpy(d + done * es, p.data(), m * es);
    done += m;
  }
}

}  // namespace

OpParams DefaultParams(Op op) {
  OpParams p;
  (void)op;
  p.gelu_approx = GeluApprox::kNone;
  p.lambd = 0.5f;
  p.eps = -1.0f;
  return p;
}

void FillG(Op op, DType dt, void* dst, size_t count) { Fill(op, dt, 0, dst, count); }
void FillX(Op op, DType dt, void* dst, size_t count) { Fill(op, dt, 1, dst, count); }

}  // namespace actgrad::bench
