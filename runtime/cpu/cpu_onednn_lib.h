//===- cpu_onednn_lib.h - oneDNN's C API, loaded at run time ----*- C++ -*-===//
//
// The part of the oneDNN engine that the GEMM (cpu_onednn.cpp) and the
// convolution primitives (cpu_onednn_conv.cpp) share: the table of oneDNN
// functions resolved with dlsym() from libdnnl.so.2, the CPU engine, and
// each thread's stream and scratchpad. Only for the runtime's own oneDNN
// files, and only where oneDNN's header was found
// (AMPC_RUNTIME_WITH_ONEDNN).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_ONEDNN_LIB_H
#define AMPC_RUNTIME_CPU_CPU_ONEDNN_LIB_H

#if defined(AMPC_RUNTIME_WITH_ONEDNN)

#include <oneapi/dnnl/dnnl.h>

#include <stddef.h>

#include <string>

namespace ampc {
namespace onednn {

// Every oneDNN function the backend calls, resolved from libdnnl.so.2.
#define AMPC_DNNL_FUNCTIONS(X)                                                 \
  X(dnnl_version)                                                              \
  X(dnnl_set_max_cpu_isa)                                                      \
  X(dnnl_get_effective_cpu_isa)                                                \
  X(dnnl_engine_create)                                                        \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_destroy)                                                       \
  X(dnnl_memory_desc_init_by_strides)                                          \
  X(dnnl_memory_desc_init_by_tag)                                              \
  X(dnnl_memory_desc_equal)                                                    \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_matmul_desc_init)                                                     \
  X(dnnl_dilated_convolution_forward_desc_init)                                \
  X(dnnl_dilated_convolution_backward_data_desc_init)                          \
  X(dnnl_dilated_convolution_backward_weights_desc_init)                       \
  X(dnnl_reorder_primitive_desc_create)                                        \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                   \
  X(dnnl_primitive_attr_set_output_scales)                                     \
  X(dnnl_primitive_attr_set_post_ops)                                          \
  X(dnnl_post_ops_create)                                                      \
  X(dnnl_post_ops_destroy)                                                     \
  X(dnnl_post_ops_append_sum)                                                  \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_destroy)                                                    \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_destroy)

struct Api {
#define AMPC_DNNL_POINTER(f) decltype(&::f) f = nullptr;
  AMPC_DNNL_FUNCTIONS(AMPC_DNNL_POINTER)
#undef AMPC_DNNL_POINTER
  // OpenMP (oneDNN's threads): the per-thread team size.
  void (*ompSetNumThreads)(int) = nullptr;
  int (*ompGetMaxThreads)() = nullptr;
  dnnl_engine_t engine = nullptr;
};

struct Library {
  Api api;
  bool ok = false;
  /// oneDNN runs bf16 products on bf16 units (AVX512-BF16 or AMX), not
  /// on an emulation.
  bool nativeBf16 = false;
  std::string summary;
};

/// The library, loaded on the first call (thread-safe); `ok` false (and
/// the reason in `summary`) when it cannot be used.
const Library &library();

/// Runs the calling thread's oneDNN calls on one OpenMP thread and puts
/// the thread's setting back afterwards (a program's own OpenMP code keeps
/// its team size).
class OneThread {
public:
  explicit OneThread(const Api &a) : api(a), before(a.ompGetMaxThreads()) {
    if (before != 1)
      api.ompSetNumThreads(1);
  }
  ~OneThread() {
    if (before != 1)
      api.ompSetNumThreads(before);
  }
  OneThread(const OneThread &) = delete;
  OneThread &operator=(const OneThread &) = delete;

private:
  const Api &api;
  int before;
};

/// The calling thread's stream and a scratchpad of at least `bytes`
/// (4 KiB aligned); false, with ampc's last error set, when either cannot
/// be made.
bool threadStream(dnnl_stream_t &stream, size_t bytes, void *&scratchpad);

} // namespace onednn
} // namespace ampc

#endif // AMPC_RUNTIME_WITH_ONEDNN

#endif // AMPC_RUNTIME_CPU_CPU_ONEDNN_LIB_H
