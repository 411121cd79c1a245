# ctest atlas.cli.calibrate_from_tune_log: the step-by-step of docs/atlas.md
# ("With CANN") with the model standing in for the device: actgrad-tune
# times candidates (here: the model of a SoC file whose launch overhead and
# HBM bandwidth are scaled, as a device would differ), actgrad-atlas log2csv
# turns its measurement log into the calibration CSV, and actgrad-atlas
# calibrate, starting from the unscaled file, recovers the scaled values.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(READ ${SOC} soc)
string(JSON launch GET "${soc}" params launch_overhead_ns value)
string(JSON hbm GET "${soc}" params hbm_bandwidth_gbps value)
math(EXPR launch_true "${launch} * 3 / 2")
math(EXPR hbm_true "${hbm} * 7 / 10")
string(JSON device SET "${soc}" params launch_overhead_ns value ${launch_true})
string(JSON device SET "${device}" params hbm_bandwidth_gbps value ${hbm_true})
file(WRITE ${WORK}/device.json "${device}")

execute_process(COMMAND ${TUNE} --backend atlas-model --soc ${WORK}/device.json --ops softshrink,selu --dtypes f32,f16
                        --sizes 4K,256K,16M,64M --layouts contig --out ${WORK}/t.json --log ${WORK}/t.log.jsonl --fresh
                        --plain
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "actgrad-tune failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${ATLAS} log2csv --log ${WORK}/t.log.jsonl --out ${WORK}/measured.csv
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "wrote [0-9]+ measurements")
  message(FATAL_ERROR "log2csv (${rc}): ${out}\n${err}")
endif()
message("${out}")
execute_process(COMMAND ${ATLAS} calibrate --soc ${SOC} --csv ${WORK}/measured.csv --out ${WORK}/fitted.json
                        --params launch_overhead_ns,hbm_bandwidth_gbps
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "calibrate failed (${rc}): ${err}")
endif()
file(READ ${WORK}/fitted.json fitted)
string(JSON launch_fit GET "${fitted}" params launch_overhead_ns value)
string(JSON hbm_fit GET "${fitted}" params hbm_bandwidth_gbps value)
# within 1 % (cmake's math is integer: the fitted values' fractions are cut)
string(REGEX REPLACE "\\..*" "" launch_fit_i "${launch_fit}")
string(REGEX REPLACE "\\..*" "" hbm_fit_i "${hbm_fit}")
math(EXPR launch_err "(${launch_fit_i} - ${launch_true}) * 100 / ${launch_true}")
math(EXPR hbm_err "(${hbm_fit_i} - ${hbm_true}) * 100 / ${hbm_true}")
if(launch_err GREATER 1 OR launch_err LESS -1 OR hbm_err GREATER 1 OR hbm_err LESS -1)
  message(FATAL_ERROR "not recovered: launch ${launch_fit} (true ${launch_true}), hbm ${hbm_fit} (true ${hbm_true})")
endif()
message("recovered: launch_overhead_ns ${launch_fit} (true ${launch_true}), hbm_bandwidth_gbps ${hbm_fit} (true ${hbm_true})")
