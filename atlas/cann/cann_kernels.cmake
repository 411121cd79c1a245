# -DACTGRAD_ATLAS_CANN=ON (needs a CANN toolkit; no machine of this project
# has one, so this file has not run): the same AscendC sources built with
# CANN's toolchain (ascendc_library from
# ${ASCEND_HOME_PATH}/compiler/tikcpp/ascendc_kernel_cmake). The target
# carries the aclrtlaunch_<kernel>.h headers ascendc_library generates; the
# device backend (tune/atlas_device.cmake) includes them from it and links
# libascendcl. The emulator's stand-ins (launch/launch.cmake) are not built.
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
  ${ATLAS_KERNEL_SOURCES})
ascendc_include_directories(actgrad_atlas_device_kernels PRIVATE ${ATLAS_DIR}/include ${ATLAS_DIR}/kernels)
