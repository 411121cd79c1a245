// Shapes and layouts: broadcasting (GELU, Softshrink), strided / offset /
// transposed / expanded (stride 0) views for inputs and output, 0-d and 8-d
// tensors, empty tensors, in-place output, large tensors (threaded path and
// tails). Every run is checked against the reference and for writes outside
// the output view.
#include <random>

#include "api_test_util.h"

namespace apitest {
namespace {

// Runs body once per op/dtype, each under its own trace; an ASSERT inside the
// body ends only that op/dtype.
template <typename P, typename Fn>
void ForAll(const std::vector<P>& params, Fn body) {
  for (const P& p : params) {
    SCOPED_TRACE(p.name);
    body(p);
  }
}

std::string OpTypeName(const ::testing::TestParamInfo<OpType>& i) { return i.param.name; }

void LayoutContiguous2D(const OpType& p) {
  Tensor g(p.t, {7, 33}), x(p.t, {7, 33}), o(p.t, {7, 33});
  FillInputs(p.spec, g, x, 1);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutTransposedInputs(const OpType& p) {
  Tensor g = PermutedView(p.t, {9, 17}, {1, 0});
  Tensor x = PermutedView(p.t, {9, 17}, {1, 0});
  Tensor o(p.t, {9, 17});
  FillInputs(p.spec, g, x, 2);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutTransposedOutput(const OpType& p) {
  Tensor g(p.t, {9, 17}), x(p.t, {9, 17});
  Tensor o = PermutedView(p.t, {9, 17}, {1, 0});
  FillInputs(p.spec, g, x, 3);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutEveryOtherElementWithOffset(const OpType& p) {
  Tensor g = SteppedView(p.t, {5, 13}, 2, 3);
  Tensor x = SteppedView(p.t, {5, 13}, 3, 1);
  Tensor o = SteppedView(p.t, {5, 13}, 2, 5);
  FillInputs(p.spec, g, x, 4);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutPermuted3DMixed(const OpType& p) {
  Tensor g = PermutedView(p.t, {4, 6, 11}, {2, 0, 1});
  Tensor x = SteppedView(p.t, {4, 6, 11}, 2, 7);
  Tensor o = PermutedView(p.t, {4, 6, 11}, {1, 2, 0});
  FillInputs(p.spec, g, x, 5);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutOffsetViewInsideLargerStorage(const OpType& p) {
  // Rows 2..5 and columns 3..12 of a 8x20 matrix: strides (20, 1), offset 43.
  Tensor g(p.t, {4, 10}, {20, 1}, 43, {8, 20});
  Tensor x(p.t, {4, 10}, {20, 1}, 43, {8, 20});
  Tensor o(p.t, {4, 10}, {20, 1}, 43, {8, 20});
  FillInputs(p.spec, g, x, 6);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutExpandedStrideZeroInputs(const OpType& p) {
  Tensor g = ExpandedView(p.t, {6, 21}, {true, false});   // one row repeated
  Tensor x = ExpandedView(p.t, {6, 21}, {false, true});   // one column repeated
  Tensor o(p.t, {6, 21});
  FillInputs(p.spec, g, x, 7);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutZeroDim(const OpType& p) {
  Tensor g(p.t, Dims{}), x(p.t, Dims{}), o(p.t, Dims{});
  ASSERT_NE(g.get(), nullptr) << ErrMsg();
  g.Set(0, actgrad::IsFloat(p.t) ? 1.5 : 3);
  x.Set(0, actgrad::IsFloat(p.t) ? 0.375 : -1);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutEightDims(const OpType& p) {
  const Dims d = {2, 3, 1, 2, 3, 1, 2, 5};
  Tensor g(p.t, d);
  Tensor x = PermutedView(p.t, d, {7, 6, 5, 4, 3, 2, 1, 0});
  Tensor o = PermutedView(p.t, d, {1, 0, 3, 2, 5, 4, 7, 6});
  ASSERT_NE(x.get(), nullptr) << ErrMsg();
  FillInputs(p.spec, g, x, 8);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
  Tensor g2 = SteppedView(p.t, d, 2, 1), x2(p.t, d), o2 = SteppedView(p.t, d, 3, 2);
  FillInputs(p.spec, g2, x2, 9);
  EXPECT_TRUE(RunAndCheck(p.spec, g2, x2, o2));
}

// Strides as a CANN sample's CreateAclTensor computes them for a shape with a
// zero dim: shape[i+1] * strides[i+1], so the dims before the zero get stride 0.
void LayoutEmptySampleStrides(const OpType& p) {
  for (const Dims& d : {Dims{3, 0, 4}, Dims{2, 0}, Dims{0, 5}}) {
    Tensor g(p.t, d), x(p.t, d), o(p.t, d, ContiguousStrides(d), 0, {16});  // storage with room
    const auto snap = o.Snapshot();
    uint64_t ws = 123;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(p.spec, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS)
        << "shape " << ::testing::PrintToString(d) << " strides " << ::testing::PrintToString(o.strides()) << ": "
        << ErrMsg();
    EXPECT_EQ(ws, 0u);
    EXPECT_EQ(Execute(p.spec, nullptr, 0, ex, AclEnv::stream()), ACLNN_SUCCESS) << ErrMsg();
    EXPECT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
    EXPECT_TRUE(o.Unchanged(snap));
  }
}

// Shapes with a zero dim and strides free of zeros.
Dims NonZeroStrides(const Dims& d) {
  Dims m = d;
  for (auto& v : m) v = std::max<int64_t>(v, 1);
  return ContiguousStrides(m);
}

void LayoutEmpty(const OpType& p) {
  for (const Dims& d : {Dims{3, 0, 4}, Dims{0}, Dims{2, 0}, Dims{1, 1, 0, 1, 1, 1, 1, 1}}) {
    Tensor g(p.t, d, NonZeroStrides(d), 0, {16}), x(p.t, d, NonZeroStrides(d), 0, {16});
    Tensor o(p.t, d, NonZeroStrides(d), 0, {16});  // storage with room
    const auto snap = o.Snapshot();
    uint64_t ws = 123;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(p.spec, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
    EXPECT_EQ(ws, 0u);
    EXPECT_EQ(Execute(p.spec, nullptr, 0, ex, AclEnv::stream()), ACLNN_SUCCESS) << ErrMsg();
    EXPECT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
    EXPECT_TRUE(o.Unchanged(snap));
  }
}

void LayoutEmptyWithNullData(const OpType& p) {
  const Dims d = {4, 0};
  Tensor g(p.t, d, {1, 1}, 0, {0}), x(p.t, d, {1, 1}, 0, {0}), o(p.t, d, {1, 1}, 0, {0});
  g.RecreateWithNullData();
  x.RecreateWithNullData();
  o.RecreateWithNullData();
  ASSERT_NE(o.get(), nullptr) << ErrMsg();
  uint64_t ws = 1;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  ASSERT_EQ(GetWorkspace(p.spec, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
  EXPECT_EQ(ws, 0u);
  EXPECT_EQ(Execute(p.spec, nullptr, 0, ex, AclEnv::stream()), ACLNN_SUCCESS) << ErrMsg();
}

void LayoutInPlaceOutputAliasesGradOutput(const OpType& p) {
  for (const bool strided : {false, true}) {
    Tensor g = strided ? SteppedView(p.t, {3, 70}, 2, 1) : Tensor(p.t, {3, 70});
    Tensor x(p.t, {3, 70});
    FillInputs(p.spec, g, x, 10);
    Tensor g_before = g.Clone();
    Tensor o = g.Alias();
    const auto snap = o.Snapshot();
    ASSERT_TRUE(IsOk(RunOp(p.spec, g, x, o)));
    EXPECT_TRUE(Passes(Check(p.spec, g_before, x, o))) << (strided ? "strided" : "contiguous");
    EXPECT_TRUE(o.OnlyViewChanged(snap));
  }
}

void LayoutInPlaceOutputAliasesSelf(const OpType& p) {
  Tensor g(p.t, {2, 129}), x(p.t, {2, 129});
  FillInputs(p.spec, g, x, 11);
  Tensor x_before = x.Clone();
  Tensor o = x.Alias();
  ASSERT_TRUE(IsOk(RunOp(p.spec, g, x, o)));
  EXPECT_TRUE(Passes(Check(p.spec, g, x_before, o)));
}

// "Any strides": reversed views (negative strides) for inputs and output.
void LayoutNegativeStrides(const OpType& p) {
  const int64_t n = 101;
  Tensor g(p.t, {3, n}, {n, -1}, n - 1, {3 * n});             // each row reversed
  Tensor x(p.t, {3, n}, {-n, 1}, 2 * n, {3 * n});             // rows in reverse order
  Tensor o(p.t, {3, n}, {-2 * n, -2}, 6 * n - 1, {6 * n + 8});  // both, every other element
  FillInputs(p.spec, g, x, 12);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

void LayoutLengthsAroundVectorWidths(const OpType& p) {
  for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 255, 257, 1023, 1025, 4097}) {
    Tensor g(p.t, {n}), x(p.t, {n}), o(p.t, {n});
    FillInputs(p.spec, g, x, 100 + uint64_t(n));
    EXPECT_TRUE(RunAndCheck(p.spec, g, x, o)) << "n=" << n;
    // misaligned: the same length at offset 1 in all three
    Tensor g1(p.t, {n}, {1}, 1, {n + 1}), x1(p.t, {n}, {1}, 1, {n + 1}), o1(p.t, {n}, {1}, 1, {n + 1});
    FillInputs(p.spec, g1, x1, 200 + uint64_t(n));
    EXPECT_TRUE(RunAndCheck(p.spec, g1, x1, o1)) << "n=" << n << " offset 1";
  }
}

TEST(Layouts, Contiguous2D) { ForAll(OpTypes(), LayoutContiguous2D); }
TEST(Layouts, TransposedInputs) { ForAll(OpTypes(), LayoutTransposedInputs); }
TEST(Layouts, TransposedOutput) { ForAll(OpTypes(), LayoutTransposedOutput); }
TEST(Layouts, EveryOtherElementWithOffset) { ForAll(OpTypes(), LayoutEveryOtherElementWithOffset); }
TEST(Layouts, Permuted3DMixed) { ForAll(OpTypes(), LayoutPermuted3DMixed); }
TEST(Layouts, OffsetViewInsideLargerStorage) { ForAll(OpTypes(), LayoutOffsetViewInsideLargerStorage); }
TEST(Layouts, ExpandedStrideZeroInputs) { ForAll(OpTypes(), LayoutExpandedStrideZeroInputs); }
TEST(Layouts, ZeroDim) { ForAll(OpTypes(), LayoutZeroDim); }
TEST(Layouts, EightDims) { ForAll(OpTypes(), LayoutEightDims); }
TEST(Layouts, EmptySampleStrides) { ForAll(OpTypes(), LayoutEmptySampleStrides); }
TEST(Layouts, Empty) { ForAll(OpTypes(), LayoutEmpty); }
TEST(Layouts, EmptyWithNullData) { ForAll(OpTypes(), LayoutEmptyWithNullData); }
TEST(Layouts, InPlaceOutputAliasesGradOutput) { ForAll(OpTypes(), LayoutInPlaceOutputAliasesGradOutput); }
TEST(Layouts, InPlaceOutputAliasesSelf) { ForAll(OpTypes(), LayoutInPlaceOutputAliasesSelf); }
TEST(Layouts, LengthsAroundVectorWidths) { ForAll(OpTypes(), LayoutLengthsAroundVectorWidths); }
TEST(Layouts, NegativeStrides) { ForAll(OpTypes(), LayoutNegativeStrides); }

// ---- broadcasting (GELU and Softshrink)

struct BcastCase {
  Dims g, x, out;
};

const std::vector<BcastCase>& BcastCases() {
  static const std::vector<BcastCase> c = {
      {{4, 1, 5}, {3, 1}, {4, 3, 5}},
      {{3, 1}, {4, 1, 5}, {4, 3, 5}},
      {{1}, {2, 3}, {2, 3}},
      {{2, 3}, {1}, {2, 3}},
      {{}, {2, 3}, {2, 3}},
      {{2, 3}, {}, {2, 3}},
      {{}, {}, {}},
      {{2, 3}, {3}, {2, 3}},
      {{5, 1, 1, 7}, {1, 6, 1}, {5, 1, 6, 7}},
      {{1, 1, 1, 1, 1, 1, 1, 9}, {2, 1, 2, 1, 2, 1, 2, 1}, {2, 1, 2, 1, 2, 1, 2, 9}},
      {{37, 1}, {1, 41}, {37, 41}},
      {{1}, {1}, {1}},
  };
  return c;
}

struct BcastOp {
  std::string name;
  OpSpec spec;
  DType t;
};
void PrintTo(const BcastOp& c, std::ostream* os) { *os << c.name; }

std::vector<BcastOp> BcastOps() {
  std::vector<BcastOp> v;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    v.push_back({"gelu_" + Name(t), Spec(Op::kGeluBwd), t});
    v.push_back({"gelu_tanh_" + Name(t), GeluTanh(), t});
    v.push_back({"softshrink_" + Name(t), Softshrink(0.5f), t});
  }
  return v;
}


void BroadcastNumpyRules(const BcastOp& p) {
  int k = 0;
  for (const auto& c : BcastCases()) {
    Tensor g(p.t, c.g), x(p.t, c.x), o(p.t, c.out);
    FillInputs(p.spec, g, x, 20 + uint64_t(k++));
    EXPECT_TRUE(RunAndCheck(p.spec, g, x, o)) << "g " << ::testing::PrintToString(c.g) << " x "
                                              << ::testing::PrintToString(c.x);
  }
}

void BroadcastStridedInputsAndOutput(const BcastOp& p) {
  // g: transposed [6, 4] broadcast over x [3, 6, 4] stepped; out [3, 6, 4] permuted.
  Tensor g = PermutedView(p.t, {6, 4}, {1, 0});
  Tensor x = SteppedView(p.t, {3, 6, 4}, 2, 3);
  Tensor o = PermutedView(p.t, {3, 6, 4}, {2, 1, 0});
  FillInputs(p.spec, g, x, 30);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
  // a size-1 dim with an arbitrary stride, plus an offset
  Tensor g2(p.t, {5, 1}, {3, 77}, 2, {20});
  Tensor x2(p.t, {1, 8}, {99, 2}, 1, {20});
  Tensor o2 = SteppedView(p.t, {5, 8}, 2, 1);
  FillInputs(p.spec, g2, x2, 31);
  EXPECT_TRUE(RunAndCheck(p.spec, g2, x2, o2));
}

void BroadcastEmptyBroadcast(const BcastOp& p) {
  Tensor g(p.t, {0, 1}, {1, 1}, 0, {1}), x(p.t, {1, 5}), o(p.t, {0, 5}, {5, 1}, 0, {8});
  const auto snap = o.Snapshot();
  const RunResult r = RunOp(p.spec, g, x, o);
  EXPECT_TRUE(IsOk(r));
  EXPECT_EQ(r.workspace, 0u);
  EXPECT_TRUE(o.Unchanged(snap));
}

void BroadcastNotBroadcastableOrWrongOutput(const BcastOp& p) {
  struct Bad { Dims g, x, out; };
  const std::vector<Bad> bad = {
      {{3}, {4}, {4}},                // 3 vs 4
      {{2, 3}, {3, 2}, {2, 3}},       // trailing 3 vs 2
      {{2, 1}, {1, 3}, {2, 1}},       // output is not the broadcast shape
      {{2, 3}, {2, 3}, {3, 2}},       // output shape mismatch
      {{2, 3}, {3}, {1, 2, 3}},       // output rank above the broadcast rank
      {{4, 1}, {1, 5}, {4, 1, 5}},    // output of another shape
  };
  for (const auto& b : bad) {
    Tensor g(p.t, b.g), x(p.t, b.x), o(p.t, b.out, ContiguousStrides(b.out), 0, {Numel(b.out) + 8});
    const auto snap = o.Snapshot();
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    EXPECT_EQ(GetWorkspace(p.spec, g, x, o, &ws, &ex, &holder), ACLNN_ERR_PARAM_INVALID)
        << "g " << ::testing::PrintToString(b.g) << " x " << ::testing::PrintToString(b.x) << " out "
        << ::testing::PrintToString(b.out);
    EXPECT_FALSE(ErrMsg().empty());
    EXPECT_TRUE(o.Unchanged(snap));
  }
}

TEST(Broadcast, NumpyRules) { ForAll(BcastOps(), BroadcastNumpyRules); }
TEST(Broadcast, StridedInputsAndOutput) { ForAll(BcastOps(), BroadcastStridedInputsAndOutput); }
TEST(Broadcast, EmptyBroadcast) { ForAll(BcastOps(), BroadcastEmptyBroadcast); }
TEST(Broadcast, NotBroadcastableOrWrongOutput) { ForAll(BcastOps(), BroadcastNotBroadcastableOrWrongOutput); }

// ---- large tensors: the threaded path and its tails

class Large : public ::testing::TestWithParam<OpType> {};

TEST_P(Large, MillionsPlusTail) {
  const auto& p = GetParam();
  // One ~3M case per op (f32); the 16-bit and int8 threaded paths at ~1M.
  const int64_t n = p.t == DType::kF32 ? 3000017 : 1000003;
  Tensor g(p.t, {n}), x(p.t, {n}), o(p.t, {n});
  FillInputs(p.spec, g, x, 40);
  EXPECT_TRUE(RunAndCheck(p.spec, g, x, o));
}

INSTANTIATE_TEST_SUITE_P(Layouts, Large,
                         ::testing::Values(OpType{"selu_f32", Spec(Op::kSeluBwd), DType::kF32},
                                           OpType{"hardswish_f32", Spec(Op::kHardswishBwd), DType::kF32},
                                           OpType{"gelu_f32", Spec(Op::kGeluBwd), DType::kF32},
                                           OpType{"softshrink_f32", Softshrink(0.5f), DType::kF32},
                                           OpType{"logit_f32", Logit(-1.0f), DType::kF32},
                                           OpType{"gelu_bf16", Spec(Op::kGeluBwd), DType::kBF16},
                                           OpType{"selu_f16", Spec(Op::kSeluBwd), DType::kF16},
                                           OpType{"selu_i8", Spec(Op::kSeluBwd), DType::kI8}),
                         OpTypeName);

TEST(LargeLayouts, StridedOutputAndInput) {
  const int64_t rows = 701, cols = 1500;  // 1.05M elements, every other one
  Tensor g = SteppedView(DType::kF32, {rows, cols}, 2, 1);
  Tensor x = PermutedView(DType::kF32, {rows, cols}, {1, 0});
  Tensor o = SteppedView(DType::kF32, {rows, cols}, 2, 0);
  FillInputs(Spec(Op::kHardswishBwd), g, x, 41);
  EXPECT_TRUE(RunAndCheck(Spec(Op::kHardswishBwd), g, x, o));
}

TEST(LargeLayouts, GeluBroadcast) {
  Tensor g(DType::kF32, {537, 1}), x(DType::kF32, {1, 2003}), o(DType::kF32, {537, 2003});
  FillInputs(Spec(Op::kGeluBwd), g, x, 42);
  EXPECT_TRUE(RunAndCheck(Spec(Op::kGeluBwd), g, x, o));
}

TEST(LargeLayouts, SoftshrinkBroadcastF16ToStridedOutput) {
  Tensor g(DType::kF16, {1, 3001}), x(DType::kF16, {333, 1});
  Tensor o = PermutedView(DType::kF16, {333, 3001}, {1, 0});
  FillInputs(Softshrink(0.5f), g, x, 43);
  EXPECT_TRUE(RunAndCheck(Softshrink(0.5f), g, x, o));
}

TEST(LargeLayouts, GeluPromotionMixedLarge) {
  Tensor g(DType::kF16, {1024, 1025}), x(DType::kBF16, {1024, 1025}), o(DType::kF32, {1024, 1025});
  FillInputs(Spec(Op::kGeluBwd), g, x, 44);
  EXPECT_TRUE(RunAndCheck(Spec(Op::kGeluBwd), g, x, o));
}

TEST(LargeLayouts, InPlaceLarge) {
  const int64_t n = 1000003;
  Tensor g(DType::kF32, {n}), x(DType::kF32, {n});
  FillInputs(Spec(Op::kGeluBwd), g, x, 45);
  Tensor before = g.Clone();
  Tensor o = g.Alias();
  ASSERT_TRUE(IsOk(RunOp(Spec(Op::kGeluBwd), g, x, o)));
  EXPECT_TRUE(Passes(Check(Spec(Op::kGeluBwd), before, x, o)));
}

}  // namespace
}  // namespace apitest
