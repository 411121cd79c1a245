# ctest: the one Atlas tuner end to end: actgrad-tune --backend atlas-model
# writes an octave table that actgrad-atlas-gentable takes.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${TUNE} --backend atlas-model --soc ${SOC} --ops softshrink --dtypes f16 --sizes 64K,1M
                        --layouts contig --out ${WORK}/t.json --log ${WORK}/t.log.jsonl --fresh --plain
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "actgrad-tune --backend atlas-model failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK}/t.json table)
string(JSON backend GET "${table}" backend)
string(JSON n LENGTH "${table}" entries)
string(JSON octave GET "${table}" entries 1 octave)
string(JSON variant GET "${table}" entries 1 variant)
if(NOT backend STREQUAL "atlas-model" OR NOT n EQUAL 2 OR NOT octave EQUAL 20 OR
   NOT variant MATCHES "^softshrink_bwd\\.f16\\.atlas\\.")
  message(FATAL_ERROR "unexpected table (backend ${backend}, ${n} entries, octave ${octave}, ${variant}):\n${table}")
endif()
execute_process(COMMAND ${GEN} --in ${WORK}/t.json --out ${WORK}/t.cc RESULT_VARIABLE rc ERROR_VARIABLE err)
file(READ ${WORK}/t.cc cc)
if(NOT rc EQUAL 0 OR NOT cc MATCHES "kAtlasTilingTableSize = 2;")
  message(FATAL_ERROR "the tuner's table was not taken by the generator: ${err}\n${cc}")
endif()
