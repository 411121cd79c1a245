// Shared vocabulary of the suite: ops, dtypes, op parameters.
#pragma once
#include <cstdint>
#include <string_view>

namespace actgrad {

enum class Op : uint8_t { kSeluBwd, kHardswishBwd, kGeluBwd, kSoftshrinkBwd, kLogitGrad };
inline constexpr int kNumOps = 5;

// Element types a kernel computes in. Integer types exist only for SELU.
enum class DType : uint8_t { kF32, kF16, kBF16, kI32, kI8 };
inline constexpr int kNumDTypes = 5;

enum class GeluApprox : uint8_t { kNone = 0, kTanh = 1 };

// Per-call scalars. g = gradOutput (dy for LogitGrad), x = the op's input
// (result y for SELU, self for the others, x for LogitGrad).
struct OpParams {
  GeluApprox gelu_approx = GeluApprox::kNone;
  float lambd = 0.5f;  // Softshrink
  float eps = -1.0f;   // LogitGrad
};

constexpr std::string_view OpName(Op op) {
  switch (op) {
    case Op::kSeluBwd: return "selu_bwd";
    case Op::kHardswishBwd: return "hardswish_bwd";
    case Op::kGeluBwd: return "gelu_bwd";
    case Op::kSoftshrinkBwd: return "softshrink_bwd";
    case Op::kLogitGrad: return "logit_grad";
  }
  return "?";
}

constexpr std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
  }
  return "?";
}

constexpr size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kI8: return 1;
  }
  return 0;
}

constexpr bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Parses "selu_bwd" etc.; returns false on an unknown name.
constexpr bool ParseOp(std::string_view s, Op* out) {
  for (int i = 0; i < kNumOps; ++i)
    if (OpName(Op(i)) == s) return *out = Op(i), true;
  return false;
}
constexpr bool ParseDType(std::string_view s, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (DTypeName(DType(i)) == s) return *out = DType(i), true;
  return false;
}

// What the spec (operators.md) says of each op, in one table: the aclnn
// runtime validates calls by it, the tuner plans its cells by it.
struct OpFacts {
  bool broadcast;       // inputs broadcast (NumPy) to the output shape; else equal shapes
  bool integer_dtypes;  // also i32 and i8 (besides f32, f16, bf16)
  bool promotes;        // mixed float inputs promote (GELU): f32 with any -> f32, f16 with bf16 -> f32
};
constexpr OpFacts FactsOf(Op op) {
  switch (op) {
    case Op::kSeluBwd: return {false, true, false};
    case Op::kHardswishBwd: return {false, false, false};
    case Op::kGeluBwd: return {true, false, true};
    case Op::kSoftshrinkBwd: return {true, false, false};
    case Op::kLogitGrad: return {false, false, false};
  }
  return {false, false, false};
}
constexpr bool OpBroadcasts(Op op) { return FactsOf(op).broadcast; }
constexpr bool OpHasDType(Op op, DType t) { return IsFloat(t) || FactsOf(op).integer_dtypes; }

}  // namespace actgrad
