// The acl runtime subset a sample uses: devices, streams, memory, copies.
// (aclInit / aclFinalize themselves are in lifecycle_test.cc, its own process.)
#include <numeric>

#include "api_test_util.h"

namespace apitest {
namespace {

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7 + (i >> 8));
  return v;
}

TEST(Runtime, DeviceQueries) {
  int32_t dev = -1;
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_GE(count, 1u);
  EXPECT_NE(aclrtSetDevice(int32_t(count) + 7), ACL_SUCCESS) << "a device id past the count was accepted";
  EXPECT_NE(aclrtSetDevice(-1), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);  // setting the current device again is fine
  aclrtRunMode mode = ACL_DEVICE;
  EXPECT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
}

TEST(Runtime, Streams) {
  std::vector<aclrtStream> s(5, nullptr);
  for (auto& st : s) {
    ASSERT_EQ(aclrtCreateStream(&st), ACL_SUCCESS);
    EXPECT_NE(st, nullptr);
  }
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = i + 1; j < s.size(); ++j) EXPECT_NE(s[i], s[j]);
  for (auto st : s) EXPECT_EQ(aclrtSynchronizeStream(st), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << "default stream";
  for (auto st : s) EXPECT_EQ(aclrtDestroyStream(st), ACL_SUCCESS);
  EXPECT_NE(aclrtCreateStream(nullptr), ACL_SUCCESS);
}

TEST(Runtime, MallocFree) {
  for (size_t n : {size_t(1), size_t(31), size_t(4096), size_t(1) << 24}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << n;
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x3C, n);  // device memory is host memory here
    EXPECT_EQ(static_cast<uint8_t*>(p)[n - 1], 0x3C);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  for (aclrtMemMallocPolicy pol : {ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, 100, pol), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  EXPECT_NE(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 256), ACL_SUCCESS);
  ASSERT_NE(h, nullptr);
  std::memset(h, 1, 256);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST(Runtime, MemcpyEveryKind) {
  const size_t n = 1000;
  void* d1 = nullptr;
  void* d2 = nullptr;
  ASSERT_EQ(aclrtMalloc(&d1, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&d2, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const auto src = Pattern(n, 11);
  std::vector<uint8_t> host(n, 0), host2(n, 0);
  EXPECT_EQ(aclrtMemcpy(d1, n, src.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(d2, n, d1, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(host.data(), n, d2, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(host, src);
  EXPECT_EQ(aclrtMemcpy(host2.data(), n, host.data(), n, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(host2, src);
  const auto src2 = Pattern(n, 99);
  EXPECT_EQ(aclrtMemcpy(d1, n, src2.data(), n, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(host.data(), n, d1, n, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  EXPECT_EQ(host, src2);
  // destMax larger than count copies count bytes only
  std::vector<uint8_t> big(n + 10, 0xEE);
  EXPECT_EQ(aclrtMemcpy(big.data(), big.size(), d1, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_TRUE(std::equal(src2.begin(), src2.end(), big.begin()));
  EXPECT_EQ(big[n], 0xEE);
  // count 0 is a no-op
  EXPECT_EQ(aclrtMemcpy(host.data(), n, d1, 0, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  aclrtFree(d1);
  aclrtFree(d2);
}

TEST(Runtime, MemcpyDestTooSmallIsRefused) {
  const size_t n = 64;
  const auto src = Pattern(n, 5);
  for (aclrtMemcpyKind kind : {ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                               ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEFAULT}) {
    void* d = nullptr;
    ASSERT_EQ(aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::memset(d, 0x77, n);
    EXPECT_NE(aclrtMemcpy(d, n - 1, src.data(), n, kind), ACL_SUCCESS) << "kind " << int(kind);
    EXPECT_FALSE(ErrMsg().empty()) << "kind " << int(kind);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<uint8_t*>(d)[i], 0x77) << "kind " << int(kind) << " byte " << i;
    aclrtFree(d);
  }
}

TEST(Runtime, MemcpyBadArguments) {
  uint8_t a[16] = {}, b[16] = {};
  EXPECT_NE(aclrtMemcpy(nullptr, 16, a, 16, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_NE(aclrtMemcpy(b, 16, nullptr, 16, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_NE(aclrtMemcpy(b, 16, a, 16, static_cast<aclrtMemcpyKind>(99)), ACL_SUCCESS);
}

TEST(Runtime, MemcpyAsyncThenSynchronize) {
  aclrtStream st = nullptr;
  ASSERT_EQ(aclrtCreateStream(&st), ACL_SUCCESS);
  const size_t n = 4096;
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const auto src = Pattern(n, 3);
  std::vector<uint8_t> back(n, 0);
  EXPECT_EQ(aclrtMemcpyAsync(d, n, src.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, st), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpyAsync(back.data(), n, d, n, ACL_MEMCPY_DEVICE_TO_HOST, st), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(st), ACL_SUCCESS);
  EXPECT_EQ(back, src);
  aclrtFree(d);
  EXPECT_EQ(aclrtDestroyStream(st), ACL_SUCCESS);
}

TEST(Runtime, Memset) {
  const size_t n = 200;
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  auto* p = static_cast<uint8_t*>(d);
  std::memset(p, 0, n);
  EXPECT_EQ(aclrtMemset(d, n, 0x5A, 100), ACL_SUCCESS);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(p[i], 0x5A) << i;
  for (size_t i = 100; i < n; ++i) ASSERT_EQ(p[i], 0) << i;
  EXPECT_EQ(aclrtMemset(d, n, 0x1234, n), ACL_SUCCESS);  // value is taken as a byte
  EXPECT_EQ(p[0], 0x34);
  EXPECT_EQ(p[n - 1], 0x34);
  // count > maxCount -> error, nothing written
  std::memset(p, 0, n);
  EXPECT_NE(aclrtMemset(d, 50, 0x11, 51), ACL_SUCCESS);
  EXPECT_FALSE(ErrMsg().empty());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 0) << i;
  EXPECT_NE(aclrtMemset(nullptr, 10, 0, 10), ACL_SUCCESS);
  aclrtFree(d);
}

TEST(Runtime, DataTypeSize) {
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_DT_UNDEFINED), 0u);
}

TEST(Runtime, TensorGetters) {
  const int64_t d[3] = {2, 3, 4}, st[3] = {1, 2, 6}, sd[1] = {30};
  float buf[30] = {};
  aclTensor* t = aclCreateTensor(d, 3, ACL_BF16, st, 5, ACL_FORMAT_ND, sd, 1, buf);
  ASSERT_NE(t, nullptr) << ErrMsg();
  int64_t* v = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewShape(t, &v, &n), 0);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), (std::vector<int64_t>{2, 3, 4}));
  delete[] v;  // CANN: the caller frees the array
  ASSERT_EQ(aclGetViewStrides(t, &v, &n), 0);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), (std::vector<int64_t>{1, 2, 6}));
  delete[] v;
  ASSERT_EQ(aclGetStorageShape(t, &v, &n), 0);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), (std::vector<int64_t>{30}));
  delete[] v;
  int64_t off = 0;
  EXPECT_EQ(aclGetViewOffset(t, &off), 0);
  EXPECT_EQ(off, 5);
  aclDataType dt = ACL_DT_UNDEFINED;
  EXPECT_EQ(aclGetDataType(t, &dt), 0);
  EXPECT_EQ(dt, ACL_BF16);
  EXPECT_NE(aclGetViewShape(nullptr, &v, &n), 0);
  EXPECT_NE(aclGetDataType(t, nullptr), 0);
  EXPECT_EQ(aclDestroyTensor(t), 0);
}

TEST(Runtime, RecentErrMsgNeverNull) {
  EXPECT_NE(aclGetRecentErrMsg(), nullptr);
  (void)aclrtMemset(nullptr, 1, 0, 1);
  ASSERT_NE(aclGetRecentErrMsg(), nullptr);
  EXPECT_GT(std::strlen(aclGetRecentErrMsg()), 0u);
}

// Operands in aclrtMalloc memory, as a sample has them.
TEST(Runtime, OpOnDeviceMemory) {
  const int64_t n = 257;
  const size_t bytes = size_t(n) * 4;
  void *dg = nullptr, *dx = nullptr, *dout = nullptr;
  ASSERT_EQ(aclrtMalloc(&dg, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&dx, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&dout, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<float> g(n), x(n), out(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = 1.0f + float(i % 5);
    x[i] = -4.0f + 8.0f * float(i) / float(n);
  }
  ASSERT_EQ(aclrtMemcpy(dg, bytes, g.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(dx, bytes, x.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  const int64_t dims[1] = {n}, strides[1] = {1};
  aclTensor* tg = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, dg);
  aclTensor* tx = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, dx);
  aclTensor* to = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, dout);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(aclnnHardswishBackwardGetWorkspaceSize(tg, tx, to, &ws, &ex), ACLNN_SUCCESS) << ErrMsg();
  void* w = nullptr;
  if (ws) {
    ASSERT_EQ(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  }
  ASSERT_EQ(aclnnHardswishBackward(w, ws, ex, AclEnv::stream()), ACLNN_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(out.data(), bytes, dout, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(out[i], actgrad::ref::HardswishBwd(g[i], x[i]), 1e-5 * std::max(1.0f, std::fabs(g[i]))) << i;
  aclDestroyTensor(tg);
  aclDestroyTensor(tx);
  aclDestroyTensor(to);
  if (w) aclrtFree(w);
  aclrtFree(dg);
  aclrtFree(dx);
  aclrtFree(dout);
}

}  // namespace
}  // namespace apitest
