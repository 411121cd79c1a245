// Hostile input: tensor descriptors whose sizes,
// spans or byte addresses overflow int64, dtype/format values that are no
// enumerator, and executors launched or destroyed from several threads at
// once. Every bad call returns 161002 with a message naming the op and the
// tensor, and no byte of any buffer (nor the guard bytes around it) changes.
#include <atomic>
#include <latch>
#include <optional>
#include <thread>

#include "api_test_util.h"

namespace apitest {
namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t P2(int k) { return int64_t(1) << k; }

// Passes an int32 as an enum without an enum load in the test itself
// (UBSan's -fsanitize=enum would flag that, not the library).
__attribute__((no_sanitize("enum"))) aclTensor* CreateRaw(const Dims& dims, int32_t dtype, const int64_t* strides,
                                                          int64_t offset, int32_t format, const Dims& storage,
                                                          void* data) {
  aclDataType t;
  aclFormat f;
  std::memcpy(&t, &dtype, sizeof t);
  std::memcpy(&f, &format, sizeof f);
  return aclCreateTensor(dims.data(), dims.size(), t, strides, offset, f, storage.data(), storage.size(), data);
}
__attribute__((no_sanitize("enum"))) aclScalar* CreateScalarRaw(void* value, int32_t dtype) {
  aclDataType t;
  std::memcpy(&t, &dtype, sizeof t);
  return aclCreateScalar(value, t);
}
__attribute__((no_sanitize("enum"))) size_t DataTypeSizeRaw(int32_t dtype) {
  aclDataType t;
  std::memcpy(&t, &dtype, sizeof t);
  return aclDataTypeSize(t);
}

// A descriptor that may claim any storage over a small real buffer (guards on
// both sides); the library must refuse it in phase one without touching it.
struct HostileTensor {
  int32_t dtype = ACL_FLOAT;
  Dims dims;
  std::optional<Dims> strides;  // nullopt: aclCreateTensor's contiguous strides
  int64_t offset = 0;
  Dims storage;                 // as claimed
  int32_t format = ACL_FORMAT_ND;
  std::string what;

  static constexpr size_t kRealBytes = 64;
  std::vector<uint8_t> buf = std::vector<uint8_t>(2 * kGuardBytes + kRealBytes);
  aclTensor* handle = nullptr;

  void Create() {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = uint8_t(0x5A ^ (i * 37u));
    handle = CreateRaw(dims, dtype, strides ? strides->data() : nullptr, offset, format, storage,
                       buf.data() + kGuardBytes);
  }
  std::vector<uint8_t> Snapshot() const { return buf; }
  ~HostileTensor() { if (handle) aclDestroyTensor(handle); }
};

enum Pos { kG = 0, kX = 1, kOut = 2 };
const char* PosName(int p) { return p == kG ? "g" : p == kX ? "x" : "out"; }

::testing::AssertionResult NamesOpAndTensor(const std::string& msg, const ApiOp& c, int pos) {
  if (msg.find(c.api + ":") == std::string::npos)
    return ::testing::AssertionFailure() << "message does not name " << c.api << ": '" << msg << "'";
  if (pos >= 0 && msg.find(c.arg[pos]) == std::string::npos)
    return ::testing::AssertionFailure() << "message does not name " << c.arg[pos] << ": '" << msg << "'";
  if (pos < 0 && msg.find(c.arg[0]) == std::string::npos && msg.find(c.arg[1]) == std::string::npos &&
      msg.find(c.arg[2]) == std::string::npos)
    return ::testing::AssertionFailure() << "message names no tensor: '" << msg << "'";
  return ::testing::AssertionSuccess();
}

class Hostile : public ::testing::TestWithParam<ApiOp> {
 protected:
  // Phase one with `bad` at position pos (the other two: good contiguous
  // tensors of its dims and dtype, the output inside guarded spare storage)
  // must return 161002 naming the op and the bad tensor, touching nothing.
  void ExpectRefused(HostileTensor& bad, int pos) {
    const ApiOp& c = GetParam();
    const std::string what = bad.what + " as " + PosName(pos);
    bad.Create();
    ASSERT_NE(bad.handle, nullptr) << what << ": aclCreateTensor refused it: " << ErrMsg();
    const aclDataType t = bad.dtype == ACL_FLOAT16 ? ACL_FLOAT16 : ACL_FLOAT;
    Dims good = bad.dims;
    Tensor g(t, good), x(t, good);
    Tensor o(t, good, ContiguousStrides(good), 3, {Numel(good) + 6});
    g.Fill({0.25, -1.5, 2.0});
    x.Fill({0.1, 0.7, -0.3});
    const auto snaps = std::make_tuple(g.Snapshot(), x.Snapshot(), o.Snapshot(), bad.Snapshot());
    aclTensor* args[3] = {g.get(), x.get(), o.get()};
    args[pos] = bad.handle;
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    const aclnnStatus st = GetWorkspace(c.spec, args[kG], args[kX], args[kOut], &ws, &ex, &holder);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID) << what << " (message '" << ErrMsg() << "')";
    if (st == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);  // never run what phase one wrongly accepted
    else EXPECT_TRUE(NamesOpAndTensor(ErrMsg(), c, pos)) << what;
    EXPECT_TRUE(g.Unchanged(std::get<0>(snaps))) << what;
    EXPECT_TRUE(x.Unchanged(std::get<1>(snaps))) << what;
    EXPECT_TRUE(o.Unchanged(std::get<2>(snaps))) << what;
    EXPECT_TRUE(bad.Snapshot() == std::get<3>(snaps)) << what << ": the hostile tensor's buffer was written";
  }

  // All three arguments share a shape that is itself too large: 161002,
  // a message naming the op and one of the tensors.
  void ExpectShapeRefused(const Dims& dims, const std::optional<Dims>& strides, const Dims& storage,
                          const std::string& what) {
    const ApiOp& c = GetParam();
    HostileTensor t[3];
    for (auto& h : t) {
      h.dtype = ACL_FLOAT16;
      h.dims = dims;
      h.strides = strides;
      h.storage = storage;
      h.Create();
      ASSERT_NE(h.handle, nullptr) << what << ": aclCreateTensor refused it: " << ErrMsg();
    }
    const auto snap = t[kOut].Snapshot();
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    const aclnnStatus st = GetWorkspace(c.spec, t[kG].handle, t[kX].handle, t[kOut].handle, &ws, &ex, &holder);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID) << what << " (message '" << ErrMsg() << "')";
    if (st == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);
    else EXPECT_TRUE(NamesOpAndTensor(ErrMsg(), c, -1)) << what;
    EXPECT_TRUE(t[kOut].Snapshot() == snap) << what;
  }
};

// The filed reproductions and their neighbours: one hostile tensor among
// good ones, in every position.
TEST_P(Hostile, ViewArithmeticOverflow) {
  struct Case { int32_t dtype; Dims dims, strides; int64_t offset; Dims storage; const char* what; };
  const std::vector<Case> cases = {
      {ACL_FLOAT16, {5}, {P2(62)}, 0, {1}, "f16 [5] stride 2^62 over storage [1] (span overflows)"},
      {ACL_FLOAT, {5}, {P2(62)}, 0, {1}, "f32 [5] stride 2^62 over storage [1] (span overflows)"},
      {ACL_FLOAT, {5}, {-P2(62)}, kI64Max, {kI64Max}, "f32 [5] stride -2^62 (negative span overflows)"},
      {ACL_FLOAT, {3, 2}, {kI64Min, 1}, 0, {8}, "stride INT64_MIN"},
      {ACL_FLOAT, {2, 2}, {P2(62), P2(62)}, 0, {kI64Max}, "two spans of 2^62 (their sum overflows)"},
      {ACL_FLOAT, {5}, {1}, kI64Max - 2, {kI64Max}, "offset INT64_MAX-2 (last element overflows)"},
      {ACL_FLOAT, {2}, {P2(61)}, 0, {P2(61) + 1}, "f32 element 2^61 (its byte address overflows)"},
      {ACL_FLOAT16, {1}, {1}, P2(62), {P2(62) + 1}, "f16 offset 2^62 (its byte address overflows)"},
      {ACL_FLOAT, {5}, {1}, 0, {P2(33) + 1, P2(31)}, "storage [2^33+1, 2^31] (product overflows)"},
      {ACL_FLOAT, {5}, {1}, 0, {P2(32), P2(32)}, "storage [2^32, 2^32] (product overflows)"},
  };
  for (int pos : {kG, kX, kOut})
    for (const Case& c : cases) {
      HostileTensor h;
      h.dtype = c.dtype;
      h.dims = c.dims;
      h.strides = c.strides;
      h.offset = c.offset;
      h.storage = c.storage;
      h.what = c.what;
      ExpectRefused(h, pos);
    }
}

// Views whose elements and byte offsets all fit are valid however far apart
// they are, even when one stride past a dim's end would not fit: phase one
// accepts them (phase two is not run: the storage they claim is not there).
TEST_P(Hostile, HugeButValidViewsAreAccepted) {
  const ApiOp& c = GetParam();
  struct Case { aclDataType dtype; Dims dims, strides; int64_t offset; Dims storage; const char* what; };
  const std::vector<Case> cases = {
      {ACL_FLOAT, {2}, {P2(60)}, 0, {P2(60) + 1}, "f32 [2] stride 2^60 (2 * 2^60 * 4 bytes overflows)"},
      {ACL_FLOAT16, {2}, {P2(61)}, 0, {P2(61) + 1}, "f16 [2] stride 2^61 (2 * 2^61 * 2 bytes overflows)"},
      {ACL_FLOAT, {3, 2}, {P2(59), -P2(58)}, P2(58), {P2(61)}, "f32 [3, 2] strides [2^59, -2^58], offset 2^58"},
  };
  for (int pos : {kG, kX, kOut})
    for (const Case& k : cases) {
      const std::string what = std::string(k.what) + " as " + PosName(pos);
      Tensor g(k.dtype, k.dims), x(k.dtype, k.dims), o(k.dtype, k.dims);
      HostileTensor h;
      h.dtype = k.dtype;
      h.dims = k.dims;
      h.strides = k.strides;
      h.offset = k.offset;
      h.storage = k.storage;
      h.Create();
      const auto snap = h.Snapshot();
      aclTensor* args[3] = {g.get(), x.get(), o.get()};
      args[pos] = h.handle;
      uint64_t ws = 0;
      aclOpExecutor* ex = nullptr;
      ScalarPtr holder;
      EXPECT_EQ(GetWorkspace(c.spec, args[kG], args[kX], args[kOut], &ws, &ex, &holder), ACLNN_SUCCESS)
          << what << ": " << ErrMsg();
      if (ex) EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
      EXPECT_TRUE(h.Snapshot() == snap) << what;
    }
}

TEST_P(Hostile, ShapeOverflow) {
  ExpectShapeRefused({P2(32), P2(32)}, std::nullopt, {1}, "dims [2^32, 2^32], contiguous strides, storage [1]");
  ExpectShapeRefused({P2(32), P2(32)}, Dims{P2(32), 1}, {1}, "dims [2^32, 2^32], strides [2^32, 1], storage [1]");
  ExpectShapeRefused({P2(62) + 1, P2(62)}, std::nullopt, {kI64Max},
                     "contiguous dims [2^62+1, 2^62], storage [INT64_MAX]");
  ExpectShapeRefused({3, P2(31), P2(31), P2(31)}, std::nullopt, {kI64Max}, "contiguous strides past int64");
  // Empty, but the contiguous strides aclCreateTensor would record overflow.
  ExpectShapeRefused({0, P2(40), P2(40), 2}, std::nullopt, {1}, "empty with contiguous strides past int64");
}

TEST_P(Hostile, DtypeAndFormatOutOfEnum) {
  struct Case { int32_t dtype, format; const char* what; };
  const std::vector<Case> cases = {{12345, ACL_FORMAT_ND, "dtype 12345"},
                                   {-7, ACL_FORMAT_ND, "dtype -7"},
                                   {int32_t(0x80000000u), ACL_FORMAT_ND, "dtype INT32_MIN"},
                                   {ACL_FLOAT, 12345, "format 12345"},
                                   {ACL_FLOAT, -7, "format -7"},
                                   {ACL_FLOAT, 1000, "format 1000"}};
  for (int pos : {kG, kX, kOut})
    for (const Case& c : cases) {
      HostileTensor h;
      h.dtype = c.dtype;
      h.format = c.format;
      h.dims = {5};
      h.storage = {5};
      h.what = c.what;
      ExpectRefused(h, pos);
    }
}

INSTANTIATE_TEST_SUITE_P(HostileInput, Hostile, ::testing::ValuesIn(ApiOps()),
                         [](const ::testing::TestParamInfo<ApiOp>& i) { return i.param.name; });

// The getters and helpers take such values without an enum load of them.
TEST(HostileEnum, GettersScalarAndTypeSize) {
  for (const int32_t bad : {12345, -7, int32_t(0x80000000u)}) {
    HostileTensor h;
    h.dtype = bad;
    h.format = bad;
    h.dims = {5};
    h.storage = {5};
    h.Create();
    ASSERT_NE(h.handle, nullptr) << ErrMsg();
    aclDataType dt = ACL_FLOAT;
    aclFormat fmt = ACL_FORMAT_ND;
    EXPECT_EQ(aclGetDataType(h.handle, &dt), 0);
    EXPECT_EQ(aclGetFormat(h.handle, &fmt), 0);
    int32_t raw_dt, raw_fmt;
    std::memcpy(&raw_dt, &dt, sizeof raw_dt);
    std::memcpy(&raw_fmt, &fmt, sizeof raw_fmt);
    EXPECT_EQ(raw_dt, ACL_DT_UNDEFINED) << "no aclDataType reads back as ACL_DT_UNDEFINED";
    EXPECT_EQ(raw_fmt, ACL_FORMAT_UNDEFINED) << "no aclFormat reads back as ACL_FORMAT_UNDEFINED";

    float v = 1.0f;
    aclScalar* s = CreateScalarRaw(&v, bad);
    EXPECT_EQ(s, nullptr);
    EXPECT_NE(ErrMsg().find("aclCreateScalar"), std::string::npos) << ErrMsg();
    if (s) aclDestroyScalar(s);
    EXPECT_EQ(DataTypeSizeRaw(bad), 0u);
  }
}

// ---- executors under concurrent use

struct SmallRun {
  Tensor g = PermutedView(DType::kF32, {48, 40}, {1, 0});  // strided: the gather path and a workspace
  Tensor x = Tensor(ACL_FLOAT, {48, 40});
  Tensor o = Tensor(ACL_FLOAT, {48, 40}, ContiguousStrides({48, 40}), 4, {48 * 40 + 8});
  SmallRun() {
    g.FillFn([](int64_t i) { return 0.5 + double(i % 11) / 8.0; });
    x.FillFn([](int64_t i) { return 0.05 + double(i % 13) / 16.0; });
  }
};

const OpSpec kSpec = GeluTanh();

// Two or more threads launching one one-shot executor: exactly one runs, the
// others get 161002 and a message (it was a double free).
TEST(HostileExecutor, OneShotLaunchedByManyThreadsRunsOnce) {
  constexpr int kThreads = 4, kRounds = 300;
  SmallRun r;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(kSpec, r.g, r.x, r.o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
    std::vector<std::vector<uint8_t>> wbuf(kThreads, std::vector<uint8_t>(ws + 64));
    std::vector<aclnnStatus> st(kThreads, -1);
    std::vector<std::string> msg(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        st[t] = Execute(kSpec, wbuf[t].data(), ws, ex, nullptr);
        msg[t] = ErrMsg();
      });
    for (auto& th : threads) th.join();
    int ran = 0;
    for (int t = 0; t < kThreads; ++t) {
      if (st[t] == ACLNN_SUCCESS) {
        ++ran;
        continue;
      }
      EXPECT_EQ(st[t], ACLNN_ERR_PARAM_INVALID) << "round " << round;
      EXPECT_NE(msg[t].find("not live"), std::string::npos) << "round " << round << ": '" << msg[t] << "'";
    }
    ASSERT_EQ(ran, 1) << "round " << round << ": a one-shot executor ran " << ran << " times";
    ASSERT_TRUE(Passes(Check(kSpec, r.g, r.x, r.o))) << "round " << round;
    EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID) << "a spent executor is not live";
  }
}

// aclDestroyAclOpExecutor while a repeatable executor runs: the destroy
// succeeds, the running launch finishes on a live object, later launches get
// 161002 (it was a use after free).
TEST(HostileExecutor, DestroyWhileRepeatableLaunches) {
  constexpr int kRounds = 200;
  SmallRun r;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(kSpec, r.g, r.x, r.o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS) << ErrMsg();
    std::vector<uint8_t> wbuf(ws + 64);
    std::latch start(2);
    int runs = 0;
    aclnnStatus refused = ACLNN_SUCCESS, destroyed = -1;
    std::string refused_msg;
    std::thread launcher([&] {
      start.arrive_and_wait();
      for (int i = 0; i < 50; ++i) {
        const aclnnStatus st = Execute(kSpec, wbuf.data(), ws, ex, nullptr);
        if (st != ACLNN_SUCCESS) {
          refused = st;
          refused_msg = ErrMsg();
          break;
        }
        ++runs;
      }
    });
    std::thread destroyer([&] {
      start.arrive_and_wait();
      if (round % 2) std::this_thread::yield();
      destroyed = aclDestroyAclOpExecutor(ex);
    });
    launcher.join();
    destroyer.join();
    ASSERT_EQ(destroyed, ACLNN_SUCCESS) << "round " << round << ": " << ErrMsg();
    if (runs < 50) {
      EXPECT_EQ(refused, ACLNN_ERR_PARAM_INVALID) << "round " << round;
      EXPECT_NE(refused_msg.find("not live"), std::string::npos) << "round " << round << ": '" << refused_msg << "'";
    }
    if (runs > 0) {
      ASSERT_TRUE(Passes(Check(kSpec, r.g, r.x, r.o))) << "round " << round;
    }
    EXPECT_EQ(Execute(kSpec, wbuf.data(), ws, ex, nullptr), ACLNN_ERR_PARAM_INVALID) << "launch after destroy";
  }
}

// aclSetAclOpExecutorRepeatable racing the one launch of a one-shot executor:
// either it came first (the executor ran and stays live until destroyed) or
// it gets 161002 (the executor is spent); never both, never a leak or reuse.
TEST(HostileExecutor, SetRepeatableDuringLaunch) {
  constexpr int kRounds = 200;
  SmallRun r;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(kSpec, r.g, r.x, r.o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
    std::vector<uint8_t> wbuf(ws + 64);
    std::latch start(2);
    aclnnStatus launched = -1, set = -1;
    std::thread launcher([&] {
      start.arrive_and_wait();
      launched = Execute(kSpec, wbuf.data(), ws, ex, nullptr);
    });
    std::thread setter([&] {
      start.arrive_and_wait();
      if (round % 2) std::this_thread::yield();
      set = aclSetAclOpExecutorRepeatable(ex);
    });
    launcher.join();
    setter.join();
    ASSERT_EQ(launched, ACLNN_SUCCESS) << "round " << round;
    ASSERT_TRUE(set == ACLNN_SUCCESS || set == ACLNN_ERR_PARAM_INVALID) << set;
    // Repeatable in time: still live, destroyed here; too late: already gone.
    EXPECT_EQ(aclDestroyAclOpExecutor(ex), set == ACLNN_SUCCESS ? ACLNN_SUCCESS : ACLNN_ERR_PARAM_INVALID)
        << "round " << round << ", set returned " << set;
  }
}

}  // namespace
}  // namespace apitest
