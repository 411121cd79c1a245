# (included by tests/kernels/CMakeLists.txt) Tests of the hand-written
# AVX512-FP16 / AVX512_BF16 variants (kernels/variants/native), as the library
# compiled them (kernels/CMakeLists.txt sets ACTGRAD_HAVE_NATIVE_VARIANTS when
# the compiler has the flags): ctest names native.*.
if(ACTGRAD_HAVE_NATIVE_VARIANTS)
  add_executable(actgrad_native_test native_test.cc)
  target_link_libraries(actgrad_native_test PRIVATE actgrad_internal GTest::gtest GTest::gtest_main)
  gtest_discover_tests(actgrad_native_test TEST_PREFIX "native." DISCOVERY_TIMEOUT 120)
endif()
