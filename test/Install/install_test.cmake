# The ctests of test/CMakeLists.txt that use an installed ampc.
#
# ampc.install (no INPUT): installs the whole build into a fresh prefix,
# checks what landed there, runs the installed `ampc` and `ampc-opt`, builds
# the runtime's consumer project against it with MLIR hidden, then
# configures and builds the out-of-tree tool of this folder (CMakeLists.txt,
# amp-embed.cpp) against the installed package, and checks its output on
# scale.mlir (arith/math ops) with FileCheck.
# ampc.install.linalg (INPUT=dense.mlir): the tool that ampc.install built,
# on linalg ops, checked the same way.
# Inputs: BUILD_DIR, WORK_DIR, SOURCE_DIR (this folder), EXAMPLE (a .tg
# file), GENERATOR, CXX_COMPILER, CXX_FLAGS, EXE_LINKER_FLAGS, MLIR_DIR,
# FILECHECK; INPUT.
set(prefix ${WORK_DIR}/prefix)
set(tool ${WORK_DIR}/build/amp-embed)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# `out` of the command is checked against the lines of `checkfile` with
# `prefix` (CHECK, PIPE); `tag` names the output file.
function(run_checked checkfile prefix low tag)
  run(${ARGN})
  get_filename_component(name ${checkfile} NAME_WE)
  set(output ${WORK_DIR}/${name}-${tag}.txt)
  file(WRITE ${output} "${out}")
  run(${FILECHECK} ${checkfile} --check-prefix=${prefix} -DLOW=${low}
      --input-file ${output} --dump-input=fail)
endfunction()

# Each input, with both low types.
function(check_tool input)
  foreach(low f16 bf16)
    run_checked(${input} CHECK ${low} ${low} ${tool} ${input} ${low})
  endforeach()
endfunction()

if(INPUT)
  if(NOT EXISTS ${tool})
    message(FATAL_ERROR "${tool} is missing: ampc.install builds it")
  endif()
  check_tool(${SOURCE_DIR}/${INPUT})
  message(STATUS "amp-embed's output on ${INPUT} checked")
  return()
endif()

file(REMOVE_RECURSE ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(f bin/ampc bin/ampc-opt include/ampc/ampc.h include/ampc/InitAll.h
          include/ampc/Transforms/AMPPolicy.h include/ampc/Transforms/Passes.h.inc
          include/ampc/Dialect/TG/TGOps.h.inc include/ampc/runtime.h
          lib/cmake/ampc/ampcConfig.cmake lib/cmake/ampc/ampcCompilerTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()

# The installed drivers run from the prefix (they find the runtime there).
run(${prefix}/bin/ampc ${EXAMPLE} --amp=fp16 --emit=mlir --locations=false)
if(NOT out MATCHES "tg.cast")
  message(FATAL_ERROR "installed ampc: no cast in --amp=fp16 output:\n${out}")
endif()
run(${prefix}/bin/ampc-opt --help)
if(NOT out MATCHES "ampc-auto-mixed-precision")
  message(FATAL_ERROR "installed ampc-opt does not list the AMP pass")
endif()

# Where MLIR cannot be found (a GPU machine building emitted code), the same
# prefix still gives ampc::runtime: the runtime's own consumer project.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/../../runtime/test/package_consumer
    -B ${WORK_DIR}/runtime-only -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}" -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/runtime-only)
run(${WORK_DIR}/runtime-only/consumer)

# The out-of-tree tool: find_package(ampc COMPONENTS compiler), nothing else.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
    -DCMAKE_PREFIX_PATH=${prefix} -DMLIR_DIR=${MLIR_DIR})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
check_tool(${SOURCE_DIR}/scale.mlir)
# registerAllPasses() and the textual pipelines from the installed package.
set(scale ${SOURCE_DIR}/scale.mlir)
run_checked(${scale} PIPE bf16 pass ${tool} ${scale}
  "func.func(ampc-auto-mixed-precision{low-type=bf16 policy=reference})")
run_checked(${scale} PIPE bf16 pipeline ${tool} ${scale}
  "ampc-pipeline{amp=bf16 amp-policy=reference}")
message(STATUS "amp-embed built against ${prefix}; its output checked")
