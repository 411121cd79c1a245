# libactgrad, shared and static, from the same objects; installed with a CMake
# package so find_package(actgrad) works in a user's project. It holds the
# project's CPU copies of the ACL runtime functions (actgrad_acl_cpu,
# runtime/CMakeLists.txt); the internal library below does not, so that a
# program linking CANN's libascendcl can link the tools and the Atlas module.
set(ACTGRAD_CORE_OBJECTS
  $<TARGET_OBJECTS:actgrad_variants>
  ${ACTGRAD_PREBUILT_KERNEL_OBJECTS}  # a sanitizer build's Release kernels (kernels/CMakeLists.txt)
  $<TARGET_OBJECTS:actgrad_runtime>
  $<TARGET_OBJECTS:actgrad_tables_core>
  $<TARGET_OBJECTS:actgrad_dispatch>)
set(ACTGRAD_OBJECTS ${ACTGRAD_CORE_OBJECTS} $<TARGET_OBJECTS:actgrad_acl_cpu_objects>)
add_library(actgrad SHARED ${ACTGRAD_OBJECTS})
add_library(actgrad_static STATIC ${ACTGRAD_OBJECTS})
add_library(actgrad::actgrad ALIAS actgrad)
add_library(actgrad::actgrad_static ALIAS actgrad_static)
# Everything but the ACL runtime functions (not installed).
add_library(actgrad_core STATIC ${ACTGRAD_CORE_OBJECTS})
foreach(lib actgrad actgrad_static actgrad_core)
  target_link_libraries(${lib} PUBLIC OpenMP::OpenMP_CXX PRIVATE hwy::hwy)
  if(SLEEF_LIBRARY)
    target_link_libraries(${lib} PRIVATE ${SLEEF_LIBRARY})
  endif()
  target_include_directories(${lib} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
set_target_properties(actgrad PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
set_target_properties(actgrad_static PROPERTIES OUTPUT_NAME actgrad)

# Internal link target for tests, tools, benchmarks and the Atlas module: the
# library without the ACL runtime functions plus the internal headers (variant
# list, dispatch, reference). A target that calls acl*/aclrt* functions links
# actgrad_acl_cpu too (or CANN's ascendcl); the ctest runtime.acl_split.*
# checks that nothing here defines them.
add_library(actgrad_internal INTERFACE)
target_link_libraries(actgrad_internal INTERFACE actgrad_core actgrad_reference hwy::hwy nlohmann_json::nlohmann_json)
target_include_directories(actgrad_internal INTERFACE
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/kernels ${PROJECT_SOURCE_DIR})

include(CMakePackageConfigHelpers)
install(TARGETS actgrad actgrad_static EXPORT actgradTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/acl include/aclnn include/aclnnop DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT actgradTargets NAMESPACE actgrad:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/actgrad)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/actgradConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/actgradConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/actgrad)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/actgradConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/actgradConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/actgradConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/actgrad)
