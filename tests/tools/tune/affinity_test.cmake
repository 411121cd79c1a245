# Thread rules carry to more cores: tune the same cells under one
# core (taskset -c 0) and under two (taskset -c 0,1), then run both tables on
# two cores: at 16M elements the one-core table must use both cores where the
# two-core table does. Skips (exit 77) on a machine with one CPU or without
# taskset.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
find_program(TASKSET taskset)
cmake_host_system_information(RESULT ncpu QUERY NUMBER_OF_LOGICAL_CORES)
if(NOT TASKSET OR ncpu LESS 2)
  message("SKIP: needs taskset and two CPUs (have ${ncpu})")
  cmake_language(EXIT 77)
endif()
# GELU f32 (two threads pay off at 16M on two cores, where memory-bound
# SELU may not), a small, a mid and the 16M octave; quick settings.
set(cells --ops gelu --gelu-modes none --dtypes f32 --sizes 16K,1M,16M --layouts contig --quick --no-accuracy-gate --plain --budget 25s)
foreach(cores 0 0,1)
  string(REPLACE "," "" tag "${cores}")
  execute_process(COMMAND ${TASKSET} -c ${cores} ${TUNE} ${cells} --fresh --out ${WORK}/t${tag}.json
                          --log ${WORK}/t${tag}.log.jsonl
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tune under taskset -c ${cores}: exit ${rc}\n${out}\n${err}")
  endif()
  file(READ ${WORK}/t${tag}.json table)
  string(JSON cpus GET "${table}" provenance topology cpus)
  string(JSON rule GET "${table}" entries 0 extra tuning thread_rule)
  message("taskset -c ${cores}: topology cpus ${cpus}, thread rule ${rule}")
endforeach()
if(NOT rule STREQUAL "measured")
  message(FATAL_ERROR "the two-core table's rule is ${rule}, expected measured")
endif()
foreach(tag 0 01)
  set(ENV{ACTGRAD_TILING_TABLE} ${WORK}/t${tag}.json)
  execute_process(COMMAND ${TASKSET} -c 0,1 ${PROBE} gelu_bwd f32 16777216
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "table=env:")
    message(FATAL_ERROR "probe of t${tag}.json: exit ${rc}\n${out}\n${err}")
  endif()
  string(REGEX MATCH "threads=([0-9]+)" _ "${out}")
  set(threads_${tag} ${CMAKE_MATCH_1})
  message("t${tag}.json on two cores at 16M: ${out}")
endforeach()
# The one-core table's grain comes from its prior, not from timings: it must
# use both cores at 16M whatever the machine is doing. The two-core table's
# count is a measurement (a busy second vCPU can make one thread win, and a
# test must not assert a timing): printed, and where it uses both cores the
# one-core table must agree, as the issue asks.
if(NOT threads_0 EQUAL 2)
  message(FATAL_ERROR "the one-core table runs 16M on ${threads_0} threads on two cores (expected 2)")
endif()
if(threads_01 EQUAL 2 AND NOT threads_0 EQUAL threads_01)
  message(FATAL_ERROR "the one-core table runs 16M on ${threads_0} threads where the two-core table runs ${threads_01}")
endif()
if(NOT threads_01 EQUAL 2)
  message("note: the two-core tune measured one thread faster at 16M (a loaded machine?); not a failure")
endif()
