# ctest: synthetic device times from known parameters -> calibrate -> recovered.
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${ATLAS} synth --soc ${SOC} --out ${WORK}/synth.csv
                        --scale launch_overhead_ns=1.5,hbm_bandwidth_gbps=0.7,vector_cycle_scale=1.3
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "synth failed")
endif()
execute_process(COMMAND ${ATLAS} calibrate --soc ${SOC} --csv ${WORK}/synth.csv --out ${WORK}/fitted.json
                        --params launch_overhead_ns,hbm_bandwidth_gbps,vector_cycle_scale
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "calibrate failed")
endif()
file(READ ${WORK}/fitted.json fitted)
# (the numeric recovery of each parameter is checked in atlas.CostModel.CalibrationRecoversKnownParameters;
# here: the CLI round trip converges and writes a valid SoC file)
string(JSON schema GET "${fitted}" schema)
if(NOT schema STREQUAL "actgrad-atlas-soc")
  message(FATAL_ERROR "fitted file is not a SoC file")
endif()
string(JSON rms GET "${fitted}" calibration rms_log_error_after)
if(rms MATCHES "e-" OR rms MATCHES "^0\\.000")
  message("calibration RMS log error ${rms}: parameters recovered")
else()
  message(FATAL_ERROR "calibration did not converge: RMS log error ${rms}")
endif()
