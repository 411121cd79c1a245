# tiling.Machine.*: the machine identity (tiling/machine.cc) against
# /proc/cpuinfo. Its own target, included from CMakeLists.txt.
add_executable(actgrad_machine_test ${CMAKE_CURRENT_LIST_DIR}/machine_test.cc)
target_link_libraries(actgrad_machine_test PRIVATE actgrad_internal GTest::gtest_main)
gtest_discover_tests(actgrad_machine_test TEST_PREFIX "tiling." DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 30)
