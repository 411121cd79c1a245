// Bad input: every case the spec lists returns its status code and leaves a
// non-empty aclGetRecentErrMsg(), and the output buffer (view, the rest of
// its storage and guard bytes on both sides) is left untouched.
#include "api_test_util.h"

namespace apitest {
namespace {

bool Broadcasts(Op op) { return op == Op::kGeluBwd || op == Op::kSoftshrinkBwd; }

// The output lives inside a larger storage (offset 5, 7 spare elements after)
// so writes before or after the view are caught as well as guard overruns.
Tensor GuardedOut(aclDataType t, const Dims& d) {
  const int64_t n = std::max<int64_t>(Numel(d), 0);
  return Tensor(t, d, ContiguousStrides(d), 5, {n + 12});
}

class BadInput : public ::testing::TestWithParam<ApiOp> {
 protected:
  // Calls phase one and checks status, message, untouched output.
  void Expect(aclnnStatus want, const aclTensor* g, const aclTensor* x, Tensor& out, const std::string& what,
              bool null_out = false, bool null_ws = false, bool null_ex = false) {
    const auto snap = out.Snapshot();
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    const aclnnStatus st = GetWorkspace(GetParam().spec, g, x, null_out ? nullptr : out.get(), null_ws ? nullptr : &ws,
                                        null_ex ? nullptr : &ex, &holder);
    EXPECT_EQ(st, want) << what << " (message: '" << ErrMsg() << "')";
    if (st != ACLNN_SUCCESS) {
      EXPECT_FALSE(ErrMsg().empty()) << what << ": no error message";
    }
    EXPECT_TRUE(out.Unchanged(snap)) << what;
    if (st == ACLNN_SUCCESS && ex && !null_ex) {
      // Do not leave a live executor behind if the library accepted the call.
      aclDestroyAclOpExecutor(ex);
    }
  }
  aclDataType T() const { return ACL_FLOAT; }
};

TEST_P(BadInput, NullPointers) {
  Tensor g(ACL_FLOAT, {2, 3}), x(ACL_FLOAT, {2, 3});
  Tensor o = GuardedOut(ACL_FLOAT, {2, 3});
  Expect(ACLNN_ERR_PARAM_NULLPTR, nullptr, x, o, "null gradOutput");
  Expect(ACLNN_ERR_PARAM_NULLPTR, g, nullptr, o, "null self/x");
  Expect(ACLNN_ERR_PARAM_NULLPTR, g, x, o, "null output", /*null_out=*/true);
  Expect(ACLNN_ERR_PARAM_NULLPTR, g, x, o, "null workspaceSize", false, /*null_ws=*/true);
  Expect(ACLNN_ERR_PARAM_NULLPTR, g, x, o, "null executor", false, false, /*null_ex=*/true);
  Expect(ACLNN_ERR_PARAM_NULLPTR, nullptr, nullptr, o, "all null", true, true, true);
}

TEST_P(BadInput, UnsupportedDtypes) {
  const Op op = GetParam().spec.op;
  std::vector<aclDataType> bad = {ACL_DOUBLE, ACL_INT64, ACL_INT16, ACL_UINT8, ACL_BOOL, ACL_UINT32, ACL_UINT16};
  if (op != Op::kSeluBwd) {
    bad.push_back(ACL_INT32);
    bad.push_back(ACL_INT8);
  }
  for (aclDataType t : bad) {
    Tensor g(t, {2, 3}), x(t, {2, 3});
    Tensor o = GuardedOut(t, {2, 3});
    Expect(ACLNN_ERR_PARAM_INVALID, g, x, o, "all three of dtype " + std::to_string(int(t)));
    // only the output of the bad type
    Tensor gf(ACL_FLOAT, {2, 3}), xf(ACL_FLOAT, {2, 3});
    Expect(ACLNN_ERR_PARAM_INVALID, gf, xf, o, "output of dtype " + std::to_string(int(t)));
  }
}

TEST_P(BadInput, DtypeMismatch) {
  const Op op = GetParam().spec.op;
  if (op == Op::kGeluBwd) {
    struct C { aclDataType g, x, o; const char* what; };
    for (const C& c : {C{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT, "f16+f16 -> f32 output (promoted is f16)"},
                       C{ACL_FLOAT16, ACL_BF16, ACL_FLOAT16, "f16+bf16 -> f16 output (promoted is f32)"},
                       C{ACL_FLOAT16, ACL_BF16, ACL_BF16, "f16+bf16 -> bf16 output (promoted is f32)"},
                       C{ACL_FLOAT, ACL_FLOAT16, ACL_FLOAT16, "f32+f16 -> f16 output (promoted is f32)"},
                       C{ACL_BF16, ACL_FLOAT, ACL_BF16, "bf16+f32 -> bf16 output"},
                       C{ACL_FLOAT, ACL_FLOAT, ACL_FLOAT16, "f32+f32 -> f16 output"},
                       C{ACL_FLOAT, ACL_INT32, ACL_FLOAT, "int32 self"},
                       C{ACL_INT8, ACL_FLOAT, ACL_FLOAT, "int8 gradOutput"},
                       C{ACL_FLOAT, ACL_DOUBLE, ACL_DOUBLE, "double self and output"}}) {
      Tensor g(c.g, {2, 3}), x(c.x, {2, 3});
      Tensor o = GuardedOut(c.o, {2, 3});
      Expect(ACLNN_ERR_PARAM_INVALID, g, x, o, c.what);
    }
    return;
  }
  struct C { aclDataType g, x, o; };
  std::vector<C> cases = {{ACL_FLOAT, ACL_FLOAT16, ACL_FLOAT},  {ACL_FLOAT16, ACL_FLOAT, ACL_FLOAT},
                          {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT16},  {ACL_FLOAT16, ACL_FLOAT16, ACL_BF16},
                          {ACL_BF16, ACL_FLOAT16, ACL_FLOAT16}, {ACL_BF16, ACL_BF16, ACL_FLOAT}};
  if (op == Op::kSeluBwd) {
    cases.push_back({ACL_INT32, ACL_INT32, ACL_INT8});
    cases.push_back({ACL_INT8, ACL_INT32, ACL_INT32});
    cases.push_back({ACL_FLOAT, ACL_FLOAT, ACL_INT32});
  }
  for (const C& c : cases) {
    Tensor g(c.g, {2, 3}), x(c.x, {2, 3});
    Tensor o = GuardedOut(c.o, {2, 3});
    Expect(ACLNN_ERR_PARAM_INVALID, g, x, o,
           "dtypes g/x/out = " + std::to_string(c.g) + "/" + std::to_string(c.x) + "/" + std::to_string(c.o));
  }
}

TEST_P(BadInput, ShapeMismatch) {
  const Op op = GetParam().spec.op;
  struct C { Dims g, x, o; };
  std::vector<C> cases = {{{2, 3}, {2, 3}, {3, 2}}, {{2, 3}, {2, 3}, {6}}, {{2, 3}, {2, 3}, {2, 3, 1}},
                          {{2, 3}, {2, 3}, {}},     {{3}, {4}, {3}},       {{2, 3}, {3, 2}, {2, 3}}};
  if (!Broadcasts(op)) {
    // no broadcasting for SELU, Hardswish, LogitGrad
    cases.push_back({{2, 3}, {1, 3}, {2, 3}});
    cases.push_back({{1, 3}, {2, 3}, {2, 3}});
    cases.push_back({{2, 3}, {3}, {2, 3}});
    cases.push_back({{}, {2, 3}, {2, 3}});
    cases.push_back({{2, 3}, {2, 3}, {1, 3}});
    cases.push_back({{6}, {2, 3}, {2, 3}});
  }
  for (const C& c : cases) {
    Tensor g(ACL_FLOAT, c.g), x(ACL_FLOAT, c.x);
    Tensor o = GuardedOut(ACL_FLOAT, c.o);
    Expect(ACLNN_ERR_PARAM_INVALID, g, x, o,
           "shapes g " + ::testing::PrintToString(c.g) + " x " + ::testing::PrintToString(c.x) + " out " +
               ::testing::PrintToString(c.o));
  }
}

// aclCreateTensor may refuse a bad descriptor (then the op sees a null tensor
// -> 161001); otherwise the op must refuse it with 161002. Either way there is
// a message.
enum class Which { kG, kX, kOut };

void ExpectBadDescriptor(BadInput* self, const OpSpec& spec, Which which, const Dims& dims, const Dims& strides,
                         int64_t offset, const Dims& storage, const std::string& what) {
  Tensor bad(ACL_FLOAT, dims, strides, offset, storage);
  const bool refused = bad.get() == nullptr;
  if (refused) {
    EXPECT_FALSE(ErrMsg().empty()) << what << ": aclCreateTensor returned null without a message";
  }
  Dims ok_dims = dims;
  for (auto& d : ok_dims) d = std::max<int64_t>(d, 1);
  if (ok_dims.size() > 8) ok_dims.resize(8);
  // Inputs of a shape consistent with the bad one where possible.
  Tensor g(ACL_FLOAT, which == Which::kG ? Dims{} : ok_dims), x(ACL_FLOAT, which == Which::kX ? Dims{} : ok_dims);
  Tensor o = GuardedOut(ACL_FLOAT, ok_dims);
  const aclTensor* gp = which == Which::kG ? bad.get() : g.get();
  const aclTensor* xp = which == Which::kX ? bad.get() : x.get();
  Tensor* op = which == Which::kOut ? &bad : &o;
  const auto snap_o = o.Snapshot();
  const auto snap_bad = bad.Snapshot();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  const aclnnStatus st = GetWorkspace(spec, gp, xp, op->get(), &ws, &ex, &holder);
  const aclnnStatus want = refused ? ACLNN_ERR_PARAM_NULLPTR : ACLNN_ERR_PARAM_INVALID;
  EXPECT_EQ(st, want) << what << (refused ? " (aclCreateTensor refused it)" : " (aclCreateTensor accepted it)")
                      << " message: '" << ErrMsg() << "'";
  if (st != ACLNN_SUCCESS) {
    EXPECT_FALSE(ErrMsg().empty()) << what;
  }
  EXPECT_TRUE(o.Unchanged(snap_o)) << what;
  EXPECT_TRUE(bad.Unchanged(snap_bad)) << what;
  if (st == ACLNN_SUCCESS && ex) aclDestroyAclOpExecutor(ex);
  (void)self;
}

TEST_P(BadInput, MoreThanEightDims) {
  const Dims d9(9, 1);
  for (Which w : {Which::kG, Which::kX, Which::kOut})
    ExpectBadDescriptor(this, GetParam().spec, w, d9, ContiguousStrides(d9), 0, {1}, "9-d tensor");
  const Dims d10 = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
  ExpectBadDescriptor(this, GetParam().spec, Which::kOut, d10, ContiguousStrides(d10), 0, {32}, "10-d output");
}

TEST_P(BadInput, NegativeDims) {
  for (Which w : {Which::kG, Which::kX, Which::kOut}) {
    ExpectBadDescriptor(this, GetParam().spec, w, {2, -1}, {1, 1}, 0, {4}, "dims [2,-1]");
    ExpectBadDescriptor(this, GetParam().spec, w, {-3}, {1}, 0, {4}, "dims [-3]");
  }
}

TEST_P(BadInput, ViewDoesNotFitStorage) {
  struct C { Dims d, s; int64_t off; Dims st; const char* what; };
  const std::vector<C> cases = {
      {{4}, {1}, 2, {5}, "offset pushes the last element past the storage"},
      {{3}, {3}, 0, {6}, "stride 3 over 6 elements"},
      {{2, 3}, {3, 1}, 0, {5}, "contiguous 2x3 over 5 elements"},
      {{2, 3}, {1, 2}, 0, {5}, "transposed-like 2x3 over 5 elements"},
      {{4}, {1}, -1, {8}, "negative offset"},
      {{2, 3}, {3, 1}, 0, {2, 2}, "2-d storage of 4 for 6 elements"},
      {{2}, {-1}, 0, {2}, "negative stride reaching before the storage"},
  };
  for (Which w : {Which::kG, Which::kX, Which::kOut})
    for (const auto& c : cases) ExpectBadDescriptor(this, GetParam().spec, w, c.d, c.s, c.off, c.st, c.what);
}

INSTANTIATE_TEST_SUITE_P(Errors, BadInput, ::testing::ValuesIn(ApiOps()),
                         [](const ::testing::TestParamInfo<ApiOp>& i) { return i.param.name; });

// ---- op-specific parameters

TEST(ErrorsOp, SoftshrinkNegativeLambd) {
  for (float lambd : {-0.5f, -1e-30f, -std::numeric_limits<float>::infinity()}) {
    Tensor g(ACL_FLOAT, {2, 3}), x(ACL_FLOAT, {2, 3});
    Tensor o = GuardedOut(ACL_FLOAT, {2, 3});
    const auto snap = o.Snapshot();
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    EXPECT_EQ(GetWorkspace(Softshrink(lambd), g, x, o, &ws, &ex, &holder), ACLNN_ERR_PARAM_INVALID) << lambd;
    EXPECT_FALSE(ErrMsg().empty());
    EXPECT_TRUE(o.Unchanged(snap));
  }
}

TEST(ErrorsOp, SoftshrinkNullLambd) {
  Tensor g(ACL_FLOAT, {2, 3}), x(ACL_FLOAT, {2, 3});
  Tensor o = GuardedOut(ACL_FLOAT, {2, 3});
  const auto snap = o.Snapshot();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  EXPECT_EQ(GetWorkspace(Softshrink(0.5f), g, x, o, &ws, &ex, &holder, nullptr, /*force_null_lambd=*/true),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_FALSE(ErrMsg().empty());
  EXPECT_TRUE(o.Unchanged(snap));
}

TEST(ErrorsOp, GeluV2BadApproximate) {
  Tensor g(ACL_FLOAT, {2, 3}), x(ACL_FLOAT, {2, 3});
  Tensor o = GuardedOut(ACL_FLOAT, {2, 3});
  const auto snap = o.Snapshot();
  OpSpec s = GeluV2None();
  s.approximate = "sigmoid";
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  EXPECT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_ERR_PARAM_INVALID);
  EXPECT_FALSE(ErrMsg().empty());
  EXPECT_TRUE(o.Unchanged(snap));
}

TEST(ErrorsOp, GeluV2NullApproximateIsRefused) {
  Tensor g(ACL_FLOAT, {2, 3}), x(ACL_FLOAT, {2, 3});
  Tensor o = GuardedOut(ACL_FLOAT, {2, 3});
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st = aclnnGeluBackwardV2GetWorkspaceSize(g, x, nullptr, o, &ws, &ex);
  EXPECT_EQ(st, ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_FALSE(ErrMsg().empty());
}

TEST(ErrorsOp, PhaseTwoWithNullExecutor) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (const ApiOp& c : ApiOps()) {
    const aclnnStatus st = Execute(c.spec, nullptr, 0, nullptr, stream);
    EXPECT_NE(st, ACLNN_SUCCESS) << c.name;
    EXPECT_FALSE(ErrMsg().empty()) << c.name;
  }
  aclrtSynchronizeStream(stream);  // may report the failures; must not crash
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(ErrorsOp, CreateTensorBadArguments) {
  const int64_t d[2] = {2, 3}, s[2] = {3, 1}, st[1] = {6};
  float buf[6] = {};
  // null dims with a non-zero count, null strides, bad format are refused or accepted; no crash.
  aclTensor* t = aclCreateTensor(nullptr, 2, ACL_FLOAT, s, 0, ACL_FORMAT_ND, st, 1, buf);
  if (!t) {
    EXPECT_FALSE(ErrMsg().empty());
  }
  else aclDestroyTensor(t);
  t = aclCreateTensor(d, 2, ACL_FLOAT, s, 0, ACL_FORMAT_ND, nullptr, 1, buf);
  if (!t) {
    EXPECT_FALSE(ErrMsg().empty());
  }
  else aclDestroyTensor(t);
  // a good one, read back through the getters
  t = aclCreateTensor(d, 2, ACL_FLOAT16, s, 0, ACL_FORMAT_ND, st, 1, buf);
  ASSERT_NE(t, nullptr) << ErrMsg();
  aclDataType dt = ACL_DT_UNDEFINED;
  EXPECT_EQ(aclGetDataType(t, &dt), 0);
  EXPECT_EQ(dt, ACL_FLOAT16);
  aclFormat f = ACL_FORMAT_UNDEFINED;
  EXPECT_EQ(aclGetFormat(t, &f), 0);
  EXPECT_EQ(f, ACL_FORMAT_ND);
  int64_t off = -1;
  EXPECT_EQ(aclGetViewOffset(t, &off), 0);
  EXPECT_EQ(off, 0);
  EXPECT_EQ(aclDestroyTensor(t), 0);
}

TEST(ErrorsOp, ScalarBadArguments) {
  aclScalar* s = aclCreateScalar(nullptr, ACL_FLOAT);
  if (!s) {
    EXPECT_FALSE(ErrMsg().empty());
  }
  else aclDestroyScalar(s);
  float v = 0.5f;
  s = aclCreateScalar(&v, ACL_FLOAT);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(aclDestroyScalar(s), 0);
}

}  // namespace
}  // namespace apitest
