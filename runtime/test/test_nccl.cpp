//===- test_nccl.cpp - NCCL collectives against the CPU collective -*- C++
//-*-===//
//
// On every rank, all-reduces the same data once on a CUDA context (NCCL,
// libampc_runtime_nccl.so) and once on a CPU context (the MPI path, or the
// one-rank communicator), for every dtype (f64, f32, f16, bf16, i32),
// every op (sum, mean, max) and sizes of 1, 1000 and 2^20 + 3 elements (several
// grid-stride rounds), all CUDA all-reduces of a size in flight before the
// first wait; the results must be equal bit for bit. Then a broadcast from
// the last rank, a barrier, the gradient all-reduce of f64, f32 and bf16
// gradients against the CPU context's, and invalid arguments on the CUDA
// context.
//
//   ampc_runtime_nccl_test            one process: ampc_comm_create_self
//   mpirun -np 2 ampc_runtime_nccl_test --ranks=2
//                                     two ranks over MPI, one GPU each
//   ampc_runtime_nccl_test --unique-id
//                                     one process: a communicator of
//                                     ampc_comm_create_rank with an id for
//                                     CUDA (NCCL joins that id's NCCL id)
//
// Exits 77 (ctest's skip) with a message when there is no usable GPU, or,
// for --ranks=2, when the ranks would share a GPU. --module-missing checks
// the error when the NCCL module cannot be loaded (no GPU needed). Data are
// finite and never -0: NaN payloads and the sign of a zero maximum are not
// specified by either library.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
int rank = 0, failures = 0;

void check(ampc_status st, const char *what) {
  if (st != AMPC_OK) {
    std::fprintf(stderr, "FAIL: rank %d: %s: %s (%s)\n", rank, what,
                 ampc_status_string(st), ampc_last_error());
    std::exit(1);
  }
}

uint64_t lcg(uint64_t &s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 17;
}

size_t elemSize(ampc_dtype dt) {
  return dt == AMPC_F64 ? 8 : dt == AMPC_F16 || dt == AMPC_BF16 ? 2 : 4;
}

/// Finite values that depend on the rank: f64 and f32 with exponents over
/// 2^-20 .. 2^20 (f64 with all 52 mantissa bits: through f32 they would
/// round), 16-bit values from random bit patterns without inf/NaN, i32 in
/// [-2^20, 2^20].
std::vector<unsigned char> makeData(ampc_dtype dt, int64_t n, uint64_t seed) {
  std::vector<unsigned char> out(size_t(n) * elemSize(dt));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + uint64_t(rank) * 7919 + 1;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = lcg(s);
    switch (dt) {
    case AMPC_F64: {
      uint64_t mant = ((r << 23) ^ lcg(s)) & 0xFFFFFFFFFFFFFull;
      uint64_t exp = 1023 - 20 + (r >> 23) % 41;
      uint64_t bits = ((r >> 40) & 1) << 63 | exp << 52 | mant;
      std::memcpy(&out[i * 8], &bits, 8);
      break;
    }
    case AMPC_F32: {
      uint32_t mant = uint32_t(r & 0x7FFFFF);
      uint32_t exp = uint32_t(127 - 20 + (r >> 23) % 41);
      uint32_t bits = ((r >> 40) & 1) << 31 | exp << 23 | mant;
      std::memcpy(&out[i * 4], &bits, 4);
      break;
    }
    case AMPC_F16: {
      uint16_t bits = uint16_t(r);
      if (((bits >> 10) & 0x1F) == 0x1F)
        bits &= 0xBFFF; // exponent 31 (inf/NaN) -> 15
      if (bits == 0x8000)
        bits = 0; // -0: a zero maximum's sign is not specified
      std::memcpy(&out[i * 2], &bits, 2);
      break;
    }
    case AMPC_BF16: {
      uint16_t bits = uint16_t(r);
      if (((bits >> 7) & 0xFF) == 0xFF)
        bits &= 0xBFFF;
      if (bits == 0x8000)
        bits = 0;
      std::memcpy(&out[i * 2], &bits, 2);
      break;
    }
    default: {
      int32_t v = int32_t(r % (2u << 20)) - (1 << 20);
      std::memcpy(&out[i * 4], &v, 4);
      break;
    }
    }
  }
  return out;
}

const char *dtypeName(ampc_dtype dt) {
  return dt == AMPC_F64    ? "f64"
         : dt == AMPC_F32  ? "f32"
         : dt == AMPC_F16  ? "f16"
         : dt == AMPC_BF16 ? "bf16"
                           : "i32";
}
const char *opName(ampc_reduce_op op) {
  return op == AMPC_REDUCE_SUM    ? "sum"
         : op == AMPC_REDUCE_MEAN ? "mean"
                                  : "max";
}

struct Case {
  ampc_dtype dtype;
  ampc_reduce_op op;
  int64_t n;
  std::vector<unsigned char> data, cpu, gpu;
  void *dev = nullptr;
  ampc_request req = nullptr;
};
} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--module-missing") {
    // Run with AMPC_RUNTIME_NCCL_LIBRARY naming a file that does not exist:
    // the device query that loads the module must fail cleanly, naming it.
    ampc_comm comm = nullptr;
    check(ampc_comm_create_self(&comm), "ampc_comm_create_self");
    int32_t device = -1;
    ampc_status st = ampc_comm_cuda_device(comm, &device);
    std::printf("%s: %s\n", ampc_status_string(st), ampc_last_error());
    check(ampc_comm_destroy(comm), "ampc_comm_destroy");
    return st == AMPC_ERROR_BACKEND_UNAVAILABLE ? 0 : 1;
  }
  bool twoRanks = mode == "--ranks=2", uniqueId = mode == "--unique-id";
  int32_t available = 0;
  ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  if (!available) {
    std::printf("SKIP: no usable CUDA device (or a runtime built without "
                "CUDA): NCCL all-reduce against the CPU collective skipped\n");
    return 77;
  }
  ampc_comm comm = nullptr;
  if (uniqueId) {
    ampc_comm_unique_id id;
    check(ampc_comm_get_unique_id(AMPC_BACKEND_CUDA, &id),
          "ampc_comm_get_unique_id");
    check(ampc_comm_create_rank(0, 1, &id, &comm), "ampc_comm_create_rank");
  } else {
    check(twoRanks ? ampc_comm_create_mpi(&comm) : ampc_comm_create_self(&comm),
          twoRanks ? "ampc_comm_create_mpi" : "ampc_comm_create_self");
  }
  int32_t r = 0, size = 1, device = 0;
  check(ampc_comm_rank(comm, &r), "rank");
  rank = r;
  check(ampc_comm_size(comm, &size), "size");
  check(ampc_comm_cuda_device(comm, &device), "ampc_comm_cuda_device");
  ampc_context cpu, gpu;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &cpu), "cpu context");
  if (twoRanks) {
    // Every rank learns whether two ranks share a device before any NCCL
    // call (NCCL refuses that).
    int32_t onDevice[2] = {device == 0, device == 1};
    check(
        ampc_comm_allreduce(comm, cpu, onDevice, AMPC_I32, 2, AMPC_REDUCE_SUM),
        "device census");
    if (size != 2 || onDevice[0] != 1 || onDevice[1] != 1) {
      if (rank == 0)
        std::printf("SKIP: the 2-rank NCCL test needs 2 ranks on 2 GPUs "
                    "(%d ranks; %d on device 0): skipped\n",
                    int(size), int(onDevice[0]));
      ampc_comm_destroy(comm);
      return 77;
    }
  }
  check(ampc_context_create(AMPC_BACKEND_CUDA, device, &gpu), "cuda context");

  const ampc_dtype dtypes[] = {AMPC_F64, AMPC_F32, AMPC_F16, AMPC_BF16,
                               AMPC_I32};
  const ampc_reduce_op ops[] = {AMPC_REDUCE_SUM, AMPC_REDUCE_MEAN,
                                AMPC_REDUCE_MAX};
  const int64_t sizes[] = {1, 1000, (int64_t(1) << 20) + 3};
  uint64_t seed = 1;
  for (int64_t n : sizes) {
    std::vector<Case> cases;
    for (ampc_dtype dt : dtypes)
      for (ampc_reduce_op op : ops)
        cases.push_back({dt, op, n, makeData(dt, n, seed++), {}, {}});
    for (Case &c : cases) {
      size_t bytes = c.data.size();
      check(ampc_malloc(gpu, bytes, &c.dev), "ampc_malloc");
      check(ampc_memcpy(gpu, c.dev, c.data.data(), bytes,
                        AMPC_MEMCPY_HOST_TO_DEVICE),
            "upload");
      check(
          ampc_comm_allreduce_async(comm, gpu, c.dev, c.dtype, n, c.op, &c.req),
          "ampc_comm_allreduce_async (cuda)");
    }
    for (Case &c : cases)
      check(ampc_comm_wait(c.req), "ampc_comm_wait (cuda)");
    for (Case &c : cases) {
      c.cpu = c.data;
      check(ampc_comm_allreduce(comm, cpu, c.cpu.data(), c.dtype, n, c.op),
            "ampc_comm_allreduce (cpu)");
      c.gpu.resize(c.data.size());
      check(ampc_memcpy(gpu, c.gpu.data(), c.dev, c.gpu.size(),
                        AMPC_MEMCPY_DEVICE_TO_HOST),
            "download");
      check(ampc_free(gpu, c.dev), "ampc_free");
      size_t es = elemSize(c.dtype);
      for (int64_t i = 0; i < n; ++i)
        if (std::memcmp(&c.cpu[i * es], &c.gpu[i * es], es)) {
          uint64_t a = 0, b = 0;
          std::memcpy(&a, &c.cpu[i * es], es);
          std::memcpy(&b, &c.gpu[i * es], es);
          std::fprintf(stderr,
                       "FAIL: rank %d: %s %s n=%lld: element %lld is 0x%llx "
                       "on the CPU, 0x%llx through NCCL\n",
                       rank, opName(c.op), dtypeName(c.dtype), (long long)n,
                       (long long)i, (unsigned long long)a,
                       (unsigned long long)b);
          ++failures;
          break;
        }
    }
    if (rank == 0)
      std::printf("allreduce sum mean max of f64 f32 f16 bf16 i32, n = %lld, "
                  "on %d rank(s): compared\n",
                  (long long)n, int(size));
  }

  // Broadcast from the last rank, queued on the CUDA context.
  std::vector<unsigned char> mine(4099), got(4099);
  for (size_t i = 0; i < mine.size(); ++i)
    mine[i] = static_cast<unsigned char>(i * 31 + rank * 7);
  void *dev = nullptr;
  check(ampc_malloc(gpu, mine.size(), &dev), "ampc_malloc");
  check(ampc_memcpy(gpu, dev, mine.data(), mine.size(),
                    AMPC_MEMCPY_HOST_TO_DEVICE),
        "upload");
  check(ampc_comm_broadcast(comm, gpu, dev, int64_t(mine.size()), size - 1),
        "ampc_comm_broadcast (cuda)");
  check(
      ampc_memcpy(gpu, got.data(), dev, got.size(), AMPC_MEMCPY_DEVICE_TO_HOST),
      "download");
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != static_cast<unsigned char>(i * 31 + (size - 1) * 7)) {
      std::fprintf(stderr, "FAIL: rank %d: broadcast byte %zu\n", rank, i);
      ++failures;
      break;
    }
  check(ampc_comm_barrier(comm), "ampc_comm_barrier");

  // The gradient all-reduce (ampc_grad_allreduce_start/_wait) with f64
  // gradients beside f32 and bf16 ones: three messages, the f64 one staged
  // from two gradients; sum and mean; on the CUDA and the CPU context, the
  // same bits. AMPC_GRAD_BUCKETS_ONE_RANK=1 sends buckets through the
  // collective on one rank too.
  setenv("AMPC_GRAD_BUCKETS_ONE_RANK", "1", 1);
  check(ampc_context_set_comm(gpu, comm), "ampc_context_set_comm (cuda)");
  check(ampc_context_set_comm(cpu, comm), "ampc_context_set_comm (cpu)");
  {
    const ampc_dtype gd[4] = {AMPC_F64, AMPC_F32, AMPC_F64, AMPC_BF16};
    const int64_t gn[4] = {1000, 777, 3, 513};
    for (int32_t mean = 0; mean < 2; ++mean) {
      std::vector<unsigned char> host[4], onCpu[4], onGpu[4];
      void *gp[4], *cp[4];
      for (int k = 0; k < 4; ++k) {
        host[k] = makeData(gd[k], gn[k], seed++);
        onCpu[k] = host[k];
        cp[k] = onCpu[k].data();
        check(ampc_malloc(gpu, host[k].size(), &gp[k]), "ampc_malloc");
        check(ampc_memcpy(gpu, gp[k], host[k].data(), host[k].size(),
                          AMPC_MEMCPY_HOST_TO_DEVICE),
              "upload");
      }
      check(ampc_grad_allreduce_start(gpu, gp, gd, gn, 4, 0, mean, 0),
            "ampc_grad_allreduce_start (cuda)");
      check(ampc_grad_allreduce_wait(gpu, gp, gd, gn, 4, 0),
            "ampc_grad_allreduce_wait (cuda)");
      check(ampc_grad_allreduce_start(cpu, cp, gd, gn, 4, 0, mean, 0),
            "ampc_grad_allreduce_start (cpu)");
      check(ampc_grad_allreduce_wait(cpu, cp, gd, gn, 4, 0),
            "ampc_grad_allreduce_wait (cpu)");
      for (int k = 0; k < 4; ++k) {
        onGpu[k].resize(host[k].size());
        check(ampc_memcpy(gpu, onGpu[k].data(), gp[k], onGpu[k].size(),
                          AMPC_MEMCPY_DEVICE_TO_HOST),
              "download");
        check(ampc_free(gpu, gp[k]), "ampc_free");
        if (onGpu[k] != onCpu[k]) {
          std::fprintf(stderr,
                       "FAIL: rank %d: gradient all-reduce (%s) of gradient "
                       "%d (%s) differs from the CPU context's\n",
                       rank, mean ? "mean" : "sum", k, dtypeName(gd[k]));
          ++failures;
        }
      }
    }
  }
  check(ampc_context_set_comm(gpu, nullptr), "ampc_context_set_comm (cuda)");
  check(ampc_context_set_comm(cpu, nullptr), "ampc_context_set_comm (cpu)");
  if (rank == 0)
    std::printf("gradient all-reduce of f64, f32 and bf16 gradients, sum and "
                "mean, on %d rank(s): compared\n",
                int(size));

  // Invalid arguments on a CUDA context are errors, not crashes.
  ampc_request bad = nullptr;
  if (ampc_comm_allreduce_async(comm, gpu, dev, AMPC_I64, 1, AMPC_REDUCE_SUM,
                                &bad) != AMPC_ERROR_UNSUPPORTED_DTYPE) {
    std::fprintf(stderr, "FAIL: rank %d: i64 all-reduce accepted\n", rank);
    ++failures;
  }
  if (ampc_comm_broadcast(comm, gpu, dev, 1, size) !=
      AMPC_ERROR_INVALID_ARGUMENT) {
    std::fprintf(stderr, "FAIL: rank %d: broadcast root %d accepted\n", rank,
                 int(size));
    ++failures;
  }
  check(ampc_free(gpu, dev), "ampc_free");
  ampc_context_destroy(gpu);
  ampc_context_destroy(cpu);
  check(ampc_comm_destroy(comm), "ampc_comm_destroy");
  if (failures) {
    std::fprintf(stderr, "FAIL: rank %d: %d failures\n", rank, failures);
    return 1;
  }
  if (rank == 0)
    std::printf("OK: NCCL collectives equal the CPU collective bit for bit "
                "on %d rank(s)%s\n",
                int(size), uniqueId ? " (a communicator of a unique id)" : "");
  return 0;
}
