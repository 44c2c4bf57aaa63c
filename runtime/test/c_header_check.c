/* runtime.h and its kernel table compile as C99 (the ABI is C): built with
 * -std=c99 -pedantic -Werror as part of the runtime tests. */
#include "ampc/runtime.h"

/* The enumerated types are int32_t in C, whatever value is stored. */
typedef char ampc_dtype_is_32_bits[sizeof(ampc_dtype) == 4 ? 1 : -1];
typedef char ampc_status_is_32_bits[sizeof(ampc_status) == 4 ? 1 : -1];

/* Every table kernel is declared: taking its addresses is a compile error
 * for a row without a declaration. */
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  (void (*)(void))&ampc_##NAME##_fwd, (void (*)(void))&ampc_##NAME##_bwd,
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  (void (*)(void))&ampc_##NAME##_fwd, (void (*)(void))&ampc_##NAME##_bwd,
#define AMPC_REDUCTION_KERNEL(NAME, OP)                                        \
  (void (*)(void))&ampc_##NAME##_fwd, (void (*)(void))&ampc_##NAME##_bwd,
#define AMPC_SOFTMAX_KERNEL(NAME, LOG)                                         \
  (void (*)(void))&ampc_##NAME##_fwd, (void (*)(void))&ampc_##NAME##_bwd,
#define AMPC_POOL_KERNEL(NAME, IS_MAX)                                         \
  (void (*)(void))&ampc_##NAME##_fwd, (void (*)(void))&ampc_##NAME##_bwd,
#define AMPC_CUSTOM_KERNEL(NAME)                                               \
  (void (*)(void))&ampc_##NAME##_fwd, (void (*)(void))&ampc_##NAME##_bwd,
#define AMPC_ENTRY(NAME) (void (*)(void))&ampc_##NAME,
void (*const ampc_c_header_check_kernels[])(void) = {
#include "ampc/runtime_kernels.inc"
    0};
