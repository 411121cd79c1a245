# actgrad_atlas_device: the "atlas-device" tuner backend (atlas_device_backend.cc)
# in its own library, built in every build, linked by actgrad-tune.
#  - ACTGRAD_ATLAS_CANN=OFF: against the project's runtime (the CPU copies of
#    the ACL functions, actgrad_acl_cpu) with the kernels run on the emulator
#    behind the launch (actgrad_atlas_launch, launch/launch.cmake).
#  - ACTGRAD_ATLAS_CANN=ON: against libascendcl and the kernels CANN's
#    ascendc_library built (cann/cann_kernels.cmake), whose aclrtlaunch_*
#    headers come with that target. The project's CPU ACL functions are not
#    linked: the rest of the graph (the same in both builds) defines none of
#    them, which the ctest atlas.device.cann_link_has_no_cpu_acl checks.
add_library(actgrad_atlas_device STATIC ${ATLAS_DIR}/tune/atlas_device_backend.cc)
target_link_libraries(actgrad_atlas_device PUBLIC actgrad_atlas PRIVATE actgrad_inputs actgrad_reference)
target_compile_options(actgrad_atlas_device PRIVATE -Wall -Wextra)
# One file, compiled as itself: AtlasDeviceBackend holds types of the file's
# anonymous namespace, which GCC flags (-Wsubobject-linkage) in a unity unit.
set_target_properties(actgrad_atlas_device PROPERTIES UNITY_BUILD OFF)
if(ACTGRAD_ATLAS_CANN)
  # CANN's acl/acl.h before the project's include/acl (on the path for actgrad/).
  target_include_directories(actgrad_atlas_device BEFORE PRIVATE ${ASCEND_HOME_PATH}/include)
  target_link_directories(actgrad_atlas_device PUBLIC ${ASCEND_HOME_PATH}/lib64)
  target_link_libraries(actgrad_atlas_device PRIVATE actgrad_atlas_device_kernels PUBLIC ascendcl)
  target_compile_definitions(actgrad_atlas_device PRIVATE ACTGRAD_HAVE_CANN=1)
else()
  target_link_libraries(actgrad_atlas_device PRIVATE actgrad_atlas_launch PUBLIC actgrad_acl_cpu)
endif()
