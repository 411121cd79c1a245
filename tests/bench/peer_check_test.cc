// The correctness mode of the benchmarks (CheckCase) on fake peers: a wrong
// formula, wrong parameters, an ignored view or an unwritten result fail it;
// the reference itself and the other one-sided derivative at a branch point pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

#include "common/bench_common.h"
#include "reference/reference.h"

namespace actgrad::bench {
namespace {

using Formula = std::function<float(float g, float x)>;

// A "peer" that writes formula(g, x) for f32 operands, element by element in
// view order when `follow_views`, else as if every operand were contiguous.
ComputeFn FakePeer(Layout layout, Formula formula, bool follow_views = true) {
  return [=](Operands& ops, size_t n, std::string*) {
    const LayoutViews v = ViewsOf(layout, n);
    auto* g = static_cast<const float*>(ops.g);
    auto* x = static_cast<const float*>(ops.x);
    auto* out = static_cast<float*>(ops.out);
    for (size_t i = 0; i < n; ++i) {
      size_t gi = i, xi = i, rest = i;
      if (follow_views) {
        gi = xi = 0;
        for (size_t d = v.out.dims.size(); d-- > 0;) {
          const size_t extent = size_t(v.out.dims[d]), k = rest % extent;
          if (v.g.dims[d] == v.out.dims[d]) gi += k * size_t(v.g.strides[d]);
          if (v.x.dims[d] == v.out.dims[d]) xi += k * size_t(v.x.strides[d]);
          rest /= extent;
        }
      }
      out[i] = formula(g[gi], x[xi]);
    }
    return true;
  };
}

std::string Check(const ComputeFn& fn, const OpForm& form, Layout layout = Layout::kContig) {
  return CheckCase("fake", Held::kHardBound, fn, form, DType::kF32, layout, stderr, /*every_case=*/true);
}

const OpForm kGeluErf{Op::kGeluBwd}, kGeluTanh{Op::kGeluBwd, GeluApprox::kTanh};

TEST(PeerCheck, TheReferenceFormulaPasses) {
  for (const OpForm& form : OpForms()) {
    const OpParams p = ParamsOf(form);
    EXPECT_EQ(Check(FakePeer(Layout::kContig, [&](float g, float x) {
      return float(ref::Reference(form.op, g, x, p));
    }), form), "") << FormToken(form);
  }
}

TEST(PeerCheck, GeluTanhTimedAsGeluErfFails) {
  EXPECT_NE(Check(FakePeer(Layout::kContig, [](float g, float x) { return float(ref::GeluBwdTanh(g, x)); }), kGeluErf),
            "");
  EXPECT_NE(Check(FakePeer(Layout::kContig, [](float g, float x) { return float(ref::GeluBwdErf(g, x)); }), kGeluTanh),
            "");
}

TEST(PeerCheck, WrongParametersFail) {
  // Hardswish with oneDNN's default alpha (not 1/6) and Softshrink with lambd 0.25 instead of 0.5.
  EXPECT_NE(Check(FakePeer(Layout::kContig, [](float g, float x) {
    return x < -3 ? 0.f : (x <= 3 ? g * (x / 2 + 0.5f) : g);
  }), OpForm{Op::kHardswishBwd}), "");
  EXPECT_NE(Check(FakePeer(Layout::kContig, [](float g, float x) { return float(ref::SoftshrinkBwd(g, x, 0.25f)); }),
                  OpForm{Op::kSoftshrinkBwd}),
            "");
}

TEST(PeerCheck, SeluWithoutTheScaleFails) {
  // oneDNN's elu_use_dst_for_bwd: g (not g * scale) where y > 0.
  EXPECT_NE(Check(FakePeer(Layout::kContig, [](float g, float y) {
    return y > 0 ? g : g * (y + float(ref::kSeluAlpha * ref::kSeluScale));
  }), OpForm{Op::kSeluBwd}), "");
}

TEST(PeerCheck, AnIgnoredViewFails) {
  const Formula f = [](float g, float x) { return float(ref::GeluBwdErf(g, x)); };
  EXPECT_EQ(Check(FakePeer(Layout::kTransposed, f), kGeluErf, Layout::kTransposed), "");
  EXPECT_NE(Check(FakePeer(Layout::kTransposed, f, /*follow_views=*/false), kGeluErf, Layout::kTransposed), "");
}

TEST(PeerCheck, AnUnwrittenResultFails) {
  const ComputeFn nothing = [](Operands&, size_t, std::string*) { return true; };
  EXPECT_NE(Check(nothing, OpForm{Op::kLogitGrad}), "");
}

TEST(PeerCheck, APeerThatCannotRunSaysWhy) {
  const ComputeFn refuse = [](Operands&, size_t, std::string* why) { return *why = "no such kernel", false; };
  EXPECT_EQ(Check(refuse, OpForm{Op::kSeluBwd}), "no such kernel");
}

TEST(PeerCheck, TheOtherOneSidedDerivativeAtABranchPointPasses) {
  // PyTorch's convention: 0 at x = -3, g at x = 3 (Ascend's: the middle branch).
  EXPECT_EQ(Check(FakePeer(Layout::kContig, [](float g, float x) {
    return x <= -3 ? 0.f : (x < 3 ? g * (x / 3 + 0.5f) : g);
  }), OpForm{Op::kHardswishBwd}), "");
}

TEST(PeerCheck, OursIsHeldToTheWholeRule) {
  // An error of 5e-4 everywhere: within the hard bound (a peer passes), over
  // the threshold for every element (ours fails).
  const ComputeFn off = FakePeer(Layout::kContig, [](float g, float x) {
    return float(ref::GeluBwdErf(g, x) * (1 + 5e-4));
  });
  EXPECT_EQ(Check(off, kGeluErf), "");
  EXPECT_NE(CheckCase("ours", Held::kWholeRule, off, kGeluErf, DType::kF32, Layout::kContig, stderr, true), "");
}

}  // namespace
}  // namespace actgrad::bench
