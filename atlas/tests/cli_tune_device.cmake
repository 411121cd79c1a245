# ctest atlas.cli.actgrad_tune_atlas_device: in a build without CANN,
# actgrad-tune --backend atlas-device times the kernels on the AscendC
# emulator through the project's runtime. A small tune writes a table whose
# backend and provenance say "emulator", and actgrad-atlas-gentable refuses
# it, also with the backend renamed (by its provenance).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${TUNE} --backend atlas-device --soc ${SOC} --ops softshrink,logit --dtypes f16 --sizes 4K
                        --layouts contig --budget 20s --min-ms 0.2 --out ${WORK}/t.json --log ${WORK}/t.log.jsonl
                        --fresh --plain
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "actgrad-tune --backend atlas-device failed (${rc}):\n${out}\n${err}")
endif()
message("${out}")
file(READ ${WORK}/t.json table)
string(JSON backend GET "${table}" backend)
string(JSON timing GET "${table}" provenance timing)
string(JSON clock GET "${table}" provenance clock)
string(JSON n LENGTH "${table}" entries)
if(NOT backend STREQUAL "atlas-device(emulator)" OR NOT timing STREQUAL "emulator" OR NOT clock MATCHES "aclrtEventElapsedTime"
   OR NOT n EQUAL 2)
  message(FATAL_ERROR "unexpected table (backend ${backend}, timing ${timing}, clock ${clock}, ${n} entries):\n${table}")
endif()
foreach(i 0 1)
  string(JSON op GET "${table}" entries ${i} op)
  string(JSON variant GET "${table}" entries ${i} variant)
  string(JSON octave GET "${table}" entries ${i} octave)
  string(JSON ns GET "${table}" entries ${i} median_ns)
  if(NOT variant MATCHES "^${op}\\.f16\\.atlas\\." OR NOT octave EQUAL 12 OR NOT ns GREATER 0)
    message(FATAL_ERROR "entry ${i}: ${op} ${variant} octave ${octave} median_ns ${ns}:\n${table}")
  endif()
endforeach()

# The generator refuses it: as written, renamed, with the timing removed.
function(refused name text want)
  file(WRITE ${WORK}/${name}.json "${text}")
  execute_process(COMMAND ${GEN} --in ${WORK}/${name}.json --out ${WORK}/${name}.cc RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "actgrad-atlas-gentable: error: [^\n]*${name}.json: ${want}[^\n]*; not a table to compile in")
    message(FATAL_ERROR "${name}.json: rc ${rc}, want \"${want}\": ${err}")
  endif()
  message("${name}.json refused: ${err}")
endfunction()
refused(emulator "${table}" "backend \"atlas-device\\(emulator\\)\": timed on the AscendC emulator")
string(JSON renamed SET "${table}" backend "\"atlas-device\"")
refused(renamed "${renamed}" "provenance.timing \"emulator\": timed on the AscendC emulator")
string(JSON untimed REMOVE "${renamed}" provenance timing)
refused(untimed "${untimed}" "backend \"atlas-device\" without provenance.timing \"device\" \\(null\\): not known to be timed on an NPU")
# ... and takes the same entries said to be timed on a device
string(JSON device SET "${renamed}" provenance timing "\"device\"")
file(WRITE ${WORK}/device.json "${device}")
execute_process(COMMAND ${GEN} --in ${WORK}/device.json --out ${WORK}/device.cc RESULT_VARIABLE rc ERROR_VARIABLE err)
file(READ ${WORK}/device.cc cc)
if(NOT rc EQUAL 0 OR NOT cc MATCHES "kAtlasTilingTableSize = 2;")
  message(FATAL_ERROR "a device table was not taken: ${err}\n${cc}")
endif()

# Without --out an emulator table goes next to the logs, never into tiling/tables/.
execute_process(COMMAND ${TUNE} --backend atlas-device --soc ${SOC} --ops softshrink --dtypes f16 --sizes 4K
                        --layouts contig --dry-run
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "table build/tune/ascend910b-atlas-device-emulator.json")
  message(FATAL_ERROR "dry run (${rc}): ${out}\n${err}")
endif()
# A device that does not exist: ACL's error, named.
execute_process(COMMAND ${TUNE} --backend atlas-device --soc ${SOC} --device 1 --ops softshrink --dtypes f16
                        --sizes 4K --out ${WORK}/d1.json --log ${WORK}/d1.log.jsonl
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "aclrtSetDevice\\(1\\) failed: error 107001" OR EXISTS ${WORK}/d1.json)
  message(FATAL_ERROR "--device 1 (${rc}): ${err}")
endif()
