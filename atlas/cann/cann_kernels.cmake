# UNTESTED: no CANN toolkit or Atlas device is reachable where this project is
# developed. Builds the same AscendC sources with CANN's toolchain
# (ascendc_library from ${ASCEND_HOME_PATH}/compiler/tikcpp/ascendc_kernel_cmake)
# and the ACL device backend that times them with ACL events.
if(NOT DEFINED ENV{ASCEND_HOME_PATH})
  message(FATAL_ERROR "ACTGRAD_ATLAS_CANN needs ASCEND_HOME_PATH (source set_env.sh of the CANN toolkit)")
endif()
set(ASCEND_HOME_PATH $ENV{ASCEND_HOME_PATH})
set(SOC_VERSION "Ascend910B2" CACHE STRING "CANN SOC_VERSION of the target device")
set(ASCEND_CANN_PACKAGE_PATH ${ASCEND_HOME_PATH})
set(ASCENDC_CMAKE_DIR ${ASCEND_HOME_PATH}/compiler/tikcpp/ascendc_kernel_cmake)
include(${ASCENDC_CMAKE_DIR}/ascendc.cmake)

# The kernels include "kernel_operator.h" (CANN's) and atlas_tiling_data.h.
ascendc_library(actgrad_atlas_device_kernels STATIC
  ${ATLAS_DIR}/kernels/selu_grad_custom.cpp
  ${ATLAS_DIR}/kernels/hardswish_grad_custom.cpp
  ${ATLAS_DIR}/kernels/gelu_grad_custom.cpp
  ${ATLAS_DIR}/kernels/softshrink_grad_custom.cpp
  ${ATLAS_DIR}/kernels/logit_grad_custom.cpp)
ascendc_include_directories(actgrad_atlas_device_kernels PRIVATE ${ATLAS_DIR}/include ${ATLAS_DIR}/kernels)

add_library(actgrad_atlas_device STATIC ${ATLAS_DIR}/tune/atlas_device_backend.cc)
target_include_directories(actgrad_atlas_device PUBLIC ${ASCEND_HOME_PATH}/include)
target_link_directories(actgrad_atlas_device PUBLIC ${ASCEND_HOME_PATH}/lib64)
target_link_libraries(actgrad_atlas_device PUBLIC actgrad_atlas actgrad_atlas_device_kernels ascendcl)
target_compile_definitions(actgrad_atlas_device PUBLIC ACTGRAD_HAVE_CANN=1)
