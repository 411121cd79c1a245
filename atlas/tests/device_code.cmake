# Device-code rules: what g++ and the emulator accept in an AscendC kernel
# and CANN's device compiler (bisheng) does not. Included from
# atlas/CMakeLists.txt inside if(ACTGRAD_BUILD_TESTS), after actgrad_atlas_tests.
#
# The kernels are compiled once more, for the check only: -O0 (nothing folded
# or inlined away, so a read of namespace-scope data stays a load from its
# symbol and every call a relocation; GCC 12 at -O2 folds some constant-table
# loops and keeps others, which would make the verdict the optimiser's),
# one section per function and per variable (each function's calls are its
# section's relocations), GCC's unused static constants dropped (-O0 would
# otherwise emit every constexpr scalar), no sanitizer instrumentation.
# device_code_check.py reads the objects with objdump.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(ATLAS_DEVICE_CHECK_FLAGS -O0 -ffunction-sections -fdata-sections -fno-sanitize=all
    $<$<CXX_COMPILER_ID:GNU>:-ftoplevel-reorder> $<$<CXX_COMPILER_ID:GNU>:-fno-keep-static-consts>)
set(ATLAS_DEVICE_CHECK ${ATLAS_DIR}/tests/device_code_check.py)

get_target_property(ATLAS_DEVICE_CODE_SOURCES actgrad_atlas_kernels SOURCES)
list(TRANSFORM ATLAS_DEVICE_CODE_SOURCES PREPEND ${ATLAS_DIR}/)
add_library(actgrad_atlas_device_code OBJECT ${ATLAS_DEVICE_CODE_SOURCES})
target_include_directories(actgrad_atlas_device_code PRIVATE ${ATLAS_DIR}/kernels)
target_link_libraries(actgrad_atlas_device_code PRIVATE actgrad_atlas_emu)
target_compile_options(actgrad_atlas_device_code PRIVATE ${ATLAS_EMU_FLAGS} ${ATLAS_DEVICE_CHECK_FLAGS})

# One deliberately bad kernel per construct (tests/device_bad/), and the rule
# that must reject it.
set(ATLAS_BAD_KERNELS
  namespace_table:data static_local:data virtual_policy:data
  std_call:host-call heap:host-call throw:host-call printf:host-call libm:host-call
  recursion:recursion double_scalar:double)
set(ATLAS_BAD_SOURCES)
foreach(bad ${ATLAS_BAD_KERNELS})
  string(REGEX REPLACE ":.*" "" name ${bad})
  list(APPEND ATLAS_BAD_SOURCES ${ATLAS_DIR}/tests/device_bad/${name}.cpp)
endforeach()
add_library(actgrad_atlas_device_bad OBJECT ${ATLAS_BAD_SOURCES})
target_link_libraries(actgrad_atlas_device_bad PRIVATE actgrad_atlas_emu)
target_compile_options(actgrad_atlas_device_bad PRIVATE ${ATLAS_EMU_FLAGS} ${ATLAS_DEVICE_CHECK_FLAGS})
# The check reads one object per kernel (no unity build).
set_target_properties(actgrad_atlas_device_code actgrad_atlas_device_bad PROPERTIES UNITY_BUILD OFF)
add_dependencies(actgrad_atlas_tests actgrad_atlas_device_code actgrad_atlas_device_bad)

add_test(NAME atlas.device_code.kernels_pass
  COMMAND Python3::Interpreter ${ATLAS_DEVICE_CHECK} --objdump ${CMAKE_OBJDUMP}
          $<TARGET_OBJECTS:actgrad_atlas_device_code> COMMAND_EXPAND_LISTS)
foreach(bad ${ATLAS_BAD_KERNELS})
  string(REGEX REPLACE ":.*" "" name ${bad})
  string(REGEX REPLACE ".*:" "" rule ${bad})
  add_test(NAME atlas.device_code.rejects_${name}
    COMMAND Python3::Interpreter ${ATLAS_DEVICE_CHECK} --objdump ${CMAKE_OBJDUMP} --expect ${rule}
            "$<FILTER:$<TARGET_OBJECTS:actgrad_atlas_device_bad>,INCLUDE,/${name}[.]cpp[.]o(bj)?$>")
endforeach()

# The emulator's compile-time rejections: tests/device_bad/vector_types.cpp
# with -DBAD=n must fail with the static_assert's own message; BAD=0 compiles.
set(ATLAS_SYNTAX_ONLY ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -I${ATLAS_DIR}/emu -I${ATLAS_DIR}/include
    ${ATLAS_DIR}/tests/device_bad/vector_types.cpp)
add_test(NAME atlas.device_code.vector_types_control COMMAND ${ATLAS_SYNTAX_ONLY} -DBAD=0)
add_test(NAME atlas.device_code.rejects_vector_double COMMAND ${ATLAS_SYNTAX_ONLY} -DBAD=1)
add_test(NAME atlas.device_code.rejects_duplicate_double COMMAND ${ATLAS_SYNTAX_ONLY} -DBAD=2)
add_test(NAME atlas.device_code.rejects_vector_bf16 COMMAND ${ATLAS_SYNTAX_ONLY} -DBAD=3)
set_tests_properties(atlas.device_code.rejects_vector_double atlas.device_code.rejects_vector_bf16 PROPERTIES
  PASS_REGULAR_EXPRESSION "no vector arithmetic on this element type on dav-c220")
set_tests_properties(atlas.device_code.rejects_duplicate_double PROPERTIES
  PASS_REGULAR_EXPRESSION "Duplicate on dav-c220 fills 16- and 32-bit elements only")
