# The installable library: libncclz.so (every built layer, exporting only the public API),
# the public headers, the ncclz binary, a CMake package (find_package(ncclz) -> ncclz::ncclz)
# and a pkg-config file (ncclz.pc). Included from the root CMakeLists.txt after every layer.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_objs "")
set(_defs "")
foreach(t ${NCCLZ_LAYERS})
  if(TARGET ${t})
    list(APPEND _objs $<TARGET_OBJECTS:${t}>)
    # The feature macros a layer exports (NCCLZ_HAVE_SIM, _MPI, _NCCL, _CALIBRATE_GPU) select
    # declarations in the public headers: users get them with the library.
    get_target_property(_d ${t} INTERFACE_COMPILE_DEFINITIONS)
    if(_d)
      list(APPEND _defs ${_d})
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES _defs)

# The layers stay static libraries for the CLI and the tests (which use internal functions);
# the shared library is built from the same objects.
add_library(ncclz_shared SHARED ${_objs})
add_library(ncclz::ncclz ALIAS ncclz_shared)
set_target_properties(ncclz_shared PROPERTIES OUTPUT_NAME ncclz EXPORT_NAME ncclz
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                      LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/ncclz.map)
target_link_options(ncclz_shared PRIVATE "LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/ncclz.map")
if(NOT NCCLZ_SANITIZE AND NOT NCCLZ_FUZZ)
  # Every dependency is named at link time (clang's sanitizer runtimes come with the executable).
  target_link_options(ncclz_shared PRIVATE "LINKER:--no-undefined")
endif()
target_include_directories(ncclz_shared INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                           $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_definitions(ncclz_shared INTERFACE ${_defs})
find_package(Threads REQUIRED)
target_link_libraries(ncclz_shared PUBLIC cjson PRIVATE Threads::Threads ${NCCLZ_LIBM})
set(NCCLZ_PC_LIBS "")
set(NCCLZ_PC_LIBS_PRIVATE "-lm -pthread")
# MPI before SimGrid: libsimgrid defines MPI_* too (SMPI), and the first library in the
# dependency list is the one the MPI transport's calls bind to.
if(NCCLZ_MPI)
  target_link_libraries(ncclz_shared PRIVATE MPI::MPI_C)
  foreach(l ${MPI_C_LIB_NAMES})
    string(APPEND NCCLZ_PC_LIBS_PRIVATE " -l${l}")
  endforeach()
endif()
if(TARGET ncclz_sim)
  target_link_libraries(ncclz_shared PRIVATE PkgConfig::SIMGRID)
  string(APPEND NCCLZ_PC_LIBS_PRIVATE " -lsimgrid")
endif()
if(TARGET ncclz_codecs_cuda)
  # exec.h (NCCLZ_HAVE_NCCL) and codecs_cuda.h include cuda_runtime_api.h and nccl.h.
  target_link_libraries(ncclz_shared PUBLIC CUDA::cudart)
  set(_libdirs ${CUDAToolkit_LIBRARY_DIR})
  set(_libs -lcudart)
  if(NCCL_LIBRARY)
    target_link_libraries(ncclz_shared PUBLIC ${NCCL_LIBRARY})
    target_include_directories(ncclz_shared INTERFACE ${NCCL_INCLUDE_DIR})
    get_filename_component(_nccl_dir ${NCCL_LIBRARY} DIRECTORY)
    list(APPEND _libdirs ${_nccl_dir})
    list(APPEND _libs -lnccl)
  endif()
  list(REMOVE_DUPLICATES _libdirs)
  list(TRANSFORM _libdirs PREPEND -L)
  list(JOIN _libdirs " " _libdirs)
  list(JOIN _libs " " _libs)
  set(NCCLZ_PC_LIBS "${_libdirs} ${_libs}")
endif()

set(NCCLZ_PC_CFLAGS "")
foreach(d ${_defs})
  string(APPEND NCCLZ_PC_CFLAGS " -D${d}")
endforeach()
if(TARGET ncclz_codecs_cuda)
  set(_incs ${CUDAToolkit_INCLUDE_DIRS} ${NCCL_INCLUDE_DIR})
  list(REMOVE_DUPLICATES _incs)
  foreach(d ${_incs})
    string(APPEND NCCLZ_PC_CFLAGS " -I${d}")
  endforeach()
endif()
string(STRIP "${NCCLZ_PC_CFLAGS}" NCCLZ_PC_CFLAGS)
string(STRIP "${NCCLZ_PC_LIBS}" NCCLZ_PC_LIBS)
# ${pcfiledir} back to the prefix: one ".." per component of LIBDIR/pkgconfig (relocatable).
string(REGEX REPLACE "[^/]+" ".." NCCLZ_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${CMAKE_CURRENT_LIST_DIR}/ncclz.pc.in ${PROJECT_BINARY_DIR}/ncclz.pc @ONLY)

# ---- install ---------------------------------------------------------------
install(TARGETS ncclz RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ncclz_shared EXPORT ncclzTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The public headers of the layers that were built (sim.h needs SimGrid, codecs_cuda.h CUDA).
set(_headers codecs.h schedule.h model.h exec.h calibrate.h report.h)
if(TARGET ncclz_sim)
  list(APPEND _headers sim.h)
endif()
if(TARGET ncclz_codecs_cuda)
  list(APPEND _headers codecs_cuda.h)
endif()
list(TRANSFORM _headers PREPEND ${PROJECT_SOURCE_DIR}/include/ncclz/)
install(FILES ${_headers} ${PROJECT_BINARY_DIR}/include/ncclz/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ncclz)
install(FILES ${PROJECT_BINARY_DIR}/ncclz.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(NCCLZ_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ncclz)
install(EXPORT ncclzTargets NAMESPACE ncclz:: DESTINATION ${NCCLZ_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ncclzConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ncclzConfig.cmake INSTALL_DESTINATION ${NCCLZ_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor release may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ncclzConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ncclzConfig.cmake ${PROJECT_BINARY_DIR}/ncclzConfigVersion.cmake
        DESTINATION ${NCCLZ_CMAKEDIR})

# ---- test: the installed tree as a user sees it (scripts/check_install.sh) ---
set(_ex_env "CC=${CMAKE_C_COMPILER}" "OMPI_MCA_rmaps_base_oversubscribe=1")
if(NCCLZ_SANITIZE)
  # libncclz.so carries the sanitizer runtimes: the examples must be instrumented as well.
  list(APPEND _ex_env "CFLAGS=-fsanitize=address,undefined" "ASAN_OPTIONS=detect_leaks=0")
endif()
add_test(NAME install_check COMMAND ${PROJECT_SOURCE_DIR}/scripts/check_install.sh ${PROJECT_BINARY_DIR}
         ${PROJECT_BINARY_DIR}/install_check)
set_tests_properties(install_check PROPERTIES TIMEOUT 600 ENVIRONMENT "${_ex_env}")

# ncclz --version and -V print the project's version and what the build has.
add_test(NAME cli_version COMMAND $<TARGET_FILE:ncclz> --version)
add_test(NAME cli_version_short COMMAND $<TARGET_FILE:ncclz> -V)
set_tests_properties(cli_version cli_version_short PROPERTIES PASS_REGULAR_EXPRESSION
                     "^ncclz ${PROJECT_VERSION} \\(CUDA/NCCL (on|off), MPI (on|off), SimGrid (on|off)\\)\n$")
