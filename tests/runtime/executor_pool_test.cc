// Pooled executors (runtime/slot_pool.h): phase one takes a slot that an
// earlier call left, so nothing of an earlier call may show in a later one:
// other ops, dtypes, shapes, layouts and parameters on the same slot, errors
// in between, more live executors than the pool's first chunk, handles that
// are not executors, and executors handed between threads.
#include <algorithm>
#include <latch>
#include <random>
#include <thread>

#include "api_test_util.h"

namespace apitest {
namespace {

void FillFor(const OpSpec& s, Tensor& g, Tensor& x, int seed) {
  g.FillFn([&](int64_t i) { return 0.25 + double((i * 7 + seed) % 19) / 8.0; });
  switch (s.op) {
    case Op::kLogitGrad: x.FillFn([&](int64_t i) { return double((i * 5 + seed) % 23) / 22.0; }); break;
    case Op::kSeluBwd: x.FillFn([&](int64_t i) { return -1.5 + double((i * 3 + seed) % 29) / 7.0; }); break;
    default: x.FillFn([&](int64_t i) { return -4.0 + double((i * 3 + seed) % 41) / 5.0; }); break;
  }
}

// One step of a sequence on one thread: a call of `s` on tensors of this
// layout, checked against the reference (and nothing outside out written).
struct Step {
  std::string what;
  OpSpec s;
  std::function<Tensor()> g, x, out;
};

// Runs the step's phase one and two; returns the executor pointer (to see
// that the pool handed back a slot an earlier step used).
const void* RunStep(const Step& st, int seed) {
  Tensor g = st.g(), x = st.x(), o = st.out();
  FillFor(st.s, g, x, seed);
  const auto snap = o.Snapshot();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  EXPECT_EQ(GetWorkspace(st.s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << st.what << ": " << ErrMsg();
  if (!ex) return nullptr;
  std::vector<uint8_t> wbuf(ws + 64);
  if (ws > 0) {  // a refused launch in between leaves it live and unchanged
    EXPECT_EQ(Execute(st.s, wbuf.data(), ws - 1, ex, AclEnv::stream()), ACLNN_ERR_PARAM_INVALID) << st.what;
    EXPECT_TRUE(o.Unchanged(snap)) << st.what;
  }
  EXPECT_EQ(Execute(st.s, ws ? wbuf.data() : nullptr, ws, ex, AclEnv::stream()), ACLNN_SUCCESS) << st.what << ": "
                                                                                                << ErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
  EXPECT_TRUE(Passes(Check(st.s, g, x, o))) << st.what;
  EXPECT_TRUE(o.OnlyViewChanged(snap)) << st.what;
  // Spent: a second launch is refused and writes nothing.
  const auto after = o.Snapshot();
  EXPECT_EQ(Execute(st.s, ws ? wbuf.data() : nullptr, ws, ex, AclEnv::stream()), ACLNN_ERR_PARAM_INVALID) << st.what;
  EXPECT_TRUE(o.Unchanged(after)) << st.what;
  return ex;
}

// Failing phase ones of several kinds (each before or after the slot is taken).
void FailingCalls() {
  Tensor a(DType::kF32, {16}), b(DType::kF32, {17}), i8(DType::kI8, {16}), o(DType::kF32, {16});
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  EXPECT_EQ(aclnnSeluBackwardGetWorkspaceSize(a, nullptr, o, &ws, &ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnHardswishBackwardGetWorkspaceSize(a, b, o, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclnnGeluBackwardGetWorkspaceSize(i8, i8, i8, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclnnLogitGradGetWorkspaceSize(a, a, 0.1, b, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(ex, nullptr);
}

std::vector<Step> Sequence() {
  const auto contig = [](DType t, Dims d) { return [=] { return Tensor(t, d); }; };
  const auto stepped = [](DType t, Dims d, int64_t step, int64_t off) { return [=] { return SteppedView(t, d, step, off); }; };
  const auto permuted = [](DType t, Dims d, std::vector<int> p) { return [=] { return PermutedView(t, d, p); }; };
  const auto expanded = [](DType t, Dims d, std::vector<bool> e) { return [=] { return ExpandedView(t, d, e); }; };
  const auto offset = [](DType t, Dims d, int64_t off) {
    return [=] { return Tensor(t, d, ContiguousStrides(d), off, {Numel(d) + off + 5}); };
  };
  std::vector<Step> v;
  v.push_back({"selu f32 4096", Spec(Op::kSeluBwd), contig(DType::kF32, {4096}), contig(DType::kF32, {4096}),
               contig(DType::kF32, {4096})});
  v.push_back({"softshrink 0.5 f32 [3,5]", Softshrink(0.5f), contig(DType::kF32, {3, 5}), contig(DType::kF32, {3, 5}),
               contig(DType::kF32, {3, 5})});
  v.push_back({"softshrink 1.5 f32 [3,5] offset", Softshrink(1.5f), offset(DType::kF32, {3, 5}, 7),
               contig(DType::kF32, {3, 5}), offset(DType::kF32, {3, 5}, 3)});
  v.push_back({"softshrink 0 f16 strided", Softshrink(0.0f), stepped(DType::kF16, {6, 7, 5}, 2, 1),
               permuted(DType::kF16, {6, 7, 5}, {2, 0, 1}), stepped(DType::kF16, {6, 7, 5}, 3, 2)});
  v.push_back({"logit eps=-1 f32 4095", Logit(-1.0f), contig(DType::kF32, {4095}), contig(DType::kF32, {4095}),
               contig(DType::kF32, {4095})});
  v.push_back({"gelu bf16 broadcast", Spec(Op::kGeluBwd), contig(DType::kBF16, {9, 4, 33}),
               expanded(DType::kBF16, {9, 4, 33}, {false, true, false}), contig(DType::kBF16, {9, 4, 33})});
  v.push_back({"gelu f32 [1,1,1]", Spec(Op::kGeluBwd), contig(DType::kF32, {1, 1, 1}), contig(DType::kF32, {1, 1, 1}),
               contig(DType::kF32, {1, 1, 1})});
  v.push_back({"gelu tanh f32 [64,64]", GeluTanh(), contig(DType::kF32, {64, 64}), contig(DType::kF32, {64, 64}),
               contig(DType::kF32, {64, 64})});
  v.push_back({"gelu promoted f16+bf16->f32", Spec(Op::kGeluBwd), contig(DType::kF16, {300}),
               contig(DType::kBF16, {300}), contig(DType::kF32, {300})});
  v.push_back({"logit eps=0.25 f16 transposed", Logit(0.25f), permuted(DType::kF16, {40, 30}, {1, 0}),
               contig(DType::kF16, {40, 30}), contig(DType::kF16, {40, 30})});
  // Views of runs in place (PlanPath::kRuns) of two row geometries: each
  // plan's row table (built in phase one) must be its own, not the slot's last.
  v.push_back({"selu f32 runs of 32, rows permuted", Spec(Op::kSeluBwd), permuted(DType::kF32, {6, 20, 32}, {1, 0, 2}),
               permuted(DType::kF32, {6, 20, 32}, {1, 0, 2}), contig(DType::kF32, {6, 20, 32})});
  v.push_back({"hardswish f16 runs of 40, a row dim of 300", Spec(Op::kHardswishBwd),
               permuted(DType::kF16, {2, 300, 40}, {1, 0, 2}), contig(DType::kF16, {2, 300, 40}),
               contig(DType::kF16, {2, 300, 40})});
  v.push_back({"hardswish bf16 [1]", Spec(Op::kHardswishBwd), contig(DType::kBF16, {1}), contig(DType::kBF16, {1}),
               contig(DType::kBF16, {1})});
  v.push_back({"selu i8 [2,3,4,5]", Spec(Op::kSeluBwd), contig(DType::kI8, {2, 3, 4, 5}),
               contig(DType::kI8, {2, 3, 4, 5}), contig(DType::kI8, {2, 3, 4, 5})});
  v.push_back({"softshrink 0.5 f32 4096 again", Softshrink(0.5f), contig(DType::kF32, {4096}),
               contig(DType::kF32, {4096}), contig(DType::kF32, {4096})});
  return v;
}

// Every step, in order and shuffled, with failing calls between: each step's
// result is its own. One thread, so the pool hands the slot of one step to
// the next (checked: the point of the test).
TEST(ExecutorPool, ReusedSlotsCarryNothingOver) {
  std::vector<Step> seq = Sequence();
  std::mt19937 rng(17);
  int reused = 0;
  const void* last = nullptr;
  for (int round = 0; round < 4; ++round) {
    if (round > 0) std::shuffle(seq.begin(), seq.end(), rng);
    for (size_t i = 0; i < seq.size(); ++i) {
      SCOPED_TRACE("round " + std::to_string(round) + ", " + seq[i].what);
      const void* ex = RunStep(seq[i], int(i) + round);
      reused += ex && ex == last;
      last = ex;
      if (i % 3 == round % 3) FailingCalls();
    }
  }
  EXPECT_GT(reused, 0) << "the pool never handed a slot back: the test exercises nothing";
}

// An empty output between full ones on the same slot.
TEST(ExecutorPool, EmptyBetweenFull) {
  for (int k = 0; k < 3; ++k) {
    Tensor g(DType::kF32, {0, 3}), x(DType::kF32, {0, 3}), o(DType::kF32, {0, 3});
    EXPECT_TRUE(RunAndCheck(Spec(Op::kHardswishBwd), g, x, o));
    Tensor g2(DType::kF32, {5, 3}), x2(DType::kF32, {5, 3}), o2(DType::kF32, {5, 3});
    FillFor(Spec(Op::kHardswishBwd), g2, x2, k);
    EXPECT_TRUE(RunAndCheck(Spec(Op::kHardswishBwd), g2, x2, o2));
  }
}

// More live executors than the pool's first chunk (64): it grows, every
// executor keeps its own plan, repeatable ones run again, destroyed ones are
// no longer live.
TEST(ExecutorPool, ManyLiveExecutors) {
  constexpr int kN = 300;
  const OpSpec specs[] = {Spec(Op::kSeluBwd), Softshrink(0.25f), Logit(0.125f), GeluTanh(), Spec(Op::kHardswishBwd)};
  struct Call {
    OpSpec s;
    std::unique_ptr<Tensor> g, x, o;
    ScalarPtr holder;
    aclOpExecutor* ex = nullptr;
    uint64_t ws = 0;
    bool repeatable = false;
  };
  std::vector<Call> calls(kN);
  for (int i = 0; i < kN; ++i) {
    Call& c = calls[size_t(i)];
    c.s = specs[i % 5];
    const DType t = i % 3 == 0 ? DType::kF16 : DType::kF32;
    const Dims d = i % 4 == 0 ? Dims{3, int64_t(1 + i % 17)} : Dims{int64_t(1 + i)};
    c.g = std::make_unique<Tensor>(t, d);
    c.x = std::make_unique<Tensor>(t, d);
    c.o = std::make_unique<Tensor>(i % 7 == 0 ? SteppedView(t, d, 2, 1) : Tensor(t, d));
    FillFor(c.s, *c.g, *c.x, i);
    ASSERT_EQ(GetWorkspace(c.s, *c.g, *c.x, *c.o, &c.ws, &c.ex, &c.holder), ACLNN_SUCCESS) << i << ": " << ErrMsg();
    c.repeatable = i % 5 == 2;
    if (c.repeatable) ASSERT_EQ(aclSetAclOpExecutorRepeatable(c.ex), ACLNN_SUCCESS);
  }
  for (int i = 0; i < kN; ++i)
    for (int j = i + 1; j < kN; ++j) ASSERT_NE(calls[size_t(i)].ex, calls[size_t(j)].ex) << i << " " << j;
  std::vector<int> order(kN);
  for (int i = 0; i < kN; ++i) order[size_t(i)] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  for (int pass = 0; pass < 2; ++pass) {
    for (int i : order) {
      Call& c = calls[size_t(i)];
      if (pass == 1 && !c.repeatable) continue;
      std::vector<uint8_t> wbuf(c.ws + 64);
      ASSERT_EQ(Execute(c.s, c.ws ? wbuf.data() : nullptr, c.ws, c.ex, AclEnv::stream()), ACLNN_SUCCESS)
          << i << ": " << ErrMsg();
      EXPECT_TRUE(Passes(Check(c.s, *c.g, *c.x, *c.o))) << i;
    }
  }
  ASSERT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
  for (Call& c : calls) {
    EXPECT_EQ(aclDestroyAclOpExecutor(c.ex), c.repeatable ? ACLNN_SUCCESS : ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclDestroyAclOpExecutor(c.ex), ACLNN_ERR_PARAM_INVALID);
  }
}

// Handles that are no executor of ours (or not one any more) are refused
// without being touched; a live executor next to them still runs.
TEST(ExecutorPool, ForeignHandlesAreNotLive) {
  Tensor g(DType::kF32, {100}), x(DType::kF32, {100}), o(DType::kF32, {100});
  const OpSpec s = Spec(Op::kSeluBwd);
  FillFor(s, g, x, 1);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  ASSERT_EQ(GetWorkspace(s, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
  alignas(64) unsigned char local[1024] = {};
  aclOpExecutor* foreign[] = {reinterpret_cast<aclOpExecutor*>(local),
                              reinterpret_cast<aclOpExecutor*>(reinterpret_cast<char*>(ex) + 8),
                              reinterpret_cast<aclOpExecutor*>(reinterpret_cast<char*>(ex) - 8)};
  for (aclOpExecutor* f : foreign) {
    EXPECT_EQ(aclnnSeluBackward(nullptr, 0, f, AclEnv::stream()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(ErrMsg().find("not live"), std::string::npos) << ErrMsg();
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(f), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclDestroyAclOpExecutor(f), ACLNN_ERR_PARAM_INVALID);
  }
  for (unsigned char b : local) ASSERT_EQ(b, 0) << "a foreign handle was written";
  // A stream that is no stream of ours (or destroyed) is refused before the
  // executor is claimed: it stays live.
  aclrtStream dead = nullptr;
  ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
  for (aclrtStream bad : {static_cast<aclrtStream>(local), dead}) {
    EXPECT_EQ(aclnnSeluBackward(nullptr, 0, ex, bad), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(ErrMsg().find("stream"), std::string::npos) << ErrMsg();
    EXPECT_NE(aclrtSynchronizeStream(bad), ACL_SUCCESS);
    EXPECT_NE(aclrtDestroyStream(bad), ACL_SUCCESS);
  }
  EXPECT_EQ(aclnnSeluBackward(nullptr, 0, ex, AclEnv::stream()), ACLNN_SUCCESS) << ErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
  EXPECT_TRUE(Passes(Check(s, g, x, o)));
}

// Phase one on one thread, phase two on another (each thread launches the
// executors the previous thread made), while the threads' own calls take
// and return slots concurrently.
TEST(ExecutorPool, ExecutorsHandedBetweenThreads) {
  constexpr int kThreads = 4, kPer = 40;
  struct Call {
    OpSpec s;
    std::unique_ptr<Tensor> g, x, o;
    ScalarPtr holder;
    aclOpExecutor* ex = nullptr;
    uint64_t ws = 0;
  };
  std::vector<std::vector<Call>> made(kThreads);
  std::vector<std::string> errors(kThreads);
  std::latch built(kThreads);
  const OpSpec specs[] = {Softshrink(0.75f), Logit(-1.0f), Spec(Op::kGeluBwd), Spec(Op::kSeluBwd)};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      aclrtStream st = nullptr;
      if (aclrtCreateStream(&st) != ACL_SUCCESS) errors[t] = "stream";
      auto& mine = made[size_t(t)];
      mine.resize(kPer);
      for (int i = 0; i < kPer && errors[t].empty(); ++i) {
        Call& c = mine[size_t(i)];
        c.s = specs[(i + t) % 4];
        const Dims d = {int64_t(64 + 13 * i + t)};
        c.g = std::make_unique<Tensor>(DType::kF32, d);
        c.x = std::make_unique<Tensor>(DType::kF32, d);
        c.o = std::make_unique<Tensor>(DType::kF32, d);
        FillFor(c.s, *c.g, *c.x, i + 100 * t);
        if (GetWorkspace(c.s, *c.g, *c.x, *c.o, &c.ws, &c.ex, &c.holder) != ACLNN_SUCCESS) errors[t] = "phase one";
        // and a call of this thread's own in between (takes and returns a slot)
        Tensor g(DType::kF32, {33}), x(DType::kF32, {33}), o(DType::kF32, {33});
        FillFor(c.s, g, x, i);
        if (!RunOp(c.s, g, x, o, st).ok() || !Check(c.s, g, x, o).pass) errors[t] = "own call";
      }
      built.arrive_and_wait();
      auto& theirs = made[size_t((t + 1) % kThreads)];
      for (Call& c : theirs) {
        if (!errors[t].empty() || !c.ex) break;
        std::vector<uint8_t> wbuf(c.ws + 64);
        if (Execute(c.s, c.ws ? wbuf.data() : nullptr, c.ws, c.ex, st) != ACLNN_SUCCESS) errors[t] = "phase two: " + ErrMsg();
        else if (aclrtSynchronizeStream(st) != ACL_SUCCESS) errors[t] = "synchronize";
        else if (!Check(c.s, *c.g, *c.x, *c.o).pass) errors[t] = "wrong result in " + SpecName(c.s);
      }
      aclrtDestroyStream(st);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
}

}  // namespace
}  // namespace apitest
