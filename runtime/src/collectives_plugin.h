//===- collectives_plugin.h - The MPI module's interface --------*- C++ -*-===//
//
// libampc_runtime_mpi.so is the only part of the runtime that links MPI; the
// runtime dlopen()s it when the first communicator is created
// (collectives.cpp). It works on host buffers of f32 or i32 only: the runtime
// converts 16-bit data and stages device memory itself.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_COLLECTIVES_PLUGIN_H
#define AMPC_RUNTIME_SRC_COLLECTIVES_PLUGIN_H

#include <cstdint>

#define AMPC_MPI_PLUGIN_ENTRY_NAME "ampc_mpi_plugin_entry"
constexpr const char *kMpiPluginFile = "libampc_runtime_mpi.so";
constexpr int32_t kMpiPluginAbi = 3;

/// Every function returns 0 on success, else writes a message of at most
/// 255 characters to `err` and returns non-zero.
struct MpiPluginApi {
  int32_t abi;
  int (*init)(int32_t *rank, int32_t *size, char *err);
  int (*finalize)(char *err);
  /// isI32: the buffer holds int32_t, else float. op: 0 sum, 2 max.
  int (*iallreduce)(void *buf, int64_t count, int isI32, int op, void **req,
                    char *err);
  int (*wait)(void *req, char *err);
  /// Progresses the request (and, through MPI's progress engine, every
  /// other one in flight) without blocking; *done becomes 1 once it has
  /// completed. `req` stays valid until `wait`, which then returns at once.
  int (*test)(void *req, int *done, char *err);
  int (*bcast)(void *buf, int64_t bytes, int32_t root, char *err);
  int (*barrier)(char *err);
  void (*abort)(int32_t code);
  /// This process's rank among the ranks of its machine (the CUDA device
  /// choice, docs/distributed.md).
  int (*localRank)(int32_t *localRank, char *err);
};

extern "C" typedef int (*MpiPluginEntry)(MpiPluginApi *api);

#endif // AMPC_RUNTIME_SRC_COLLECTIVES_PLUGIN_H
