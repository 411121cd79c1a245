# Tests of the device path on the emulator (a build without CANN): the
# aclrtlaunch_* wrappers, the atlas-device backend, a tune through it, and
# that the device library's graph holds no CPU copy of an ACL function besides
# actgrad_acl_cpu (what the CANN build replaces with libascendcl).
if(ACTGRAD_ATLAS_CANN)
  return()
endif()
add_executable(actgrad_atlas_device_tests tests/test_launch.cc tests/test_device_backend.cc)
target_link_libraries(actgrad_atlas_device_tests PRIVATE actgrad_atlas_device actgrad_atlas_launch actgrad_atlas_host
                      actgrad_inputs actgrad_acl_cpu GTest::gtest_main)
target_compile_definitions(actgrad_atlas_device_tests PRIVATE ACTGRAD_ATLAS_SOC_DIR="${ATLAS_SOC_DIR}")
gtest_discover_tests(actgrad_atlas_device_tests TEST_PREFIX "atlas." DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 300)

# actgrad-tune --backend atlas-device: a small tune on the emulator, its
# table labelled as emulator times and refused by the table generator.
add_test(NAME atlas.cli.actgrad_tune_atlas_device
  COMMAND ${CMAKE_COMMAND} -DTUNE=$<TARGET_FILE:actgrad-tune> -DGEN=$<TARGET_FILE:actgrad-atlas-gentable>
          -DSOC=${ATLAS_SOC_DIR}/ascend910b.json -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cli_tune_device
          -P ${ATLAS_DIR}/tests/cli_tune_device.cmake)
set_tests_properties(atlas.cli.actgrad_tune_atlas_device PROPERTIES TIMEOUT 120)

# The static libraries actgrad_atlas_device links, but for the two the CANN
# build replaces (actgrad_acl_cpu by libascendcl, actgrad_atlas_launch by
# ascendc_library's wrappers), and what reaches it only through them.
function(atlas_collect_archives target out)
  set(found ${${out}})
  get_target_property(type ${target} TYPE)
  set(deps)
  foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    if(type STREQUAL "INTERFACE_LIBRARY" AND prop STREQUAL "LINK_LIBRARIES")
      continue()
    endif()
    get_target_property(d ${target} ${prop})
    if(d)
      list(APPEND deps ${d})
    endif()
  endforeach()
  foreach(d ${deps})
    string(REGEX REPLACE "^\\$<(BUILD_INTERFACE|LINK_ONLY):(.*)>$" "\\2" d "${d}")
    if(NOT TARGET ${d} OR d IN_LIST found OR d STREQUAL "actgrad_acl_cpu" OR d STREQUAL "actgrad_atlas_launch")
      continue()
    endif()
    get_target_property(imported ${d} IMPORTED)
    get_target_property(aliased ${d} ALIASED_TARGET)
    if(imported OR aliased)
      continue()
    endif()
    list(APPEND found ${d})
    atlas_collect_archives(${d} found)
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
set(atlas_device_graph actgrad_atlas_device)
atlas_collect_archives(actgrad_atlas_device atlas_device_graph)
set(atlas_archives)
foreach(t ${atlas_device_graph})
  get_target_property(type ${t} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    list(APPEND atlas_archives "$<TARGET_FILE:${t}>")
  endif()
endforeach()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/atlas_device_archives.txt
  CONTENT "$<JOIN:${atlas_archives},\n>\n")
add_test(NAME atlas.device.cann_link_has_no_cpu_acl
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DACL_CPU=$<TARGET_FILE:actgrad_acl_cpu>
          -DLIST=${CMAKE_CURRENT_BINARY_DIR}/atlas_device_archives.txt -P ${ATLAS_DIR}/tests/acl_free_deps.cmake)
# ... and the check sees a CPU copy where there is one: libactgrad (which
# holds actgrad_acl_cpu's objects) in that list fails it.
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/atlas_device_archives_bad.txt
  CONTENT "$<JOIN:${atlas_archives};$<TARGET_FILE:actgrad_static>,\n>\n")
add_test(NAME atlas.device.cann_link_check_sees_cpu_acl
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DACL_CPU=$<TARGET_FILE:actgrad_acl_cpu>
          -DLIST=${CMAKE_CURRENT_BINARY_DIR}/atlas_device_archives_bad.txt -P ${ATLAS_DIR}/tests/acl_free_deps.cmake)
set_tests_properties(atlas.device.cann_link_check_sees_cpu_acl PROPERTIES
  PASS_REGULAR_EXPRESSION "outside actgrad_acl_cpu.*libactgrad\\.a:acl_[a-z_]+\\.cc\\.o:[0-9a-f]+ T acl")
