//===- collectives_plugin.h - The MPI module's interface --------*- C++ -*-===//
//
// libampc_runtime_mpi.so is the only part of the runtime that links MPI; the
// runtime dlopen()s it when the first communicator that needs MPI is created
// (collectives.cpp). It works on host buffers of f32, i32 or f64 only: the
// runtime converts 16-bit data and stages device memory itself.
//
// A communicator is a handle of the module's (an MPI communicator): the one
// of MPI_COMM_WORLD (init), or one over some of its processes that a unique
// id names (join, ampc_comm_create_rank). The one-rank and host-less tables
// of collectives.cpp take the same handles and ignore them.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_COLLECTIVES_PLUGIN_H
#define AMPC_RUNTIME_SRC_COLLECTIVES_PLUGIN_H

#include <cstdint>
#include <cstdlib>
#include <initializer_list>

#define AMPC_MPI_PLUGIN_ENTRY_NAME "ampc_mpi_plugin_entry"
constexpr const char *kMpiPluginFile = "libampc_runtime_mpi.so";
constexpr int32_t kMpiPluginAbi = 5;

/// Every function returns 0 on success, else writes a message of at most
/// 255 characters to `err` and returns non-zero.
struct MpiPluginApi {
  int32_t abi;
  /// Initialises MPI if the process has not; *comm: MPI_COMM_WORLD's handle.
  int (*init)(void **comm, int32_t *rank, int32_t *size, char *err);
  /// Joins, as `rank` of `size`, the communicator that the process at world
  /// rank `maker` named by `nonce`: every member sends its (rank, size) to
  /// the maker over MPI_COMM_WORLD, the maker checks them and answers with
  /// the world rank of each rank, and the members make an MPI communicator
  /// of their group in that order. `made` lists the `madeCount` nonces of
  /// the ids this process made: the maker finds `nonce` there, and refuses
  /// at once a request for a nonce it never made (a stale id). Initialises
  /// MPI if the process has not.
  int (*join)(int32_t maker, uint64_t nonce, const uint64_t *made,
              int32_t madeCount, int32_t rank, int32_t size, void **comm,
              char *err);
  /// Frees a handle of init or join. MPI, when the module initialised it,
  /// is finalised at exit if every handle was freed (it cannot be
  /// initialised twice).
  int (*release)(void *comm, char *err);
  /// type: the buffer holds float (0), int32_t (1) or double (2, since
  /// ABI 5). op: 0 sum, 2 max.
  int (*iallreduce)(void *comm, void *buf, int64_t count, int type, int op,
                    void **req, char *err);
  int (*wait)(void *req, char *err);
  /// Progresses the request (and, through MPI's progress engine, every
  /// other one in flight) without blocking; *done becomes 1 once it has
  /// completed. `req` stays valid until `wait`, which then returns at once.
  int (*test)(void *req, int *done, char *err);
  int (*bcast)(void *comm, void *buf, int64_t bytes, int32_t root, char *err);
  int (*barrier)(void *comm, char *err);
  void (*abort)(int32_t code);
  /// This process's rank among the ranks of its machine (the CUDA device
  /// choice, docs/distributed.md): the launcher's word, else from a
  /// shared-memory split of the communicator (collective over it).
  int (*localRank)(void *comm, int32_t *localRank, char *err);
};

extern "C" typedef int (*MpiPluginEntry)(MpiPluginApi *api);

/// The first of the launcher's variables `vars` that is set, as an integer
/// (a rank or local rank); false when none is.
inline bool launcherInt(std::initializer_list<const char *> vars,
                        int32_t *value) {
  for (const char *var : vars)
    if (const char *v = std::getenv(var); v && *v) {
      *value = static_cast<int32_t>(std::atoi(v));
      return true;
    }
  return false;
}
/// Where MPI launchers (Open MPI, MPICH/Hydra) and Slurm give the local rank.
#define AMPC_LOCAL_RANK_VARS                                                   \
  "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"

#endif // AMPC_RUNTIME_SRC_COLLECTIVES_PLUGIN_H
