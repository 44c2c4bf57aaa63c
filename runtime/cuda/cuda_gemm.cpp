//===- cuda_gemm.cpp - GEMMs through cuBLASLt
//--------------------------------===//
//
// Row-major C = op(A) op(B) is computed as the column-major product
// C^T = op(B)^T op(A)^T, so B is cuBLASLt's first operand. Compute type is
// always CUBLAS_COMPUTE_32F (f32 accumulation; no TF32 for f32 inputs).
//
//===----------------------------------------------------------------------===//
#include "cuda_internal.h"

#include <map>
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

/// Owns the descriptors of one call.
struct Descs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descs() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
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

/// Problem signature -> algorithm chosen by the heuristic.
struct LtGemm::Cache {
  using Key = std::vector<int64_t>;
  std::map<Key, cublasLtMatmulAlgo_t> algos;
};

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

ampc_status LtGemm::run(const GemmDesc &d) {
  Descs ds;
  cudaDataType_t abType = cudaType(d.a.dtype), cType = cudaType(d.c.dtype);
  LT_TRY(cublasLtMatmulDescCreate(&ds.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opB = d.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = d.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLASLt's A is our B and its B is our A.
  LT_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSA,
                                        &opB, sizeof(opB)));
  LT_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSB,
                                        &opA, sizeof(opA)));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  bool bias = d.bias.data != nullptr;
  if (d.epilogue == AMPC_EPILOGUE_RELU)
    epi = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (d.epilogue == AMPC_EPILOGUE_GELU_TANH)
    epi = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (bias)
    epi = CUBLASLT_EPILOGUE_BIAS;
  LT_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                        &epi, sizeof(epi)));
  if (bias) {
    const void *bp = d.bias.data;
    cudaDataType_t bt = cudaType(d.bias.dtype);
    LT_TRY(cublasLtMatmulDescSetAttribute(
        ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
    LT_TRY(cublasLtMatmulDescSetAttribute(
        ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
  }
  AMPC_TRY(makeLayout(&ds.a, abType, d.transB ? d.k : d.n, d.transB ? d.n : d.k,
                      d.ldb, d.batch, d.strideB));
  AMPC_TRY(makeLayout(&ds.b, abType, d.transA ? d.m : d.k, d.transA ? d.k : d.m,
                      d.lda, d.batch, d.strideA));
  AMPC_TRY(makeLayout(&ds.c, cType, d.n, d.m, d.ldc, d.batch, d.strideC));

  uint32_t alignA = alignmentOf(d.b.data), alignB = alignmentOf(d.a.data),
           alignC = alignmentOf(d.c.data);
  Cache::Key key = {d.a.dtype, d.c.dtype,     d.bias.data ? d.bias.dtype : -1,
                    d.transA,  d.transB,      d.m,
                    d.n,       d.k,           d.lda,
                    d.ldb,     d.ldc,         d.batch,
                    d.strideA, d.strideB,     d.strideC,
                    epi,       alignA,        alignB,
                    alignC,    d.beta != 0.0f};
  auto it = cache->algos.find(key);
  if (it == cache->algos.end()) {
    LT_TRY(cublasLtMatmulPreferenceCreate(&ds.pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
        sizeof(workspaceBytes)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
        sizeof(alignA)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
        sizeof(alignB)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
        sizeof(alignC)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
        sizeof(alignC)));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    LT_TRY(cublasLtMatmulAlgoGetHeuristic(handle, ds.op, ds.a, ds.b, ds.c, ds.c,
                                          ds.pref, 1, &result, &found));
    if (found == 0)
      return setError(AMPC_ERROR_DEVICE,
                      "cuda backend: cuBLASLt has no algorithm for this GEMM "
                      "(m %lld n %lld k %lld)",
                      static_cast<long long>(d.m), static_cast<long long>(d.n),
                      static_cast<long long>(d.k));
    it = cache->algos.emplace(key, result.algo).first;
  }
  float alpha = d.alpha, beta = d.beta;
  LT_TRY(cublasLtMatmul(handle, ds.op, &alpha, d.b.data, ds.a, d.a.data, ds.b,
                        &beta, d.c.data, ds.c, d.c.data, ds.c, &it->second,
                        workspace, workspaceBytes, stream));
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
