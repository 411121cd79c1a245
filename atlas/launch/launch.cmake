# Our stand-in for the launch wrappers CANN's ascendc_library generates (used
# when ACTGRAD_ATLAS_CANN is OFF; with it ON, cann/cann_kernels.cmake gives
# CANN's and these are not on any include path). For each kernel source
# <kernel>.cpp with the entry point
#   extern "C" __global__ __aicore__ void <kernel>(GM_ADDR a, GM_ADDR b, ...)
# it writes, into the build tree,
#   launch/include/aclrtlaunch_<kernel>.h: ACLRT_LAUNCH_KERNEL and
#     uint32_t aclrtlaunch_<kernel>(uint32_t blockDim, aclrtStream stream, void* a, void* b, ...)
#   launch/aclrtlaunch_<kernel>.cc: its definition, which runs the kernel on
#     the emulator as a task of the stream (emu_launch.h).
# The parameters are read from the kernel source, as CANN's generator reads
# them, so the wrapper's argument order is the kernel's own.
#
# atlas_emu_launch_library(<target> <kernel sources>...): on the project's
# runtime (actgrad_acl_cpu: streams, contexts, deferred errors).
function(atlas_emu_launch_library target)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/launch)
  set(sources ${ATLAS_DIR}/launch/emu_launch.cc)
  foreach(src ${ARGN})
    get_filename_component(kernel ${src} NAME_WE)
    file(RELATIVE_PATH KERNEL_SOURCE ${PROJECT_SOURCE_DIR} ${src})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    file(READ ${src} text)
    if(NOT text MATCHES "extern \"C\" __global__ __aicore__ void ${kernel}\\(([^)]*)\\)")
      message(FATAL_ERROR "${src}: no entry point 'extern \"C\" __global__ __aicore__ void ${kernel}(...)' "
                          "(a kernel source's entry point is named after its file)")
    endif()
    string(REGEX REPLACE "[ \t\r\n]+" " " params "${CMAKE_MATCH_1}")
    string(REPLACE "," ";" params "${params}")
    set(launch_params)
    set(entry_params)
    set(gm_args)
    set(call_args)
    set(name "")
    foreach(p ${params})
      string(STRIP "${p}" p)
      if(NOT p MATCHES "^GM_ADDR ([A-Za-z_][A-Za-z0-9_]*)$")
        message(FATAL_ERROR "${src}: parameter '${p}' of ${kernel} is not 'GM_ADDR <name>': "
                            "the emulator's launch wrappers pass GM addresses only")
      endif()
      set(name ${CMAKE_MATCH_1})
      list(APPEND launch_params "void* ${name}")
      list(APPEND entry_params "uint8_t* ${name}")
      list(APPEND gm_args "{\"${name}\", ${name}}")
      list(APPEND call_args "static_cast<uint8_t*>(${name})")
    endforeach()
    if(NOT name STREQUAL "tiling")
      message(FATAL_ERROR "${src}: the last parameter of ${kernel} is '${name}', not 'tiling': "
                          "the emulator sizes a launch's GM from the tiling data")
    endif()
    list(JOIN launch_params ", " LAUNCH_PARAMS)
    list(JOIN entry_params ", " ENTRY_PARAMS)
    list(JOIN gm_args ", " GM_ARGS)
    list(JOIN call_args ", " CALL_ARGS)
    set(KERNEL ${kernel})
    string(TOUPPER ${kernel} KERNEL_UPPER)
    configure_file(${ATLAS_DIR}/launch/aclrtlaunch.h.in ${dir}/include/aclrtlaunch_${kernel}.h @ONLY)
    configure_file(${ATLAS_DIR}/launch/aclrtlaunch.cc.in ${dir}/aclrtlaunch_${kernel}.cc @ONLY)
    list(APPEND sources ${dir}/aclrtlaunch_${kernel}.cc)
  endforeach()
  add_library(${target} STATIC ${sources})
  target_include_directories(${target} PUBLIC ${dir}/include PRIVATE ${ATLAS_DIR}/launch)
  # The runtime's stream checks and deferred errors (runtime/stream.h, error.h).
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC actgrad_acl_cpu PRIVATE actgrad_atlas_kernels actgrad_atlas_emu)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()
