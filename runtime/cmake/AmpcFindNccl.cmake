# ampc_find_nccl(PYTHON <python> [ROOTS <dir>...] [HINT_INCLUDE <dir>...]
#                [HINT_LIB <dir>...])
#
# Sets AMPC_NCCL_INCLUDE_DIR (the folder of nccl.h) and AMPC_NCCL_LIBRARY
# (libnccl.so or libnccl.so.2) in the cache: first under ROOTS/{include,lib,
# lib64} and the hints (the CUDA toolkit's folders; this machine kind's
# toolkit ships NCCL), then, where that finds nothing, in the nvidia-nccl
# wheel of PYTHON: site-packages/nvidia/nccl/{include,lib}, which is where a
# PyTorch machine with a stock toolkit has NCCL. AMPC_NCCL_WHEEL is the
# wheel's folder when it was asked, else empty.
function(ampc_find_nccl)
  cmake_parse_arguments(A "" "PYTHON" "ROOTS;HINT_INCLUDE;HINT_LIB" ${ARGN})
  find_path(AMPC_NCCL_INCLUDE_DIR nccl.h HINTS ${A_HINT_INCLUDE}
    PATHS ${A_ROOTS} PATH_SUFFIXES include)
  find_library(AMPC_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${A_HINT_LIB}
    PATHS ${A_ROOTS} PATH_SUFFIXES lib lib64)
  set(AMPC_NCCL_WHEEL "" PARENT_SCOPE)
  if(AMPC_NCCL_INCLUDE_DIR AND AMPC_NCCL_LIBRARY OR NOT A_PYTHON)
    return()
  endif()
  execute_process(
    COMMAND ${A_PYTHON} -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE wheel OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT IS_DIRECTORY "${wheel}")
    return()
  endif()
  set(AMPC_NCCL_WHEEL "${wheel}" PARENT_SCOPE)
  # Both from the wheel: a header of one NCCL and a library of another
  # would not match.
  unset(AMPC_NCCL_INCLUDE_DIR CACHE)
  unset(AMPC_NCCL_LIBRARY CACHE)
  find_path(AMPC_NCCL_INCLUDE_DIR nccl.h PATHS ${wheel}/include
    NO_DEFAULT_PATH)
  find_library(AMPC_NCCL_LIBRARY NAMES nccl libnccl.so.2 PATHS ${wheel}/lib
    NO_DEFAULT_PATH)
endfunction()
