//===- cuda_gemm.cpp - GEMMs through cuBLASLt
//--------------------------------===//
//
// Row-major C = op(A) op(B) is computed as the column-major product
// C^T = op(B)^T op(A)^T, so B is cuBLASLt's first operand. Compute type is
// CUBLAS_COMPUTE_32F (f32 accumulation; no TF32 for f32 inputs), except for
// f64 operands (the f64 GEMM of cuda_wide.cu): CUBLAS_COMPUTE_64F with f64
// alpha and beta.
//
//===----------------------------------------------------------------------===//
#include "cuda_internal.h"

#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace ampc {
namespace cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

cudaDataType_t cudaType(ampc_dtype dt) {
  switch (dt) {
  case AMPC_F16:
    return CUDA_R_16F;
  case AMPC_BF16:
    return CUDA_R_16BF;
  case AMPC_F64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

ampc_status ltFail(cublasStatus_t s, const char *what) {
  return setError(AMPC_ERROR_DEVICE,
                  "cuda backend: %s failed (cublasLt status %d)", what,
                  static_cast<int>(s));
}

#define LT_TRY(call)                                                           \
  do {                                                                         \
    cublasStatus_t ltStatus_ = (call);                                         \
    if (ltStatus_ != CUBLAS_STATUS_SUCCESS)                                    \
      return ltFail(ltStatus_, #call);                                         \
  } while (0)

/// Largest power-of-two alignment of a pointer, up to 256 bytes.
uint32_t alignmentOf(const void *p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (v % a))
    a /= 2;
  return a;
}

/// The descriptors of one problem, built once and kept in the cache.
struct Descs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  Descs() = default;
  Descs(const Descs &) = delete;
  Descs &operator=(const Descs &) = delete;
  ~Descs() {
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

struct Pref {
  cublasLtMatmulPreference_t p = nullptr;
  ~Pref() {
    if (p)
      cublasLtMatmulPreferenceDestroy(p);
  }
};

ampc_status makeLayout(cublasLtMatrixLayout_t *out, cudaDataType_t type,
                       uint64_t rows, uint64_t cols, int64_t ld, int64_t batch,
                       int64_t stride) {
  LT_TRY(cublasLtMatrixLayoutCreate(out, type, rows, cols, ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    LT_TRY(cublasLtMatrixLayoutSetAttribute(
        *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    LT_TRY(cublasLtMatrixLayoutSetAttribute(
        *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return AMPC_OK;
}

} // namespace

/// Problem signature -> its descriptors and the heuristic's algorithms (in
/// the heuristic's order; the first that runs is moved to the front).
struct LtGemm::Cache {
  using Key = std::vector<int64_t>;
  struct Entry {
    Descs descs;
    /// Empty when the heuristic found none or none ran: the problem then
    /// takes the caller's other path at once, without asking again.
    std::vector<cublasLtMatmulAlgo_t> algos;
  };
  std::map<Key, std::unique_ptr<Entry>> entries;
  size_t heuristicQueries = 0;
};

size_t LtGemm::cachedProblems() const {
  return cache ? cache->entries.size() : 0;
}

size_t LtGemm::heuristicQueries() const {
  return cache ? cache->heuristicQueries : 0;
}

ampc_status cudaFail(cudaError_t err, const char *what) {
  return setError(AMPC_ERROR_DEVICE, "cuda backend: %s failed: %s", what,
                  cudaGetErrorString(err));
}

LtGemm::LtGemm() = default;

LtGemm::~LtGemm() {
  if (workspace)
    cudaFree(workspace);
  if (handle)
    cublasLtDestroy(handle);
}

ampc_status LtGemm::init(cudaStream_t s) {
  stream = s;
  cache.reset(new Cache);
  LT_TRY(cublasLtCreate(&handle));
  cudaError_t err = cudaMalloc(&workspace, kWorkspaceBytes);
  if (err != cudaSuccess)
    return cudaFail(err, "cudaMalloc(cuBLASLt workspace)");
  workspaceBytes = kWorkspaceBytes;
  return AMPC_OK;
}

bool LtGemm::supports(ampc_dtype ab, ampc_dtype c) {
  return c == ab || c == AMPC_F32;
}

namespace {

cublasLtEpilogue_t epilogueOf(const GemmDesc &d) {
  bool bias = d.bias.data != nullptr;
  if (d.epilogue == AMPC_EPILOGUE_RELU)
    return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (d.epilogue == AMPC_EPILOGUE_GELU_TANH)
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

/// The bias pointer is per call; everything else in the descriptor is per
/// problem. It is also set before the heuristic is asked, which may reject
/// algorithms for a bias-epilogue descriptor that has none.
ampc_status setBiasPointer(Descs &ds, const GemmDesc &d) {
  const void *bp = d.bias.data;
  LT_TRY(cublasLtMatmulDescSetAttribute(
      ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
  return AMPC_OK;
}

ampc_status buildDescs(const GemmDesc &d, cublasLtEpilogue_t epi, Descs &ds) {
  cudaDataType_t abType = cudaType(d.a.dtype), cType = cudaType(d.c.dtype);
  bool f64 = d.a.dtype == AMPC_F64;
  LT_TRY(cublasLtMatmulDescCreate(&ds.op,
                                  f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                                  f64 ? CUDA_R_64F : CUDA_R_32F));
  cublasOperation_t opB = d.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = d.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLASLt's A is our B and its B is our A.
  LT_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSA,
                                        &opB, sizeof(opB)));
  LT_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSB,
                                        &opA, sizeof(opA)));
  LT_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                        &epi, sizeof(epi)));
  if (d.bias.data) {
    cudaDataType_t bt = cudaType(d.bias.dtype);
    LT_TRY(cublasLtMatmulDescSetAttribute(
        ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
    AMPC_TRY(setBiasPointer(ds, d));
  }
  AMPC_TRY(makeLayout(&ds.a, abType, d.transB ? d.k : d.n, d.transB ? d.n : d.k,
                      d.ldb, d.batch, d.strideB));
  AMPC_TRY(makeLayout(&ds.b, abType, d.transA ? d.m : d.k, d.transA ? d.k : d.m,
                      d.lda, d.batch, d.strideA));
  AMPC_TRY(makeLayout(&ds.c, cType, d.n, d.m, d.ldc, d.batch, d.strideC));
  return AMPC_OK;
}

constexpr int kHeuristicResults = 8;

} // namespace

ampc_status LtGemm::run(const GemmDesc &d, bool *noAlgo) {
  if (noAlgo)
    *noAlgo = false;
  cublasLtEpilogue_t epi = epilogueOf(d);
  uint32_t alignA = alignmentOf(d.b.data), alignB = alignmentOf(d.a.data),
           alignC = alignmentOf(d.c.data),
           alignBias = d.bias.data ? alignmentOf(d.bias.data) : 0;
  Cache::Key key = {d.a.dtype, d.c.dtype,     d.bias.data ? d.bias.dtype : -1,
                    d.transA,  d.transB,      d.m,
                    d.n,       d.k,           d.lda,
                    d.ldb,     d.ldc,         d.batch,
                    d.strideA, d.strideB,     d.strideC,
                    epi,       alignA,        alignB,
                    alignC,    alignBias,     d.beta != 0.0f};
  auto it = cache->entries.find(key);
  if (it == cache->entries.end()) {
    auto e = std::make_unique<Cache::Entry>();
    AMPC_TRY(buildDescs(d, epi, e->descs));
    Pref pref;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref.p));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
        sizeof(workspaceBytes)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
        sizeof(alignA)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
        sizeof(alignB)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
        sizeof(alignC)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
        sizeof(alignC)));
    cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
    int found = 0;
    ++cache->heuristicQueries;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(
        handle, e->descs.op, e->descs.a, e->descs.b, e->descs.c, e->descs.c,
        pref.p, kHeuristicResults, results, &found);
    for (int i = 0; hs == CUBLAS_STATUS_SUCCESS && i < found; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS)
        e->algos.push_back(results[i].algo);
    // Cached even when empty: a problem without an algorithm goes to the
    // fallback on every later call without another heuristic query.
    it = cache->entries.emplace(key, std::move(e)).first;
  } else if (d.bias.data) {
    AMPC_TRY(setBiasPointer(it->second->descs, d));
  }
  Cache::Entry &e = *it->second;
  if (e.algos.empty()) {
    if (noAlgo)
      *noAlgo = true;
    return setError(AMPC_ERROR_DEVICE,
                    "cuda backend: cuBLASLt has no algorithm for this GEMM "
                    "(m %lld n %lld k %lld)",
                    static_cast<long long>(d.m), static_cast<long long>(d.n),
                    static_cast<long long>(d.k));
  }
  // The scale type is the compute type's: f64 for an f64 GEMM.
  float alpha = d.alpha, beta = d.beta;
  double alpha64 = d.alpha, beta64 = d.beta;
  bool f64 = d.a.dtype == AMPC_F64;
  const void *pa = f64 ? static_cast<const void *>(&alpha64) : &alpha;
  const void *pb = f64 ? static_cast<const void *>(&beta64) : &beta;
  cublasStatus_t last = CUBLAS_STATUS_NOT_SUPPORTED;
  for (size_t i = 0; i < e.algos.size(); ++i) {
    last = cublasLtMatmul(handle, e.descs.op, pa, d.b.data, e.descs.a,
                          d.a.data, e.descs.b, pb, d.c.data, e.descs.c,
                          d.c.data, e.descs.c, &e.algos[i], workspace,
                          workspaceBytes, stream);
    if (last == CUBLAS_STATUS_SUCCESS) {
      if (i != 0) // remember the one that runs
        std::swap(e.algos[0], e.algos[i]);
      return AMPC_OK;
    }
    if (last != CUBLAS_STATUS_NOT_SUPPORTED &&
        last != CUBLAS_STATUS_INVALID_VALUE)
      break;
  }
  if (last == CUBLAS_STATUS_NOT_SUPPORTED ||
      last == CUBLAS_STATUS_INVALID_VALUE) {
    // No algorithm runs: remembered, so later calls fall back at once.
    e.algos.clear();
    if (noAlgo)
      *noAlgo = true;
  }
  return ltFail(last, "cublasLtMatmul");
}

} // namespace cuda
} // namespace ampc
