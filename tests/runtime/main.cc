// Entry point of actgrad_api_test: one aclInit / device / stream per process.
#include "api_test_util.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new apitest::AclEnv);
  return RUN_ALL_TESTS();
}
