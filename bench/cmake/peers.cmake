# The peers the benchmarks measure against, one set per build directory
# (two oneDNN libraries in one process would resolve each other's symbols):
#   ACTGRAD_PEERS=pypi    (default) PyTorch 2.x and oneDNN 3.x from PyPI, in the
#                         environment scripts/setup-peers makes (ACTGRAD_PEERS_ENV)
#   ACTGRAD_PEERS=debian  Debian's libtorch 1.13 and oneDNN 2.6 (scripts/setup-deps --bench)
#   ACTGRAD_PEERS=off     none
# Defines the targets actgrad_peer_torch / actgrad_peer_dnnl (object code of
# one peer each, with its own include directories: the torch wheel bundles its
# own oneDNN headers) and lists them in ACTGRAD_PEER_TARGETS.
set(ACTGRAD_PEERS "pypi" CACHE STRING "Peers of the benchmarks: pypi, debian or off")
set_property(CACHE ACTGRAD_PEERS PROPERTY STRINGS pypi debian off)
set(ACTGRAD_PEERS_ENV "${PROJECT_SOURCE_DIR}/.venv-peers" CACHE PATH
    "The Python environment of scripts/setup-peers (ACTGRAD_PEERS=pypi)")
set(ACTGRAD_PEER_TARGETS "")

function(_actgrad_peer_target name source)
  add_library(${name} STATIC ${source})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_SOURCE_DIR}/kernels)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(ACTGRAD_PEER_TARGETS ${ACTGRAD_PEER_TARGETS} ${name} PARENT_SCOPE)
endfunction()

# PyTorch from the PyPI wheel: only libtorch_cpu and libc10 (libtorch.so pulls
# in CUDA). libtorch_cpu.so finds its CUDA runtime through its own RPATH.
function(_actgrad_pypi_torch site)
  set(t "${site}/torch")
  find_library(ACTGRAD_PEER_TORCH_CPU torch_cpu PATHS "${t}/lib" NO_DEFAULT_PATH)
  find_library(ACTGRAD_PEER_C10 c10 PATHS "${t}/lib" NO_DEFAULT_PATH)
  if(NOT EXISTS "${t}/include/ATen/ATen.h" OR NOT ACTGRAD_PEER_TORCH_CPU OR NOT ACTGRAD_PEER_C10)
    message(STATUS "actgrad bench: PyTorch peer OFF (no torch wheel in ${ACTGRAD_PEERS_ENV}: run scripts/setup-peers)")
    return()
  endif()
  _actgrad_peer_target(actgrad_peer_torch peers/torch_peer.cc)
  target_include_directories(actgrad_peer_torch SYSTEM PRIVATE "${t}/include" "${t}/include/torch/csrc/api/include")
  target_compile_definitions(actgrad_peer_torch PUBLIC ACTGRAD_HAVE_TORCH=1)
  # The wheel bundles its own libgomp.so.1 beside libtorch_cpu.so. A
  # directory holding only a link to the compiler's comes first in the
  # programs' search path, so that our code and the peers share the OpenMP
  # runtime this compiler built ours with (the system's library directory
  # itself would also put a Debian libtorch, when installed, before the wheel's).
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libgomp.so.1 OUTPUT_VARIABLE _gomp
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(IS_ABSOLUTE "${_gomp}" AND EXISTS "${_gomp}")
    file(REAL_PATH "${_gomp}" _gomp)
    set(_gomp_dir "${CMAKE_BINARY_DIR}/peer-openmp")
    file(MAKE_DIRECTORY "${_gomp_dir}")
    file(CREATE_LINK "${_gomp}" "${_gomp_dir}/libgomp.so.1" SYMBOLIC)
    target_link_options(actgrad_peer_torch INTERFACE "LINKER:-rpath,${_gomp_dir}")
  endif()
  # By name, not by path: CMake would put the wheel's directory first in the
  # search path (and warn that it hides the compiler's libgomp).
  target_link_options(actgrad_peer_torch INTERFACE "LINKER:-rpath,${t}/lib" "-L${t}/lib")
  target_link_libraries(actgrad_peer_torch PUBLIC torch_cpu c10)
  message(STATUS "actgrad bench: PyTorch peer ON (PyPI wheel in ${t})")
  set(ACTGRAD_PEER_TARGETS ${ACTGRAD_PEER_TARGETS} PARENT_SCOPE)
endfunction()

# oneDNN from PyPI: a SYCL build threaded by TBB. Its libraries carry no
# RPATH, so the programs get an old-style DT_RPATH (--disable-new-dtags),
# which also applies to libdnnl's own dependencies (TBB, the SYCL runtime).
function(_actgrad_pypi_dnnl env)
  find_library(ACTGRAD_PEER_DNNL dnnl PATHS "${env}/lib" NO_DEFAULT_PATH)
  find_file(ACTGRAD_PEER_OPENCL_RT libintelocl.so PATHS "${env}/lib" NO_DEFAULT_PATH)
  if(NOT EXISTS "${env}/include/oneapi/dnnl/dnnl.hpp" OR NOT ACTGRAD_PEER_DNNL OR NOT ACTGRAD_PEER_OPENCL_RT)
    message(STATUS "actgrad bench: oneDNN peer OFF (no onednn wheel in ${env}: run scripts/setup-peers)")
    return()
  endif()
  _actgrad_peer_target(actgrad_peer_dnnl peers/dnnl_peer.cc)
  target_include_directories(actgrad_peer_dnnl SYSTEM BEFORE PRIVATE "${env}/include")
  target_compile_definitions(actgrad_peer_dnnl PUBLIC ACTGRAD_HAVE_DNNL=1
                             PRIVATE ACTGRAD_DNNL_OPENCL_CPU_RUNTIME="${ACTGRAD_PEER_OPENCL_RT}")
  target_link_libraries(actgrad_peer_dnnl PUBLIC ${ACTGRAD_PEER_DNNL})
  target_link_options(actgrad_peer_dnnl INTERFACE "LINKER:--disable-new-dtags,-rpath,${env}/lib")
  message(STATUS "actgrad bench: oneDNN peer ON (PyPI wheel in ${env})")
  set(ACTGRAD_PEER_TARGETS ${ACTGRAD_PEER_TARGETS} PARENT_SCOPE)
endfunction()

function(_actgrad_debian_peers)
  find_package(Torch QUIET)
  if(Torch_FOUND OR TORCH_FOUND)
    _actgrad_peer_target(actgrad_peer_torch peers/torch_peer.cc)
    target_compile_definitions(actgrad_peer_torch PUBLIC ACTGRAD_HAVE_TORCH=1)
    target_link_libraries(actgrad_peer_torch PUBLIC torch)
    message(STATUS "actgrad bench: PyTorch peer ON (libtorch in ${TORCH_INSTALL_PREFIX})")
  else()
    message(STATUS "actgrad bench: PyTorch peer OFF (Debian: apt install libtorch-dev)")
  endif()
  # Debian's dnnl-config.cmake requires the OpenCL development files
  # (oneDNN built with the OpenCL GPU runtime): check before find_package.
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND)
    find_package(dnnl QUIET)
  endif()
  if(dnnl_FOUND)
    _actgrad_peer_target(actgrad_peer_dnnl peers/dnnl_peer.cc)
    target_compile_definitions(actgrad_peer_dnnl PUBLIC ACTGRAD_HAVE_DNNL=1)
    target_link_libraries(actgrad_peer_dnnl PUBLIC DNNL::dnnl OpenMP::OpenMP_CXX)
    message(STATUS "actgrad bench: oneDNN peer ON (dnnl ${dnnl_VERSION})")
  else()
    message(STATUS "actgrad bench: oneDNN peer OFF (Debian: apt install libdnnl-dev ocl-icd-opencl-dev)")
  endif()
  set(ACTGRAD_PEER_TARGETS ${ACTGRAD_PEER_TARGETS} PARENT_SCOPE)
endfunction()

if(CMAKE_CROSSCOMPILING AND NOT ACTGRAD_PEERS STREQUAL "off")
  message(STATUS "actgrad bench: peers OFF (cross-compiling)")
elseif(ACTGRAD_PEERS STREQUAL "pypi")
  # The find_* results are cached (ACTGRAD_PEER_*): a NOTFOUND one is looked
  # for again at the next configure, and scripts/bench configures again when
  # it sees one.
  file(GLOB _sites "${ACTGRAD_PEERS_ENV}/lib/python3*/site-packages")
  list(SORT _sites)
  set(_site "${ACTGRAD_PEERS_ENV}/lib/python3/site-packages")
  if(_sites)
    list(POP_BACK _sites _site)
  endif()
  _actgrad_pypi_torch("${_site}")
  _actgrad_pypi_dnnl("${ACTGRAD_PEERS_ENV}")
elseif(ACTGRAD_PEERS STREQUAL "debian")
  _actgrad_debian_peers()
elseif(ACTGRAD_PEERS STREQUAL "off")
  message(STATUS "actgrad bench: peers OFF (ACTGRAD_PEERS=off)")
else()
  message(FATAL_ERROR "ACTGRAD_PEERS='${ACTGRAD_PEERS}': expected pypi, debian or off")
endif()
