// aclInit / aclrtSetDevice / ... / aclrtResetDevice / aclFinalize, in a
// process of its own (no global environment), as one sequence.
#include "api_test_util.h"

namespace apitest {
namespace {

bool RunTinyOp(aclrtStream stream) {
  Tensor g(DType::kF32, {16}), x(DType::kF32, {16}), o(DType::kF32, {16});
  g.FillFn([](int64_t) { return 1.0; });
  x.FillFn([](int64_t i) { return double(i) - 8.0; });
  const RunResult r = RunOp(Spec(Op::kHardswishBwd), g, x, o, stream);
  return r.ok() && Passes(Check(Spec(Op::kHardswishBwd), g, x, o));
}

TEST(Lifecycle, InitDeviceStreamFinalize) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << ErrMsg();
  const aclError again = aclInit(nullptr);
  EXPECT_TRUE(again == ACL_SUCCESS || again == ACL_ERROR_REPEAT_INITIALIZE) << again;
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << ErrMsg();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  EXPECT_TRUE(RunTinyOp(stream));
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  (void)aclFinalize();  // a second finalize: any status, no crash
}

TEST(Lifecycle, ConfigPathIsAccepted) {
  // CANN samples pass nullptr; an empty JSON config file must also do.
  const char* path = "actgrad_lifecycle_acl.json";
  FILE* f = std::fopen(path, "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{}\n", f);
  std::fclose(f);
  const aclError st = aclInit(path);
  EXPECT_TRUE(st == ACL_SUCCESS || st == ACL_ERROR_REPEAT_INITIALIZE) << st << " " << ErrMsg();
  std::remove(path);
  if (st == ACL_SUCCESS) {
    EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_TRUE(RunTinyOp(nullptr));
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  }
}

}  // namespace
}  // namespace apitest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
