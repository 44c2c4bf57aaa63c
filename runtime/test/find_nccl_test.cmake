# ctest ampc_runtime.find_nccl: ampc_find_nccl (cmake/AmpcFindNccl.cmake)
# against fake installs, so the search runs without NCCL or a GPU:
#   1. a root with include/nccl.h and lib/libnccl.so wins; the wheel is not
#      asked;
#   2. without one, the nvidia-nccl wheel of PYTHON gives both (its layout:
#      nvidia/nccl/include/nccl.h, nvidia/nccl/lib/libnccl.so.2 and no
#      libnccl.so);
#   3. with neither, both stay NOTFOUND.
# -DMODULE=<AmpcFindNccl.cmake> -DWORK=<scratch folder> -DPYTHON=<python3>
include(${MODULE})
set(CMAKE_FIND_LIBRARY_PREFIXES lib)
set(CMAKE_FIND_LIBRARY_SUFFIXES .so)
# Only the folders named: not the toolkit this machine has on its PATH.
set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH OFF)
set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH OFF)
set(CMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH OFF)

file(REMOVE_RECURSE ${WORK})
set(root ${WORK}/root)
set(site ${WORK}/site)
file(WRITE ${root}/include/nccl.h "")
file(WRITE ${root}/lib/libnccl.so "")
file(WRITE ${site}/nvidia/nccl/include/nccl.h "")
file(WRITE ${site}/nvidia/nccl/lib/libnccl.so.2 "")

function(expect what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "FAIL: ${what}: '${got}', not '${want}'")
  endif()
endfunction()

macro(search)
  unset(AMPC_NCCL_INCLUDE_DIR CACHE)
  unset(AMPC_NCCL_LIBRARY CACHE)
  unset(AMPC_NCCL_INCLUDE_DIR)
  unset(AMPC_NCCL_LIBRARY)
  ampc_find_nccl(${ARGN})
endmacro()

set(ENV{PYTHONPATH} ${site})
search(PYTHON ${PYTHON} ROOTS ${root})
expect("a root: nccl.h" "${AMPC_NCCL_INCLUDE_DIR}" "${root}/include")
expect("a root: libnccl" "${AMPC_NCCL_LIBRARY}" "${root}/lib/libnccl.so")
expect("a root: the wheel" "${AMPC_NCCL_WHEEL}" "")

search(PYTHON ${PYTHON} ROOTS ${WORK}/nothing)
expect("the wheel" "${AMPC_NCCL_WHEEL}" "${site}/nvidia/nccl")
expect("the wheel: nccl.h" "${AMPC_NCCL_INCLUDE_DIR}"
  "${site}/nvidia/nccl/include")
expect("the wheel: libnccl" "${AMPC_NCCL_LIBRARY}"
  "${site}/nvidia/nccl/lib/libnccl.so.2")

set(ENV{PYTHONPATH} ${WORK}/nothing)
search(PYTHON ${PYTHON} ROOTS ${WORK}/nothing)
if(AMPC_NCCL_INCLUDE_DIR OR AMPC_NCCL_LIBRARY)
  # A real nvidia-nccl wheel of this PYTHON would be found: not a failure.
  if(NOT AMPC_NCCL_WHEEL)
    message(FATAL_ERROR "FAIL: nothing to find, found "
      "'${AMPC_NCCL_INCLUDE_DIR}' and '${AMPC_NCCL_LIBRARY}'")
  endif()
endif()
message(STATUS "OK: NCCL from a root, from the nvidia-nccl wheel, or not at all")
