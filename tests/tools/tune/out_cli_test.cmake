# actgrad-tune --out end to end: a path that cannot be
# written is refused before measuring; a partial run merges into the table of
# its machine (also at the default --out of a source tree); another machine's or
# an invalid table is refused without --force and replaced with it; a selection
# with no cells writes nothing; --install copies the table to the user cache.
# Every table is under ${WORK}.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(tiny --ops softshrink --dtypes f16 --no-accuracy-gate --plain)
# One cell (softshrink f16 4K contig); its log replays in the later runs.
set(one_cell ${tiny} --sizes 4K --layouts contig --budget 3s --log ${WORK}/one.log.jsonl)

macro(tune)
  execute_process(COMMAND ${TUNE} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endmacro()
function(expect_rc want what)
  if(NOT rc EQUAL ${want})
    message(FATAL_ERROR "${what}: exit ${rc}, expected ${want}\n${out}\n${err}")
  endif()
endfunction()
function(expect_same a b what)
  file(SHA256 ${a} ha)
  file(SHA256 ${b} hb)
  if(NOT ha STREQUAL hb)
    message(FATAL_ERROR "${what}: ${a} changed\n${out}\n${err}")
  endif()
endfunction()
function(expect_no_tmp what)
  file(GLOB_RECURSE tmps ${WORK}/*.tmp)
  if(tmps)
    message(FATAL_ERROR "${what}: left ${tmps}")
  endif()
endfunction()

# --out under a regular file: the directory cannot be created. Refused before
# measuring (no log), no .tmp.
file(WRITE ${WORK}/afile "x")
tune(${tiny} --sizes 4K --layouts contig --budget 3s --out ${WORK}/afile/sub/t.json --log ${WORK}/refused.log.jsonl)
expect_rc(2 "--out under a regular file")
if(NOT err MATCHES "afile exists and is not a directory")
  message(FATAL_ERROR "--out under a regular file: no message naming it:\n${err}")
endif()
if(EXISTS ${WORK}/refused.log.jsonl)
  message(FATAL_ERROR "--out under a regular file: measured before refusing\n${err}")
endif()
expect_no_tmp("--out under a regular file")

# --out naming a directory.
file(MAKE_DIRECTORY ${WORK}/adir)
tune(${tiny} --sizes 4K --layouts contig --budget 3s --out ${WORK}/adir --log ${WORK}/refused.log.jsonl)
expect_rc(2 "--out naming a directory")
if(NOT err MATCHES "adir is a directory")
  message(FATAL_ERROR "--out naming a directory: no message:\n${err}")
endif()
if(EXISTS ${WORK}/refused.log.jsonl OR EXISTS ${WORK}/adir.tmp)
  message(FATAL_ERROR "--out naming a directory: measured or left adir.tmp\n${err}")
endif()

# A 4-entry table of this machine, and the one cell's table on its own.
tune(${tiny} --sizes 4K-8K --layouts contig,bcast --budget 6s --out ${WORK}/base.json --log ${WORK}/base.log.jsonl)
expect_rc(0 "base table")
tune(${one_cell} --out ${WORK}/one.json)
expect_rc(0 "one-cell table")
file(READ ${WORK}/base.json base)
file(READ ${WORK}/one.json one)
string(JSON machine GET "${base}" machine_id)
string(JSON one_entry GET "${one}" entries 0)

# The one-cell run into a copy of the base table merges: its cell replaced,
# the other three entries kept as they were.
file(COPY_FILE ${WORK}/base.json ${WORK}/merged.json)
tune(${one_cell} --out ${WORK}/merged.json)
expect_rc(0 "merge")
if(NOT out MATCHES "4 entries: 0 added, 1 replaced, 3 kept")
  message(FATAL_ERROR "merge: no counts in the summary:\n${out}")
endif()
file(READ ${WORK}/merged.json merged)
string(JSON n LENGTH "${merged}" entries)
string(JSON runs LENGTH "${merged}" provenance merged_from)
if(NOT n EQUAL 4 OR NOT runs EQUAL 1)
  message(FATAL_ERROR "merge: ${n} entries (want 4), ${runs} merged_from runs (want 1)")
endif()
string(JSON e0 GET "${merged}" entries 0)
if(NOT e0 STREQUAL one_entry)
  message(FATAL_ERROR "merge: the tuned cell was not replaced:\n${e0}\nwant\n${one_entry}")
endif()
foreach(i 1 2 3)
  string(JSON got GET "${merged}" entries ${i})
  string(JSON want GET "${base}" entries ${i})
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "merge: entry ${i} not kept:\n${got}\nwant\n${want}")
  endif()
endforeach()

# The default --out of a source tree (tiling/tables/<machine>.json) merges too.
file(MAKE_DIRECTORY ${WORK}/tree/tiling/tables)
set(tree_table ${WORK}/tree/tiling/tables/${machine}.json)
file(COPY_FILE ${WORK}/base.json ${tree_table})
execute_process(COMMAND ${TUNE} ${one_cell} WORKING_DIRECTORY ${WORK}/tree
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc(0 "default --out")
file(READ ${tree_table} tree)
string(JSON n LENGTH "${tree}" entries)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "default --out: the table has ${n} entries, want 4 (merged)\n${out}")
endif()

# A selection with no cells (GELU has no i32) writes nothing, at the default --out.
file(COPY_FILE ${WORK}/base.json ${tree_table})
execute_process(COMMAND ${TUNE} --ops gelu --dtypes i32 --no-accuracy-gate --plain WORKING_DIRECTORY ${WORK}/tree
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc(2 "0 cells")
expect_same(${WORK}/base.json ${tree_table} "0 cells")
if(NOT err MATCHES "no cells")
  message(FATAL_ERROR "0 cells: no message:\n${err}")
endif()

# Another machine's table, and a file that is not a table: refused without
# --force (the file unchanged, nothing measured), replaced with it.
string(JSON other SET "${base}" machine_id "\"othervendor-0-0\"")
file(WRITE ${WORK}/other.json "${other}")
file(COPY_FILE ${WORK}/other.json ${WORK}/other.orig)
file(WRITE ${WORK}/bad.json "not a table\n")
file(COPY_FILE ${WORK}/bad.json ${WORK}/bad.orig)
foreach(name other bad)
  tune(${tiny} --sizes 4K --layouts contig --budget 3s --out ${WORK}/${name}.json --log ${WORK}/refused.log.jsonl)
  expect_rc(2 "${name}.json without --force")
  expect_same(${WORK}/${name}.orig ${WORK}/${name}.json "${name}.json without --force")
  if(NOT err MATCHES "--force" OR EXISTS ${WORK}/refused.log.jsonl)
    message(FATAL_ERROR "${name}.json without --force: no message or measured:\n${err}")
  endif()
  tune(${one_cell} --out ${WORK}/${name}.json --force)
  expect_rc(0 "${name}.json with --force")
  file(READ ${WORK}/${name}.json forced)
  string(JSON got GET "${forced}" entries)
  string(JSON want GET "${one}" entries)
  string(JSON got_machine GET "${forced}" machine_id)
  if(NOT got STREQUAL want OR NOT got_machine STREQUAL machine)
    message(FATAL_ERROR "${name}.json with --force: not replaced by the run's table:\n${forced}")
  endif()
endforeach()

# --install: after --out, the table is copied to the user
# cache (ACTGRAD_TABLE_CACHE here), the directory made; a directory that
# cannot be made is refused before measuring; not with --shard.
macro(tune_cached cache)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ACTGRAD_TABLE_CACHE=${cache} ${TUNE} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endmacro()
tune_cached(${WORK}/cache/tables ${one_cell} --out ${WORK}/installed.json --install)
expect_rc(0 "--install")
set(cached ${WORK}/cache/tables/${machine}.json)
if(NOT EXISTS ${cached} OR NOT out MATCHES "installed ${cached}")
  message(FATAL_ERROR "--install: no ${cached}, or not said:\n${out}\n${err}")
endif()
file(READ ${cached} got)
file(READ ${WORK}/installed.json want)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "--install: the cached table differs from --out:\n${got}\nwant\n${want}")
endif()
tune_cached(${WORK}/afile/tables ${tiny} --sizes 4K --layouts contig --budget 3s --out ${WORK}/installed2.json
  --install --log ${WORK}/refused.log.jsonl)
expect_rc(2 "--install under a regular file")
if(NOT err MATCHES "cannot create the directory" OR EXISTS ${WORK}/refused.log.jsonl)
  message(FATAL_ERROR "--install under a regular file: no message or measured:\n${err}")
endif()
tune_cached(${WORK}/cache/tables ${tiny} --sizes 4K --layouts contig --budget 3s --shard 1/2 --install
  --log ${WORK}/refused.log.jsonl)
expect_rc(2 "--install with --shard")
expect_no_tmp("end")
message(STATUS "ok: --out checked, merged, refused and forced; --install")
