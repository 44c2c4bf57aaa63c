//===- cuda_norm_dropout.cuh - batch norm and dropout kernels ---*- CUDA -*-===//
//
// Included by cuda_backend.cu. The per-channel and per-element code is the
// CPU backend's (runtime/src/norm_dropout_ops.h): one thread per channel for
// batch norm (f64 accumulation, the CPU's statistics), one per element for
// dropout (the same counter-based mask bits).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_NORM_DROPOUT_CUH
#define AMPC_RUNTIME_CUDA_NORM_DROPOUT_CUH

// Needs ../src/norm_dropout_ops.h, included at the top of cuda_backend.cu
// (outside its namespaces).

__global__ void batchNormKernel(Buf y, Buf x, Buf w, Buf b, Buf rm, Buf rv,
                                bool training, BnGeom g, float eps) {
  GRID_STRIDE(ch, g.c)
  bnForwardChannel(y, x, w, b, rm, rv, training, g, ch, eps);
}

__global__ void batchNormBwdKernel(Buf dx, Buf dw, Buf db, Buf dy, Buf x,
                                   Buf w, Buf rm, Buf rv, bool training,
                                   BnGeom g, float eps) {
  GRID_STRIDE(ch, g.c)
  bnBackwardChannel(dx, dw, db, dy, x, w, rm, rv, training, g, ch, eps);
}

__global__ void batchNormUpdateKernel(Buf newMean, Buf newVar, Buf x, Buf rm,
                                      Buf rv, BnGeom g, float momentum) {
  GRID_STRIDE(ch, g.c)
  bnUpdateChannel(newMean, newVar, x, rm, rv, g, ch, momentum);
}

__global__ void dropoutKernel(Buf y, Buf x, const int32_t *step,
                              uint64_t seed, uint64_t key, float p,
                              int64_t n, DropoutShard shard) {
  uint64_t stream = dropoutStream(key, static_cast<uint32_t>(*step));
  float scale = 1.0f / (1.0f - p);
  GRID_STRIDE(i, n)
  storeF32(y.data, y.dtype, i,
           loadF32(x.data, x.dtype, i) *
               dropoutFactor(seed, stream, shard.global(i), p, scale));
}

__global__ void counterNextKernel(int32_t *next, const int32_t *counter) {
  *next = *counter + 1;
}

#endif // AMPC_RUNTIME_CUDA_NORM_DROPOUT_CUH
