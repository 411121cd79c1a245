# ctest driver: run SAMPLE, pipe its output through CHECK with EXPECTED.
# Fails when the sample exits non-zero or a value is off.
execute_process(COMMAND ${SAMPLE} COMMAND ${CHECK} ${EXPECTED}
  RESULTS_VARIABLE rcs OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
message("${out}")
if(err)
  message("${err}")
endif()
list(GET rcs 0 sample_rc)
list(GET rcs 1 check_rc)
if(NOT sample_rc STREQUAL "0")
  message(FATAL_ERROR "sample exited with ${sample_rc}")
endif()
if(NOT check_rc STREQUAL "0")
  message(FATAL_ERROR "sample output differs from ${EXPECTED}")
endif()
