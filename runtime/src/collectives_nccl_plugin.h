//===- collectives_nccl_plugin.h - The NCCL module's interface --*- C++ -*-===//
//
// libampc_runtime_nccl.so is the only part of the runtime that links NCCL;
// the runtime dlopen()s it the first time a collective runs on a CUDA
// context (collectives_cuda.cpp). It owns one NCCL communicator per ampc
// communicator, a communication stream on that communicator's device and
// the conversion kernels (runtime/cuda/collectives_nccl.cu).
//
// Stream order: every operation first makes the communication stream wait
// for the work queued so far on the context's stream (an event), queues its
// kernels and the NCCL call on the communication stream and records a
// completion event there; the context's stream is made to wait for that
// event (at wait for an all-reduce, at once for a broadcast). Nothing here
// blocks the host except where pools are unsupported (see wait).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_COLLECTIVES_NCCL_PLUGIN_H
#define AMPC_RUNTIME_SRC_COLLECTIVES_NCCL_PLUGIN_H

#include <cstdint>

#define AMPC_NCCL_PLUGIN_ENTRY_NAME "ampc_nccl_plugin_entry"
constexpr const char *kNcclPluginFile = "libampc_runtime_nccl.so";
// 2: allreduce takes f64 (a module of ABI 1 would read it as f32).
constexpr int32_t kNcclPluginAbi = 2;
/// The size of ncclUniqueId (NCCL_UNIQUE_ID_BYTES).
constexpr int kNcclIdBytes = 128;

/// Every function returns 0 on success; else it writes a message of at most
/// 255 characters to `err` and returns 1 when NCCL failed or is unusable
/// (AMPC_ERROR_BACKEND_UNAVAILABLE) or 2 when CUDA failed (AMPC_ERROR_DEVICE).
struct NcclPluginApi {
  int32_t abi;
  /// The NCCL library's version code (e.g. 22809 for 2.28.9).
  int (*version)(int32_t *code, char *err);
  /// The number of CUDA devices this process sees.
  int (*deviceCount)(int32_t *count, char *err);
  /// The device a CUDA stream belongs to.
  int (*streamDevice)(void *stream, int32_t *device, char *err);
  /// A new NCCL unique id (kNcclIdBytes bytes), made on rank 0.
  int (*uniqueId)(void *id, char *err);
  /// Joins the NCCL communicator of `size` ranks named by `id` as `rank`,
  /// on `device`; *state receives the module's handle.
  int (*create)(int32_t device, int32_t rank, int32_t size, const void *id,
                void **state, char *err);
  /// Waits for the communication stream and destroys the communicator.
  int (*destroy)(void *state, char *err);
  /// Queues the in-place all-reduce of `count` elements of `buf` (an
  /// ampc_dtype: f64, f32, f16, bf16 or i32; op 0 sum, 1 mean, 2 max)
  /// after the work queued on `stream`; *req receives the request.
  int (*allreduce)(void *state, void *stream, void *buf, int32_t dtype,
                   int64_t count, int32_t op, void **req, char *err);
  /// Makes `stream` wait for the request (no host wait) and frees it.
  int (*wait)(void *state, void *stream, void *req, char *err);
  /// Queues the broadcast of `bytes` bytes of `buf` from `root` after the
  /// work queued on `stream`, and makes `stream` wait for it.
  int (*bcast)(void *state, void *stream, void *buf, int64_t bytes,
               int32_t root, char *err);
};

extern "C" typedef int (*NcclPluginEntry)(NcclPluginApi *api);

#endif // AMPC_RUNTIME_SRC_COLLECTIVES_NCCL_PLUGIN_H
