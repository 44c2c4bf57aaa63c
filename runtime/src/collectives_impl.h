//===- collectives_impl.h - Communicators inside the runtime ----*- C++ -*-===//
//
// The communicator and request objects behind ampc_comm / ampc_request,
// shared by the host (MPI) side, collectives.cpp, and the CUDA (NCCL) side,
// collectives_cuda.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_COLLECTIVES_IMPL_H
#define AMPC_RUNTIME_SRC_COLLECTIVES_IMPL_H

#include "ampc/runtime.h"
#include "collectives_plugin.h"

#include <vector>

struct ampc_comm_impl {
  /// The host transport: the MPI module's table, the one-rank table
  /// (ampc_comm_create_self) or the host-less one (a communicator of a unique
  /// id made outside an MPI job, for CUDA contexts only); and its handle.
  const MpiPluginApi *api = nullptr;
  void *host = nullptr;
  int32_t rank = 0, size = 1;
  /// The NCCL unique id its NCCL side joins (ampc_comm_create_rank with an
  /// id made for CUDA); without one rank 0 makes an id at the first CUDA
  /// collective and the host transport carries it.
  bool hasNcclId = false;
  unsigned char ncclId[128] = {};
  /// The NCCL module's communicator, made by the first collective on a CUDA
  /// context (collectives_cuda.cpp), and its device.
  void *nccl = nullptr;
  int32_t ncclDevice = -1;
};

struct ampc_request_impl {
  ampc_comm comm = nullptr;
  void *mpi = nullptr;
  /// A CUDA context's all-reduce: the NCCL module's request and the
  /// context's stream that ampc_comm_wait makes wait for it.
  void *nccl = nullptr;
  void *stream = nullptr;
  void *buf = nullptr;
  ampc_dtype dtype = AMPC_F32;
  int64_t count = 0;
  ampc_reduce_op op = AMPC_REDUCE_SUM;
  std::vector<float> wide; ///< 16-bit buffers, widened
  /// ampc_comm_test saw the transfer complete (the wait only finishes it).
  bool complete = false;
};

namespace ampc {
/// The CUDA side of the collectives (collectives_cuda.cpp): arguments are
/// already validated; ctx is a CUDA context.
ampc_status ncclAllreduceAsync(ampc_comm comm, ampc_context ctx, void *buf,
                               ampc_dtype dtype, int64_t count,
                               ampc_reduce_op op, ampc_request *request);
ampc_status ncclWait(ampc_request request);
ampc_status ncclBroadcast(ampc_comm comm, ampc_context ctx, void *buf,
                          int64_t bytes, int32_t root);
/// Destroys the communicator's NCCL side, if it has one.
ampc_status ncclRelease(ampc_comm comm);
/// The number of CUDA devices, through the NCCL module.
ampc_status ncclDeviceCount(int32_t *count);
/// A new NCCL unique id (128 bytes), through the NCCL module.
ampc_status ncclMakeUniqueId(void *id, const char *fn);
} // namespace ampc

#endif // AMPC_RUNTIME_SRC_COLLECTIVES_IMPL_H
