# Tests of the device path on the emulator (a build without CANN): the
# aclrtlaunch_* wrappers on the project's runtime.
if(ACTGRAD_ATLAS_CANN)
  return()
endif()
add_executable(actgrad_atlas_device_tests tests/test_launch.cc)
target_link_libraries(actgrad_atlas_device_tests PRIVATE actgrad_atlas_launch actgrad_atlas_host actgrad_inputs
                      actgrad_acl_cpu GTest::gtest_main)
gtest_discover_tests(actgrad_atlas_device_tests TEST_PREFIX "atlas." DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 300)
