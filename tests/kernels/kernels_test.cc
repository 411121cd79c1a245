// Every variant supported on this CPU, at small sizes (tails!):
// - matches the scalar variant of its op/dtype/GELU mode: bit for bit for the
//   exact ops (SELU, Hardswish, Softshrink, integer SELU) computed in fp32,
//   within the spec's rule (specials exactly, every element under the hard
//   bound relative to the scalar result) otherwise;
// - gives the same bits at every size as on the first n elements of a large
//   call (tails compute what the body computes);
// - writes nothing outside the output (guard bytes) and never the inputs;
// - handles operands misaligned by one element (incl. streaming stores),
//   in-place calls (out == g, out == x), any staging tile;
// - RunVariant with 2 threads and various chunks gives the bytes of 1 thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#if defined(__aarch64__)
#include <sys/prctl.h>
#endif

#include "tools/accuracy/inputs.h"
#include "tools/accuracy/results.h"
#include "actgrad/half.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"
#include "variants/variant.h"
#include "tests/common/variant_groups.h"
#include "tools/inputs/rng.h"

namespace actgrad {
namespace {

constexpr size_t kSizes[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 257, 1000, 4099};
constexpr size_t kMaxN = 4099;
constexpr size_t kThreadN = 20011;  // RunVariant splits only from 2K elements on
constexpr size_t kGuard = 64;       // bytes checked on each side of every buffer
constexpr uint8_t kFill = 0xA5;

// ---- operands --------------------------------------------------------------
using inputs::Rng;

void Encode(DType t, double v, uint8_t* dst) {
  switch (t) {
    case DType::kF32: { const float f = float(v); std::memcpy(dst, &f, 4); break; }
    case DType::kF16: { const uint16_t h = FloatToHalf(float(v)); std::memcpy(dst, &h, 2); break; }
    case DType::kBF16: { const uint16_t h = FloatToBF16(float(v)); std::memcpy(dst, &h, 2); break; }
    case DType::kI32: { const int32_t k = int32_t(std::clamp(v, -2147483648.0, 2147483647.0)); std::memcpy(dst, &k, 4); break; }
    case DType::kI8: { const int8_t k = int8_t(std::clamp(v, -128.0, 127.0)); std::memcpy(dst, &k, 1); break; }
  }
}

struct Operands {
  DType dtype;
  size_t n;
  std::vector<uint8_t> g, x;
};

// Typical values of the op with specials sprinkled in: x specials every 13th
// element, special g (on a benign x) every 29th.
Operands MakeOperands(Op op, DType t, size_t n, uint64_t seed) {
  Operands o{t, n, std::vector<uint8_t>(n * DTypeSize(t)), std::vector<uint8_t>(n * DTypeSize(t))};
  Rng r{seed * 7919 + uint64_t(op) * 131 + uint64_t(t)};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double xs[] = {nan, inf, -inf, 0.0, -0.0, 3.0, -3.0, 0.5, -0.5, 1.0 / 3.0, 1e-40, 1.0, 0.25, 0.75, 3.0e38, -1.5};
  const double gs[] = {nan, inf, -inf, 0.0, -0.0, 1e-40, 3.0e38};
  for (size_t i = 0; i < n; ++i) {
    double g, x;
    if (!IsFloat(t)) {
      const double lim = t == DType::kI8 ? 127.0 : 2147483647.0;
      g = std::floor(r.Uniform(-lim, lim));
      x = (i % 3) ? std::floor(r.Uniform(-lim, lim)) : std::floor(r.Uniform(-5, 5));
      if (i % 13 == 0) g = lim, x = -lim;
    } else {
      g = r.Uniform(-2.0, 2.0);
      switch (op) {
        case Op::kSeluBwd: {
          const double z = r.Uniform(-10.0, 3.0);
          x = z > 0 ? ref::kSeluScale * z : ref::kSeluScale * ref::kSeluAlpha * std::expm1(z);
          break;
        }
        case Op::kHardswishBwd: x = r.Uniform(-5.0, 5.0); break;
        case Op::kGeluBwd: x = r.Uniform(-6.0, 6.0); break;
        case Op::kSoftshrinkBwd: x = r.Uniform(-1.5, 1.5); break;
        case Op::kLogitGrad: x = r.Uniform(0.0, 1.0); break;
      }
      if (i % 13 == 5) x = xs[(i / 13) % std::size(xs)];
      if (i % 29 == 11) g = gs[(i / 29) % std::size(gs)], x = 0.5;
      // Extreme g against tiny factors and the overflow threshold: GELU's
      // negative tail, SELU's y = -alpha*scale, Hardswish
      // at 1.5 + 1 ulp, GELU's f = 1 + 4e-8 at x = 5.7.
      if (i % 31 == 17) {
        const double mx = t == DType::kF16 ? 65504.0 : t == DType::kBF16 ? 0x1.fep127 : 0x1.fffffep127;
        const double eg[] = {inf, -inf, mx, -mx};
        const double ex[] = {-8.0, -10.0, -14.0, -20.0, -30.0, 5.7, std::nextafter(1.5f, 2.0f), -1.7580993f, -0.75179154};
        g = eg[(i / 31) % std::size(eg)];
        x = ex[(i / 124) % std::size(ex)];
      }
    }
    Encode(t, g, o.g.data() + i * DTypeSize(t));
    Encode(t, x, o.x.data() + i * DTypeSize(t));
  }
  return o;
}

std::vector<OpParams> ParamSets(Op op, GeluApprox mode) {
  OpParams p;
  p.gelu_approx = mode;
  std::vector<OpParams> v = {p};
  if (op == Op::kSoftshrinkBwd) p.lambd = 1.0f / 3.0f, v.push_back(p);
  if (op == Op::kLogitGrad) p.eps = 0.25f, v.push_back(p);
  return v;
}

// ---- buffers with guard zones ----------------------------------------------
class GuardedBuffer {
 public:
  // `bytes` of payload starting `offset` bytes after a 64-byte boundary.
  GuardedBuffer(size_t bytes, size_t offset) : mem_(bytes + 2 * kGuard + 64 + offset, kFill), bytes_(bytes) {
    uintptr_t base = reinterpret_cast<uintptr_t>(mem_.data()) + kGuard;
    base = (base + 63) & ~uintptr_t(63);
    p_ = reinterpret_cast<uint8_t*>(base) + offset;
  }
  uint8_t* data() { return p_; }
  // "" when every byte outside the payload still holds the fill pattern.
  std::string CheckGuards() const {
    const uint8_t* begin = mem_.data();
    const uint8_t* end = mem_.data() + mem_.size();
    for (const uint8_t* q = begin; q < end; ++q) {
      if (q >= p_ && q < p_ + bytes_) continue;
      if (*q != kFill) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "byte %td %s the buffer was overwritten", q < p_ ? p_ - q : q - (p_ + bytes_) + 1,
                      q < p_ ? "before" : "after");
        return buf;
      }
    }
    return "";
  }

 private:
  std::vector<uint8_t> mem_;
  size_t bytes_;
  uint8_t* p_;
};

// Runs v on the first n elements with each buffer `off_*` elements past a
// 64-byte boundary; checks guards and that the inputs are untouched.
struct RunResult {
  std::vector<uint8_t> out;
  std::string error;  // guard or input damage
};

RunResult RunKernel(const Variant& v, const Operands& in, size_t n, const OpParams& p, size_t off_g = 0, size_t off_x = 0,
              size_t off_out = 0, size_t stage_tile = 0) {
  const size_t es = DTypeSize(v.dtype);
  GuardedBuffer g(n * es, off_g * es), x(n * es, off_x * es), out(n * es, off_out * es);
  if (n) {
    std::memcpy(g.data(), in.g.data(), n * es);
    std::memcpy(x.data(), in.x.data(), n * es);
  }
  v.fn(KernelArgs{g.data(), x.data(), out.data(), n, p, stage_tile});
  RunResult r;
  r.out.assign(out.data(), out.data() + n * es);
  for (auto* b : {&g, &x, &out}) {
    const std::string e = b->CheckGuards();
    if (!e.empty() && r.error.empty()) r.error = (b == &out ? "output: " : b == &g ? "g: " : "x: ") + e;
  }
  if (r.error.empty() && n && std::memcmp(g.data(), in.g.data(), n * es) != 0) r.error = "g was modified";
  if (r.error.empty() && n && std::memcmp(x.data(), in.x.data(), n * es) != 0) r.error = "x was modified";
  return r;
}

// ---- comparisons -------------------------------------------------------------
double Elem(DType t, const uint8_t* p, size_t i) { return acc::DecodeElement(t, p, i); }

std::string Describe(DType t, const Operands& in, size_t i, double a, double b) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "element %zu (g=%.9g x=%.9g): %.9g vs %.9g", i, Elem(t, in.g.data(), i),
                Elem(t, in.x.data(), i), a, b);
  return buf;
}

// Bit-identical, except that any two NaNs are equal. "" when equal.
std::string SameBits(DType t, const Operands& in, const uint8_t* a, const uint8_t* b, size_t n) {
  const size_t es = DTypeSize(t);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i * es, b + i * es, es) == 0) continue;
    const double va = Elem(t, a, i), vb = Elem(t, b, i);
    if (std::isnan(va) && std::isnan(vb)) continue;
    return Describe(t, in, i, va, vb);
  }
  return "";
}

double Reference(Op op, DType t, double g, double x, const OpParams& p) {
  if (t == DType::kI32) return ref::SeluBwdInt<int32_t>(int32_t(g), int32_t(x));
  if (t == DType::kI8) return ref::SeluBwdInt<int8_t>(int8_t(g), int8_t(x));
  return ref::Reference(op, g, x, p);
}

// Elements where the scalar variant itself breaks the spec's rule against the
// double reference (NaN/Inf misplaced or an error over the hard bound).
std::vector<bool> ScalarWrong(Op op, DType t, const Operands& in, const uint8_t* scalar, size_t n, const OpParams& p) {
  std::vector<bool> wrong(n);
  const double hard = RuleFor(t).hard_bound;
  for (size_t i = 0; i < n; ++i) {
    const double g = Elem(t, in.g.data(), i);
    const double e = ElementError(t, Elem(t, scalar, i), Reference(op, t, g, Elem(t, in.x.data(), i), p), g);
    wrong[i] = !(e < hard) && !(e == 0.0);
  }
  return wrong;
}

// The spec's rule element by element with the scalar result as reference:
// NaN/Inf where the scalar variant has them, every error under the hard bound.
// Where the scalar variant is itself wrong (`scalar_wrong`), the double
// reference stands in for it.
std::string WithinRule(Op op, DType t, const Operands& in, const uint8_t* out, const uint8_t* scalar, size_t n,
                       const OpParams& p, const std::vector<bool>& scalar_wrong) {
  const double hard = RuleFor(t).hard_bound;
  for (size_t i = 0; i < n; ++i) {
    const double o = Elem(t, out, i), g = Elem(t, in.g.data(), i);
    const double s = scalar_wrong[i] ? RoundTo(t, Reference(op, t, g, Elem(t, in.x.data(), i), p)) : Elem(t, scalar, i);
    const bool same_special = std::isnan(o) ? std::isnan(s) : std::isinf(o) ? o == s : std::isfinite(s);
    if (!same_special || ElementError(t, o, s, g) >= hard) return Describe(t, in, i, o, s);
  }
  return "";
}

// |a - b| in ULPs of the output dtype at the scale of the gradient,
// max(|b|, |g|, smallest normal): an exact op computes g * factor with a
// factor of order 1, so its rounding errors are ULPs of that scale.
double GradUlps(DType t, double a, double b, double g) {
  int bits = 23;
  double min_normal = 0x1p-126;
  if (t == DType::kF16) bits = 10, min_normal = 0x1p-14;
  if (t == DType::kBF16) bits = 7;
  const double mag = std::max({std::fabs(b), std::isfinite(g) ? std::fabs(g) : 0.0, min_normal});
  return std::fabs(a - b) / std::ldexp(1.0, std::ilogb(mag) - bits);
}

// Near-exact: NaN/Inf exactly where the scalar result has them, zeros of
// either sign equal, otherwise at most `max_ulps` ULPs at the gradient's scale.
// Sets *ulps to the largest difference seen.
std::string NearExact(DType t, const Operands& in, const uint8_t* out, const uint8_t* scalar, size_t n,
                      double max_ulps, double* ulps) {
  for (size_t i = 0; i < n; ++i) {
    const double o = Elem(t, out, i), s = Elem(t, scalar, i), g = Elem(t, in.g.data(), i);
    if ((std::isnan(o) && std::isnan(s)) || o == s) continue;
    if (!std::isfinite(o) || !std::isfinite(s)) return Describe(t, in, i, o, s);
    const double u = GradUlps(t, o, s, g);
    *ulps = std::max(*ulps, u);
    if (u > max_ulps) return Describe(t, in, i, o, s) + " (" + std::to_string(u) + " ulp)";
  }
  return "";
}

// ---- the variants under test ---------------------------------------------------
const Variant* ScalarFor(const Variant& v) {
  for (const Variant& s : Variants())
    if (s.target == "scalar" && s.op == v.op && s.dtype == v.dtype && s.gelu_mode == v.gelu_mode) return &s;
  return nullptr;
}

// How an exact op (no approximation) must compare with the scalar variant.
// SELU and Softshrink through Highway, and integer SELU, compute exactly what
// the scalar variant computes: bit for bit. Hardswish computes
// g * fma(x, 1/3, 0.5): a true FMA on FMA targets and in the scalar variant
// (std::fma), a multiply and an add on SSE4 -- a factor 1 ulp apart (and
// +0 vs -0 at x = -1.5). The hand-written AVX-512 kernels (targets
// avx512fp16, avx512bf16, avx512) round differently too (fp16 arithmetic in
// f16native, the fp32 ops of native_f32_ops.h). Those are held to 2 ulps at
// the gradient's scale (a 1-ulp difference in the factor becomes up to 2 ulps
// of g * factor; measured: 2 in f32 on SSE4, 1 in f16, 0.5 in bf16), zeros
// of either sign equal, specials exact.
enum class ExactCheck { kBits, kNearExact, kRule };
ExactCheck HowToCompare(const Variant& v) {
  if (v.approx != "exact") return ExactCheck::kRule;
  const bool native = v.target == "avx512fp16" || v.target == "avx512bf16" || v.target == "avx512";
  if (native || v.op == Op::kHardswishBwd) return ExactCheck::kNearExact;
  return ExactCheck::kBits;
}

// Variants the committed docs/accuracy.json marks not shippable: their
// numbers are not compared with the scalar variant (the structure still is).
bool KnownNotShippable(const std::string& name) {
  static const acc::AccuracyCache* cache = [] {
    static acc::AccuracyCache c;
    std::string error;
    if (!acc::TryLoadAccuracyCache(std::string(ACTGRAD_SOURCE_DIR) + "/docs/accuracy.json", &c, &error)) {
      std::printf("[   NOTE   ] %s; comparing every variant with the scalar one\n", error.c_str());
      return static_cast<const acc::AccuracyCache*>(nullptr);
    }
    return static_cast<const acc::AccuracyCache*>(&c);
  }();
  if (!cache) return false;
  const auto* r = cache->Find(name);
  return r && r->run && !r->pass;
}

using Group = test::VariantGroup;

class Kernels : public ::testing::TestWithParam<Group> {
 protected:
  std::vector<const Variant*> Supported() const {
    std::vector<const Variant*> vs;
    for (const Variant& v : Variants())
      if (v.op == GetParam().op && v.dtype == GetParam().dtype && v.supported) vs.push_back(&v);
    return vs;
  }
  const Operands& Small() {
    if (small_.n == 0) small_ = MakeOperands(GetParam().op, GetParam().dtype, kMaxN, 1);
    return small_;
  }
  Operands small_{DType::kF32, 0, {}, {}};
};

TEST_P(Kernels, MatchScalarAndOwnTailsAtSmallSizes) {
  const auto vs = Supported();
  ASSERT_FALSE(vs.empty());
  const Operands& in = Small();
  const size_t es = DTypeSize(GetParam().dtype);
  int bit_exact = 0, one_ulp = 0, rule = 0, skipped = 0;
  double native_exact_ulps = 0;
  std::set<std::string> scalar_reported;
  for (const Variant* v : vs) {
    const Variant* sc = ScalarFor(*v);
    ASSERT_NE(sc, nullptr) << "no scalar variant for " << v->name;
    for (const OpParams& p : ParamSets(v->op, v->gelu_mode)) {
      const RunResult full = RunKernel(*v, in, kMaxN, p);
      ASSERT_EQ(full.error, "") << v->name;
      const RunResult ref = RunKernel(*sc, in, kMaxN, p);
      ASSERT_EQ(ref.error, "") << sc->name;
      const std::vector<bool> wrong = ScalarWrong(v->op, v->dtype, in, ref.out.data(), kMaxN, p);
      for (size_t i = 0; i < kMaxN; ++i) {
        if (!wrong[i]) continue;
        const double g = Elem(v->dtype, in.g.data(), i), x = Elem(v->dtype, in.x.data(), i);
        if (scalar_reported.insert(sc->name).second)
          ADD_FAILURE() << "the scalar variant " << sc->name << " breaks the spec's rule: "
                        << Describe(v->dtype, in, i, Elem(v->dtype, ref.out.data(), i), Reference(v->op, v->dtype, g, x, p))
                        << " (scalar vs double reference); the reference stands in for it there";
        break;
      }
      std::string diff;
      const ExactCheck how = HowToCompare(*v);
      if (how == ExactCheck::kBits) {
        diff = SameBits(v->dtype, in, full.out.data(), ref.out.data(), kMaxN);
        ++bit_exact;
      } else if (how == ExactCheck::kNearExact) {
        double u = 0;
        diff = NearExact(v->dtype, in, full.out.data(), ref.out.data(), kMaxN, 2.0, &u);
        native_exact_ulps = std::max(native_exact_ulps, u);
        ++one_ulp;
      } else if (!KnownNotShippable(v->name)) {
        diff = WithinRule(v->op, v->dtype, in, full.out.data(), ref.out.data(), kMaxN, p, wrong);
        ++rule;
      } else {
        ++skipped;
      }
      EXPECT_EQ(diff, "") << v->name << " vs " << sc->name << " (lambd " << p.lambd << ", eps " << p.eps << ")";
      for (size_t n : kSizes) {
        const RunResult r = RunKernel(*v, in, n, p);
        EXPECT_EQ(r.error, "") << v->name << " n=" << n;
        const std::string d = SameBits(v->dtype, in, r.out.data(), full.out.data(), n);
        EXPECT_EQ(d, "") << v->name << " n=" << n << ": differs from the same elements of an n=" << kMaxN << " call";
        if (!r.error.empty() || !d.empty()) break;
      }
    }
  }
  std::printf("[   INFO   ] %zu variants; comparisons with the scalar variant: %d bit-exact, %d within 2 ulps "
              "(largest difference %g ulp), %d within the rule, %d skipped (not shippable)\n",
              vs.size(), bit_exact, one_ulp, native_exact_ulps, rule, skipped);
  (void)es;
}

TEST_P(Kernels, MisalignedByOneElement) {
  const Operands& in = Small();
  const size_t offs[][3] = {{1, 1, 1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {3, 2, 1}};
  for (const Variant* v : Supported()) {
    const OpParams p = ParamSets(v->op, v->gelu_mode)[0];
    const RunResult full = RunKernel(*v, in, kMaxN, p);
    for (size_t n : {size_t{1}, size_t{17}, size_t{65}, size_t{1000}, kMaxN}) {
      bool bad = false;
      for (const auto& o : offs) {
        const RunResult r = RunKernel(*v, in, n, p, o[0], o[1], o[2]);
        EXPECT_EQ(r.error, "") << v->name << " n=" << n << " offsets g/x/out " << o[0] << "/" << o[1] << "/" << o[2];
        const std::string d = SameBits(v->dtype, in, r.out.data(), full.out.data(), n);
        EXPECT_EQ(d, "") << v->name << " n=" << n << " offsets g/x/out " << o[0] << "/" << o[1] << "/" << o[2];
        bad = bad || !r.error.empty() || !d.empty();
      }
      if (bad) break;
    }
  }
}

// Streaming-store variants write plain stores up to out's first cache-line
// boundary and from its last one (driver-inl.h RunLoop): out starting at
// every element offset within a line, lengths around the head, one line
// and the unrolled step, bit for bit as an aligned call, nothing written
// outside [0, n).
TEST_P(Kernels, StreamingStoresFromEveryLineOffset) {
  const Operands& in = Small();
  int checked = 0;
  for (const Variant* v : Supported()) {
    if (!v->nt_stores) continue;
    const OpParams p = ParamSets(v->op, v->gelu_mode)[0];
    const RunResult full = RunKernel(*v, in, kMaxN, p);
    const size_t per_line = 64 / DTypeSize(v->dtype);
    bool bad = false;
    for (size_t off = 0; off < per_line && !bad; ++off) {
      for (size_t n : {size_t{1}, per_line - 1, per_line, per_line + 1, 2 * per_line + 3, size_t{130}, size_t{1000}}) {
        const RunResult r = RunKernel(*v, in, n, p, 0, 0, off);
        EXPECT_EQ(r.error, "") << v->name << " n=" << n << " out+" << off;
        const std::string d = SameBits(v->dtype, in, r.out.data(), full.out.data(), n);
        EXPECT_EQ(d, "") << v->name << " n=" << n << " out+" << off;
        bad = bad || !r.error.empty() || !d.empty();
      }
    }
    ++checked;
  }
  std::printf("[   INFO   ] %d streaming-store variants\n", checked);
}

TEST_P(Kernels, InPlace) {
  const Operands& in = Small();
  for (const Variant* v : Supported()) {
    const OpParams p = ParamSets(v->op, v->gelu_mode)[0];
    const RunResult full = RunKernel(*v, in, kMaxN, p);
    const size_t es = DTypeSize(v->dtype);
    for (size_t n : {size_t{0}, size_t{17}, size_t{1000}, kMaxN}) {
      for (int which = 0; which < 2; ++which) {  // 0: out == g, 1: out == x
        GuardedBuffer a(n * es, 0), b(n * es, 0);
        if (n) {
          std::memcpy(a.data(), which == 0 ? in.g.data() : in.x.data(), n * es);
          std::memcpy(b.data(), which == 0 ? in.x.data() : in.g.data(), n * es);
        }
        const void* g = which == 0 ? a.data() : b.data();
        const void* x = which == 0 ? b.data() : a.data();
        v->fn(KernelArgs{g, x, a.data(), n, p, 0});
        EXPECT_EQ(a.CheckGuards(), "") << v->name << " n=" << n;
        EXPECT_EQ(b.CheckGuards(), "") << v->name << " n=" << n;
        const std::string d = SameBits(v->dtype, in, a.data(), full.out.data(), n);
        EXPECT_EQ(d, "") << v->name << " n=" << n << (which == 0 ? " out == g" : " out == x");
      }
    }
  }
}

TEST_P(Kernels, StagingTileDoesNotChangeResults) {
  const Operands& in = Small();
  for (const Variant* v : Supported()) {
    if (v->upcast != "staged") continue;
    const OpParams p = ParamSets(v->op, v->gelu_mode)[0];
    const RunResult full = RunKernel(*v, in, kMaxN, p);
    for (size_t tile : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}, kMaxStageTile, size_t{100000}}) {
      const RunResult r = RunKernel(*v, in, kMaxN, p, 1, 0, 1, tile);
      EXPECT_EQ(r.error, "") << v->name << " tile " << tile;
      EXPECT_EQ(SameBits(v->dtype, in, r.out.data(), full.out.data(), kMaxN), "") << v->name << " tile " << tile;
    }
  }
}

// RunVariant's splitting does not depend on the approximation: one variant
// per (target, upcast, unroll, streaming) of the group keeps this quick.
TEST_P(Kernels, RunVariantThreadsGiveTheSameBytes) {
  const Operands in = MakeOperands(GetParam().op, GetParam().dtype, kThreadN, 2);
  std::set<std::string> shapes;
  for (const Variant* v : Supported()) {
    if (!shapes.insert(v->target + "/" + v->upcast + "/" + std::to_string(v->unroll) + (v->nt_stores ? "nt" : "") +
                       "/" + std::to_string(int(v->gelu_mode))).second)
      continue;
    const OpParams p = ParamSets(v->op, v->gelu_mode)[0];
    const size_t es = DTypeSize(v->dtype);
    std::vector<uint8_t> one(kThreadN * es);
    RunVariant(*v, KernelArgs{in.g.data(), in.x.data(), one.data(), kThreadN, p, 0}, Split{});
    for (size_t chunk : {size_t{0}, size_t{64}, size_t{777}, size_t{4096}, kThreadN}) {
      GuardedBuffer out(kThreadN * es, 0);
      // (A stage tile changes no bits either: staged variants are checked for any tile above.)
      RunVariant(*v, KernelArgs{in.g.data(), in.x.data(), out.data(), kThreadN, p, 0}, Split{2, int64_t(chunk), 1000});
      EXPECT_EQ(out.CheckGuards(), "") << v->name << " chunk " << chunk;
      const std::string d = SameBits(v->dtype, in, out.data(), one.data(), kThreadN);
      EXPECT_EQ(d, "") << v->name << " threads 2, chunk " << chunk;
      if (!d.empty()) break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Group, Kernels, ::testing::ValuesIn(test::VariantGroups()), test::VariantGroupName);

TEST(KernelList, NamesAreUniqueAndFieldsConsistent) {
  std::set<std::string> names;
  for (const Variant& v : Variants()) {
    EXPECT_TRUE(names.insert(v.name).second) << "duplicate " << v.name;
    EXPECT_NE(v.fn, nullptr) << v.name;
    EXPECT_EQ(v.name.rfind(std::string(OpName(v.op)) + "." + std::string(DTypeName(v.dtype)) + ".", 0), 0u) << v.name;
    EXPECT_EQ(v.nt_stores, v.name.size() > 3 && v.name.compare(v.name.size() - 3, 3, ".nt") == 0) << v.name;
    EXPECT_EQ(v.op == Op::kGeluBwd || v.gelu_mode == GeluApprox::kNone, true) << v.name;
    EXPECT_GE(v.claimed_max_err, 0.0) << v.name;
    EXPECT_EQ(VariantIndex(v.name), &v - Variants().data()) << v.name;
    // PlainTwin: v itself when it stores plainly, else its name without .nt (where that runs here).
    const Variant* plain = PlainTwin(v);
    if (!v.nt_stores) {
      EXPECT_EQ(plain, &v) << v.name;
    } else if (plain) {
      EXPECT_FALSE(plain->nt_stores) << v.name;
      EXPECT_TRUE(plain->supported) << v.name;
      EXPECT_EQ(plain->name + ".nt", v.name);
    }
  }
  EXPECT_EQ(FindVariant("no.such.variant"), nullptr);
}

// The twins as the variant names spell them: the name plus `.nt` (or with
// u2 / u4 for its unroll), the name without `.nt`. The library finds them by
// the fields; both must agree on every variant.
const Variant* RunnableNamed(const std::string& name) {
  const Variant* t = FindVariant(name);
  return t && t->supported ? t : nullptr;
}
const Variant* StreamingTwinByName(const Variant& v) {
  if (v.nt_stores) return &v;
  if (const Variant* t = RunnableNamed(v.name + ".nt")) return t;
  const std::string own = ".u" + std::to_string(v.unroll) + ".";
  const size_t at = v.name.find(own);
  if (at == std::string::npos) return nullptr;
  for (const char* alt : {".u2.", ".u4."}) {
    std::string name = v.name;
    if (const Variant* t = RunnableNamed(name.replace(at, own.size(), alt) + ".nt")) return t;
  }
  return nullptr;
}
const Variant* PlainTwinByName(const Variant& v) {
  if (!v.nt_stores) return &v;
  if (!v.name.ends_with(".nt")) return nullptr;
  const Variant* t = RunnableNamed(v.name.substr(0, v.name.size() - 3));
  return t && !t->nt_stores ? t : nullptr;
}

TEST(KernelList, TwinsByFieldsAreTheTwinsTheNamesSpell) {
  int streaming = 0, plain = 0;
  for (const Variant& v : Variants()) {
    EXPECT_EQ(StreamingTwin(v), StreamingTwinByName(v)) << v.name;
    EXPECT_EQ(PlainTwin(v), PlainTwinByName(v)) << v.name;
    streaming += StreamingTwin(v) != nullptr && !v.nt_stores;
    plain += PlainTwin(v) != nullptr && v.nt_stores;
  }
  EXPECT_GT(streaming, 0);
  EXPECT_GT(plain, 0);
}

// Which SIMD target the untuned default (what the API runs without a tuned
// table) took on this CPU. scripts/test-arm sets ACTGRAD_EXPECT_TARGET (and
// ACTGRAD_EXPECT_SVE_BITS) per emulated CPU, so a run that silently falls back
// to another target (or another vector length) fails; without them it only
// reports the choice.
TEST(KernelList, DefaultVariantsTakeTheExpectedTarget) {
  const char* expect = std::getenv("ACTGRAD_EXPECT_TARGET");
  int checked = 0;
  for (const test::VariantGroup& g : test::VariantGroups()) {
    for (GeluApprox mode : {GeluApprox::kNone, GeluApprox::kTanh}) {  // GELU: erf, tanh
      if (g.op != Op::kGeluBwd && mode != GeluApprox::kNone) continue;
      const Variant* v = DefaultVariant(g.op, g.dtype, mode);
      ASSERT_NE(v, nullptr) << OpName(g.op) << " " << DTypeName(g.dtype);
      std::printf("[  DEFAULT ] %s\n", v->name.c_str());
      // Integer SELU has only the scalar variant.
      if (expect && *expect && v->target != "scalar") EXPECT_EQ(v->target, expect) << v->name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
#if defined(__aarch64__)
  const char* bits = std::getenv("ACTGRAD_EXPECT_SVE_BITS");
  if (bits && *bits) {
    const int vl = prctl(PR_SVE_GET_VL);  // bytes in the low 16 bits; < 0 without SVE
    EXPECT_EQ(vl < 0 ? 0 : (vl & PR_SVE_VL_LEN_MASK) * 8, std::atoi(bits)) << "SVE vector length in bits";
  }
#endif
}

}  // namespace
}  // namespace actgrad

namespace actgrad {
namespace {

// rcp_x's fast path (every x of a vector in its range) and its general path
// give a lane the same bits: an element's result does not depend on its
// neighbours. The same x and g, once among in-range neighbours only and once
// with every fourth neighbour at 0 (which sends every vector to the general path).
TEST(LogitRcpX, ALaneGetsTheSameBitsWhateverItsNeighbours) {
  constexpr size_t kN = 1024;
  int checked = 0;
  for (const Variant& v : Variants()) {
    if (!v.supported || v.op != Op::kLogitGrad || v.approx != "rcp_x") continue;
    const size_t es = DTypeSize(v.dtype);
    auto encode = [&](float f, std::vector<uint8_t>* buf, size_t i) {
      if (v.dtype == DType::kF32) std::memcpy(buf->data() + 4 * i, &f, 4);
      const uint16_t h = v.dtype == DType::kF16 ? FloatToHalf(f) : FloatToBF16(f);
      if (v.dtype != DType::kF32) std::memcpy(buf->data() + 2 * i, &h, 2);
    };
    inputs::Rng rng(7);
    std::vector<uint8_t> g(kN * es), x(kN * es), x_mixed(kN * es), out(kN * es), out_mixed(kN * es);
    for (size_t i = 0; i < kN; ++i) {
      const float xi = 0.001f + 0.998f * float(rng.Uniform());
      encode(float(rng.Normal()), &g, i);
      encode(xi, &x, i);
      encode(i % 4 == 3 ? 0.0f : xi, &x_mixed, i);
    }
    OpParams p;
    p.eps = -1.0f;
    RunVariant(v, KernelArgs{g.data(), x.data(), out.data(), kN, p, 0}, Split{});
    RunVariant(v, KernelArgs{g.data(), x_mixed.data(), out_mixed.data(), kN, p, 0}, Split{});
    for (size_t i = 0; i < kN; ++i) {
      if (i % 4 == 3) continue;
      ASSERT_EQ(std::memcmp(out.data() + i * es, out_mixed.data() + i * es, es), 0) << v.name << " element " << i;
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no rcp_x variant runs on this CPU";
}

}  // namespace
}  // namespace actgrad
