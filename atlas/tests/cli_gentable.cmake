# ctest: the table generator accepts a good table and stops on bad ones with a clear message.
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/good.json [=[
{"schema": "actgrad-tiling-table", "version": 1, "machine_id": "ascend910b", "backend": "atlas-model",
 "provenance": {"model": "test"},
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "layout": "contig", "bucket": 8, "size_lo": 65536, "size_hi": 262144,
              "variant": "gelu_bwd.f16.atlas.upcast_f32.erf.db2", "tile": 4096, "threads": 48,
              "extra": {"buffers": 2}, "median_ns": 1000.0}]}
]=])
# A version-2 table (actgrad-tune --backend atlas-model) has octave cells:
# octave 2k+1 (which holds 2*4^k) stands for host bucket k; even octaves are skipped.
file(WRITE ${WORK}/octaves.json [=[
{"schema": "actgrad-tiling-table", "version": 2, "machine_id": "ascend910b", "backend": "atlas-model",
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "layout": "contig", "octave": 16,
              "variant": "gelu_bwd.f16.atlas.upcast_f32.erf.db1", "tile": 4096, "threads": 48, "extra": {"buffers": 1}},
             {"op": "gelu_bwd", "dtype": "f16", "layout": "contig", "octave": 17,
              "variant": "gelu_bwd.f16.atlas.upcast_f32.erf.db2", "tile": 4096, "threads": 48, "extra": {"buffers": 2}}]}
]=])
execute_process(COMMAND ${GEN} --in ${WORK}/octaves.json --out ${WORK}/octaves.cc RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "version-2 table rejected: ${err}")
endif()
file(READ ${WORK}/octaves.cc cc)
if(NOT cc MATCHES ", 8, \"gelu_bwd.f16.atlas.upcast_f32.erf.db2\"" OR cc MATCHES "erf.db1")
  message(FATAL_ERROR "octave 17 should be host bucket 8 and octave 16 skipped:\n${cc}")
endif()
file(WRITE ${WORK}/truncated.json "{\"schema\": \"actgrad-tiling-table\", \"version\": 1, \"entries\": [")
file(WRITE ${WORK}/badvariant.json [=[
{"schema": "actgrad-tiling-table", "version": 1, "machine_id": "ascend910b", "backend": "atlas-model",
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "bucket": 8, "variant": "gelu_bwd.f16.atlas.nope.erf.db2",
              "tile": 4096, "threads": 48}]}
]=])
file(WRITE ${WORK}/badbuffers.json [=[
{"schema": "actgrad-tiling-table", "version": 1, "machine_id": "ascend910b", "backend": "atlas-model",
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "bucket": 8, "variant": "gelu_bwd.f16.atlas.upcast_f32.erf.db2",
              "tile": 4096, "threads": 48, "extra": {"buffers": 1}}]}
]=])
execute_process(COMMAND ${GEN} --in ${WORK}/good.json --out ${WORK}/good.cc RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "good table rejected")
endif()
file(READ ${WORK}/good.cc cc)
if(NOT cc MATCHES "gelu_bwd.f16.atlas.upcast_f32.erf.db2")
  message(FATAL_ERROR "entry missing from the generated table")
endif()
execute_process(COMMAND ${GEN} --in ${WORK}/missing.json --out ${WORK}/missing.cc RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a missing table must give the built-in default rule")
endif()
foreach(bad truncated badvariant badbuffers)
  execute_process(COMMAND ${GEN} --in ${WORK}/${bad}.json --out ${WORK}/${bad}.cc RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${bad}.json was accepted")
  endif()
  if(NOT err MATCHES "actgrad-atlas-gentable: error: .*${bad}.json")
    message(FATAL_ERROR "unclear message for ${bad}.json: ${err}")
  endif()
  message("${bad}.json rejected: ${err}")
endforeach()
