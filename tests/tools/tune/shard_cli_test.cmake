# actgrad-tune --shard K/N and merge end to end: a
# tiny run (softshrink f16 4K, two series: contig and bcast) in two shards,
# merged into one table; bad --shard values, merge refusals, and a resume
# under another measurement key. Everything is under ${WORK}.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(tiny --ops softshrink --dtypes f16 --sizes 4K --layouts contig,bcast --no-accuracy-gate --plain --budget 3s)

macro(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endmacro()
function(expect_rc want what)
  if(NOT rc EQUAL ${want})
    message(FATAL_ERROR "${what}: exit ${rc}, expected ${want}\n${out}\n${err}")
  endif()
endfunction()
function(expect_err regex what)
  if(NOT err MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no message matching \"${regex}\":\n${out}\n${err}")
  endif()
endfunction()

# Bad --shard values.
foreach(bad 0/2 3/2 2 a/b 1/0)
  run(${TUNE} ${tiny} --shard ${bad} --dry-run)
  expect_rc(2 "--shard ${bad}")
  expect_err("--shard \"${bad}\"" "--shard ${bad}")
endforeach()
# More shards than series.
run(${TUNE} ${tiny} --shard 3/3 --dry-run)
expect_rc(2 "--shard 3/3 of two series")
expect_err("has no series: the selection has 2 series" "--shard 3/3")

# The two shards.
foreach(k 1 2)
  run(${TUNE} ${tiny} --shard ${k}/2 --out ${WORK}/s${k}.json --log ${WORK}/s${k}.log.jsonl)
  expect_rc(0 "shard ${k}/2")
  file(READ ${WORK}/s${k}.json t)
  string(JSON n LENGTH "${t}" entries)
  string(JSON idx GET "${t}" provenance shard index)
  string(JSON hash GET "${t}" provenance measurement_key hash)
  if(NOT n EQUAL 1 OR NOT idx EQUAL ${k} OR hash STREQUAL "")
    message(FATAL_ERROR "shard ${k}/2: ${n} entries, index ${idx}, key ${hash}\n${t}")
  endif()
  file(STRINGS ${WORK}/s${k}.log.jsonl header LIMIT_COUNT 1)
  if(NOT header MATCHES "\"shard\":{\"count\":2,\"index\":${k}}" OR NOT header MATCHES "\"measurement_key\"")
    message(FATAL_ERROR "shard ${k}/2: the log header has no shard or key:\n${header}")
  endif()
endforeach()

# Merge.
run(${TUNE} merge --out ${WORK}/merged.json ${WORK}/s2.json ${WORK}/s1.json)
expect_rc(0 "merge")
file(READ ${WORK}/merged.json t)
string(JSON n LENGTH "${t}" entries)
string(JSON shards LENGTH "${t}" provenance shards)
if(NOT n EQUAL 2 OR NOT shards EQUAL 2)
  message(FATAL_ERROR "merge: ${n} entries, ${shards} shards in the provenance\n${t}")
endif()
# Refusals: nothing written.
run(${TUNE} merge --out ${WORK}/partial.json ${WORK}/s1.json)
expect_rc(2 "merge of one of two shards")
expect_err("missing shard\\(s\\) 2 of 2" "merge of one of two shards")
if(EXISTS ${WORK}/partial.json)
  message(FATAL_ERROR "a refused merge wrote its table")
endif()
run(${TUNE} merge --out ${WORK}/partial.json --allow-partial ${WORK}/s1.json)
expect_rc(0 "merge --allow-partial")
run(${TUNE} merge --out ${WORK}/twice.json ${WORK}/s1.json ${WORK}/s1.json)
expect_rc(2 "the same shard twice")
expect_err("are both shard 1/2" "the same shard twice")
run(${TUNE} merge ${WORK}/s1.json)
expect_rc(2 "merge without --out")

# A resume under another measurement key (an ACTGRAD_* variable set): the old
# log is kept aside and the run starts fresh.
run(${CMAKE_COMMAND} -E env ACTGRAD_KEY_TEST=1 ${TUNE} ${tiny} --shard 1/2 --out ${WORK}/s1b.json
    --log ${WORK}/s1.log.jsonl)
expect_rc(0 "resume under another key")
expect_err("measurement key changed \\(env ACTGRAD_KEY_TEST unset -> 1\\): the old log is kept as [^ ]*s1.log.jsonl.stale-[0-9a-f]+; starting fresh"
           "resume under another key")
file(GLOB stale ${WORK}/s1.log.jsonl.stale-*)
if(NOT stale)
  message(FATAL_ERROR "no stale log kept")
endif()
# Its table has another key: merge refuses it with shard 2.
run(${TUNE} merge --out ${WORK}/mixed.json ${WORK}/s1b.json ${WORK}/s2.json)
expect_rc(2 "shards of two keys")
expect_err("another measurement key .*env ACTGRAD_KEY_TEST 1 -> unset" "shards of two keys")
