# The JSON parsers' fuzz targets (docs/fuzzing.md): the scenario parser, the profile loader and
# the tune parser, each through the strict JSON reader. Included from tests/fuzz/CMakeLists.txt
# after ncclz_fuzz_target is defined; paths in the seeds resolve from scenarios/.
ncclz_fuzz_target(profile ${CMAKE_CURRENT_LIST_DIR}/fuzz_profile.c ncclz_model)
ncclz_fuzz_target(tune ${CMAKE_CURRENT_LIST_DIR}/fuzz_tune.c ncclz_report)
if(TARGET ncclz_sim)
  ncclz_fuzz_target(scenario ${CMAKE_CURRENT_LIST_DIR}/fuzz_scenario.c ncclz_sim)
endif()
foreach(t fuzz_tune fuzz_replay_tune fuzz_scenario fuzz_replay_scenario)
  if(TARGET ${t})
    target_compile_definitions(${t} PRIVATE NCCLZ_FUZZ_SCENARIO_DIR="${PROJECT_SOURCE_DIR}/scenarios")
  endif()
endforeach()
foreach(t fuzz_tune fuzz_replay_tune)
  if(TARGET ${t})
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/report) # tune_internal.h: the parser's own types
  endif()
endforeach()
