// GeluBackward as an AscendC kernel, two forms selected by the tiling:
//  erf (default, exact GELU): dx = dy * (Phi(x) + x * phi(x)) with
//    Phi(x) = 1 - erfc(x/sqrt2)/2 for x >= 0 and erfc(|x|/sqrt2)/2 below, and
//    erfc(z) = t * exp(-z^2 + P(t)), t = 1/(1 + z/2) (a Chebyshev fit with
//    relative error below 1.2e-7 for every z >= 0: no cancellation in the tail);
//  tanh (aclnnGeluBackwardV2 approximate="tanh"): with u = k(x + c x^3) and
//    s = 1/(1 + exp(-2u)): dx = dy * (s + 2 k x (1 + 3 c x^2) s (1 - s)).
// x is clamped to [-20, 20] (the derivative is exactly 0 or 1 in fp32 beyond)
// so +-Inf gives the limits; NaN x is restored at the end.
#include "elementwise_grad.h"

namespace actgrad::atlas {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kTanhK = 0.79788456080286535588f;  // sqrt(2/pi)
constexpr float kTanhC = 0.044715f;

template <typename C>
struct GeluGradCompute {
  __aicore__ inline void Init(const AtlasTilingData& t, const LocalTensor<C>& scratch, uint32_t tile) {
    tanh_ = t.approx == kApproxTanh;
    const uint32_t n = tanh_ ? 4 : 5;
    for (uint32_t i = 0; i < n; ++i) tmp_[i] = scratch[i * tile];
    ones_ = scratch[n * tile];
    Duplicate(ones_, static_cast<C>(1.0f), static_cast<int32_t>(tile));
  }

  __aicore__ inline void Compute(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<C>& x,
                                 const LocalTensor<uint8_t>& mask, uint32_t count) {
    const LocalTensor<C>& xc = tmp_[0];
    Maxs(xc, x, static_cast<C>(-20.0f), count);
    Mins(xc, xc, static_cast<C>(20.0f), count);
    if (tanh_) {
      TanhForm(out, dy, mask, count);
    } else {
      ErfForm(out, dy, mask, count);
    }
    // NaN x: x != x selects x itself (whatever Maxs/Mins made of it).
    const uint32_t cc = CompareCount<C>(count);
    Compare(mask, x, x, CMPMODE::EQ, cc);
    Select(out, mask, out, x, SELMODE::VSEL_TENSOR_TENSOR_MODE, count);
  }

 private:
  __aicore__ inline void ErfForm(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<uint8_t>& mask,
                                 uint32_t count) {
    const LocalTensor<C>& xc = tmp_[0];
    const LocalTensor<C>& z = tmp_[1];
    const LocalTensor<C>& t = tmp_[2];
    const LocalTensor<C>& p = tmp_[3];
    const LocalTensor<C>& w = tmp_[4];
    Abs(z, xc, count);
    Muls(z, z, static_cast<C>(kInvSqrt2), count);  // z = |x| / sqrt2
    Muls(t, z, static_cast<C>(0.5f), count);
    Adds(t, t, static_cast<C>(1.0f), count);
    Div(t, ones_, t, count);  // t = 1 / (1 + z/2)
    // P(t) = c0 + c1 t + ... + c9 t^9 by Horner's rule, the coefficients as
    // immediates: a namespace-scope table read in a loop would be a global
    // in GM on the device (docs/atlas.md, "what the emulator checks").
    Muls(p, t, static_cast<C>(0.17087277f), count);  // c9
    HornerStep(p, t, -0.82215223f, count);           // c8
    HornerStep(p, t, 1.48851587f, count);
    HornerStep(p, t, -1.13520398f, count);
    HornerStep(p, t, 0.27886807f, count);
    HornerStep(p, t, -0.18628806f, count);
    HornerStep(p, t, 0.09678418f, count);
    HornerStep(p, t, 0.37409196f, count);
    HornerStep(p, t, 1.00002368f, count);            // c1
    Adds(p, p, static_cast<C>(-1.26551223f), count); // c0
    Mul(w, z, z, count);
    Sub(p, p, w, count);
    Exp(p, p, count);
    Mul(p, p, t, count);                            // erfc(z)
    Muls(p, p, static_cast<C>(0.5f), count);        // Phi(-|x|)
    Muls(w, p, static_cast<C>(-1.0f), count);
    Adds(w, w, static_cast<C>(1.0f), count);        // Phi(|x|)
    CompareScalar(mask, xc, static_cast<C>(0.0f), CMPMODE::GE, CompareCount<C>(count));
    Select(p, mask, w, p, SELMODE::VSEL_TENSOR_TENSOR_MODE, count);  // Phi(x)
    Mul(w, xc, xc, count);
    Muls(w, w, static_cast<C>(-0.5f), count);
    Exp(w, w, count);
    Mul(w, w, xc, count);
    Muls(w, w, static_cast<C>(kInvSqrt2Pi), count);  // x * phi(x)
    Add(p, p, w, count);
    Mul(out, p, dy, count);
  }

  // p = (p + c) * t
  __aicore__ inline void HornerStep(const LocalTensor<C>& p, const LocalTensor<C>& t, float c, uint32_t count) {
    Adds(p, p, static_cast<C>(c), count);
    Mul(p, p, t, count);
  }

  __aicore__ inline void TanhForm(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<uint8_t>& mask,
                                  uint32_t count) {
    const LocalTensor<C>& xc = tmp_[0];
    const LocalTensor<C>& x2 = tmp_[1];
    const LocalTensor<C>& e = tmp_[2];
    const LocalTensor<C>& s = tmp_[3];
    Mul(x2, xc, xc, count);
    Muls(e, x2, static_cast<C>(kTanhC), count);
    Adds(e, e, static_cast<C>(1.0f), count);
    Mul(e, e, xc, count);
    Muls(e, e, static_cast<C>(kTanhK), count);  // u
    Maxs(e, e, static_cast<C>(-40.0f), count);
    Mins(e, e, static_cast<C>(40.0f), count);
    // Below u = -19 tanh(u) is -1 to double precision: the derivative is 0
    // there (so an infinite dy gives NaN, as the reference does).
    CompareScalar(mask, e, static_cast<C>(-19.0f), CMPMODE::GE, CompareCount<C>(count));
    Muls(e, e, static_cast<C>(-2.0f), count);
    Exp(e, e, count);                            // exp(-2u)
    Adds(s, e, static_cast<C>(1.0f), count);
    Div(s, ones_, s, count);                     // s = sigmoid(2u)
    Mul(e, e, s, count);                         // 1 - s
    Muls(x2, x2, static_cast<C>(3.0f * kTanhC), count);
    Adds(x2, x2, static_cast<C>(1.0f), count);
    Mul(x2, x2, xc, count);
    Muls(x2, x2, static_cast<C>(2.0f * kTanhK), count);  // 2 k x (1 + 3 c x^2)
    Mul(x2, x2, s, count);
    Mul(x2, x2, e, count);
    Add(x2, x2, s, count);
    Select(x2, mask, x2, static_cast<C>(0.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
    Mul(out, x2, dy, count);
  }

  LocalTensor<C> tmp_[5];
  LocalTensor<C> ones_;
  bool tanh_ = false;
};

}  // namespace actgrad::atlas

extern "C" __global__ __aicore__ void gelu_grad_custom(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // launches AI Vector cores only
  (void)workspace;
  actgrad::atlas::Dispatch<actgrad::atlas::GeluGradCompute, false, false>(dy, x, dx, tiling);
}
