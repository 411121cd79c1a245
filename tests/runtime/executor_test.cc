// Executor semantics: an executor runs once unless made repeatable; a
// workspace smaller than asked is refused; aclrtSynchronizeStream succeeds
// after a good run.
#include <thread>

#include "api_test_util.h"

namespace apitest {
namespace {

void FillSimple(Tensor& g, Tensor& x, double gscale, double xshift) {
  g.FillFn([&](int64_t i) { return gscale * (1.0 + double(i % 7) / 8.0); });
  x.FillFn([&](int64_t i) { return xshift + double(i % 13) / 16.0; });
}

class Executor : public ::testing::TestWithParam<ApiOp> {
 protected:
  void SetUp() override { ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS); }
  void TearDown() override {
    aclrtSynchronizeStream(stream_);
    EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
  }
  aclrtStream stream_ = nullptr;
};

TEST_P(Executor, RunsOnceByDefault) {
  const OpSpec& s = GetParam().spec;
  Tensor g(DType::kF32, {4, 50}), x(DType::kF32, {4, 50}), o(DType::kF32, {4, 50});
  FillSimple(g, x, 1.0, 0.1);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  ASSERT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
  ASSERT_NE(ex, nullptr);
  std::vector<uint8_t> wbuf(ws + 64);
  ASSERT_EQ(Execute(s, ws ? wbuf.data() : nullptr, ws, ex, stream_), ACLNN_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS) << ErrMsg();
  EXPECT_TRUE(Passes(Check(s, g, x, o)));
  // New inputs; a second run of the spent executor must fail and write nothing.
  FillSimple(g, x, -3.0, 0.2);
  const auto snap = o.Snapshot();
  const aclnnStatus again = Execute(s, ws ? wbuf.data() : nullptr, ws, ex, stream_);
  EXPECT_NE(again, ACLNN_SUCCESS) << "a non-repeatable executor ran twice";
  if (again != ACLNN_SUCCESS) {
    EXPECT_FALSE(ErrMsg().empty());
  }
  EXPECT_TRUE(o.Unchanged(snap));
}

TEST_P(Executor, RepeatableRunsManyTimes) {
  const OpSpec& s = GetParam().spec;
  Tensor g(DType::kF16, {3, 77}), x(DType::kF16, {3, 77}), o(DType::kF16, {3, 77});
  FillSimple(g, x, 1.0, 0.05);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  ASSERT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS) << ErrMsg();
  std::vector<uint8_t> wbuf(ws + 64);
  for (int round = 0; round < 3; ++round) {
    FillSimple(g, x, 1.0 + round, 0.05 + 0.1 * round);  // same buffers, new contents
    ASSERT_EQ(Execute(s, ws ? wbuf.data() : nullptr, ws, ex, stream_), ACLNN_SUCCESS) << "round " << round << " "
                                                                                       << ErrMsg();
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    EXPECT_TRUE(Passes(Check(s, g, x, o))) << "round " << round;
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

TEST_P(Executor, DestroyUnusedExecutor) {
  const OpSpec& s = GetParam().spec;
  Tensor g(DType::kF32, {8}), x(DType::kF32, {8}), o(DType::kF32, {8});
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  ASSERT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

// Workspace smaller than phase one asked for -> an error, nothing written.
// Tried over layouts that are likely to need a workspace (16-bit, strided,
// broadcast, large); when the library never asks for one, the check of the
// too-small case cannot apply and only the "larger is fine" part runs.
TEST_P(Executor, WorkspaceTooSmallIsRefused) {
  const OpSpec& s = GetParam().spec;
  struct Layout { DType t; Dims d; bool strided; };
  const std::vector<Layout> layouts = {{DType::kF32, {64}, false}, {DType::kF16, {1000, 1001}, false},
                                       {DType::kBF16, {300, 301}, true}, {DType::kF32, {517, 1000}, true}};
  int with_ws = 0;
  for (const auto& l : layouts) {
    Tensor g = l.strided ? PermutedView(l.t, l.d, {1, 0}) : Tensor(l.t, l.d);
    Tensor x = l.strided ? SteppedView(l.t, l.d, 2, 1) : Tensor(l.t, l.d);
    Tensor o = l.strided ? SteppedView(l.t, l.d, 2, 0) : Tensor(l.t, l.d);
    FillSimple(g, x, 1.0, 0.0);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS) << ErrMsg();
    void* w = nullptr;
    const uint64_t alloc = ws + 256;
    ASSERT_EQ(aclrtMalloc(&w, alloc, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    if (ws > 0) {
      ++with_ws;
      const auto snap = o.Snapshot();
      EXPECT_NE(Execute(s, w, ws - 1, ex, stream_), ACLNN_SUCCESS) << "workspace of ws-1 bytes accepted";
      EXPECT_FALSE(ErrMsg().empty());
      EXPECT_NE(Execute(s, w, 0, ex, stream_), ACLNN_SUCCESS) << "workspace of 0 bytes accepted";
      EXPECT_NE(Execute(s, nullptr, ws, ex, stream_), ACLNN_SUCCESS) << "null workspace accepted";
      EXPECT_TRUE(o.Unchanged(snap));
      aclrtSynchronizeStream(stream_);  // may carry the failures; a fresh stream follows
    }
    aclrtStream fresh = nullptr;
    ASSERT_EQ(aclrtCreateStream(&fresh), ACL_SUCCESS);
    // A workspace larger than asked is fine.
    EXPECT_EQ(Execute(s, w, alloc, ex, fresh), ACLNN_SUCCESS) << ErrMsg();
    EXPECT_EQ(aclrtSynchronizeStream(fresh), ACL_SUCCESS);
    EXPECT_TRUE(Passes(Check(s, g, x, o)));
    EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(fresh), ACL_SUCCESS);
    aclrtFree(w);
  }
  if (with_ws == 0) RecordProperty("note", "library asked for no workspace in any layout tried");
}

TEST_P(Executor, SynchronizeAfterGoodRun) {
  const OpSpec& s = GetParam().spec;
  Tensor g(DType::kBF16, {33}), x(DType::kBF16, {33}), o(DType::kBF16, {33});
  FillSimple(g, x, 2.0, -0.3);
  const RunResult r = RunOp(s, g, x, o, stream_);
  EXPECT_TRUE(IsOk(r));
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(Passes(Check(s, g, x, o)));
}

TEST_P(Executor, DefaultNullStream) {
  const OpSpec& s = GetParam().spec;
  Tensor g(DType::kF32, {40}), x(DType::kF32, {40}), o(DType::kF32, {40});
  FillSimple(g, x, 1.0, 0.0);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  ASSERT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
  std::vector<uint8_t> wbuf(ws + 64);
  EXPECT_EQ(Execute(s, ws ? wbuf.data() : nullptr, ws, ex, nullptr), ACLNN_SUCCESS) << ErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << ErrMsg();
  EXPECT_TRUE(Passes(Check(s, g, x, o)));
}

TEST_P(Executor, ManyExecutorsInterleaved) {
  // Phase one for several calls first, then phase two in reverse order.
  const OpSpec& s = GetParam().spec;
  constexpr int kN = 4;
  std::vector<Tensor> gs, xs, os;
  std::vector<aclOpExecutor*> exs(kN, nullptr);
  std::vector<uint64_t> wss(kN, 0);
  std::vector<ScalarPtr> holders(kN);
  for (int i = 0; i < kN; ++i) {
    gs.emplace_back(DType::kF32, Dims{10 + i});
    xs.emplace_back(DType::kF32, Dims{10 + i});
    os.emplace_back(DType::kF32, Dims{10 + i});
    FillSimple(gs.back(), xs.back(), 1.0 + i, 0.01 * i);
  }
  for (int i = 0; i < kN; ++i)
    ASSERT_EQ(GetWorkspace(s, gs[i], xs[i], os[i], &wss[i], &exs[i], &holders[i]), ACLNN_SUCCESS) << ErrMsg();
  for (int i = kN - 1; i >= 0; --i) {
    std::vector<uint8_t> wbuf(wss[i] + 64);
    EXPECT_EQ(Execute(s, wss[i] ? wbuf.data() : nullptr, wss[i], exs[i], stream_), ACLNN_SUCCESS) << ErrMsg();
  }
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(Passes(Check(s, gs[i], xs[i], os[i]))) << i;
}

INSTANTIATE_TEST_SUITE_P(Executors, Executor, ::testing::ValuesIn(ApiOps()),
                         [](const ::testing::TestParamInfo<ApiOp>& i) { return i.param.name; });

// Several threads, each with its own stream, running ops concurrently.
TEST(ExecutorMisc, ConcurrentCallsFromThreads) {
  constexpr int kThreads = 4, kIters = 25;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &errors] {
      aclrtStream st = nullptr;
      if (aclrtCreateStream(&st) != ACL_SUCCESS) { errors[t] = "create stream"; return; }
      const auto ops = ApiOps();
      for (int i = 0; i < kIters && errors[t].empty(); ++i) {
        const OpSpec& s = ops[size_t(t + i) % ops.size()].spec;
        const int64_t n = 1000 + 37 * i + t;
        Tensor g(DType::kF32, {n}), x(DType::kF32, {n}), o(DType::kF32, {n});
        FillSimple(g, x, 1.0 + t, 0.01 * i);
        const RunResult r = RunOp(s, g, x, o, st);
        if (!r.ok()) errors[t] = "run failed: " + ErrMsg();
        else if (!Check(s, g, x, o).pass) errors[t] = "wrong result in " + SpecName(s);
        // a failing call on this thread leaves its own message
        uint64_t ws = 0;
        aclOpExecutor* ex = nullptr;
        ScalarPtr holder;
        if (GetWorkspace(s, nullptr, x, o, &ws, &ex, &holder) != ACLNN_ERR_PARAM_NULLPTR || ErrMsg().empty())
          errors[t] = "null check";
      }
      aclrtDestroyStream(st);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
}

TEST(ExecutorMisc, RepeatableNullIsRefused) {
  EXPECT_NE(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_SUCCESS);
  aclDestroyAclOpExecutor(nullptr);  // any status, no crash
}

}  // namespace
}  // namespace apitest
