// actgrad_api_alloc_test: a complete call on contiguous tensors (phase one,
// phase two, aclrtSynchronizeStream) allocates nothing once warm (the
// per-call cost). Its own program: it replaces the global operator new to
// count every allocation the process makes (the library's std::vector,
// std::string, std::function, unordered containers all allocate through it).
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "api_test_util.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void* Allocate(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n);
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = Allocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = Allocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = Allocate(n, std::size_t(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = Allocate(n, std::size_t(a))) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return Allocate(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return Allocate(n, std::size_t(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace apitest {
namespace {

// Allocations made by fn (run on this thread; nothing else runs meanwhile).
template <class Fn>
long AllocationsIn(Fn&& fn) {
  g_allocations.store(0);
  g_counting.store(true);
  fn();
  g_counting.store(false);
  return g_allocations.load();
}

enum class Api { kSelu, kHardswish, kGelu, kGeluV2Tanh, kSoftshrink, kLogit };
const char* ApiName(Api a) {
  switch (a) {
    case Api::kSelu: return "SeluBackward";
    case Api::kHardswish: return "HardswishBackward";
    case Api::kGelu: return "GeluBackward";
    case Api::kGeluV2Tanh: return "GeluBackwardV2(tanh)";
    case Api::kSoftshrink: return "SoftshrinkBackward";
    case Api::kLogit: return "LogitGrad";
  }
  return "?";
}

struct Fixture {
  Tensor g, x, o;
  aclScalar* lambd;
  aclrtStream stream;
};

// One complete call through the public API, as a CANN program makes it.
// Returns the first failing status (0: all succeeded).
int Call(Api api, Fixture& f) {
  static char tanh_mode[] = "tanh";
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  int st = 0;
  switch (api) {
    case Api::kSelu: st = aclnnSeluBackwardGetWorkspaceSize(f.g, f.x, f.o, &ws, &ex); break;
    case Api::kHardswish: st = aclnnHardswishBackwardGetWorkspaceSize(f.g, f.x, f.o, &ws, &ex); break;
    case Api::kGelu: st = aclnnGeluBackwardGetWorkspaceSize(f.g, f.x, f.o, &ws, &ex); break;
    case Api::kGeluV2Tanh: st = aclnnGeluBackwardV2GetWorkspaceSize(f.g, f.x, tanh_mode, f.o, &ws, &ex); break;
    case Api::kSoftshrink: st = aclnnSoftshrinkBackwardGetWorkspaceSize(f.g, f.x, f.lambd, f.o, &ws, &ex); break;
    case Api::kLogit: st = aclnnLogitGradGetWorkspaceSize(f.x, f.g, -1.0, f.o, &ws, &ex); break;
  }
  if (st != 0) return st;
  if (ws != 0) return -1;  // contiguous: no workspace
  switch (api) {
    case Api::kSelu: st = aclnnSeluBackward(nullptr, 0, ex, f.stream); break;
    case Api::kHardswish: st = aclnnHardswishBackward(nullptr, 0, ex, f.stream); break;
    case Api::kGelu: st = aclnnGeluBackward(nullptr, 0, ex, f.stream); break;
    case Api::kGeluV2Tanh: st = aclnnGeluBackwardV2(nullptr, 0, ex, f.stream); break;
    case Api::kSoftshrink: st = aclnnSoftshrinkBackward(nullptr, 0, ex, f.stream); break;
    case Api::kLogit: st = aclnnLogitGrad(nullptr, 0, ex, f.stream); break;
  }
  if (st != 0) return st;
  return aclrtSynchronizeStream(f.stream);
}

// The counter sees the library's allocations (the replacement operator new
// is the one libactgrad.so calls): aclCreateTensor allocates its vectors.
TEST(NoAllocationMisc, CounterSeesTheLibrary) {
  const int64_t dims[2] = {4, 8};
  float data[32] = {};
  aclTensor* t = nullptr;
  const long n = AllocationsIn([&] { t = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, data); });
  ASSERT_NE(t, nullptr);
  EXPECT_GT(n, 0);
  aclDestroyTensor(t);
}

class NoAllocation : public ::testing::TestWithParam<std::tuple<Api, DType, Dims>> {};

TEST_P(NoAllocation, CompleteContiguousCall) {
  const auto [api, dt, dims] = GetParam();
  omp_set_num_threads(1);  // one thread, as the per-call cost goal measures
  float lambd = 0.5f;
  Fixture f{Tensor(dt, dims), Tensor(dt, dims), Tensor(dt, dims), aclCreateScalar(&lambd, ACL_FLOAT),
            AclEnv::stream()};
  f.g.FillFn([](int64_t i) { return 0.5 + double(i % 9) / 8.0; });
  f.x.FillFn([](int64_t i) { return double(i % 31) / 31.0; });
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Call(api, f), 0) << ApiName(api) << ": " << ErrMsg();  // warm
  int failed = 0;
  const long n = AllocationsIn([&] {
    for (int i = 0; i < 200; ++i) failed |= Call(api, f);
  });
  EXPECT_EQ(failed, 0) << ErrMsg();
  EXPECT_EQ(n, 0) << ApiName(api) << " " << Name(dt) << ": " << n << " allocations in 200 complete calls";
  aclDestroyScalar(f.lambd);
}

const Dims k4K = {4096};
INSTANTIATE_TEST_SUITE_P(
    Calls, NoAllocation,
    ::testing::Combine(::testing::Values(Api::kSelu, Api::kHardswish, Api::kGelu, Api::kGeluV2Tanh, Api::kSoftshrink,
                                         Api::kLogit),
                       ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                       ::testing::Values(k4K, Dims{4, 1, 32, 8}, Dims{1})),
    [](const ::testing::TestParamInfo<std::tuple<Api, DType, Dims>>& i) {
      std::string n = std::string(ApiName(std::get<0>(i.param))) + "_" + Name(std::get<1>(i.param));
      for (int64_t d : std::get<2>(i.param)) n += "_" + std::to_string(d);
      for (char& c : n)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// A repeatable executor: its launches allocate nothing; nor do refused calls
// (a message is recorded without allocating).
TEST(NoAllocationMisc, RepeatableAndRefusedCalls) {
  omp_set_num_threads(1);
  Tensor g(DType::kF32, {4096}), x(DType::kF32, {4096}), o(DType::kF32, {4096}), bad(DType::kF32, {4095});
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(aclnnHardswishBackwardGetWorkspaceSize(g, x, o, &ws, &ex), ACLNN_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnHardswishBackward(nullptr, 0, ex, AclEnv::stream()), ACLNN_SUCCESS);
  int failed = 0;
  long n = AllocationsIn([&] {
    for (int i = 0; i < 100; ++i) {
      failed |= aclnnHardswishBackward(nullptr, 0, ex, AclEnv::stream());
      failed |= aclrtSynchronizeStream(AclEnv::stream());
    }
  });
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(n, 0) << n << " allocations in 100 launches of a repeatable executor";
  int refused = 0;
  n = AllocationsIn([&] {
    uint64_t w = 0;
    aclOpExecutor* e = nullptr;
    for (int i = 0; i < 100; ++i) {
      refused += aclnnHardswishBackwardGetWorkspaceSize(g, bad, o, &w, &e) == ACLNN_ERR_PARAM_INVALID;
      refused += aclnnHardswishBackward(nullptr, 0, nullptr, AclEnv::stream()) == ACLNN_ERR_PARAM_NULLPTR;
    }
  });
  EXPECT_EQ(refused, 200);
  EXPECT_FALSE(ErrMsg().empty());
  EXPECT_EQ(n, 0) << n << " allocations in 200 refused calls";
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace apitest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new apitest::AclEnv);
  return RUN_ALL_TESTS();
}
