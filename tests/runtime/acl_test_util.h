// Helpers of the ACL runtime tests (acl_*_test.cc): the last error's code and
// message, and a fixture with the device set on the calling thread.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "acl/acl.h"

namespace acltest {

inline std::string ErrMsg() { return aclGetRecentErrMsg(); }

// The call failed with `code` and a message "[<code>] ..." that contains
// `part` (runtime/error.h). Use: EXPECT_ACL_ERROR(aclrtX(...), code, "part") << note;
inline ::testing::AssertionResult IsAclError(aclError got, int code, const std::string& part) {
  const std::string msg = ErrMsg();
  if (got != code) return ::testing::AssertionFailure() << "status " << got << ", expected " << code << " ('" << msg << "')";
  std::string prefix = "[";  // built in steps: GCC 12 warns (-Wrestrict) on "[" + std::to_string(code)
  prefix += std::to_string(code);
  prefix += "] ";
  if (msg.rfind(prefix, 0) != 0)
    return ::testing::AssertionFailure() << "message '" << msg << "' does not start with [" << code << "]";
  if (msg.find(part) == std::string::npos)
    return ::testing::AssertionFailure() << "message '" << msg << "' lacks '" << part << "'";
  return ::testing::AssertionSuccess();
}
#define EXPECT_ACL_ERROR(call, code, part) EXPECT_TRUE(::acltest::IsAclError((call), (code), (part))) << #call

// aclInit and aclrtSetDevice(0) on the test's thread; undone at the end (the
// tests leave the device's count as they found it).
class AclRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    const aclError st = aclInit(nullptr);
    ASSERT_TRUE(st == ACL_SUCCESS || st == ACL_ERROR_REPEAT_INITIALIZE) << ErrMsg();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << ErrMsg();
  }
  void TearDown() override { EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS); }
};

// A handle that is none of the runtime's objects.
inline void* Garbage() {
  static long not_an_object[4];
  return &not_an_object[1];
}

}  // namespace acltest
