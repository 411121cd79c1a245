# ctest atlas.device.cann_link_has_no_cpu_acl: with -DACTGRAD_ATLAS_CANN=ON
# actgrad_atlas_device links libascendcl instead of actgrad_acl_cpu (and
# ascendc_library's launch wrappers instead of actgrad_atlas_launch). The
# rest of its graph is the same in both builds, so checking it here checks the
# CANN link: none of these archives may define a function actgrad_acl_cpu
# defines (the project's CPU copies of libascendcl's functions) nor any
# aclrt* function, or a CANN program would run the CPU copy.
#   -DNM=nm -DACL_CPU=libactgrad_acl_cpu.a -DLIST=<file: one archive a line>
cmake_minimum_required(VERSION 3.25)
function(defined_symbols archive out)
  execute_process(COMMAND ${NM} -A -g --defined-only ${archive} RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${archive} failed: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

defined_symbols(${ACL_CPU} lines)
set(acl_cpu)
foreach(l ${lines})
  if(l MATCHES " [TDBRW] (acl[A-Za-z0-9_]*)$")
    list(APPEND acl_cpu ${CMAKE_MATCH_1})
  endif()
endforeach()
foreach(must aclInit aclrtMalloc aclrtCreateEvent aclGetRecentErrMsg)
  if(NOT must IN_LIST acl_cpu)
    message(FATAL_ERROR "${ACL_CPU} does not define ${must}: the check would check nothing")
  endif()
endforeach()
list(LENGTH acl_cpu n_acl)

file(STRINGS ${LIST} archives)
list(LENGTH archives n_archives)
if(n_archives LESS 3)
  message(FATAL_ERROR "only ${n_archives} archives in ${LIST}: the walk of actgrad_atlas_device's graph failed")
endif()
set(bad)
foreach(a ${archives})
  defined_symbols(${a} lines)
  foreach(l ${lines})
    if(l MATCHES " [TDBRWV] (acl[A-Za-z0-9_]*)$")
      set(sym ${CMAKE_MATCH_1})
      if(sym IN_LIST acl_cpu OR sym MATCHES "^aclrt")
        list(APPEND bad "${l}")
      endif()
    endif()
  endforeach()
endforeach()
if(bad)
  string(REPLACE ";" "\n  " bad "${bad}")
  message(FATAL_ERROR "CPU copies of ACL functions outside actgrad_acl_cpu, in actgrad_atlas_device's graph:\n  ${bad}")
endif()
string(REPLACE ";" "\n  " shown "${archives}")
message("no archive of actgrad_atlas_device's graph defines any of the ${n_acl} ACL functions of ${ACL_CPU} "
        "nor an aclrt* function:\n  ${shown}")
