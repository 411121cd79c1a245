#include "tools/inputs/op_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "actgrad/half.h"
#include "reference/reference.h"

namespace actgrad::inputs {
double Selu(double z) { return z > 0 ? ref::kSeluScale * z : ref::kSeluScale * ref::kSeluAlpha * std::expm1(z); }

uint64_t OperandSeed(Op op, Role role) {
  return 0x5EED0000ull + static_cast<uint64_t>(op) * 16 + static_cast<uint64_t>(role);
}

double SampleOperand(Op op, DType dt, Role role, Rng& r) {
  const bool integer = !IsFloat(dt);
  if (role == Role::kG) {
    if (integer) return std::floor(dt == DType::kI8 ? r.Uniform(-40.0, 40.0) : r.Uniform(-1000.0, 1000.0));
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

void StoreOperand(DType dt, double v, void* dst) {
  switch (dt) {
    case DType::kF32: { const float f = static_cast<float>(v); std::memcpy(dst, &f, 4); break; }
    case DType::kF16: { const uint16_t h = FloatToHalf(static_cast<float>(v)); std::memcpy(dst, &h, 2); break; }
    case DType::kBF16: { const uint16_t h = FloatToBF16(static_cast<float>(v)); std::memcpy(dst, &h, 2); break; }
    case DType::kI32: {
      const int32_t k = static_cast<int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
      std::memcpy(dst, &k, 4);
      break;
    }
    case DType::kI8: { const int8_t k = static_cast<int8_t>(std::clamp(v, -128.0, 127.0)); std::memcpy(dst, &k, 1); break; }
  }
}

void GenerateOperand(Op op, DType dt, Role role, void* dst, size_t count) {
  Rng r{OperandSeed(op, role)};
  const size_t es = DTypeSize(dt);
  auto* d = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < count; ++i) StoreOperand(dt, SampleOperand(op, dt, role, r), d + i * es);
}

void FillOperand(Op op, DType dt, Role role, void* dst, size_t count) {
  static std::mutex mu;
  static std::map<int, std::vector<uint8_t>> patterns;
  const size_t es = DTypeSize(dt);
  const std::vector<uint8_t>* p;
  {
    std::lock_guard<std::mutex> lock(mu);
    const int key = (static_cast<int>(op) * kNumDTypes + static_cast<int>(dt)) * 2 + static_cast<int>(role);
    std::vector<uint8_t>& slot = patterns[key];
    if (slot.empty()) {
      slot.resize(kPatternElements * es);
      GenerateOperand(op, dt, role, slot.data(), kPatternElements);
    }
    p = &slot;  // std::map nodes never move
  }
  auto* d = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < count;) {
    const size_t m = std::min(kPatternElements, count - done);
    std::memcpy(d + done * es, p->data(), m * es);
    done += m;
  }
}

}  // namespace actgrad::inputs
