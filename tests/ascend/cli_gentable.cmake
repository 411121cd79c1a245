# ctest: the table generator accepts a good table and stops on bad ones with a clear message.
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/good.json [=[
{"schema": "actgrad-tiling-table", "version": 1, "machine_id": "ascend910b", "backend": "atlas-model",
 "provenance": {"model": "test"},
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "layout": "contig", "bucket": 8, "size_lo": 65536, "size_hi": 262144,
              "variant": "gelu_bwd.f16.ascend.upcast_f32.erf.db2", "tile": 4096, "threads": 48,
              "extra": {"buffers": 2}, "median_ns": 1000.0}]}
]=])
file(WRITE ${WORK}/truncated.json "{\"schema\": \"actgrad-tiling-table\", \"version\": 1, \"entries\": [")
file(WRITE ${WORK}/badvariant.json [=[
{"schema": "actgrad-tiling-table", "version": 1, "machine_id": "ascend910b", "backend": "atlas-model",
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "bucket": 8, "variant": "gelu_bwd.f16.ascend.nope.erf.db2",
              "tile": 4096, "threads": 48}]}
]=])
file(WRITE ${WORK}/badbuffers.json [=[
{"schema": "actgrad-tiling-table", "version": 1, "machine_id": "ascend910b", "backend": "atlas-model",
 "entries": [{"op": "gelu_bwd", "dtype": "f16", "bucket": 8, "variant": "gelu_bwd.f16.ascend.upcast_f32.erf.db2",
              "tile": 4096, "threads": 48, "extra": {"buffers": 1}}]}
]=])
execute_process(COMMAND ${GEN} --in ${WORK}/good.json --out ${WORK}/good.cc RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "good table rejected")
endif()
file(READ ${WORK}/good.cc cc)
if(NOT cc MATCHES "gelu_bwd.f16.ascend.upcast_f32.erf.db2")
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
