/*===- ampc/runtime.h - The ampc runtime C ABI -------------------*- C -*-===*
 *
 * The only header the compiler (and code it emits) knows about the runtime.
 *
 * Conventions (see docs/runtime.md):
 *  - Every entry point except ampc_runtime_version, ampc_last_error,
 *    ampc_status_string and ampc_lr_schedule_factor (a double, NaN on
 *    failure) returns an ampc_status; on failure ampc_last_error() returns
 *    a description (thread-local).
 *  - Every kernel takes the context first, then its outputs, then its inputs,
 *    then attributes. A tensor is four arguments: a device pointer, its dtype,
 *    a host array of dims (int64) and the rank (int32). Tensors are dense,
 *    row-major and contiguous; images are NCHW, conv weights OIHW.
 *  - Every float kernel takes each tensor's dtype separately and computes in
 *    f32 (f32 accumulation), so casts can be fused into loads and stores.
 *  - In *_bwd functions a gradient output may be NULL when it is not needed;
 *    gradient outputs are overwritten, never accumulated.
 *  - Device-resident scalars (found_inf, loss scale, step counts) are rank-0
 *    tensors in device memory; nothing in a step synchronises with the host.
 *
 *===----------------------------------------------------------------------===*/
#ifndef AMPC_RUNTIME_H
#define AMPC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#define AMPC_RUNTIME_VERSION_MAJOR 1
#define AMPC_RUNTIME_VERSION_MINOR 9
#define AMPC_RUNTIME_VERSION_PATCH 0
/// MAJOR * 10000 + MINOR * 100 + PATCH of this header.
#define AMPC_RUNTIME_VERSION                                                   \
  (AMPC_RUNTIME_VERSION_MAJOR * 10000 + AMPC_RUNTIME_VERSION_MINOR * 100 +     \
   AMPC_RUNTIME_VERSION_PATCH)

/// Largest tensor rank any kernel accepts.
#define AMPC_MAX_RANK 8

/// Most float attributes a table kernel (ampc/runtime_kernels.inc) takes.
#define AMPC_MAX_KERNEL_ATTRS 4

/* Helpers for the rows of ampc/runtime_kernels.inc: a row's attributes are a
 * count N and a parenthesised list of names. AMPC_KERNEL_ATTR_PARAMS gives
 * the trailing parameters (", float a, float b"), AMPC_KERNEL_ATTR_VALUES
 * the names as a list ("a, b"), AMPC_KERNEL_ATTR_NAMES them as strings
 * ("\"a\", \"b\""); each is empty for N = 0. */
#define AMPC_PP_CAT(a, b) AMPC_PP_CAT_(a, b)
#define AMPC_PP_CAT_(a, b) a##b
#define AMPC_KERNEL_ATTR_PARAMS(N, ATTRS) AMPC_PP_CAT(AMPC_ATTR_PARAMS_, N) ATTRS
#define AMPC_KERNEL_ATTR_VALUES(N, ATTRS) AMPC_PP_CAT(AMPC_ATTR_VALUES_, N) ATTRS
#define AMPC_KERNEL_ATTR_NAMES(N, ATTRS) AMPC_PP_CAT(AMPC_ATTR_NAMES_, N) ATTRS
#define AMPC_ATTR_PARAMS_0()
#define AMPC_ATTR_PARAMS_1(a) , float a
#define AMPC_ATTR_PARAMS_2(a, b) , float a, float b
#define AMPC_ATTR_PARAMS_3(a, b, c) , float a, float b, float c
#define AMPC_ATTR_PARAMS_4(a, b, c, d) , float a, float b, float c, float d
#define AMPC_ATTR_VALUES_0()
#define AMPC_ATTR_VALUES_1(a) a
#define AMPC_ATTR_VALUES_2(a, b) a, b
#define AMPC_ATTR_VALUES_3(a, b, c) a, b, c
#define AMPC_ATTR_VALUES_4(a, b, c, d) a, b, c, d
#define AMPC_ATTR_NAMES_0()
#define AMPC_ATTR_NAMES_1(a) #a
#define AMPC_ATTR_NAMES_2(a, b) #a, #b
#define AMPC_ATTR_NAMES_3(a, b, c) #a, #b, #c
#define AMPC_ATTR_NAMES_4(a, b, c, d) #a, #b, #c, #d

#if defined(_WIN32)
#define AMPC_API __declspec(dllexport)
#else
#define AMPC_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Enumerations. Every enumerated type of this ABI is 32 bits wide whatever
 * the compiler: in C it is an int32_t typedef (the enumerators name its
 * values), in C++ an enumeration with the fixed underlying type int32_t, so
 * every int32_t is one of its values. A caller may pass any integer where an
 * enumerated parameter is declared; the runtime checks it before use (an
 * unknown dtype is AMPC_ERROR_UNSUPPORTED_DTYPE, any other unknown value
 * AMPC_ERROR_INVALID_ARGUMENT), and no value is undefined behaviour. */
#ifdef __cplusplus
#define AMPC_ENUM(name) enum name : int32_t
#else
#define AMPC_ENUM(name)                                                        \
  typedef int32_t name;                                                        \
  enum name##_values
#endif

/// Result of every entry point.
AMPC_ENUM(ampc_status) {
  AMPC_OK = 0,
  AMPC_ERROR_INVALID_ARGUMENT = 1,  ///< A bad attribute, count or enum value.
  AMPC_ERROR_NULL_POINTER = 2,      ///< A required pointer was NULL.
  AMPC_ERROR_SHAPE_MISMATCH = 3,    ///< Shapes or sizes do not fit together.
  AMPC_ERROR_UNSUPPORTED_DTYPE = 4, ///< Unknown dtype or not valid for this op.
  AMPC_ERROR_OUT_OF_MEMORY = 5,
  AMPC_ERROR_BACKEND_UNAVAILABLE = 6, ///< The backend was not built in.
  AMPC_ERROR_NO_DEVICE = 7,           ///< No usable GPU or driver.
  AMPC_ERROR_DEVICE = 8,              ///< A CUDA / cuBLASLt call failed.
  AMPC_ERROR_INTERNAL = 9
};

/// Element types. Values are stable across versions.
AMPC_ENUM(ampc_dtype) {
  AMPC_F32 = 0,
  AMPC_F16 = 1,  ///< IEEE binary16.
  AMPC_BF16 = 2, ///< bfloat16 (upper half of an f32).
  AMPC_I32 = 3,
  AMPC_I64 = 4,
  AMPC_BOOL = 5, ///< One byte, 0 or 1.
  AMPC_F64 = 6,  ///< IEEE binary64 (1.8).
  AMPC_U8 = 7,   ///< Unsigned 8-bit integer (1.8).
  AMPC_I8 = 8,   ///< Signed 8-bit integer (1.8).
  AMPC_I16 = 9   ///< Signed 16-bit integer (1.8).
};

AMPC_ENUM(ampc_backend) { AMPC_BACKEND_CPU = 0, AMPC_BACKEND_CUDA = 1 };

AMPC_ENUM(ampc_memcpy_kind) {
  AMPC_MEMCPY_HOST_TO_DEVICE = 0,
  AMPC_MEMCPY_DEVICE_TO_HOST = 1,
  AMPC_MEMCPY_DEVICE_TO_DEVICE = 2,
  AMPC_MEMCPY_HOST_TO_HOST = 3
};

/// Activation applied by GEMM-based kernels after alpha*A*B + beta*C + bias.
AMPC_ENUM(ampc_epilogue) {
  AMPC_EPILOGUE_NONE = 0,
  AMPC_EPILOGUE_RELU = 1,
  AMPC_EPILOGUE_GELU = 2,     ///< Exact (erf) GELU.
  AMPC_EPILOGUE_GELU_TANH = 3 ///< tanh-approximated GELU.
};

/// The `approximate` attribute of gelu.
AMPC_ENUM(ampc_gelu_approximate) { AMPC_GELU_NONE = 0, AMPC_GELU_TANH = 1 };

/// A runtime context: one backend, one device, one stream (CUDA).
typedef struct ampc_context_impl *ampc_context;
/// One contiguous device allocation for the compiler's planned buffers.
typedef struct ampc_arena_impl *ampc_arena;

/*===------------------------------------------------------------------===*
 * Version, errors
 *===------------------------------------------------------------------===*/

/// The version the library was built as (AMPC_RUNTIME_VERSION encoding).
AMPC_API uint32_t ampc_runtime_version(void);
/// Text describing the last failure on this thread ("" if none).
AMPC_API const char *ampc_last_error(void);
/// Sets the text ampc_last_error() returns on this thread to `message` (NULL
/// clears it; at most 1023 bytes are kept) and returns `status` unchanged,
/// whatever its value, so that code outside the runtime (the code ampc
/// --emit=cpp writes) can fail with `return ampc_set_last_error(status,
/// "NAME_load: ...");` like an entry point of the runtime (1.4).
AMPC_API ampc_status ampc_set_last_error(ampc_status status,
                                         const char *message);
/// A static name for a status code.
AMPC_API const char *ampc_status_string(ampc_status status);
/// Size in bytes of one element of `dtype`.
AMPC_API ampc_status ampc_dtype_size(ampc_dtype dtype, size_t *bytes);

/*===------------------------------------------------------------------===*
 * Context and memory
 *===------------------------------------------------------------------===*/

/// Sets *available to 1 when contexts of `backend` can be created here.
AMPC_API ampc_status ampc_backend_available(ampc_backend backend,
                                            int32_t *available);
/// Creates a context on `backend` (`device` is the CUDA ordinal; ignored on
/// CPU). CUDA without a usable GPU or driver fails with AMPC_ERROR_NO_DEVICE,
/// a CPU-only build with AMPC_ERROR_BACKEND_UNAVAILABLE.
AMPC_API ampc_status ampc_context_create(ampc_backend backend, int32_t device,
                                         ampc_context *ctx);
/// Destroys a context (waits for its work); destroy its arenas and free its
/// allocations first. NULL is accepted.
AMPC_API ampc_status ampc_context_destroy(ampc_context ctx);
/// The backend a context runs on.
AMPC_API ampc_status ampc_context_backend(ampc_context ctx,
                                          ampc_backend *backend);
/// Writes into `text` (`size` bytes, NUL-terminated, cut to fit) one line
/// naming the units the context's GEMMs and convolutions run on (1.6): on a
/// CPU context the most capable instruction set oneDNN may use and its
/// version ("avx512_core_bf16 (oneDNN 2.6.3)"), once GEMMs have run with the
/// implementations they use ("avx512_core_bf16 (oneDNN 2.6.3; gemm
/// brg:avx512_core, brg:avx512_core_bf16)"), or "openblas (REASON)" where
/// oneDNN is not used; "cuBLASLt" on a CUDA context. `text` may be NULL when
/// `size` is 0.
AMPC_API ampc_status ampc_context_engine(ampc_context ctx, char *text,
                                         size_t size);
/// (1.9) Writes into `text` (`size` bytes, NUL-terminated, cut to fit) the
/// implementations the context's GEMMs and convolutions have run on since
/// the previous call of this function (or since the context was made),
/// comma-separated in the order first used, with ampc_context_engine's
/// names ("gemm:jit", "brg:avx512_core_amx_bf16", "openblas", "jit:avx2"),
/// and "direct:ISA" for the runtime's own direct convolutions and "f64" for
/// f64 products; "" when none ran. Then forgets them. Planning runs
/// nothing and notes nothing. `ampc run --profile` names each call's
/// engines with it. "" on CUDA. `text` may be NULL when `size` is 0.
AMPC_API ampc_status ampc_context_take_engines(ampc_context ctx, char *text,
                                               size_t size);
/// Planning (1.8; docs/runtime.md, "Primitives made before the first
/// step"). Between ampc_plan_begin and ampc_plan_end a context accepts, from
/// outside the runtime, only the entry points of ampc/runtime_kernels.inc's
/// AMPC_PLANNED_ENTRY rows (GEMMs and convolutions) and ampc_malloc,
/// ampc_free and ampc_arena_create; any other fails with
/// AMPC_ERROR_INVALID_ARGUMENT. The planned ones check their arguments as
/// ever, then make the primitives their GEMMs and convolutions would use
/// (the CPU backend's oneDNN primitives, by problem) and return without
/// reading or writing any tensor data; a later call of the same problem
/// reuses the primitive. On CUDA planning makes nothing. A failed call
/// leaves the context planning until ampc_plan_end. ampc_plan_begin while
/// planning and ampc_plan_end while not fail with
/// AMPC_ERROR_INVALID_ARGUMENT; ampc_context_destroy ends planning.
AMPC_API ampc_status ampc_plan_begin(ampc_context ctx);
AMPC_API ampc_status ampc_plan_end(ampc_context ctx);
/// The number of GEMM and convolution problems the context's backend has
/// made a primitive for (or found that its engine has none for) so far:
/// 0 on CUDA. Not while planning.
AMPC_API ampc_status ampc_context_primitives(ampc_context ctx,
                                             int64_t *count);
/// The context's CUDA stream (cudaStream_t) or NULL on CPU.
AMPC_API ampc_status ampc_context_stream(ampc_context ctx, void **stream);
/// Blocks the host until all work queued on the context has finished.
AMPC_API ampc_status ampc_synchronize(ampc_context ctx);

/// Allocates `bytes` of device memory (256-byte aligned) for state.
AMPC_API ampc_status ampc_malloc(ampc_context ctx, size_t bytes, void **ptr);
/// Frees memory from ampc_malloc. NULL is accepted.
AMPC_API ampc_status ampc_free(ampc_context ctx, void *ptr);
/// Stream-ordered copy of `bytes` bytes. Copies to the host complete before
/// the call returns; others are asynchronous on CUDA.
AMPC_API ampc_status ampc_memcpy(ampc_context ctx, void *dst, const void *src,
                                 size_t bytes, ampc_memcpy_kind kind);
/// Sets `bytes` bytes of device memory to the byte `value`.
AMPC_API ampc_status ampc_memset(ampc_context ctx, void *ptr, int32_t value,
                                 size_t bytes);
/*-- Reads that do not block a step (docs/runtime.md, "Asynchronous reads") --*/

/// Allocates `bytes` of host memory for ampc_read_async: page-locked on CUDA
/// (so the copy into it runs without waiting), ordinary memory on CPU.
AMPC_API ampc_status ampc_host_alloc(ampc_context ctx, size_t bytes,
                                     void **ptr);
/// Frees memory from ampc_host_alloc (waits for the context's work first).
/// NULL is accepted.
AMPC_API ampc_status ampc_host_free(ampc_context ctx, void *ptr);
/// Queues one stream-ordered device-to-host transfer of `count` (1 to 8)
/// device ranges srcs[i] of bytes[i] bytes (256 bytes in all at most), packed
/// one after another into `dst` (memory from ampc_host_alloc), and returns
/// without waiting. *ticket names the read for ampc_read_wait; the 8 most
/// recent reads can be waited for. On CPU the copy is done at once.
AMPC_API ampc_status ampc_read_async(ampc_context ctx, void *dst,
                                     const void *const *srcs,
                                     const size_t *bytes, int32_t count,
                                     uint64_t *ticket);
/// The device address of check word `check` (a uint32: 0xFFFFFFFF, or the
/// smallest site recorded; see ampc_check_read), so a loop can read it with
/// ampc_read_async together with a step's results.
AMPC_API ampc_status ampc_check_word(ampc_context ctx, int32_t check,
                                     const void **word);
/// Blocks the host until the read `ticket` has landed in its host memory.
AMPC_API ampc_status ampc_read_wait(ampc_context ctx, uint64_t ticket);
/// The number of times the context has blocked (or, on CPU, would on an
/// asynchronous backend block) the host so far: ampc_synchronize, ampc_free,
/// ampc_host_free, device-to-host and host-to-host ampc_memcpy,
/// ampc_read_wait, ampc_check_read, and waits inside the backend (CUDA
/// scratch without memory pools). A training step counts 0.
AMPC_API ampc_status ampc_host_syncs(ampc_context ctx, uint64_t *count);

/*-- Copies the device decides on (docs/runtime.md, "Predicated copies") --*/

/// Queues `count` stream-ordered device-to-device copies srcs[i] -> dsts[i]
/// of bytes[i] bytes that happen only when the f32 at `flag` (device memory,
/// e.g. a step's found_inf) is nonzero once the work queued before has run:
/// the device reads the flag, the host never waits, and when the flag is 0
/// nothing but the flag is read. On CPU the flag is read and the copies are
/// made at once. Ranges of 0 bytes are skipped; ranges must not overlap.
AMPC_API ampc_status ampc_copy_if_flag(ampc_context ctx, const void *flag,
                                       int32_t count, void *const *dsts,
                                       const void *const *srcs,
                                       const int64_t *bytes);

/// Creates an arena of `bytes` bytes whose base is 256-byte aligned; the
/// compiler places its planned buffers at offsets from the base.
AMPC_API ampc_status ampc_arena_create(ampc_context ctx, size_t bytes,
                                       ampc_arena *arena);
/// The arena's base device pointer.
AMPC_API ampc_status ampc_arena_base(ampc_arena arena, void **base);
/// The arena's size in bytes.
AMPC_API ampc_status ampc_arena_size(ampc_arena arena, size_t *bytes);
/// Destroys an arena (before its context). NULL is accepted.
AMPC_API ampc_status ampc_arena_destroy(ampc_arena arena);

/*===------------------------------------------------------------------===*
 * Initialisation and casts
 *===------------------------------------------------------------------===*/

/// y[i] = value (rounded to y's dtype) for `numel` elements. Any dtype.
AMPC_API ampc_status ampc_fill(ampc_context ctx, void *y, ampc_dtype y_dtype,
                               int64_t numel, double value);
/// y[i] = low + (high - low) * u_i, u_i in [0, 1) from Philox4x32-10 keyed by
/// `seed`; element i uses counter (i / 4, offset) lane i % 4, so the bits are
/// the same on every backend and independent of how the work is split.
AMPC_API ampc_status ampc_init_uniform(ampc_context ctx, void *y,
                                       ampc_dtype y_dtype, int64_t numel,
                                       uint64_t seed, uint64_t offset,
                                       double low, double high);
/// y[i] = mean + std * z_i, z_i standard normal (Box-Muller in f64 on the
/// Philox stream of ampc_init_uniform).
AMPC_API ampc_status ampc_init_normal(ampc_context ctx, void *y,
                                      ampc_dtype y_dtype, int64_t numel,
                                      uint64_t seed, uint64_t offset,
                                      double mean, double std);

/// y = cast(x): float<->float with IEEE round-to-nearest-even (overflow to
/// inf, NaN kept quiet); int/bool<->any as C conversions (float->int
/// truncates). Shapes must have the same element count.
AMPC_API ampc_status ampc_cast_fwd(ampc_context ctx, void *y,
                                   ampc_dtype y_dtype, const int64_t *y_shape,
                                   int32_t y_rank, const void *x,
                                   ampc_dtype x_dtype, const int64_t *x_shape,
                                   int32_t x_rank);
/// dx = cast(dy) back to the input dtype.
AMPC_API ampc_status ampc_cast_bwd(ampc_context ctx, void *dx,
                                   ampc_dtype dx_dtype, const int64_t *dx_shape,
                                   int32_t dx_rank, const void *dy,
                                   ampc_dtype dy_dtype, const int64_t *dy_shape,
                                   int32_t dy_rank);

/*===------------------------------------------------------------------===*
 * Linear algebra
 *===------------------------------------------------------------------===*/

/// Row-major strided-batched GEMM: for each batch i < `batch`,
///   C_i = epilogue(alpha * op(A_i) * op(B_i) + beta * C_i + bias)
/// op(A_i) is m x k (A_i is k x m when trans_a), op(B_i) is k x n; lda, ldb,
/// ldc are row strides in elements; stride_* are batch strides in elements
/// (0 broadcasts one matrix over the batch). `bias` (n elements, may be NULL)
/// is added to every row. A and B may be f32/f16/bf16 (products are exact in
/// f32, accumulation f32), C f32/f16/bf16. When beta == 0, C is not read.
AMPC_API ampc_status ampc_gemm(ampc_context ctx, void *c, ampc_dtype c_dtype,
                               const void *a, ampc_dtype a_dtype, const void *b,
                               ampc_dtype b_dtype, const void *bias,
                               ampc_dtype bias_dtype, int64_t batch, int64_t m,
                               int64_t n, int64_t k, int32_t trans_a,
                               int32_t trans_b, int64_t lda, int64_t ldb,
                               int64_t ldc, int64_t stride_a, int64_t stride_b,
                               int64_t stride_c, float alpha, float beta,
                               ampc_epilogue epilogue);

/// A matrix product over strided views of row-major tensors (the call the
/// compiler makes for transposes and permutes folded into a GEMM): for
/// o < outer and i < batch, Y_oi = A_oi * B_oi, where matrix (o, i) of X
/// starts at element o * outer_stride_x + i * stride_x of X, A_oi is [m, k]
/// with rows lda apart (stored [k, m] when trans_a), B_oi is [k, n] with
/// rows ldb apart (stored [n, k] when trans_b) and Y_oi is [m, n] with rows
/// ldy apart. f32 accumulation, one rounding into y's type (as ampc_gemm
/// with alpha 1, beta 0). Every matrix must lie inside its tensor (shapes
/// as for the other tensor arguments): AMPC_ERROR_SHAPE_MISMATCH otherwise.
AMPC_API ampc_status ampc_matmul_strided(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *a, ampc_dtype a_dtype, const int64_t *a_shape,
    int32_t a_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, int64_t outer, int64_t outer_stride_a,
    int64_t outer_stride_b, int64_t outer_stride_y, int64_t batch, int64_t m,
    int64_t n, int64_t k, int32_t trans_a, int32_t trans_b, int64_t lda,
    int64_t ldb, int64_t ldy, int64_t stride_a, int64_t stride_b,
    int64_t stride_y);

/// y = torch.matmul(a, b): 1-D operands are promoted as in PyTorch, batch
/// dims broadcast.
AMPC_API ampc_status ampc_matmul_fwd(ampc_context ctx, void *y,
                                     ampc_dtype y_dtype, const int64_t *y_shape,
                                     int32_t y_rank, const void *a,
                                     ampc_dtype a_dtype, const int64_t *a_shape,
                                     int32_t a_rank, const void *b,
                                     ampc_dtype b_dtype, const int64_t *b_shape,
                                     int32_t b_rank);
/// da = dy * b^T, db = a^T * dy, each summed over the batch dims it was
/// broadcast along.
AMPC_API ampc_status ampc_matmul_bwd(
    ampc_context ctx, void *da, ampc_dtype da_dtype, const int64_t *da_shape,
    int32_t da_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *a, ampc_dtype a_dtype,
    const int64_t *a_shape, int32_t a_rank, const void *b, ampc_dtype b_dtype,
    const int64_t *b_shape, int32_t b_rank);

/// y = epilogue(x * w^T + bias): x [..., in], w [out, in], bias [out] or
/// NULL, y [..., out].
AMPC_API ampc_status ampc_linear_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, ampc_epilogue epilogue);
/// dx = dy * w, dw = dy^T * x, dbias = sum of dy over rows (for
/// epilogue NONE only: pass the gradient after the activation's backward).
AMPC_API ampc_status ampc_linear_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank);

/// F.conv2d: x [N, C, H, W], w [O, C/groups, KH, KW], bias [O] or NULL,
/// y [N, O, HO, WO]. Implemented as im2col + GEMM on both backends. A call
/// with an f64 tensor computes in f64 (CPU backend: im2col / col2im in f64
/// and dgemm, the same bits at every thread count; the CUDA backend returns
/// AMPC_ERROR_UNSUPPORTED_DTYPE), as do the other convolutions below.
AMPC_API ampc_status ampc_conv2d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
/// Gradients of ampc_conv2d_fwd with respect to x, w and bias.
AMPC_API ampc_status ampc_conv2d_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank,
    int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);

/// F.conv_transpose2d: x [N, C_in, H, W], w [C_in, C_out/groups, KH, KW],
/// bias [C_out] or NULL, y [N, C_out, HO, WO] (HO and WO carry the output
/// padding). The input gradient of the conv2d with weight w from y's shape to
/// x's, on both backends (GEMM + col2im), accumulated in f32 (f64 with an
/// f64 tensor).
AMPC_API ampc_status ampc_conv_transpose2d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);

/* Convolutions over 1 and 3 spatial dims and their transposed forms
   (PyTorch's fp16 autocast list): the im2col + GEMM core of conv2d, a 1-D
   convolution a 2-D one of height 1. Layouts as PyTorch's: x [N, C, L] /
   [N, C, D, H, W], w [O, C/groups, K] / [O, C/groups, KD, KH, KW] (a
   transposed convolution's w [C_in, C_out/groups, k...]), bias [O] or NULL.
   Per-dim attributes in (D, H, W) order. A transposed convolution's output
   padding is carried by y's shape. Accumulated in f32 (f64 with an f64
   tensor), rounded once. */
AMPC_API ampc_status ampc_conv1d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride,
    int64_t padding, int64_t dilation, int64_t groups);
/// Gradients of ampc_conv1d_fwd with respect to x, w and bias.
AMPC_API ampc_status ampc_conv1d_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank,
    int64_t stride, int64_t padding, int64_t dilation, int64_t groups);
AMPC_API ampc_status ampc_conv3d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_d,
    int64_t stride_h, int64_t stride_w, int64_t pad_d, int64_t pad_h,
    int64_t pad_w, int64_t dilation_d, int64_t dilation_h, int64_t dilation_w,
    int64_t groups);
/// Gradients of ampc_conv3d_fwd with respect to x, w and bias.
AMPC_API ampc_status ampc_conv3d_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank,
    int64_t stride_d, int64_t stride_h, int64_t stride_w, int64_t pad_d,
    int64_t pad_h, int64_t pad_w, int64_t dilation_d, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
AMPC_API ampc_status ampc_conv_transpose1d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride,
    int64_t padding, int64_t dilation, int64_t groups);
AMPC_API ampc_status ampc_conv_transpose3d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_d,
    int64_t stride_h, int64_t stride_w, int64_t pad_d, int64_t pad_h,
    int64_t pad_w, int64_t dilation_d, int64_t dilation_h, int64_t dilation_w,
    int64_t groups);

/* The GEMM-plus-add family and prelu (PyTorch's fp16 autocast list). */

/* y = beta * c + alpha * (a, b's product), c broadcast to y's shape (not
   read when beta is 0). One GEMM with beta accumulation into an f32
   accumulator (y itself when y is f32) that first holds beta * c; the
   result is rounded once to y's dtype. Products: addmm a [m, k] @ b [k, n]
   -> [m, n]; baddbmm a [B, m, k] @ b [B, k, n] -> [B, m, n] (one batched
   GEMM); addbmm the sum over B of the same -> [m, n] (B GEMMs accumulating);
   addmv a [n, m] @ v [m] -> [n]; addr the outer product u [n] x v [m] ->
   [n, m]. With an f64 operand (both backends: dgemm on the CPU, cuBLASLt
   in f64 on CUDA) the product is an f64 GEMM into f64 scratch
   and alpha * product + beta * c is computed in f64, alpha and beta exact. */
#define AMPC_ADD_GEMM_PROTOTYPE(NAME)                                          \
  AMPC_API ampc_status ampc_##NAME##_fwd(                                      \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *c, ampc_dtype c_dtype,                       \
      const int64_t *c_shape, int32_t c_rank, const void *a,                   \
      ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank,              \
      const void *b, ampc_dtype b_dtype, const int64_t *b_shape,               \
      int32_t b_rank, double beta, double alpha);
AMPC_ADD_GEMM_PROTOTYPE(addmm)
AMPC_ADD_GEMM_PROTOTYPE(baddbmm)
AMPC_ADD_GEMM_PROTOTYPE(addbmm)
AMPC_ADD_GEMM_PROTOTYPE(addmv)
AMPC_ADD_GEMM_PROTOTYPE(addr)
#undef AMPC_ADD_GEMM_PROTOTYPE

/// F.prelu: y = x > 0 ? x : w * x, w [1] or [C] (C = x's dim 1).
AMPC_API ampc_status ampc_prelu_fwd(ampc_context ctx, void *y,
                                    ampc_dtype y_dtype, const int64_t *y_shape,
                                    int32_t y_rank, const void *x,
                                    ampc_dtype x_dtype, const int64_t *x_shape,
                                    int32_t x_rank, const void *w,
                                    ampc_dtype w_dtype, const int64_t *w_shape,
                                    int32_t w_rank);
/// Gradients of ampc_prelu_fwd: dx (x's shape) and dw (w's shape, summed over
/// every dim but the channel dim); either may be NULL.
AMPC_API ampc_status ampc_prelu_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x,
    ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank, const void *w,
    ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank);

/*===------------------------------------------------------------------===*
 * Elementwise binary ops, NumPy broadcasting: y's shape is the broadcast
 * of a's and b's. *_bwd: da/db have a's/b's shapes; the gradient is summed
 * over the dims that were broadcast.
 *===------------------------------------------------------------------===*/

#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  AMPC_API ampc_status ampc_##NAME##_fwd(                                      \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *a, ampc_dtype a_dtype,                       \
      const int64_t *a_shape, int32_t a_rank, const void *b,                   \
      ampc_dtype b_dtype, const int64_t *b_shape, int32_t b_rank);             \
  AMPC_API ampc_status ampc_##NAME##_bwd(                                      \
      ampc_context ctx, void *da, ampc_dtype da_dtype,                         \
      const int64_t *da_shape, int32_t da_rank, void *db, ampc_dtype db_dtype, \
      const int64_t *db_shape, int32_t db_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *a, ampc_dtype a_dtype, const int64_t *a_shape,               \
      int32_t a_rank, const void *b, ampc_dtype b_dtype,                       \
      const int64_t *b_shape, int32_t b_rank);
/* add, sub, mul, div, maximum, minimum, pow: see ampc/runtime_kernels.inc. */
#include "ampc/runtime_kernels.inc"

/*===------------------------------------------------------------------===*
 * Elementwise unary ops: y and x have one shape. *_bwd: dx = dy * f'(x).
 *===------------------------------------------------------------------===*/

#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  AMPC_API ampc_status ampc_##NAME##_fwd(                                      \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape,                                                  \
      int32_t x_rank AMPC_KERNEL_ATTR_PARAMS(N, ATTRS));                       \
  AMPC_API ampc_status ampc_##NAME##_bwd(                                      \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank AMPC_KERNEL_ATTR_PARAMS(N, ATTRS));
/* neg, abs, exp, log, sqrt, rsqrt, relu, silu, sigmoid, tanh (and the ops
 * added since): the AMPC_UNARY_KERNEL rows of ampc/runtime_kernels.inc. A
 * kernel's float attributes follow x_rank in both entry points. */
#include "ampc/runtime_kernels.inc"

/// y = gelu(x): x * Phi(x) (AMPC_GELU_NONE) or the tanh approximation.
AMPC_API ampc_status ampc_gelu_fwd(ampc_context ctx, void *y,
                                   ampc_dtype y_dtype, const int64_t *y_shape,
                                   int32_t y_rank, const void *x,
                                   ampc_dtype x_dtype, const int64_t *x_shape,
                                   int32_t x_rank,
                                   ampc_gelu_approximate approximate);
/// dx = dy * gelu'(x).
AMPC_API ampc_status ampc_gelu_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, ampc_gelu_approximate approximate);

/*===------------------------------------------------------------------===*
 * Reductions over `dims` (n_dims == 0: all dims; negative dims count from
 * the end). y's shape is x's with the reduced dims removed, or kept as 1 when
 * `keepdim`. Accumulation is f32 (CUDA) / f64 (CPU).
 *===------------------------------------------------------------------===*/

#define AMPC_REDUCTION_KERNEL(NAME, OP)                                        \
  AMPC_API ampc_status ampc_##NAME##_fwd(                                      \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, const int64_t *dims,             \
      int32_t n_dims, int32_t keepdim);                                        \
  AMPC_API ampc_status ampc_##NAME##_bwd(                                      \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank, const void *y, ampc_dtype y_dtype,                       \
      const int64_t *y_shape, int32_t y_rank, const int64_t *dims,             \
      int32_t n_dims, int32_t keepdim);
/* sum: bwd broadcasts dy (x and y may be NULL). mean: bwd broadcasts
 * dy / count (x, y may be NULL). max (torch.amax): bwd splits dy evenly
 * between the elements equal to the maximum (needs x and y). */
#include "ampc/runtime_kernels.inc"

/*===------------------------------------------------------------------===*
 * Normalisation
 *===------------------------------------------------------------------===*/

/* softmax and log_softmax along `dim`. bwd takes the forward output y:
 * softmax: dx = y * (dy - sum(dy * y, dim)); log_softmax: dx = dy - exp(y) *
 * sum(dy, dim). */
#define AMPC_SOFTMAX_KERNEL(NAME, LOG)                                         \
  AMPC_API ampc_status ampc_##NAME##_fwd(                                      \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, int64_t dim);                    \
  AMPC_API ampc_status ampc_##NAME##_bwd(                                      \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *y, ampc_dtype y_dtype, const int64_t *y_shape,               \
      int32_t y_rank, int64_t dim);
#include "ampc/runtime_kernels.inc"

/// y = (x - mean) / sqrt(var + eps) * w + b over the last dim (biased var);
/// w, b have the last dim's size (either may be NULL: 1 and 0).
AMPC_API ampc_status ampc_layer_norm_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, double eps);
/// dx, dw, db of layer_norm; statistics are recomputed from x.
AMPC_API ampc_status ampc_layer_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, double eps);
/// y = x / sqrt(mean(x^2) + eps) * w over the last dim (w may be NULL).
AMPC_API ampc_status ampc_rms_norm_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, double eps);
/// dx, dw of rms_norm.
AMPC_API ampc_status ampc_rms_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, double eps);

/*===------------------------------------------------------------------===*
 * Pooling (NCHW; ceil_mode false; avg counts padding, as PyTorch's default)
 *===------------------------------------------------------------------===*/

#define AMPC_POOL_KERNEL(NAME, IS_MAX)                                         \
  AMPC_API ampc_status ampc_##NAME##_fwd(                                      \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, int64_t kernel_h,                \
      int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_h,     \
      int64_t pad_w);                                                          \
  AMPC_API ampc_status ampc_##NAME##_bwd(                                      \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,    \
      int64_t stride_w, int64_t pad_h, int64_t pad_w);
/* max_pool2d: bwd routes dy to the first maximum of each window.
 * avg_pool2d (count_include_pad=True): x may be NULL in bwd. */
#include "ampc/runtime_kernels.inc"

/*===------------------------------------------------------------------===*
 * Shape ops (any dtype; float<->float conversions allowed between x and y)
 *===------------------------------------------------------------------===*/

/// y = reshape(x): a no-op when y == x and dtypes match, else a copy.
AMPC_API ampc_status ampc_reshape_fwd(ampc_context ctx, void *y,
                                      ampc_dtype y_dtype,
                                      const int64_t *y_shape, int32_t y_rank,
                                      const void *x, ampc_dtype x_dtype,
                                      const int64_t *x_shape, int32_t x_rank);
/// dx = reshape(dy).
AMPC_API ampc_status ampc_reshape_bwd(ampc_context ctx, void *dx,
                                      ampc_dtype dx_dtype,
                                      const int64_t *dx_shape, int32_t dx_rank,
                                      const void *dy, ampc_dtype dy_dtype,
                                      const int64_t *dy_shape, int32_t dy_rank);
/// y = x.permute(perm); n_perm == 0 swaps the last two dims.
AMPC_API ampc_status ampc_transpose_fwd(ampc_context ctx, void *y,
                                        ampc_dtype y_dtype,
                                        const int64_t *y_shape, int32_t y_rank,
                                        const void *x, ampc_dtype x_dtype,
                                        const int64_t *x_shape, int32_t x_rank,
                                        const int64_t *perm, int32_t n_perm);
/// dx = dy permuted by the inverse of perm.
AMPC_API ampc_status
ampc_transpose_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                   const int64_t *dx_shape, int32_t dx_rank, const void *dy,
                   ampc_dtype dy_dtype, const int64_t *dy_shape,
                   int32_t dy_rank, const int64_t *perm, int32_t n_perm);
/// y = concat(xs, dim). Inputs are arrays of `count` pointers, dtypes and
/// shapes; every input has y's rank.
AMPC_API ampc_status ampc_concat_fwd(ampc_context ctx, void *y,
                                     ampc_dtype y_dtype, const int64_t *y_shape,
                                     int32_t y_rank, const void *const *xs,
                                     const ampc_dtype *x_dtypes,
                                     const int64_t *const *x_shapes,
                                     int32_t count, int64_t dim);
/// dxs[i] = the slice of dy that came from xs[i] (NULL entries skipped).
AMPC_API ampc_status ampc_concat_bwd(
    ampc_context ctx, void *const *dxs, const ampc_dtype *dx_dtypes,
    const int64_t *const *dx_shapes, int32_t count, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank, int64_t dim);
/// y = x[..., start:end, ...] along `dim` (Python semantics for negative and
/// out-of-range bounds, step 1).
AMPC_API ampc_status ampc_slice_fwd(ampc_context ctx, void *y,
                                    ampc_dtype y_dtype, const int64_t *y_shape,
                                    int32_t y_rank, const void *x,
                                    ampc_dtype x_dtype, const int64_t *x_shape,
                                    int32_t x_rank, int64_t dim, int64_t start,
                                    int64_t end);
/// dx = zeros with dy written at the slice.
AMPC_API ampc_status ampc_slice_bwd(ampc_context ctx, void *dx,
                                    ampc_dtype dx_dtype,
                                    const int64_t *dx_shape, int32_t dx_rank,
                                    const void *dy, ampc_dtype dy_dtype,
                                    const int64_t *dy_shape, int32_t dy_rank,
                                    int64_t dim, int64_t start, int64_t end);
/// y = torch.flip(x, dims): x reversed along each of the `n_dims` dims
/// (negative dims count from the end; a dim at most once). y has x's shape;
/// float dtypes may differ (each element is converted), others must match.
AMPC_API ampc_status ampc_flip_fwd(ampc_context ctx, void *y,
                                   ampc_dtype y_dtype, const int64_t *y_shape,
                                   int32_t y_rank, const void *x,
                                   ampc_dtype x_dtype, const int64_t *x_shape,
                                   int32_t x_rank, const int64_t *dims,
                                   int32_t n_dims);

/// y = torch.roll(x, shifts, dims): along each of the `n_dims` dims
/// (negative dims count from the end; a repeated dim adds its shifts),
/// element i of y is element (i - shift) mod size of x. `n_dims` 0 rolls x
/// flattened by the single shift (`n_shifts` is 1); otherwise `n_shifts`
/// equals `n_dims`. Dtypes as for ampc_flip_fwd.
AMPC_API ampc_status ampc_roll_fwd(ampc_context ctx, void *y,
                                   ampc_dtype y_dtype, const int64_t *y_shape,
                                   int32_t y_rank, const void *x,
                                   ampc_dtype x_dtype, const int64_t *x_shape,
                                   int32_t x_rank, const int64_t *shifts,
                                   int32_t n_shifts, const int64_t *dims,
                                   int32_t n_dims);

/// y[..., :] = table[ids[...], :]: table [V, D], ids i32/i64 of any shape,
/// y [ids..., D]. Ids outside [0, V) give zeros and, when `site` >= 0,
/// record `site` in the context's AMPC_CHECK_INDEX word (see "Check words").
AMPC_API ampc_status ampc_embedding_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *table, ampc_dtype table_dtype,
    const int64_t *table_shape, int32_t table_rank, const void *ids,
    ampc_dtype ids_dtype, const int64_t *ids_shape, int32_t ids_rank,
    int32_t site);
/// dtable = scatter-add of dy rows at ids (deterministic order).
AMPC_API ampc_status
ampc_embedding_bwd(ampc_context ctx, void *dtable, ampc_dtype dtable_dtype,
                   const int64_t *dtable_shape, int32_t dtable_rank,
                   const void *dy, ampc_dtype dy_dtype, const int64_t *dy_shape,
                   int32_t dy_rank, const void *ids, ampc_dtype ids_dtype,
                   const int64_t *ids_shape, int32_t ids_rank);

/*===------------------------------------------------------------------===*
 * Losses (mean reduction; loss is a rank-0 tensor)
 *===------------------------------------------------------------------===*/

/// loss = mean over rows of -log_softmax(logits)[label]; logits [N, C],
/// labels [N] i32/i64. Label -100 is ignored (PyTorch's ignore_index) and the
/// mean is over the other rows. Any other label outside [0, C) makes the loss
/// NaN and, when `site` >= 0, records `site` in the context's
/// AMPC_CHECK_INDEX word (see "Check words").
AMPC_API ampc_status ampc_cross_entropy_fwd(
    ampc_context ctx, void *loss, ampc_dtype loss_dtype,
    const int64_t *loss_shape, int32_t loss_rank, const void *logits,
    ampc_dtype logits_dtype, const int64_t *logits_shape, int32_t logits_rank,
    const void *labels, ampc_dtype labels_dtype, const int64_t *labels_shape,
    int32_t labels_rank, int32_t site);
/// dlogits = (softmax(logits) - onehot(labels)) * dloss / valid_rows.
AMPC_API ampc_status ampc_cross_entropy_bwd(
    ampc_context ctx, void *dlogits, ampc_dtype dlogits_dtype,
    const int64_t *dlogits_shape, int32_t dlogits_rank, const void *dloss,
    ampc_dtype dloss_dtype, const int64_t *dloss_shape, int32_t dloss_rank,
    const void *logits, ampc_dtype logits_dtype, const int64_t *logits_shape,
    int32_t logits_rank, const void *labels, ampc_dtype labels_dtype,
    const int64_t *labels_shape, int32_t labels_rank);
/// loss = mean((a - b)^2); a and b have one shape.
AMPC_API ampc_status ampc_mse_loss_fwd(
    ampc_context ctx, void *loss, ampc_dtype loss_dtype,
    const int64_t *loss_shape, int32_t loss_rank, const void *a,
    ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank, const void *b,
    ampc_dtype b_dtype, const int64_t *b_shape, int32_t b_rank);
/// da = 2 (a - b) dloss / numel, db = -da.
AMPC_API ampc_status ampc_mse_loss_bwd(
    ampc_context ctx, void *da, ampc_dtype da_dtype, const int64_t *da_shape,
    int32_t da_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dloss, ampc_dtype dloss_dtype,
    const int64_t *dloss_shape, int32_t dloss_rank, const void *a,
    ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank, const void *b,
    ampc_dtype b_dtype, const int64_t *b_shape, int32_t b_rank);

/*===------------------------------------------------------------------===*
 * Training jobs: where and the binary cross-entropy losses
 *===------------------------------------------------------------------===*/

/// y = c ? a : b elementwise with NumPy broadcasting of c, a and b to y's
/// shape; c of any dtype (nonzero selects a), a, b and y of any dtypes
/// (values pass through f32).
AMPC_API ampc_status ampc_where_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *c, ampc_dtype c_dtype, const int64_t *c_shape,
    int32_t c_rank, const void *a, ampc_dtype a_dtype, const int64_t *a_shape,
    int32_t a_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank);
/// y = torch.argmax(x, dim, keepdim): i32 indices of the first maximum along
/// `dim` (NaN counts as the maximum); y has x's shape without `dim` (size 1
/// with keepdim).
AMPC_API ampc_status ampc_argmax_fwd(ampc_context ctx, void *y,
                                     ampc_dtype y_dtype, const int64_t *y_shape,
                                     int32_t y_rank, const void *x,
                                     ampc_dtype x_dtype, const int64_t *x_shape,
                                     int32_t x_rank, int64_t dim,
                                     int32_t keepdim);
/// loss = mean(-(y log p + (1 - y) log(1 - p))), each log clamped at -100
/// (F.binary_cross_entropy); p and y of one shape, computed in f32.
AMPC_API ampc_status ampc_binary_cross_entropy_fwd(
    ampc_context ctx, void *loss, ampc_dtype loss_dtype,
    const int64_t *loss_shape, int32_t loss_rank, const void *p,
    ampc_dtype p_dtype, const int64_t *p_shape, int32_t p_rank, const void *y,
    ampc_dtype y_dtype, const int64_t *y_shape, int32_t y_rank);
/// dp = dloss (p - y) / max(p (1 - p), 1e-12) / numel; dy = dloss (log(1 - p)
/// - log p) / numel. dp or dy may be NULL.
AMPC_API ampc_status ampc_binary_cross_entropy_bwd(
    ampc_context ctx, void *dp, ampc_dtype dp_dtype, const int64_t *dp_shape,
    int32_t dp_rank, void *dy, ampc_dtype dy_dtype, const int64_t *dy_shape,
    int32_t dy_rank, const void *dloss, ampc_dtype dloss_dtype,
    const int64_t *dloss_shape, int32_t dloss_rank, const void *p,
    ampc_dtype p_dtype, const int64_t *p_shape, int32_t p_rank, const void *y,
    ampc_dtype y_dtype, const int64_t *y_shape, int32_t y_rank);
/// loss = mean of F.binary_cross_entropy_with_logits' stable per-element
/// form; x and y of one shape, computed in f32.
AMPC_API ampc_status ampc_binary_cross_entropy_with_logits_fwd(
    ampc_context ctx, void *loss, ampc_dtype loss_dtype,
    const int64_t *loss_shape, int32_t loss_rank, const void *x,
    ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank, const void *y,
    ampc_dtype y_dtype, const int64_t *y_shape, int32_t y_rank);
/// dx = dloss (sigmoid(x) - y) / numel; dy = -dloss x / numel. dx or dy may
/// be NULL.
AMPC_API ampc_status ampc_binary_cross_entropy_with_logits_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dy, ampc_dtype dy_dtype, const int64_t *dy_shape,
    int32_t dy_rank, const void *dloss, ampc_dtype dloss_dtype,
    const int64_t *dloss_shape, int32_t dloss_rank, const void *x,
    ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank, const void *y,
    ampc_dtype y_dtype, const int64_t *y_shape, int32_t y_rank);

/*===------------------------------------------------------------------===*
 * Batch norm and dropout (docs/jobs.md). Channels are dim 1 of (N, C, ...);
 * the per-channel tensors are [C]. Statistics are computed in f64 on the
 * CPU and in f32 on CUDA, every value read and written through f32; with an
 * f64 tensor both backends compute everything in f64 (eps and momentum
 * exact).
 *===------------------------------------------------------------------===*/

/// y = (x - mean) / sqrt(var + eps) * w + b per channel: with `training`
/// the batch's mean and biased variance, else running_mean and running_var.
AMPC_API ampc_status ampc_batch_norm_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, const void *running_mean, ampc_dtype running_mean_dtype,
    const int64_t *running_mean_shape, int32_t running_mean_rank,
    const void *running_var, ampc_dtype running_var_dtype,
    const int64_t *running_var_shape, int32_t running_var_rank,
    int32_t training, double eps);
/// dx, dw, db of ampc_batch_norm_fwd with the same statistics (batch ones
/// recomputed from x with `training`). dw or db may be NULL.
AMPC_API ampc_status ampc_batch_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, int32_t training, double eps);
/// PyTorch's running-statistics update: new_mean = (1 - momentum) *
/// running_mean + momentum * mean, new_var likewise with the unbiased batch
/// variance (M / (M - 1) times the biased one, M values per channel).
AMPC_API ampc_status ampc_batch_norm_update(
    ampc_context ctx, void *new_mean, ampc_dtype new_mean_dtype,
    const int64_t *new_mean_shape, int32_t new_mean_rank, void *new_var,
    ampc_dtype new_var_dtype, const int64_t *new_var_shape,
    int32_t new_var_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, double momentum);
/// Synchronised batch norm (data-parallel --sync-batchnorm): the three
/// entry points above, with the same arguments, whose training-mode
/// statistics (the per-channel sums of x, of the squared deviations from the
/// mean, and in the backward of dy and dy * xhat) are summed in f64 over the
/// ranks of the communicator attached to `ctx` (ampc_context_set_comm), so W
/// ranks of batch B normalise as one process of batch W*B (PyTorch's
/// SyncBatchNorm). dw and db stay this rank's own sums (the gradient
/// all-reduce averages them). With no communicator, one rank, or `training`
/// 0, each is its one-rank entry point, bit for bit. With an f64 tensor the
/// CPU backend computes in f64 as the one-rank entry points (eps and momentum
/// exact); over several ranks CUDA returns AMPC_ERROR_UNSUPPORTED_DTYPE (one
/// rank: the f64 one-rank entry point). Host-staged: on
/// CUDA the tensors make a round trip through host memory.
AMPC_API ampc_status ampc_sync_batch_norm_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, const void *running_mean, ampc_dtype running_mean_dtype,
    const int64_t *running_mean_shape, int32_t running_mean_rank,
    const void *running_var, ampc_dtype running_var_dtype,
    const int64_t *running_var_shape, int32_t running_var_rank,
    int32_t training, double eps);
AMPC_API ampc_status ampc_sync_batch_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, int32_t training, double eps);
AMPC_API ampc_status ampc_sync_batch_norm_update(
    ampc_context ctx, void *new_mean, ampc_dtype new_mean_dtype,
    const int64_t *new_mean_shape, int32_t new_mean_rank, void *new_var,
    ampc_dtype new_var_dtype, const int64_t *new_var_shape,
    int32_t new_var_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, double momentum);
/// y = x * keep(i) / (1 - p): keep(i) is 1 when the 24-bit uniform of lane
/// i % 4 of philox4x32_10(counter (i / 4, 2^63 + key * 2^32 + step), key
/// seed) is >= p, else 0. `step` is a device i32 scalar. The backward is the
/// same call on dy. With an f64 x or y (both backends) the same elements
/// are kept (the uniform
/// against p rounded to f32, as the f32 kernel) and multiplied by 1 / (1 - p)
/// computed in f64.
AMPC_API ampc_status ampc_dropout_fwd(ampc_context ctx, void *y,
                                      ampc_dtype y_dtype,
                                      const int64_t *y_shape, int32_t y_rank,
                                      const void *x, ampc_dtype x_dtype,
                                      const int64_t *x_shape, int32_t x_rank,
                                      const void *step, uint64_t seed, double p,
                                      int64_t key);
/// ampc_dropout_fwd for data-parallel ranks (1.3): the mask of one process
/// whose batch holds every rank's samples. With a communicator of W > 1
/// ranks attached to `ctx` (ampc_context_set_comm) and sample_elems S > 0,
/// x holding its samples as contiguous blocks of S elements, element i of
/// rank r draws the bits ampc_dropout_fwd gives element
/// ((i / S) * W + r) * S + i % S (local sample j is sample j * W + r of the
/// whole batch, as ranks shard their data). With no communicator, one rank
/// or S = 0, it is ampc_dropout_fwd bit for bit. S must divide x's element
/// count. The backward is the same call on dy.
AMPC_API ampc_status ampc_dropout_ranked_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *step, uint64_t seed, double p, int64_t key,
    int64_t sample_elems);
/// *next = *counter + 1 on device i32 scalars (next may equal counter).
AMPC_API ampc_status ampc_counter_next(ampc_context ctx, void *next,
                                       const void *counter);

/*===------------------------------------------------------------------===*
 * Loss scaling and optimizers (spec/amp.md). Lists of tensors are host
 * arrays of `count` device pointers, dtypes and element counts. `found_inf`
 * is a device scalar of dtype f32 or i32 (nonzero: skip); `scale` is a
 * device f32 scalar.
 *===------------------------------------------------------------------===*/

/// One fused pass over every gradient: found_inf = any element non-finite
/// (overwritten, 1 or 0); every gradient *= 1 / scale (computed in f32,
/// stored in the gradient's dtype), as torch._amp_foreach_non_finite_check_
/// and_unscale_. `scale` may be NULL (check only).
AMPC_API ampc_status ampc_check_finite_unscale(
    ampc_context ctx, void *found_inf, ampc_dtype found_inf_dtype,
    void *const *grads, const ampc_dtype *grad_dtypes, const int64_t *numels,
    int32_t count, const void *scale);

/// The scale update of amp.md on device state: scale (f32), growth_tracker
/// (i32), hysteresis_left (i32). min_scale <= 0: no minimum; max_scale <= 0
/// or inf: no maximum. hysteresis 1 is PyTorch's GradScaler, 2 Megatron's.
AMPC_API ampc_status ampc_update_scale(
    ampc_context ctx, void *scale, void *growth_tracker, void *hysteresis_left,
    const void *found_inf, ampc_dtype found_inf_dtype, double growth_factor,
    double backoff_factor, int32_t growth_interval, int32_t hysteresis,
    double min_scale, double max_scale);

/// torch.nn.utils.clip_grad_norm_(grads, max_norm) unless found_inf (may be
/// NULL) is set: total = ||all grads||_2, grads *= min(1, max_norm /
/// (total + 1e-6)). total_norm (device f32 scalar, may be NULL) receives
/// the norm.
AMPC_API ampc_status ampc_clip_grad_norm(ampc_context ctx, void *total_norm,
                                         void *const *grads,
                                         const ampc_dtype *grad_dtypes,
                                         const int64_t *numels, int32_t count,
                                         double max_norm, const void *found_inf,
                                         ampc_dtype found_inf_dtype);

/// torch.optim.SGD step (dampening 0) on every (param, grad, momentum
/// buffer) unless found_inf is set. Momentum buffers are f32, zero-initialised
/// (equal to PyTorch's first-step copy), and may be NULL when momentum == 0.
/// max_grad_norm > 0 first clips the gradients as ampc_clip_grad_norm.
/// lr_scale (may be NULL) is a device f32 scalar the rate is multiplied by
/// (a learning-rate schedule's factor, ampc_lr_schedule).
AMPC_API ampc_status ampc_sgd_update(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes,
    void *const *momentum_bufs, const int64_t *numels, int32_t count, double lr,
    double momentum, double weight_decay, int32_t nesterov,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale);

/// torch.optim.AdamW step (amsgrad off) unless found_inf is set. exp_avgs
/// and exp_avg_sqs are f32, zero-initialised; `step` is a device i32 scalar
/// (starts at 0, incremented before use). max_grad_norm > 0 clips first.
/// lr_scale (may be NULL): as for ampc_sgd_update.
AMPC_API ampc_status ampc_adamw_update(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale);

/// Learning-rate schedules (docs/optimizer.md): torch.optim.lr_scheduler.
/// LambdaLR with the factors below, after t applied updates, with warm-up
/// W (t < W: (t + 1) / W) before each of them. m is min_lr / lr.
AMPC_ENUM(ampc_lr_schedule_kind){
    AMPC_LR_CONSTANT = 0, /**< 1 */
    AMPC_LR_LINEAR = 1,   /**< m + (1 - m) * max(0, (T - t) / (T - W)) */
    AMPC_LR_COSINE = 2, /**< m + (1 - m) * (1 + cos(pi * min(1, (t - W) / (T - W)))) / 2 */
    AMPC_LR_STEP = 3,   /**< gamma ^ floor((t - W) / step_size) */
};

/// The factor of a schedule after `t` applied updates, computed on the host
/// in f64 (the value ampc_lr_schedule stores, before its rounding to f32).
/// lr > 0; total_steps > warmup_steps for linear and cosine; step_size >= 1
/// for step. Returns NaN for arguments outside these (and a negative t), and
/// then sets the text of ampc_last_error() to the reason.
AMPC_API double ampc_lr_schedule_factor(ampc_lr_schedule_kind kind, double lr,
                                        int64_t warmup_steps,
                                        int64_t total_steps, double min_lr,
                                        int64_t step_size, double gamma,
                                        int64_t t);

/// The device side of a schedule: factor (device f32 scalar) = the factor
/// after *step (device i32 scalar, the updates applied so far); then, unless
/// found_inf (may be NULL) is set, *step += 1 (a skipped update does not
/// advance the schedule). The optimizer updates multiply their lr by
/// *factor (their `lr_scale` argument), so no host synchronisation is
/// needed.
AMPC_API ampc_status ampc_lr_schedule(ampc_context ctx, void *factor,
                                      void *step, ampc_lr_schedule_kind kind,
                                      double lr, int64_t warmup_steps,
                                      int64_t total_steps, double min_lr,
                                      int64_t step_size, double gamma,
                                      const void *found_inf,
                                      ampc_dtype found_inf_dtype);

/// Gradient accumulation (docs/optimizer.md, "Gradient accumulation"): for
/// each t < count, accs[t] (f32, numels[t] elements) becomes grads[t]
/// (converted from grad_dtypes[t] to f32) when *micro == 0, else
/// accs[t] + grads[t] in f32; then *micro becomes (*micro + 1) % k. An f64
/// gradient (an f64 param's) has an f64 accumulator, added in f64. `micro`
/// is a device i32 (0 <= *micro < k, k >= 1).
AMPC_API ampc_status ampc_grad_accumulate(ampc_context ctx, void *const *accs,
                                          void *const *grads,
                                          const ampc_dtype *grad_dtypes,
                                          const int64_t *numels, int32_t count,
                                          void *micro, int64_t k);

/* Opt level O2 (docs/optimizer.md, "Opt levels"): the same updates, and in
 * the same pass over the elements each updated parameter params[
 * model_params[k]] is also stored, rounded, into its low model copy
 * models[k] (dtype model_dtypes[k], the parameter's element count).
 * model_params are increasing indices below count; lr_scale as for the
 * plain updates; a skipped step
 * (found_inf set) leaves the model copies unchanged as well. */
AMPC_API ampc_status ampc_sgd_update_model(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes,
    void *const *momentum_bufs, const int64_t *numels, int32_t count, double lr,
    double momentum, double weight_decay, int32_t nesterov,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count);
AMPC_API ampc_status ampc_adamw_update_model(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count);

/* Updates of 16-bit params (1.7; docs/optimizer.md, "Updates of 16-bit
 * params"): the _model updates, and
 * - state_dtypes[t] (NULL: all f32) is the dtype of param t's momentum
 *   buffer or Adam moments, F32 or BF16 (F16 too);
 * - low_update says how an f32 result is written into a 16-bit param (and
 *   16-bit state): AMPC_LOW_NEAREST rounds to nearest even;
 *   AMPC_LOW_STOCHASTIC rounds away from zero with probability (discarded
 *   low bits) / 2^bits, the random word of element i of param t being lane
 *   i % 4 of philox4x32_10(counter = (i / 4, 2^62 + s * 2^60 + (param_base
 *   + t) * 2^32 + n), key = seed), s the stream (0 the param, 1 momentum /
 *   exp_avg, 2 exp_avg_sq), n the update count after this update (AdamW's
 *   *step; SGD's *counter, a device i32 that the call advances unless
 *   found_inf is set; NULL when no stochastic rounding is asked);
 *   AMPC_LOW_KAHAN adds param params[comp_params[k]]'s compensation
 *   comps[k] (its dtype, zero-initialised) to the result, rounds to
 *   nearest, and keeps the difference in comps[k]; state rounds to nearest.
 * f32 params are written as they are whatever the mode. */
AMPC_ENUM(ampc_low_update){
    AMPC_LOW_NEAREST = 0,
    AMPC_LOW_STOCHASTIC = 1,
    AMPC_LOW_KAHAN = 2,
};
AMPC_API ampc_status ampc_sgd_update_low(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes,
    void *const *momentum_bufs, const int64_t *numels, int32_t count, double lr,
    double momentum, double weight_decay, int32_t nesterov,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count,
    const ampc_dtype *state_dtypes, ampc_low_update low_update, uint64_t seed,
    int64_t param_base, void *counter, void *const *comps,
    const int64_t *comp_params, int32_t comp_count);
AMPC_API ampc_status ampc_adamw_update_low(
    ampc_context ctx, void *const *params, const ampc_dtype *param_dtypes,
    void *const *grads, const ampc_dtype *grad_dtypes, void *const *exp_avgs,
    void *const *exp_avg_sqs, void *step, const int64_t *numels, int32_t count,
    double lr, double beta1, double beta2, double eps, double weight_decay,
    double max_grad_norm, const void *found_inf, ampc_dtype found_inf_dtype,
    const void *lr_scale, void *const *models, const ampc_dtype *model_dtypes,
    const int64_t *model_params, int32_t model_count,
    const ampc_dtype *state_dtypes, ampc_low_update low_update, uint64_t seed,
    int64_t param_base, void *const *comps, const int64_t *comp_params,
    int32_t comp_count);

/*===------------------------------------------------------------------===*
 * Check words (docs/runtime.md "Check words"). A context holds one device
 * word per kind of check. Kernels that find a bad value record the `site`
 * they were given (the caller's number for the op, >= 0) with an atomic
 * minimum, so after a step the word holds the smallest site that failed,
 * without any host synchronisation inside the step. The caller reads the word
 * when it next reads results anyway (with the step's loss). Site numbers are
 * the caller's: the compiler numbers ops in execution order, so the smallest
 * is the first that failed.
 *===------------------------------------------------------------------===*/

AMPC_ENUM(ampc_check) {
  /// An index outside its range: a class label (cross_entropy) or an id
  /// (embedding).
  AMPC_CHECK_INDEX = 0,
  /// A non-finite element found by ampc_check_nonfinite.
  AMPC_CHECK_NONFINITE = 1
};

/// Copies check word `check` to the host (like any read of device memory,
/// after the work queued before it): *site = the smallest site recorded since
/// the word was last cleared, or -1 when none was. clear != 0 then resets the
/// word (stream-ordered).
AMPC_API ampc_status ampc_check_read(ampc_context ctx, ampc_check check,
                                     int32_t clear, int32_t *site);
/// Records `site` (>= 0) in the AMPC_CHECK_NONFINITE word when any of the
/// `numel` elements of x (f32, f16 or bf16) is an inf or a NaN. Queued like
/// a kernel; nothing waits for it.
AMPC_API ampc_status ampc_check_nonfinite(ampc_context ctx, const void *x,
                                          ampc_dtype dtype, int64_t numel,
                                          int32_t site);

/*===------------------------------------------------------------------===*
 * Collectives (data-parallel training, docs/distributed.md). A communicator
 * spans the ranks of one MPI job. The runtime carries collectives over MPI
 * through a separate module (libampc_runtime_mpi.so, next to this library)
 * that it loads only when a communicator is created, so a program that never
 * creates one needs no MPI library at run time. Buffers are the context's
 * device memory; on the CPU backend, host memory. On a CUDA context the
 * collectives go through NCCL (libampc_runtime_nccl.so, loaded on the first
 * such collective, which also creates the communicator's NCCL side on the
 * context's device): they are queued in the order of the context's stream
 * and never wait on the host (docs/distributed.md, "What waits").
 *===------------------------------------------------------------------===*/

/// A communicator: this process's rank among `size` ranks.
typedef struct ampc_comm_impl *ampc_comm;
/// An all-reduce in flight; ampc_comm_wait completes and frees it.
typedef struct ampc_request_impl *ampc_request;

AMPC_ENUM(ampc_reduce_op) {
  AMPC_REDUCE_SUM = 0,
  AMPC_REDUCE_MEAN = 1, ///< The sum divided by the world size.
  AMPC_REDUCE_MAX = 2
};

/// Creates a communicator over MPI_COMM_WORLD (initialising MPI if the
/// process has not). Fails with AMPC_ERROR_BACKEND_UNAVAILABLE when the MPI
/// module or libmpi cannot be loaded.
AMPC_API ampc_status ampc_comm_create_mpi(ampc_comm *comm);
/// Creates a communicator of one rank (rank 0 of 1) that needs no MPI:
/// every collective completes locally (on a CUDA context through a one-rank
/// NCCL communicator).
AMPC_API ampc_status ampc_comm_create_self(ampc_comm *comm);
/// The bytes that name one communicator of ampc_comm_create_rank: opaque,
/// and the same on every process that joins it.
#define AMPC_COMM_UNIQUE_ID_BYTES 256
typedef struct ampc_comm_unique_id {
  unsigned char internal[AMPC_COMM_UNIQUE_ID_BYTES];
} ampc_comm_unique_id;

/// Makes a new unique id for a communicator whose collectives run on
/// `backend`'s contexts (1.5). One process makes it and hands its bytes to
/// every process of the communicator by any means (a file, a socket, its
/// own launcher); each of them, the maker included, then calls
/// ampc_comm_create_rank with it. An id names one communicator: make a new
/// one for each. What the communicator carries:
/// - In an MPI job (this process was started by an MPI launcher), the id
///   records this process's rank in MPI_COMM_WORLD, and the communicator's
///   host collectives go over MPI among the processes that join it: any
///   subset of the job's processes, in any rank order.
/// - For AMPC_BACKEND_CUDA the id also holds an NCCL unique id (this loads
///   the NCCL module: AMPC_ERROR_BACKEND_UNAVAILABLE when it or libnccl
///   cannot be loaded), so collectives on CUDA contexts need no MPI: the
///   processes may be started by any launcher, as with ncclCommInitRank.
/// - Outside an MPI job an id for AMPC_BACKEND_CPU makes only one-rank
///   communicators: the CPU backend's transport is MPI.
AMPC_API ampc_status ampc_comm_get_unique_id(ampc_backend backend,
                                             ampc_comm_unique_id *id);
/// Joins, as `rank` of `size` ranks, the communicator that `id` names
/// (1.5). Collective: every rank calls it, each with a distinct rank, the
/// same size and the same id, and processes that join several communicators
/// join them in the same order. With an id made in an MPI job the members
/// meet through the maker over MPI (it must join too), which refuses
/// mismatched sizes or a rank asked for twice on every member, and a
/// request for an id it never made (a stale one) at once
/// (AMPC_ERROR_DEVICE naming them); without MPI nothing can check that. A communicator of several ranks made
/// from an id made outside an MPI job carries collectives on CUDA contexts
/// only: its host collectives (a CPU context, ampc_comm_barrier) fail with
/// AMPC_ERROR_DEVICE saying so, and ampc_comm_abort ends this process only.
/// Fails with AMPC_ERROR_INVALID_ARGUMENT on bytes that are not an id or a
/// rank out of range, AMPC_ERROR_BACKEND_UNAVAILABLE where the transport
/// the id needs is missing.
AMPC_API ampc_status ampc_comm_create_rank(int32_t rank, int32_t size,
                                           const ampc_comm_unique_id *id,
                                           ampc_comm *comm);
/// This process's rank among the ranks on its machine: the launcher's
/// OMPI_COMM_WORLD_LOCAL_RANK (or MPI_LOCALRANKID, SLURM_LOCALID), else from
/// an MPI shared-memory split of the communicator's processes; for a
/// communicator without MPI (ampc_comm_create_rank) also torchrun's
/// LOCAL_RANK, else the communicator rank.
AMPC_API ampc_status ampc_comm_local_rank(ampc_comm comm, int32_t *local_rank);
/// The CUDA device this rank uses: local rank % the number of visible
/// devices. Loads the NCCL module; AMPC_ERROR_BACKEND_UNAVAILABLE when it or
/// libnccl cannot be loaded, or no device is visible.
AMPC_API ampc_status ampc_comm_cuda_device(ampc_comm comm, int32_t *device);
/// Destroys a communicator. MPI, if the runtime initialised it, is finalised
/// at exit when every communicator over MPI has been destroyed (MPI cannot
/// be initialised twice, so communicators can be made again after one is
/// destroyed); a process that exits holding one leaves MPI unfinalised,
/// which MPI launchers treat as a failed rank and end the job.
/// NULL is accepted.
AMPC_API ampc_status ampc_comm_destroy(ampc_comm comm);
AMPC_API ampc_status ampc_comm_rank(ampc_comm comm, int32_t *rank);
AMPC_API ampc_status ampc_comm_size(ampc_comm comm, int32_t *size);
/// Starts an in-place all-reduce of `count` elements (f64, f32, f16, bf16
/// or i32). 16-bit buffers are reduced in f32 and rounded once at the end;
/// f64 ones are summed (and MEAN divided) in f64, on CPU contexts only (a
/// CUDA context refuses f64 with AMPC_ERROR_UNSUPPORTED_DTYPE); MEAN on i32
/// truncates towards zero. The buffer must not be touched before
/// ampc_comm_wait(*request).
AMPC_API ampc_status ampc_comm_allreduce_async(ampc_comm comm,
                                               ampc_context ctx, void *buf,
                                               ampc_dtype dtype, int64_t count,
                                               ampc_reduce_op op,
                                               ampc_request *request);
/// Completes an all-reduce and frees the request. On a CUDA context it only
/// makes the context's stream wait for the all-reduce (a stream dependency;
/// the host does not wait): work queued on the context afterwards sees the
/// result, a host read (ampc_memcpy to the host) waits for it.
AMPC_API ampc_status ampc_comm_wait(ampc_request request);
/// Progresses an all-reduce without blocking and sets *done to 1 once its
/// transfer has completed (ampc_comm_wait then only finishes it: the mean,
/// the rounding of 16-bit buffers) and 0 while it is in flight. MPI moves a
/// non-blocking collective mostly inside MPI calls: a program that computes
/// between the start and the wait calls this now and then so the transfer
/// advances meanwhile. Any call progresses every MPI request in flight. The
/// request stays valid until ampc_comm_wait. On a CUDA context the
/// all-reduce needs no host progress: *done is 1 at once.
AMPC_API ampc_status ampc_comm_test(ampc_request request, int32_t *done);
/// ampc_comm_allreduce_async followed by ampc_comm_wait.
AMPC_API ampc_status ampc_comm_allreduce(ampc_comm comm, ampc_context ctx,
                                         void *buf, ampc_dtype dtype,
                                         int64_t count, ampc_reduce_op op);
/// Copies `bytes` bytes of `buf` on rank `root` into `buf` on every rank.
/// On a CUDA context it is queued like an all-reduce followed by its wait.
AMPC_API ampc_status ampc_comm_broadcast(ampc_comm comm, ampc_context ctx,
                                         void *buf, int64_t bytes,
                                         int32_t root);
/// Returns when every rank has entered it (a host barrier over the
/// communicator's host transport; it does not wait for queued device work).
AMPC_API ampc_status ampc_comm_barrier(ampc_comm comm);
/// Attaches `comm` to `ctx` (NULL detaches): the context's data-parallel
/// communicator. Ops of a lowered step that communicate (the gradient
/// all-reduce, synchronised batch norm) use the communicator attached to the
/// context they run on; with none attached they act as on one rank. The
/// context does not own it: destroy the communicator after the context.
AMPC_API ampc_status ampc_context_set_comm(ampc_context ctx, ampc_comm comm);
/// The communicator attached to `ctx`, or NULL.
AMPC_API ampc_status ampc_context_get_comm(ampc_context ctx, ampc_comm *comm);
/// Ends the whole job (every rank) with exit code `code`: what a rank that
/// hit a fatal error calls so no other rank waits forever.
AMPC_API ampc_status ampc_comm_abort(ampc_comm comm, int32_t code);

/*===------------------------------------------------------------------===*
 * The gradient all-reduce of a compiled data-parallel step
 * (docs/distributed.md): what tg.grad_allreduce_start / _wait and
 * tg.divide_by_world lower to. They use the communicator attached to `ctx`
 * (ampc_context_set_comm); with none attached they do nothing (start, wait)
 * or divide by 1. A bucket is `count` gradients (device buffers of
 * `dtypes`, `numels` elements each) named by `bucket`; a context holds at
 * most one reduction in flight per bucket.
 *===------------------------------------------------------------------===*/

/// Starts the in-place sum of the bucket's gradients over the ranks: one
/// message per element type (the gradients copied into a staging buffer the
/// context keeps; a lone gradient of its type is reduced in place), or one
/// f32 message when `reduce_f32` (16-bit gradients widened; f64 gradients
/// keep their own f64 message). `mean`: the wait divides the sum by the
/// world size. f64 gradients are summed in f64 (CPU contexts; a CUDA context
/// refuses them with AMPC_ERROR_UNSUPPORTED_DTYPE).
AMPC_API ampc_status ampc_grad_allreduce_start(
    ampc_context ctx, void *const *grads, const ampc_dtype *dtypes,
    const int64_t *numels, int32_t count, int64_t bucket, int32_t mean,
    int32_t reduce_f32);
/// Completes bucket `bucket` (the same gradients as its start): waits, and
/// copies the reduced values back into the gradients (16-bit rounded once).
AMPC_API ampc_status ampc_grad_allreduce_wait(ampc_context ctx,
                                              void *const *grads,
                                              const ampc_dtype *dtypes,
                                              const int64_t *numels,
                                              int32_t count, int64_t bucket);
/// Progresses the buckets in flight on `ctx` without blocking: what a step
/// calls between its other calls while a bucket is in flight (the lowering
/// places the calls), since MPI moves a non-blocking all-reduce mostly
/// inside MPI calls. It tests the buckets at most every
/// AMPC_COMM_PROGRESS_US microseconds (10 by default; "off" disables it)
/// and returns at once when no bucket is in flight (no communicator, one
/// rank). It changes no value: the reduced bits are those of the wait alone.
AMPC_API ampc_status ampc_grad_allreduce_progress(ampc_context ctx);
/// Progresses bucket `bucket` (started, not yet waited for) and sets *done
/// to 1 once its transfer has completed (its wait then only copies the
/// result back), else 0. 1 at once without a communicator or on one rank.
AMPC_API ampc_status ampc_grad_allreduce_test(ampc_context ctx,
                                              int64_t bucket, int32_t *done);
/// Counters of the gradient all-reduce on `ctx` since it was created, over
/// the buckets that travelled (a communicator of more than one rank): the
/// waits, how many of them found the bucket's transfer already complete
/// (the overlap the progress calls bought), the seconds spent inside the
/// waits and the progress tests made; and, now, the buckets in flight whose
/// transfer no test has seen complete yet (reading it progresses nothing).
/// Any pointer may be NULL.
AMPC_API ampc_status ampc_grad_allreduce_stats(ampc_context ctx,
                                               int64_t *waits,
                                               int64_t *done_before_wait,
                                               double *wait_seconds,
                                               int64_t *tests,
                                               int64_t *unfinished);
/// y = x * (1 / W) (W: the size of the context's communicator, 1 without
/// one; the reciprocal rounded to f32, the product computed in f32; with an
/// f64 x or y, x / W divided in f64), stored in y's type; y and x have the same number of
/// elements and may be the same buffer.
AMPC_API ampc_status ampc_divide_by_world(ampc_context ctx, void *y,
                                          ampc_dtype y_dtype,
                                          const int64_t *y_shape,
                                          int32_t y_rank, const void *x,
                                          ampc_dtype x_dtype,
                                          const int64_t *x_shape,
                                          int32_t x_rank);

/*===------------------------------------------------------------------===*
 * Reductions, norms and losses of PyTorch's fp32 autocast list.
 * Composed of the backends' primitives (both backends), computed in f32;
 * a float result is rounded once to its dtype. Dims are non-negative and
 * sorted; keepdim as for ampc_sum_fwd.
 *===------------------------------------------------------------------===*/
/// How a loss reduces its terms: "none", "mean", "sum", "batchmean" (the
/// sum over the size of dim 0).
AMPC_ENUM(ampc_reduction){AMPC_REDUCTION_NONE = 0, AMPC_REDUCTION_MEAN = 1,
                          AMPC_REDUCTION_SUM = 2,
                          AMPC_REDUCTION_BATCHMEAN = 3};

#define AMPC_RL_OUT(t)                                                         \
  void *t, ampc_dtype t##_dtype, const int64_t *t##_shape, int32_t t##_rank
#define AMPC_RL_IN(t)                                                          \
  const void *t, ampc_dtype t##_dtype, const int64_t *t##_shape,               \
      int32_t t##_rank
/// y = log(sum(exp(x), dims)), max-shifted; dx = dy * exp(x - y).
AMPC_API ampc_status ampc_logsumexp_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                                        AMPC_RL_IN(x), const int64_t *dims,
                                        int32_t n_dims, int32_t keepdim);
AMPC_API ampc_status ampc_logsumexp_bwd(ampc_context ctx, AMPC_RL_OUT(dx),
                                        AMPC_RL_IN(dy), AMPC_RL_IN(x),
                                        AMPC_RL_IN(y), const int64_t *dims,
                                        int32_t n_dims, int32_t keepdim);
/// The vector p-norm over dims (p >= 1 finite, or INFINITY: max |x|).
AMPC_API ampc_status ampc_norm_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                                   AMPC_RL_IN(x), double p,
                                   const int64_t *dims, int32_t n_dims,
                                   int32_t keepdim);
AMPC_API ampc_status ampc_norm_bwd(ampc_context ctx, AMPC_RL_OUT(dx),
                                   AMPC_RL_IN(dy), AMPC_RL_IN(x), AMPC_RL_IN(y),
                                   double p, const int64_t *dims,
                                   int32_t n_dims, int32_t keepdim);
/// Inclusive cumulative sum along dim; bwd: the reversed cumulative sum.
/// f32, f16, bf16 accumulate in f32; f64 in f64; an integer or bool x
/// gives an i64 y, exact with wrap-around (fwd only). Both backends.
AMPC_API ampc_status ampc_cumsum_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                                     AMPC_RL_IN(x), int64_t dim);
AMPC_API ampc_status ampc_cumsum_bwd(ampc_context ctx, AMPC_RL_OUT(dx),
                                     AMPC_RL_IN(dy), int64_t dim);
/// F.group_norm over x [N, C, ...] with w, b [C].
AMPC_API ampc_status ampc_group_norm_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                                         AMPC_RL_IN(x), AMPC_RL_IN(w),
                                         AMPC_RL_IN(b), int64_t groups,
                                         double eps);
/// dx, dw, db (any may be NULL); statistics are recomputed from x.
AMPC_API ampc_status ampc_group_norm_bwd(ampc_context ctx, AMPC_RL_OUT(dx),
                                         AMPC_RL_OUT(dw), AMPC_RL_OUT(db),
                                         AMPC_RL_IN(dy), AMPC_RL_IN(x),
                                         AMPC_RL_IN(w), int64_t groups,
                                         double eps);
/// F.cosine_similarity (torch 1.13: each norm clamped at eps); a and b
/// broadcast to a shape of a's rank, y drops dim.
AMPC_API ampc_status ampc_cosine_similarity_fwd(ampc_context ctx,
                                                AMPC_RL_OUT(y), AMPC_RL_IN(a),
                                                AMPC_RL_IN(b), int64_t dim,
                                                double eps);
AMPC_API ampc_status ampc_cosine_similarity_bwd(
    ampc_context ctx, AMPC_RL_OUT(da), AMPC_RL_OUT(db), AMPC_RL_IN(dy),
    AMPC_RL_IN(a), AMPC_RL_IN(b), int64_t dim, double eps);
/// Losses of a and b of one shape; loss is a scalar, or a's shape for
/// AMPC_REDUCTION_NONE (and so is dloss). da or db may be NULL.
AMPC_API ampc_status ampc_l1_loss_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                                      AMPC_RL_IN(a), AMPC_RL_IN(b),
                                      ampc_reduction reduction);
AMPC_API ampc_status ampc_l1_loss_bwd(ampc_context ctx, AMPC_RL_OUT(da),
                                      AMPC_RL_OUT(db), AMPC_RL_IN(dloss),
                                      AMPC_RL_IN(a), AMPC_RL_IN(b),
                                      ampc_reduction reduction);
AMPC_API ampc_status ampc_smooth_l1_loss_fwd(ampc_context ctx,
                                             AMPC_RL_OUT(loss), AMPC_RL_IN(a),
                                             AMPC_RL_IN(b), double beta,
                                             ampc_reduction reduction);
AMPC_API ampc_status ampc_smooth_l1_loss_bwd(
    ampc_context ctx, AMPC_RL_OUT(da), AMPC_RL_OUT(db), AMPC_RL_IN(dloss),
    AMPC_RL_IN(a), AMPC_RL_IN(b), double beta, ampc_reduction reduction);
/// F.kl_div(a = input log-probabilities, b = target).
AMPC_API ampc_status ampc_kl_div_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                                     AMPC_RL_IN(a), AMPC_RL_IN(b),
                                     ampc_reduction reduction,
                                     int32_t log_target);
AMPC_API ampc_status ampc_kl_div_bwd(ampc_context ctx, AMPC_RL_OUT(da),
                                     AMPC_RL_OUT(db), AMPC_RL_IN(dloss),
                                     AMPC_RL_IN(a), AMPC_RL_IN(b),
                                     ampc_reduction reduction,
                                     int32_t log_target);
/// F.nll_loss of logp [N, C] and integer labels [N]; loss is a scalar or
/// [N] (AMPC_REDUCTION_NONE). A label outside [0, C) other than
/// ignore_index counts 0 and, when site >= 0, records site in the
/// AMPC_CHECK_INDEX word.
AMPC_API ampc_status ampc_nll_loss_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                                       AMPC_RL_IN(logp), AMPC_RL_IN(labels),
                                       int64_t ignore_index,
                                       ampc_reduction reduction, int32_t site);
AMPC_API ampc_status ampc_nll_loss_bwd(ampc_context ctx, AMPC_RL_OUT(dlogp),
                                       AMPC_RL_IN(dloss), AMPC_RL_IN(logp),
                                       AMPC_RL_IN(labels),
                                       int64_t ignore_index,
                                       ampc_reduction reduction);
#undef AMPC_RL_OUT
#undef AMPC_RL_IN

/*===------------------------------------------------------------------===*
 * Checkpoints (1.8; docs/runtime.md, "Checkpoints"): the one writer and
 * reader of the files of `ampc run --save/--load` and of the NAME_save /
 * NAME_load functions of --emit=cpp code. Host memory only: the caller
 * copies device state out before saving and in after loading. Failures
 * about the file say, through ampc_last_error(), what was done to which
 * path and the system's reason ("cannot write checkpoint 'c.ckpt': No space
 * left on device", "checkpoint 'c.ckpt' is truncated"), with no function
 * name, so that a caller prefixes its own.
 *===------------------------------------------------------------------===*/

/// The version ampc_checkpoint_save writes; ampc_checkpoint_load reads it
/// and version 1 (no data position: epoch 1, batch 0).
#define AMPC_CHECKPOINT_VERSION 2

/// What a checkpoint holds besides its entries.
typedef struct ampc_checkpoint_header {
  /// The file's version (1 or 2) after a load; ignored by a save, which
  /// writes AMPC_CHECKPOINT_VERSION.
  uint32_t version;
  /// The writer's program fingerprint (the compiler's; the runtime only
  /// stores it).
  uint64_t fingerprint;
  /// Updates applied so far.
  int64_t steps;
  /// The data position: the epoch being consumed (from 1) and the batches
  /// of it already taken.
  int64_t epoch, batch;
} ampc_checkpoint_header;

/// A named tensor of a checkpoint: `bytes` bytes of host memory at `data`
/// (in a loaded checkpoint, packed as in the file: not aligned for its
/// dtype, so copy it out with memcpy).
/// `name` is NUL-terminated. The dtype is stored as given (a reader
/// compares it with its own; a loaded entry's may be any int32).
typedef struct ampc_checkpoint_entry {
  const char *name;
  ampc_dtype dtype;
  int64_t bytes;
  const void *data;
} ampc_checkpoint_entry;

/// A checkpoint read into host memory; its entries point into it.
typedef struct ampc_checkpoint_impl *ampc_checkpoint;

/// Writes `count` entries and `header` to `path` atomically: to a temporary
/// file beside it (PATH.tmp.PID), flushed to the disk (fsync), then renamed
/// over `path`, so an existing checkpoint is replaced whole or kept. What
/// exists at `path` and is not a regular file (/dev/null, a FIFO) is
/// written in place; a directory is refused. Names are unique, dtypes valid
/// and sizes non-negative (AMPC_ERROR_INVALID_ARGUMENT or
/// AMPC_ERROR_UNSUPPORTED_DTYPE before anything is written).
AMPC_API ampc_status ampc_checkpoint_save(const char *path,
                                          const ampc_checkpoint_header *header,
                                          const ampc_checkpoint_entry *entries,
                                          int64_t count);
/// Reads and checks the checkpoint at `path` (magic, checksum, version,
/// every field within the file) into *out; NULL on failure, with
/// AMPC_ERROR_INVALID_ARGUMENT for a file that cannot be read or is not a
/// valid checkpoint. Nothing is allocated from a size the file gives before
/// the bytes it promises are known to be there. Free with
/// ampc_checkpoint_free.
AMPC_API ampc_status ampc_checkpoint_load(const char *path,
                                          ampc_checkpoint *out);
/// As ampc_checkpoint_load, of `size` bytes at `bytes` (copied); `path`
/// only names them in messages.
AMPC_API ampc_status ampc_checkpoint_parse(const void *bytes, size_t size,
                                           const char *path,
                                           ampc_checkpoint *out);
AMPC_API ampc_status ampc_checkpoint_get_header(ampc_checkpoint checkpoint,
                                                ampc_checkpoint_header *header);
AMPC_API ampc_status ampc_checkpoint_count(ampc_checkpoint checkpoint,
                                           int64_t *count);
/// Entry `index` (0 <= index < count, in file order); its name and data
/// live as long as `checkpoint`.
AMPC_API ampc_status ampc_checkpoint_get_entry(ampc_checkpoint checkpoint,
                                               int64_t index,
                                               ampc_checkpoint_entry *entry);
/// Frees a loaded checkpoint (NULL is allowed).
AMPC_API ampc_status ampc_checkpoint_free(ampc_checkpoint checkpoint);
/// FNV-1a (64-bit) of `size` bytes: a checkpoint's last 8 bytes hold it, of
/// every byte before them.
AMPC_API ampc_status ampc_checkpoint_checksum(const void *bytes, size_t size,
                                              uint64_t *sum);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // AMPC_RUNTIME_H
