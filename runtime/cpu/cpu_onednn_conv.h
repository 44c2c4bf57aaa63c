//===- cpu_onednn_conv.h - oneDNN's convolution primitives ------*- C++ -*-===//
//
// The CPU backend's convolutions on oneDNN's convolution primitives
// (forward, backward data, backward weights): 1-, 2- and 3-D, any stride,
// padding, dilation and groups, f32 or bf16 operands read as they are, f32
// accumulation and an f32 result that ampc's own code then biases and
// rounds once, as on every other path.
//
// ampc keeps images and weights in PyTorch's plain layouts (NC[D]HW,
// O(C/g)[KD]KHKW). Each primitive is asked for the layouts it runs fastest
// on (format "any": blocked, e.g. nChw16c), and the operands are reordered
// into them and back on the calling thread; weights once per call, not per
// chunk. 16-bit images of an f32 primitive are widened in the same pass
// that blocks them. A primitive covers a fixed chunk of the batch (ConvKey::mb) and
// runs on one thread; the backend's pool runs the chunks, and a weight
// gradient is summed over the chunks in chunk order, so no result depends
// on the thread count.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_ONEDNN_CONV_H
#define AMPC_RUNTIME_CPU_CPU_ONEDNN_CONV_H

#include "../src/backend.h"

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace ampc {
namespace onednn {

enum class ConvPass { Forward, BackwardData, BackwardWeights };

/// One convolution over `mb` images. Spatial dims are (depth, height,
/// width); a 2-D problem has depth 1 everywhere and no depth padding, a
/// 1-D one also height 1. Dilation counts as in PyTorch (1: none).
struct ConvKey {
  ConvPass pass;
  int64_t mb, ic, oc, groups;
  int64_t in[3], k[3], out[3], stride[3], pad[3], dil[3];
  ampc_dtype dtype; // the primitive's operands: AMPC_F32 or AMPC_BF16
  bool operator<(const ConvKey &o) const;
};

/// A created primitive and what running it needs (opaque: oneDNN's
/// descriptors and reorders).
struct Conv {
  ConvPass pass;
  void *state = nullptr;
  std::string impl; // oneDNN's implementation name, e.g. jit:avx512_core_bf16
  /// Bytes of the weights (forward, backward data: input; backward
  /// weights: the f32 gradient) in the primitive's own layout.
  size_t packedWeightBytes = 0;
};

/// The convolution primitives of one backend instance, by problem.
class ConvCache {
public:
  ConvCache() = default;
  ConvCache(const ConvCache &) = delete;
  ConvCache &operator=(const ConvCache &) = delete;
  ~ConvCache();

  /// The primitive for `key`, made on first use; NULL (the reason in
  /// `why`) when oneDNN has none for it.
  const Conv *get(const ConvKey &key, std::string &why);
  /// The distinct implementation names made so far, comma-separated.
  std::string implementations() const;
  /// The problems asked about so far: primitives made, and those oneDNN
  /// refused (ampc_context_primitives).
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return entries.size();
  }

private:
  mutable std::mutex mutex;
  std::map<ConvKey, std::unique_ptr<Conv>> entries;
};

/// Forward and backward data: `packed` (packedWeightBytes) = the weights
/// `w` (plain, the key's dtype) in the primitive's layout.
bool packWeights(const Conv &c, const void *w, void *packed);
/// Backward weights: the plain f32 gradient `dw` = `packed` (the
/// primitive's layout, f32).
bool unpackWeights(const Conv &c, const void *packed, float *dw);

/// One chunk's operands. Forward: `a` the images, `out` the f32 result
/// [mb, oc, ...]. Backward data: `a` the output gradient, `out` the f32
/// image gradient [mb, ic, ...]. Both read packed weights (packWeights;
/// `b`, of the key's dtype). Backward weights: `a` the images, `b` the
/// output gradient, `out` the f32 weight gradient of this chunk in the
/// primitive's layout (packedWeightBytes). Plain images and output
/// gradients of the key's dtype, or f16/bf16 ones for an f32 key, widened
/// exactly on the way in (straight into the primitive's layout where it is
/// channel-blocked). Forward and backward data may instead want the result
/// in `final` (its dtype, plain), `bias` (f32, forward; or NULL) added in
/// f32 and each element rounded once; `out` is then scratch.
struct ChunkIo {
  const void *a;
  ampc_dtype aType;
  const void *b;
  ampc_dtype bType;
  void *out;
  Buf final{nullptr, AMPC_F32};
  const float *bias = nullptr;
  /// Backward data and weights: where the output gradient in the
  /// primitive's layout is put (null: the thread's own buffer), or, when
  /// `diffDstReady`, where another pass of the same chunk put it (read as
  /// it is). Only where the primitive does move it (convolveBackward).
  void *diffDst = nullptr;
  bool diffDstReady = false;
};

/// Runs one chunk on the calling thread (ChunkIo). False, with ampc's last
/// error set, when oneDNN fails.
bool run(const Conv &c, const ChunkIo &io);

/// The dtype a convolution with operands of these dtypes runs in on
/// oneDNN, from measurements (docs/runtime.md): bf16 where both are bf16
/// and oneDNN runs bf16 on the processor's bf16 units, else f32 (16-bit
/// operands widened exactly first); -1 when convolutions stay off oneDNN
/// (oneDNN not loaded, or AMPC_CPU_CONV=direct / =gemm in the
/// environment).
int convDtype(ampc_dtype a, ampc_dtype b);

/// Runs a whole convolution pass (backend.h's ConvCall) on oneDNN's
/// primitives of dtype `dt` (convDtype): the batch in fixed chunks of
/// images (from the batch size alone) on the backend's pool, a weight
/// gradient summed over the chunks in chunk order. Weights (forward,
/// backward data) must be of dtype `dt`; images and output gradients may
/// also be f16 or bf16 when `dt` is f32 (widened exactly as they are moved
/// into the primitive's layout). Returns false, having written nothing,
/// when oneDNN has no primitive for it or the operands do not fit
/// (`status` untouched); else true with the status, and with `impl` (when
/// not null) set to the implementations that ran (comma-separated).
bool convolve(ConvCache &cache, const ConvCall &call, ampc_dtype dt,
              ampc_status &status, std::string *impl = nullptr);
/// A convolution's backward data and backward weights passes (`data`,
/// `weights`: backend.h's ConvCalls over the same output gradient) as
/// convolve runs each, chunk by chunk together, where both primitives read
/// the output gradient in the same layout that it has to be moved into
/// (reordered, widened, or put in channel blocks): each chunk's is moved
/// once and read by both. The same operations on the same values as the two
/// convolve calls, so the same bits. Returns false, having written nothing,
/// where it cannot (then convolve runs each), else true with the status.
bool convolveBackward(ConvCache &cache, const ConvCall &data,
                      const ConvCall &weights, ampc_dtype dt,
                      ampc_status &status, std::string *impl = nullptr);
/// Makes (or finds) the primitives convolve(cache, call, dt, ...) would
/// run, reading and writing no data; returns what convolve would (whether
/// oneDNN takes the call).
bool plan(ConvCache &cache, const ConvCall &call, ampc_dtype dt);

} // namespace onednn
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_ONEDNN_CONV_H
