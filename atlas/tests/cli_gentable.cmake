# ctest: actgrad-atlas-gentable reads tables with the shared parser
# (tiling/table.h): good tables of either schema become host rows per size
# octave; bad ones stop it with a message naming the file, the entry and the field.
file(MAKE_DIRECTORY ${WORK})
set(head [=["schema": "actgrad-tiling-table", "machine_id": "ascend910b", "backend": "atlas-model"]=])
set(v16 [=["gelu_bwd.f16.atlas.upcast_f32.erf]=])

function(generate name text)
  file(WRITE ${WORK}/${name}.json "${text}")
  execute_process(COMMAND ${GEN} --in ${WORK}/${name}.json --out ${WORK}/${name}.cc
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  set(rc ${rc} PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# A version-3 table (what actgrad-tune --backend atlas-model writes): one row
# per octave cell, threads = block dim, stage_tile = UB tile length; the
# tuner's one_thread (one AI core) is not used.
generate(v3 "{${head}, \"version\": 3, \"entries\": [
  {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"layout\": \"contig\", \"octave\": 16, \"variant\": ${v16}.db1\",
   \"threads\": 24, \"chunk\": 0, \"stage_tile\": 2048, \"one_thread\": {\"variant\": ${v16}.db2\", \"chunk\": 0, \"stage_tile\": 8192}},
  {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"octave\": 17, \"variant\": ${v16}.db2\", \"threads\": 48, \"stage_tile\": 4096}]}")
file(READ ${WORK}/v3.cc cc)
if(NOT rc EQUAL 0 OR NOT cc MATCHES "16, \"gelu_bwd.f16.atlas.upcast_f32.erf.db1\", 2048u, 24u" OR
   NOT cc MATCHES "17, \"gelu_bwd.f16.atlas.upcast_f32.erf.db2\", 4096u, 48u" OR NOT cc MATCHES "kAtlasTilingTableSize = 2;")
  message(FATAL_ERROR "version-3 table: ${err}\n${cc}")
endif()

# A version-2 table (octave cells, "tile" = the UB tile length): the same rows.
generate(octaves "{${head}, \"version\": 2, \"provenance\": {\"model\": \"test\"}, \"entries\": [
  {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"layout\": \"contig\", \"octave\": 16, \"size_lo\": 65536, \"size_hi\": 131072,
   \"variant\": ${v16}.db1\", \"tile\": 2048, \"threads\": 24, \"median_ns\": 1000.0},
  {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"octave\": 17, \"variant\": ${v16}.db2\", \"tile\": 4096, \"threads\": 48},
  {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"gelu_approx\": \"tanh\", \"octave\": 17,
   \"variant\": \"gelu_bwd.f16.atlas.upcast_f32.tanh.db2\", \"tile\": 4096, \"threads\": 48}]}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "version-2 table rejected: ${err}")
endif()
file(READ ${WORK}/octaves.cc cc)
if(NOT cc MATCHES "16, \"gelu_bwd.f16.atlas.upcast_f32.erf.db1\", 2048u, 24u" OR
   NOT cc MATCHES "17, \"gelu_bwd.f16.atlas.upcast_f32.erf.db2\", 4096u, 48u" OR
   NOT cc MATCHES "GeluApprox\\(1\\), 17, \"gelu_bwd.f16.atlas.upcast_f32.tanh.db2\"" OR
   NOT cc MATCHES "kAtlasTilingTableSize = 3;")
  message(FATAL_ERROR "octave rows missing from the generated table:\n${cc}")
endif()

# A version-1 table (4x bucket k) still loads: the shared parser gives octaves 2k and 2k+1.
generate(bucket "{${head}, \"version\": 1, \"entries\": [
  {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"layout\": \"contig\", \"bucket\": 8, \"size_lo\": 65536, \"size_hi\": 262144,
   \"variant\": ${v16}.db2\", \"tile\": 4096, \"threads\": 48, \"extra\": {\"buffers\": 2}, \"median_ns\": 1000.0}]}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "version-1 table rejected: ${err}")
endif()
file(READ ${WORK}/bucket.cc cc)
if(NOT cc MATCHES " 16, \"gelu_bwd[^\n]*\n[^\n]* 17, \"gelu_bwd" OR NOT cc MATCHES "kAtlasTilingTableSize = 2;")
  message(FATAL_ERROR "bucket 8 should be octaves 16 and 17:\n${cc}")
endif()

execute_process(COMMAND ${GEN} --in ${WORK}/missing.json --out ${WORK}/missing.cc RESULT_VARIABLE rc)
file(READ ${WORK}/missing.cc cc)
if(NOT rc EQUAL 0 OR NOT cc MATCHES "kAtlasTilingTableSize = 0;" OR NOT cc MATCHES "built-in default rule")
  message(FATAL_ERROR "a missing table must give the built-in default rule")
endif()

# Bad tables: name, the entries (RAW: the whole document), what the message must say.
function(rejected bad body want)
  if(body MATCHES "^RAW")
    string(SUBSTRING "${body}" 3 -1 text)
  else()
    set(text "{${head}, \"version\": ${version}, \"entries\": [${body}]}")
  endif()
  generate(${bad} "${text}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${bad}.json was accepted")
  endif()
  if(NOT err MATCHES "actgrad-atlas-gentable: error: [^\n]*${bad}.json: [^\n]*${want}")
    message(FATAL_ERROR "unclear message for ${bad}.json (want \"${want}\"): ${err}")
  endif()
  message("${bad}.json rejected: ${err}")
endfunction()
set(version 2)
set(e0 [=[{"op": "gelu_bwd", "dtype": "f16", "octave": 17, "tile": 4096, "threads": 48, ]=])
rejected(truncated "RAW{\"schema\": \"actgrad-tiling-table\", \"version\": 2, \"entries\": [" "")
rejected(cpu_backend "RAW{\"schema\": \"actgrad-tiling-table\", \"version\": 2, \"machine_id\": \"x\", \"backend\": \"cpu\", \"entries\": []}" "backend \"cpu\" is not an Atlas backend")
rejected(badvariant "${e0}\"variant\": \"gelu_bwd.f16.atlas.nope.erf.db2\"}" "entry 0: variant: unknown Atlas variant")
rejected(cpuvariant "${e0}\"variant\": \"gelu_bwd.f16.reg.erf_as.u4.avx2\"}" "entry 0: variant: unknown Atlas variant")
rejected(otherop "${e0}\"variant\": \"selu_bwd.f16.atlas.upcast_f32.exact.db2\"}" "entry 0: variant: .* does not compute gelu_bwd f16")
rejected(otherform "${e0}\"gelu_approx\": \"tanh\", \"variant\": ${v16}.db2\"}" "entry 0: variant: .* does not compute gelu_bwd f16 gelu_approx=tanh")
rejected(badbuffers "${e0}\"variant\": ${v16}.db2\", \"extra\": {\"buffers\": 1}}" "entry 0: extra.buffers: 1 disagrees")
rejected(badtile "{\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"octave\": 17, \"tile\": 1000, \"threads\": 48, \"variant\": ${v16}.db2\"}" "entry 0: tile: 1000 is not a UB tile length")
rejected(bcast "${e0}\"layout\": \"bcast\", \"variant\": ${v16}.db2\"}" "entry 0: layout: \"bcast\": the Atlas kernels take contiguous")
# the shared parser's own checks
rejected(floatthreads "{\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"octave\": 17, \"tile\": 4096, \"threads\": 2.9, \"variant\": ${v16}.db2\"}" "entry 0.*threads")
rejected(badsize "${e0}\"size_lo\": 1024, \"variant\": ${v16}.db2\"}" "entry 0: size_lo does not match octave 17")
rejected(badoctave "{\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"octave\": 99, \"tile\": 4096, \"threads\": 48, \"variant\": ${v16}.db2\"}" "entry 0.*octave")
rejected(badop "{\"op\": \"relu_bwd\", \"dtype\": \"f16\", \"octave\": 17, \"tile\": 4096, \"threads\": 48, \"variant\": ${v16}.db2\"}" "entry 0: unknown op \"relu_bwd\"")
rejected(duplicate "${e0}\"variant\": ${v16}.db2\"}, ${e0}\"variant\": ${v16}.db1\"}" "entry 1: duplicate size range")
rejected(secondbad "${e0}\"variant\": ${v16}.db2\"}, {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"octave\": 18, \"tile\": 4096, \"threads\": 48, \"variant\": ${v16}.db3\"}" "entry 1: variant: unknown Atlas variant")
# a version-1 entry loads as two octave rows; messages still count the file's entries
rejected(v1second "RAW{${head}, \"version\": 1, \"entries\": [{\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"bucket\": 7, \"tile\": 4096, \"threads\": 48, \"variant\": ${v16}.db2\"}, {\"op\": \"gelu_bwd\", \"dtype\": \"f16\", \"bucket\": 8, \"tile\": 4096, \"threads\": 48, \"variant\": ${v16}.db3\"}]}" "entry 1: variant: unknown Atlas variant")
# version 3: the split's fields by their names
set(version 3)
set(e3 [=[{"op": "gelu_bwd", "dtype": "f16", "octave": 17, "threads": 48, ]=])
rejected(v3chunk "${e3}\"stage_tile\": 4096, \"chunk\": 4096, \"variant\": ${v16}.db2\"}" "entry 0: chunk: 4096: the Atlas kernels have no chunk")
rejected(v3notile "${e3}\"variant\": ${v16}.db2\"}" "entry 0: stage_tile: 0 is not a UB tile length")
rejected(v3badtile "${e3}\"stage_tile\": 1000, \"variant\": ${v16}.db2\"}" "entry 0: stage_tile: 1000 is not a UB tile length")
rejected(v3oldtile "${e3}\"tile\": 4096, \"variant\": ${v16}.db2\"}" "entry 0: stage_tile: 0 is not")
