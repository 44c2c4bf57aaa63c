# Installs the runtime component into a fresh prefix, then configures, builds
# and runs test/package_consumer against it.
# Inputs: BUILD_DIR, WORK_DIR, CONSUMER_DIR, GENERATOR, and the parent
# build's CONSUMER_CXX_FLAGS / CONSUMER_LINKER_FLAGS (so a sanitized build's
# consumer links the sanitizer runtimes too).
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --component ampc_runtime
    --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINKER_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
# The runtime alone has no compiler component: a project that requires it
# fails to configure, with the reason.
file(WRITE ${WORK_DIR}/needs-compiler/CMakeLists.txt
  "cmake_minimum_required(VERSION 3.20)\n"
  "project(needs_compiler LANGUAGES NONE)\n"
  "find_package(ampc REQUIRED COMPONENTS compiler)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/needs-compiler
    -B ${WORK_DIR}/needs-compiler/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "holds the ampc runtime alone")
  message(FATAL_ERROR "COMPONENTS compiler against the runtime alone: "
                      "exit ${rc}\n${out}")
endif()
message(STATUS "package consumer built and ran against ${WORK_DIR}/prefix")
