# install.find_package: install the build tree into a fresh prefix, configure
# and build tests/install/consumer against it with CMAKE_PREFIX_PATH, run the
# programs and check their output. Inputs (-D): BUILD_DIR, WORK_DIR,
# CONSUMER_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE, STATIC (ON/OFF), CHECK,
# EXPECTED, optional KEEP (leave WORK_DIR behind).
cmake_minimum_required(VERSION 3.20)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message("${out}")
    message("${err}")
    if(NOT KEEP)
      file(REMOVE_RECURSE "${WORK_DIR}")
    endif()
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

set(config_arg)
if(BUILD_TYPE)
  set(config_arg --config ${BUILD_TYPE})
endif()
run("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}" ${config_arg})

foreach(h acl/acl.h acl/acl_base.h acl/acl_rt.h acl/error_codes/rt_error_codes.h aclnn/acl_meta.h aclnn/aclnn_base.h
          aclnnop/aclnn_selu_backward.h aclnnop/aclnn_hardswish_backward.h aclnnop/aclnn_gelu_backward.h
          aclnnop/aclnn_softshrink_backward.h aclnnop/aclnn_logit_grad.h)
  if(NOT EXISTS "${prefix}/include/${h}")
    message(FATAL_ERROR "installed tree lacks include/${h}")
  endif()
endforeach()
file(GLOB_RECURSE configs "${prefix}/*/actgradConfig.cmake" "${prefix}/*/actgrad-config.cmake")
if(NOT configs)
  message(FATAL_ERROR "installed tree has no actgradConfig.cmake")
endif()

set(gen_args)
if(GENERATOR)
  set(gen_args -G "${GENERATOR}")
endif()
run("configure the consumer" ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/build" ${gen_args}
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DEXPECT_PREFIX=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCONSUMER_STATIC=${STATIC}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
message("${run_out}")
run("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build" ${config_arg})

# Both programs print the results of aclnnGeluBackward on the same 8 inputs.
set(failed)
foreach(name consumer consumer_event_timing)
  file(GLOB_RECURSE exe "${WORK_DIR}/build/${name}" "${WORK_DIR}/build/*/${name}")
  list(GET exe 0 exe)
  execute_process(COMMAND "${exe}" COMMAND "${CHECK}" "${EXPECTED}"
    RESULTS_VARIABLE rcs OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  message("${name}:\n${out}")
  if(err)
    message("${err}")
  endif()
  list(GET rcs 0 prog_rc)
  list(GET rcs 1 check_rc)
  if(NOT prog_rc STREQUAL "0" OR NOT check_rc STREQUAL "0")
    list(APPEND failed "${name} (exit ${prog_rc}, check ${check_rc})")
  endif()
endforeach()
if(NOT KEEP)
  file(REMOVE_RECURSE "${WORK_DIR}")
endif()
if(failed)
  message(FATAL_ERROR "installed-package programs failed: ${failed}")
endif()
message("install test passed (${STATIC})")
