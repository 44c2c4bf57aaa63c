# Build and install helpers of ampc's compiler libraries.
#
# The libraries are declared with MLIR's own functions (add_mlir_dialect_library,
# add_mlir_conversion_library, add_mlir_library), which put each in the export
# set `MLIRTargets`. ampc_install_compiler() installs that set as ampc's CMake
# package: `find_package(ampc)` then gives `ampc::compiler` (the dialect, the
# passes and the pipeline, with their headers), each library on its own as
# `ampc::<Name>` (AMPCTGDialect -> ampc::TGDialect) and, from the runtime's
# own export set, `ampc::runtime`.

# The libraries ampc::compiler stands for: an embedding compiler links this one
# target and gets registerAllDialects/registerAllPasses, the passes and the
# pipeline (<ampc/ampc.h>).
set(AMPC_COMPILER_LIBS AMPCPipelines AMPCPasses AMPCTransformUtils AMPCTGDialect)

function(ampc_install_compiler)
  set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ampc)

  get_property(has_exports GLOBAL PROPERTY MLIR_HAS_EXPORTS)
  if(NOT has_exports)
    message(FATAL_ERROR "ampc: no library reached the MLIRTargets export set "
                        "(an LLVM configured with LLVM_DISTRIBUTION_COMPONENTS?)")
  endif()
  get_property(libs GLOBAL PROPERTY MLIR_EXPORTS)
  foreach(lib IN LISTS libs)
    string(REGEX REPLACE "^AMPC" "" export_name ${lib})
    set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
  endforeach()

  add_library(ampc_compiler INTERFACE)
  add_library(ampc::compiler ALIAS ampc_compiler)
  set_target_properties(ampc_compiler PROPERTIES EXPORT_NAME compiler)
  target_link_libraries(ampc_compiler INTERFACE ${AMPC_COMPILER_LIBS})
  target_compile_features(ampc_compiler INTERFACE cxx_std_17)
  target_include_directories(ampc_compiler INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS ampc_compiler EXPORT MLIRTargets COMPONENT ampc_compiler)

  # Headers: the hand-written ones with their .td sources, and the generated
  # .inc files they include.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ampc
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ampc_compiler
    FILES_MATCHING PATTERN "*.h" PATTERN "*.td" PATTERN "*.inc")
  install(DIRECTORY ${PROJECT_BINARY_DIR}/include/ampc
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ampc_compiler
    FILES_MATCHING PATTERN "*.inc" PATTERN "*.h"
    PATTERN "CMakeFiles" EXCLUDE)

  # The drivers find libampc_runtime next to them and libMLIR where it was
  # linked from.
  foreach(tool ampc ampc-opt)
    if(TARGET ${tool})
      set_target_properties(${tool} PROPERTIES
        INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
        INSTALL_RPATH_USE_LINK_PATH ON)
      install(TARGETS ${tool} COMPONENT ampc_compiler
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    endif()
  endforeach()

  install(EXPORT MLIRTargets NAMESPACE ampc:: FILE ampcCompilerTargets.cmake
    DESTINATION ${cmake_dir} COMPONENT ampc_compiler)

  # One package for both halves. The runtime (runtime/CMakeLists.txt) writes
  # its own ampcConfig.cmake for runtime-only installs; a whole-tree install
  # keeps that file as ampcRuntimeConfig.cmake and installs this one, which
  # includes it, in its place (later rules win: they run in declaration order).
  include(CMakePackageConfigHelpers)
  set(AMPC_RUNTIME_CONFIG "")
  if(TARGET ampc_runtime)
    set(AMPC_RUNTIME_CONFIG ampcRuntimeConfig.cmake)
    install(FILES ${PROJECT_BINARY_DIR}/runtime/ampcConfig.cmake
      RENAME ampcRuntimeConfig.cmake
      DESTINATION ${cmake_dir} COMPONENT ampc_compiler)
  endif()
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ampcConfig.cmake.in
    ${PROJECT_BINARY_DIR}/ampcConfig.cmake
    INSTALL_DESTINATION ${cmake_dir})
  # One version for the package, whichever way it was installed: the
  # runtime's (the ABI that code from --emit=cpp needs), so that
  # find_package(ampc 1.4) finds a whole-tree install as it finds a
  # runtime-only one (this file said PROJECT_VERSION, 1.0.0).
  set(package_version ${PROJECT_VERSION})
  if(TARGET ampc_runtime)
    get_target_property(package_version ampc_runtime VERSION)
  endif()
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/ampcConfigVersion.cmake
    VERSION ${package_version} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/ampcConfig.cmake
    ${PROJECT_BINARY_DIR}/ampcConfigVersion.cmake
    DESTINATION ${cmake_dir} COMPONENT ampc_compiler)
endfunction()
