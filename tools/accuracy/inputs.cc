#include "tools/accuracy/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "actgrad/half.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"
#include "tools/inputs/op_inputs.h"

namespace actgrad::acc {
namespace {

using inputs::Rng;
using inputs::Selu;

uint64_t Mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  Rng r{seed ^ (a * 0x100000001B3ull) ^ (b << 20) ^ (c << 40)};
  r.Next();
  return r.Next();
}

double SmallestNormalOf(DType t) {
  return t == DType::kF16 ? 6.103515625e-05 : double(std::numeric_limits<float>::min());
}

// Accumulates elements of one case in the storage format of the dtype.
class CaseBuilder {
 public:
  CaseBuilder(DType t, std::string label, const OpParams& p) : t_(t) {
    c_.label = std::move(label);
    c_.params = p;
  }
  // Values are rounded to the dtype (fp32 -> fp16/bf16 with round to nearest even).
  void Add(double g, double x, uint8_t flags = 0) { Push(Encode(g), Encode(x), flags); }
  // Raw storage bits (fp16/bf16 patterns, fp32 NaN payloads).
  void AddBits(uint32_t g, uint32_t x, uint8_t flags = 0) { Push(g, x, flags); }
  uint32_t Encode(double v) const {
    switch (t_) {
      case DType::kF32: return FloatBits(float(v));
      case DType::kF16: return FloatToHalf(float(v));
      case DType::kBF16: return FloatToBF16(float(v));
      case DType::kI32: return uint32_t(int32_t(std::clamp(v, -2147483648.0, 2147483647.0)));
      case DType::kI8: return uint32_t(uint8_t(int8_t(std::clamp(v, -128.0, 127.0))));
    }
    return 0;
  }
  // Decodes, computes the reference and the flags, returns the case.
  InputCase Finish(Op op) {
    const size_t n = flags_.size();
    const size_t es = DTypeSize(t_);
    c_.n = n;
    c_.g.resize(n * es);
    c_.x.resize(n * es);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(c_.g.data() + i * es, &gbits_[i], es);  // little-endian: low bytes
      std::memcpy(c_.x.data() + i * es, &xbits_[i], es);
    }
    gbits_.clear();
    xbits_.clear();
    c_.ref.resize(n);
    c_.flags = std::move(flags_);
    const double min_normal = IsFloat(t_) ? SmallestNormalOf(t_) : 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double g = DecodeElement(t_, c_.g.data(), i);
      const double x = DecodeElement(t_, c_.x.data(), i);
      double r;
      if (t_ == DType::kI32) {
        r = double(ref::SeluBwdInt<int32_t>(int32_t(g), int32_t(x)));
      } else if (t_ == DType::kI8) {
        r = double(ref::SeluBwdInt<int8_t>(int8_t(g), int8_t(x)));
      } else {
        r = ref::Reference(op, g, x, c_.params);
      }
      c_.ref[i] = r;
      uint8_t& f = c_.flags[i];
      if (g == 1.0) f |= kFlagG1;
      if (IsFloat(t_)) {
        const double rr = RoundTo(t_, r);
        if (!std::isfinite(g) || !std::isfinite(x) || !std::isfinite(rr) ||
            (x != 0.0 && std::fabs(x) < min_normal))
          f |= kFlagSpecial;
      }
    }
    return std::move(c_);
  }

 private:
  void Push(uint32_t g, uint32_t x, uint8_t flags) {
    gbits_.push_back(g);
    xbits_.push_back(x);
    flags_.push_back(flags);
  }
  DType t_;
  InputCase c_;
  std::vector<uint32_t> gbits_, xbits_;
  std::vector<uint8_t> flags_;
};

// x values of the fp32 specials block (as bit patterns: NaN payloads matter).
std::vector<uint32_t> SpecialXBitsF32() {
  std::vector<uint32_t> v = {0x7FC00000u, 0xFFC00000u, 0x7FC12345u, 0x7F800001u /* signaling */,
                             0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u};
  const float mags[] = {BitsFloat(0x00000001u), BitsFloat(0x00000002u), BitsFloat(0x00400000u),
                        BitsFloat(0x007FFFFFu), std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::max(), std::nextafter(std::numeric_limits<float>::max(), 0.0f),
                        1e30f, 1e20f, 1e10f, 1e5f, 65504.0f, 65520.0f, 1000.0f, 100.0f, 30.0f, 16.0f};
  for (float m : mags) {
    v.push_back(FloatBits(m));
    v.push_back(FloatBits(-m));
  }
  return v;
}

// g values of the special-g block, as doubles rounded to the dtype by the builder.
std::vector<double> SpecialG(DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double max_finite = std::numeric_limits<float>::max();
  double min_denorm = double(BitsFloat(1u));
  double min_normal = std::numeric_limits<float>::min();
  if (t == DType::kF16) max_finite = 65504.0, min_denorm = 5.9604644775390625e-08, min_normal = 6.103515625e-05;
  if (t == DType::kBF16) max_finite = double(BF16ToFloat(0x7F7Fu)), min_denorm = double(BF16ToFloat(1u));
  return {nan, -nan, inf, -inf, 0.0, -0.0, min_denorm, -min_denorm, min_normal, max_finite, -max_finite,
          max_finite / 2, 1.0, -1.0};
}

// x values where the op is well inside its range (for the special-g block).
std::vector<double> BenignX(Op op) {
  switch (op) {
    case Op::kSeluBwd: return {0.5, -0.5, 0.0, 2.0};
    case Op::kHardswishBwd: return {0.5, -1.0, 4.0, -4.0};
    case Op::kGeluBwd: return {0.5, -0.5, 2.0};
    case Op::kSoftshrinkBwd: return {1.0, 0.1, -1.0};
    case Op::kLogitGrad: return {0.5, 0.3, 0.75};
  }
  return {};
}

// Points every run must contain exactly, with their float neighbours.
std::vector<float> ExactPoints(Op op, const OpParams& p) {
  std::vector<float> v;
  switch (op) {
    case Op::kSeluBwd: v = {0.0f, 1.0f, -1.0f, 5.25f, -1.7580993f, -1.5f, 1e-3f, -1e-3f}; break;
    case Op::kHardswishBwd: v = {3.0f, -3.0f, 0.0f, 1.5f, -1.5f, 5.0f, -5.0f}; break;
    case Op::kGeluBwd: v = {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 5.0f, -5.0f, 10.0f, -10.0f,
                            -0.7517915f, 0.7517915f}; break;
    case Op::kSoftshrinkBwd: v = {p.lambd, -p.lambd, 0.0f, 2.0f, -2.0f}; break;
    case Op::kLogitGrad: {
      v = {0.0f, 1.0f, 0.5f, 0.25f, 0.75f, -0.5f, 1.5f, 2.0f, -1.0f};
      if (std::isfinite(p.eps)) v.push_back(p.eps), v.push_back(1.0f - p.eps);
      break;
    }
  }
  std::vector<float> out;
  for (float f : v) {
    out.push_back(f);
    out.push_back(std::nextafter(f, std::numeric_limits<float>::infinity()));
    out.push_back(std::nextafter(f, -std::numeric_limits<float>::infinity()));
  }
  return out;
}

// One random x of the op's fp32 distribution; k = element index.
double SampleX(Op op, const OpParams& p, size_t k, Rng& r) {
  switch (op) {
    case Op::kSeluBwd: return Selu(r.Uniform(-30.0, 5.0));
    case Op::kHardswishBwd: return r.Uniform(-5.0, 5.0);
    case Op::kGeluBwd: return (k & 2) ? r.Normal() : r.Uniform(-10.0, 10.0);  // both g kinds see both
    case Op::kSoftshrinkBwd: return r.Uniform(-2.0, 2.0);
    case Op::kLogitGrad: {
      const uint64_t pick = (k >> 1) % 20;  // 90 % U[0,1], 5 % near 0, 5 % near 1
      if (pick == 0) return r.LogUniform(1e-30, 0.1);
      if (pick == 1) return 1.0 - r.LogUniform(0x1p-24, 0.1);
      (void)p;
      return r.Uniform(0.0, 1.0);
    }
  }
  return 0.0;
}

std::string FormatParam(Op op, const OpParams& p) {
  char buf[64];
  if (op == Op::kSoftshrinkBwd) std::snprintf(buf, sizeof buf, "lambd=%.9g", double(p.lambd));
  else if (op == Op::kLogitGrad) std::snprintf(buf, sizeof buf, "eps=%.9g", double(p.eps));
  else if (op == Op::kGeluBwd) std::snprintf(buf, sizeof buf, "%s", p.gelu_approx == GeluApprox::kTanh ? "tanh" : "erf");
  else buf[0] = 0;
  return buf;
}

// Adds the special-g block and (fp32) the special-x block.
void AddSpecialBlocks(CaseBuilder& b, Op op, DType t, Rng& r) {
  for (double x : BenignX(op))
    for (double g : SpecialG(t)) b.Add(g, x, kFlagSpecial);
  if (t == DType::kF32) {
    for (uint32_t xb : SpecialXBitsF32()) {
      b.AddBits(FloatBits(1.0f), xb, kFlagSpecial);
      b.AddBits(FloatBits(-1.0f), xb, kFlagSpecial);
      for (int k = 0; k < 3; ++k) b.AddBits(FloatBits(float(r.Normal())), xb, kFlagSpecial);
    }
  }
}

// fp32 (full: `count` random values; small: a few thousand for the rule cases).
InputCase BuildF32Case(Op op, const OpParams& p, size_t count, bool rule_case, Rng& r) {
  const std::string label = FormatParam(op, p);
  CaseBuilder b(DType::kF32, label, p);
  for (size_t k = 0; k < count; ++k) {
    double x;
    if (rule_case && op == Op::kLogitGrad) x = r.Uniform(-0.5, 1.5);
    else x = SampleX(op, p, k, r);
    const double g = (k & 1) ? r.Normal() : 1.0;
    b.Add(g, x);
  }
  for (float x : ExactPoints(op, p)) {
    b.Add(1.0, x);
    for (int k = 0; k < 3; ++k) b.Add(r.Normal(), x);
  }
  AddSpecialBlocks(b, op, DType::kF32, r);
  return b.Finish(op);
}

// fp16/bf16: every bit pattern of x with g = 1 (unless `random_only`) and with random g.
InputCase BuildHalfCase(Op op, DType t, const OpParams& p, bool random_only, Rng& r) {
  CaseBuilder b(t, FormatParam(op, p), p);
  const uint32_t one = b.Encode(1.0);
  if (!random_only)
    for (uint32_t xb = 0; xb < 65536; ++xb) b.AddBits(one, xb);
  for (uint32_t xb = 0; xb < 65536; ++xb) b.AddBits(b.Encode(r.Normal()), xb);
  AddSpecialBlocks(b, op, t, r);
  return b.Finish(op);
}

InputCase BuildIntCase(DType t, size_t count, Rng& r) {
  CaseBuilder b(t, "", OpParams{});
  if (t == DType::kI8) {
    for (int g = -128; g < 128; ++g)
      for (int y = -128; y < 128; ++y) b.Add(g, y);
    return b.Finish(Op::kSeluBwd);
  }
  const double ext[] = {-2147483648.0, -2147483647.0, -16777217.0, -16777216.0, -1000.0, -2.0, -1.0, 0.0, 1.0, 2.0,
                        1000.0, 16777216.0, 16777217.0, 2043970000.0, 2147483646.0, 2147483647.0};
  for (double g : ext)
    for (double y : ext) b.Add(g, y);
  for (size_t k = 0; k < count; ++k) {
    double g, y;
    switch (k % 4) {
      case 0: g = std::floor(r.Uniform(-1000, 1000)); y = std::trunc(Selu(r.Uniform(-30.0, 5.0))); break;
      case 1: g = std::floor(r.Uniform(-1000, 1000)); y = std::floor(r.Uniform(-1000, 1000)); break;
      case 2: g = std::floor(r.Uniform(-2147483648.0, 2147483648.0)); y = std::floor(r.Uniform(-10, 10)); break;
      default: g = std::floor(r.Uniform(-2147483648.0, 2147483648.0)); y = std::floor(r.Uniform(-2147483648.0, 2147483648.0)); break;
    }
    b.Add(g, y);
  }
  return b.Finish(Op::kSeluBwd);
}

// ---- the g-sweep ---------------------------------------------------------------
// Extreme gradients against every x of the op's tails: an infinite g must give
// +-Inf wherever the reference's factor is non-zero, however tiny (GELU's
// negative tail down to x = -38.6), and g = +-max must overflow exactly where
// the reference rounds past the largest finite value.
std::vector<double> SweepG(DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  double max_finite = std::numeric_limits<float>::max();
  if (t == DType::kF16) max_finite = 65504.0;
  if (t == DType::kBF16) max_finite = double(BF16ToFloat(0x7F7Fu));
  return {inf, -inf, max_finite, -max_finite, std::numeric_limits<double>::quiet_NaN()};
}

// Ranges of the fp32 grid (kSweepGridPoints each, float-rounded).
std::vector<std::pair<double, double>> SweepRanges(Op op) {
  switch (op) {
    case Op::kGeluBwd: return {{-40.0, -5.0}, {5.0, 40.0}, {-5.0, 5.0}};
    case Op::kSeluBwd: return {{-40.0, -1.0}, {-1.0, 5.0}};
    case Op::kHardswishBwd: return {{-5.0, 5.0}};
    case Op::kSoftshrinkBwd: return {{-2.0, 2.0}};
    case Op::kLogitGrad: return {{-0.5, 1.5}};
  }
  return {};
}
constexpr int kSweepGridPoints = 4000;
constexpr int kSweepNeighbours = 8;  // floats on each side of a class change

// Floats in their numeric order as integers (-0 just below +0).
int64_t FloatKey(float f) {
  const int32_t b = int32_t(FloatBits(f));
  return b < 0 ? -int64_t(b & 0x7FFFFFFF) - 1 : int64_t(b);
}
float KeyFloat(int64_t k) { return k < 0 ? BitsFloat(uint32_t(-(k + 1)) | 0x80000000u) : BitsFloat(uint32_t(k)); }

// 0 NaN, 1 +Inf, 2 -Inf, 3 finite: the reference rounded to t.
int RefClass(DType t, Op op, double g, float x, const OpParams& p) {
  const double r = RoundTo(t, ref::Reference(op, g, x, p));
  return std::isnan(r) ? 0 : std::isinf(r) ? (r > 0 ? 1 : 2) : 3;
}

// fp32 x of the sweep for gradient g: the grid, the exact points, the special
// x, and the neighbourhoods of every class change between grid points.
std::vector<float> SweepXF32(Op op, double g, const OpParams& p) {
  std::vector<float> grid;
  for (const auto& [lo, hi] : SweepRanges(op))
    for (int k = 0; k <= kSweepGridPoints; ++k) grid.push_back(float(lo + (hi - lo) * k / kSweepGridPoints));
  for (float f : ExactPoints(op, p)) grid.push_back(f);
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  std::vector<float> out = grid;
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    int64_t lo = FloatKey(grid[i]), hi = FloatKey(grid[i + 1]);
    const int c_lo = RefClass(DType::kF32, op, g, grid[i], p);
    if (c_lo == RefClass(DType::kF32, op, g, grid[i + 1], p)) continue;
    while (hi - lo > 1) {  // the first change after grid[i]
      const int64_t mid = lo + (hi - lo) / 2;
      (RefClass(DType::kF32, op, g, KeyFloat(mid), p) == c_lo ? lo : hi) = mid;
    }
    for (int64_t k = lo - kSweepNeighbours + 1; k <= hi + kSweepNeighbours - 1; ++k) out.push_back(KeyFloat(k));
  }
  for (uint32_t xb : SpecialXBitsF32()) out.push_back(BitsFloat(xb));
  return out;
}

InputCase BuildSweepCase(Op op, DType t, const OpParams& p) {
  const std::string param = FormatParam(op, p);
  CaseBuilder b(t, param.empty() ? "g-sweep" : param + " g-sweep", p);
  for (double g : SweepG(t)) {
    if (t == DType::kF32) {
      for (float x : SweepXF32(op, g, p)) b.AddBits(FloatBits(float(g)), FloatBits(x), kFlagSpecial);
    } else {
      for (uint32_t xb = 0; xb < 65536; ++xb) b.AddBits(b.Encode(g), xb, kFlagSpecial);
    }
  }
  InputCase c = b.Finish(op);
  c.sweep = true;
  return c;
}

}  // namespace

double DecodeElement(DType t, const void* data, size_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (t) {
    case DType::kF32: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return BF16ToFloat(h); }
    case DType::kI32: { int32_t k; std::memcpy(&k, p + 4 * i, 4); return k; }
    case DType::kI8: { int8_t k; std::memcpy(&k, p + i, 1); return k; }
  }
  return 0.0;
}

InputSet BuildInputs(Op op, DType t, GeluApprox mode, const AccuracyOptions& opt) {
  InputSet s{op, t, mode, {}, 0};
  uint64_t case_no = 0;
  auto rng = [&] { return Rng{Mix(opt.seed, uint64_t(op), uint64_t(t) * 4 + uint64_t(mode), case_no++)}; };
  auto add = [&](const OpParams& p, bool rule_case) {
    Rng r = rng();
    if (t == DType::kF32) {
      s.cases.push_back(BuildF32Case(op, p, rule_case ? std::min<size_t>(opt.fp32_count, 8192) : opt.fp32_count,
                                     rule_case, r));
    } else {
      s.cases.push_back(BuildHalfCase(op, t, p, rule_case, r));
    }
    s.cases.push_back(BuildSweepCase(op, t, p));
  };
  OpParams p;
  p.gelu_approx = mode;
  if (!IsFloat(t)) {
    Rng r = rng();
    s.cases.push_back(BuildIntCase(t, opt.fp32_count, r));
  } else if (op == Op::kSoftshrinkBwd) {
    for (float l : kSoftshrinkLambds) p.lambd = l, add(p, false);
    p.lambd = 0.0f, add(p, true);
  } else if (op == Op::kLogitGrad) {
    for (float e : kLogitEps) p.eps = e, add(p, false);
    const float inf = std::numeric_limits<float>::infinity();
    for (float e : {1.0f, 2.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN()}) p.eps = e, add(p, true);
  } else {
    add(p, false);
  }
  for (const auto& c : s.cases) s.total += c.n;
  return s;
}

namespace {
struct CacheEntry {
  std::once_flag once;
  std::shared_ptr<const InputSet> set;
};
std::mutex g_cache_mu;
std::map<std::tuple<int, int, int, size_t, uint64_t>, std::shared_ptr<CacheEntry>> g_cache;
}  // namespace

std::shared_ptr<const InputSet> GetInputs(Op op, DType t, GeluApprox mode, const AccuracyOptions& opt) {
  std::shared_ptr<CacheEntry> e;
  {
    std::lock_guard<std::mutex> lock(g_cache_mu);
    auto& slot = g_cache[{int(op), int(t), int(mode), opt.fp32_count, opt.seed}];
    if (!slot) slot = std::make_shared<CacheEntry>();
    e = slot;
  }
  std::call_once(e->once, [&] { e->set = std::make_shared<const InputSet>(BuildInputs(op, t, mode, opt)); });
  return e->set;
}

void ClearInputCache() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  g_cache.clear();
}

}  // namespace actgrad::acc
