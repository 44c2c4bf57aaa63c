//===- cpu_onednn_conv.cpp - oneDNN's convolution primitives --------------===//
//
// See cpu_onednn_conv.h. The primitives come from the oneDNN loaded by
// cpu_onednn.cpp (cpu_onednn_lib.h): nothing of oneDNN is linked.
//
//===----------------------------------------------------------------------===//
#include "cpu_onednn_conv.h"
#include "cpu_onednn.h"
#include "cpu_onednn_lib.h"

#include "cpu_fast.h"
#include "cpu_pool.h"

#include "../src/backend.h"
#include "../src/common.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <tuple>
#include <vector>

namespace ampc {
namespace onednn {

#if defined(AMPC_RUNTIME_WITH_ONEDNN)

namespace {

/// One operand: the plain layout ampc keeps it in, the layout the
/// primitive chose, and the reorder between them where they differ (into
/// the primitive's layout for what it reads, out of it for what it writes).
struct Operand {
  dnnl_memory_desc_t user, prim;
  dnnl_primitive_t reorder = nullptr;
  size_t primBytes = 0;
  /// Images and output gradients: [images, channels, spatial...] in the
  /// plain layout, and the channel block (8 or 16; 0: none) when the
  /// primitive's layout is f32 nC[D]HW8c / 16c, which 16-bit data enter
  /// in one pass (cpufast::toChannelBlocks); paddedChannels of the block
  /// layout.
  int64_t images = 0, channels = 0, spatial = 0, paddedChannels = 0;
  int block = 0;
};

struct State {
  dnnl_primitive_t primitive = nullptr;
  // Images (src, or diff_src), weights (or their gradient), outputs (dst,
  // or diff_dst).
  Operand images, weights, outputs;
  dnnl_memory_desc_t scratchpad;
  size_t scratchpadBytes = 0;
};

void destroy(const Api &a, State &s) {
  for (dnnl_primitive_t p : {s.primitive, s.images.reorder, s.weights.reorder,
                             s.outputs.reorder})
    if (p)
      a.dnnl_primitive_destroy(p);
}

/// A reorder primitive from one layout to the other (NULL and true when
/// they are the same).
bool makeReorder(const Api &a, const dnnl_memory_desc_t &from,
                 const dnnl_memory_desc_t &to, dnnl_primitive_t &out) {
  out = nullptr;
  if (a.dnnl_memory_desc_equal(&from, &to))
    return true;
  dnnl_primitive_desc_t pd = nullptr;
  if (a.dnnl_reorder_primitive_desc_create(&pd, &from, library().api.engine,
                                           &to, library().api.engine,
                                           nullptr) != dnnl_success)
    return false;
  dnnl_status_t st = a.dnnl_primitive_create(&out, pd);
  a.dnnl_primitive_desc_destroy(pd);
  return st == dnnl_success;
}

/// The channel block of an f32 or bf16 image layout that ampc moves data
/// into and out of itself (cpufast::toChannelBlocks / fromChannelBlocks):
/// 8 or 16 for nC[D]HW8c / nC[D]HW16c, the channel count for channels-last
/// nhwc / ndhwc when it is a multiple of 8 (one block of all of them);
/// else 0 (oneDNN's reorders move the data).
int channelBlock(const Api &a, const dnnl_memory_desc_t &md) {
  if ((md.data_type != dnnl_f32 && md.data_type != dnnl_bf16) ||
      (md.ndims != 4 && md.ndims != 5))
    return 0;
  bool four = md.ndims == 4;
  auto is = [&](dnnl_format_tag_t tag) {
    dnnl_memory_desc_t want;
    return a.dnnl_memory_desc_init_by_tag(&want, md.ndims, md.dims,
                                          md.data_type, tag) == dnnl_success &&
           a.dnnl_memory_desc_equal(&want, &md);
  };
  if (is(four ? dnnl_nChw8c : dnnl_nCdhw8c))
    return 8;
  if (is(four ? dnnl_nChw16c : dnnl_nCdhw16c))
    return 16;
  if (md.dims[1] % 8 == 0 && md.dims[1] <= (int64_t(1) << 20) &&
      is(four ? dnnl_nhwc : dnnl_ndhwc))
    return static_cast<int>(md.dims[1]);
  return 0;
}

/// The chosen layout of `what` in `pd` and the reorder from (toPrim) or to
/// the plain layout; for images and output gradients (`image`), also their
/// geometry and channel block.
bool bind(const Api &a, dnnl_primitive_desc_t pd, dnnl_query_t what,
          Operand &op, bool toPrim, bool image) {
  const dnnl_memory_desc_t *md = a.dnnl_primitive_desc_query_md(pd, what, 0);
  if (!md)
    return false;
  op.prim = *md;
  op.primBytes = a.dnnl_memory_desc_get_size(&op.prim);
  if (image) {
    op.images = op.user.dims[0];
    op.channels = op.user.dims[1];
    op.spatial = 1;
    for (int i = 2; i < op.user.ndims; ++i)
      op.spatial *= op.user.dims[i];
    op.block = channelBlock(a, op.prim);
    op.paddedChannels = op.prim.padded_dims[1];
  }
  return toPrim ? makeReorder(a, op.user, op.prim, op.reorder)
                : makeReorder(a, op.prim, op.user, op.reorder);
}

/// An aligned buffer of the calling thread (one per role), grown on demand.
struct ThreadBuffer {
  void *data = nullptr;
  size_t bytes = 0;
  ~ThreadBuffer() { free(data); }
  void *get(size_t want) {
    if (bytes < want) {
      free(data);
      bytes = (want + 4095) & ~size_t(4095);
      data = aligned_alloc(4096, bytes);
      if (!data)
        bytes = 0;
    }
    return data;
  }
};

bool runReorder(const Api &a, dnnl_stream_t stream, dnnl_primitive_t r,
                const dnnl_memory_desc_t &fromMd, const void *from,
                const dnnl_memory_desc_t &toMd, void *to) {
  dnnl_memory_t m[2] = {};
  bool ok = !a.dnnl_memory_create(&m[0], &fromMd, a.engine,
                                  const_cast<void *>(from)) &&
            !a.dnnl_memory_create(&m[1], &toMd, a.engine, to);
  if (ok) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}};
    ok = a.dnnl_primitive_execute(r, stream, 2, args) == dnnl_success;
  }
  for (dnnl_memory_t x : m)
    if (x)
      a.dnnl_memory_destroy(x);
  return ok;
}

/// Reorders `w` between its plain layout and the primitive's (the
/// direction of the weights' reorder), or copies it where they are one.
bool reorderWeights(const Conv &c, const void *from, void *to) {
  const Api &a = library().api;
  const State &s = *static_cast<const State *>(c.state);
  if (!s.weights.reorder) {
    memcpy(to, from, s.weights.primBytes);
    return true;
  }
  dnnl_stream_t stream;
  void *scratch;
  if (!threadStream(stream, 0, scratch))
    return false;
  OneThread one(a);
  bool toPrim = c.pass != ConvPass::BackwardWeights;
  bool ok = runReorder(a, stream, s.weights.reorder,
                       toPrim ? s.weights.user : s.weights.prim, from,
                       toPrim ? s.weights.prim : s.weights.user, to);
  if (!ok)
    setError(AMPC_ERROR_INTERNAL,
             "cpu backend: oneDNN could not reorder convolution weights");
  return ok;
}

} // namespace

bool ConvKey::operator<(const ConvKey &o) const {
  auto tie = [](const ConvKey &x) {
    return std::make_tuple(
        static_cast<int>(x.pass), x.mb, x.ic, x.oc, x.groups,
        std::make_tuple(x.in[0], x.in[1], x.in[2], x.k[0], x.k[1], x.k[2]),
        std::make_tuple(x.out[0], x.out[1], x.out[2], x.stride[0], x.stride[1],
                        x.stride[2]),
        std::make_tuple(x.pad[0], x.pad[1], x.pad[2], x.dil[0], x.dil[1],
                        x.dil[2]),
        static_cast<int>(x.dtype));
  };
  return tie(*this) < tie(o);
}

ConvCache::~ConvCache() {
  if (entries.empty())
    return;
  const Api &a = library().api;
  for (auto &e : entries)
    if (e.second) {
      State *s = static_cast<State *>(e.second->state);
      destroy(a, *s);
      delete s;
    }
}

/// Whether primitives are asked for ampc's plain layouts instead of the ones
/// they run fastest in (AMPC_CPU_CONV_LAYOUT=plain; default: oneDNN's
/// choice). For measuring whether the reorders pay (bench/README.md).
static bool plainLayouts() {
  static const bool plain = [] {
    const char *e = getenv("AMPC_CPU_CONV_LAYOUT");
    return e && !strcmp(e, "plain");
  }();
  return plain;
}

const Conv *ConvCache::get(const ConvKey &key, std::string &why) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = entries.find(key);
  if (it != entries.end())
    return it->second.get(); // NULL: refused before
  const Library &lib = library();
  if (!lib.ok) {
    why = lib.summary;
    return nullptr;
  }
  // A refused problem is remembered as NULL, so it is asked about once.
  std::unique_ptr<Conv> &slot = entries[key];
  const Api &a = lib.api;
  OneThread one(a);
  // A 3-D problem only where depth is not trivial: oneDNN has more 2-D
  // kernels.
  bool threeD = key.in[0] != 1 || key.k[0] != 1 || key.out[0] != 1 ||
                key.pad[0] != 0;
  int sp = threeD ? 3 : 2, first = threeD ? 0 : 1;
  dnnl_dims_t img = {key.mb, key.ic}, out = {key.mb, key.oc}, wei = {};
  dnnl_dims_t strides = {}, dil = {}, padL = {}, padR = {};
  int wd = 0;
  if (key.groups > 1)
    wei[wd++] = key.groups;
  wei[wd++] = key.oc / key.groups;
  wei[wd++] = key.ic / key.groups;
  for (int i = 0; i < sp; ++i) {
    int j = first + i;
    img[2 + i] = key.in[j];
    out[2 + i] = key.out[j];
    wei[wd++] = key.k[j];
    strides[i] = key.stride[j];
    dil[i] = key.dil[j] - 1;
    padL[i] = key.pad[j];
    // ampc's output size floors (in + 2 pad - extent) / stride: the right
    // padding is what that leaves, never more than the left one.
    padR[i] = (key.out[j] - 1) * key.stride[j] +
              (key.k[j] - 1) * key.dil[j] + 1 - key.in[j] - key.pad[j];
  }
  dnnl_format_tag_t imgTag = threeD ? dnnl_ncdhw : dnnl_nchw;
  dnnl_format_tag_t weiTag = key.groups > 1 ? (threeD ? dnnl_goidhw : dnnl_goihw)
                                            : (threeD ? dnnl_oidhw : dnnl_oihw);
  dnnl_data_type_t t = key.dtype == AMPC_BF16 ? dnnl_bf16 : dnnl_f32;
  bool bwdData = key.pass == ConvPass::BackwardData;
  bool bwdWeights = key.pass == ConvPass::BackwardWeights;
  // What each operand's plain layout holds: read operands are of the
  // key's dtype, written ones f32.
  dnnl_data_type_t imgT = bwdData ? dnnl_f32 : t;
  dnnl_data_type_t weiT = bwdWeights ? dnnl_f32 : t;
  dnnl_data_type_t outT = key.pass == ConvPass::Forward ? dnnl_f32 : t;
  auto s = std::make_unique<State>();
  // The layouts the primitive may choose: any (oneDNN's blocked layouts,
  // with reorders), or the plain ones themselves (no reorders).
  bool plain = plainLayouts();
  dnnl_format_tag_t imgAny = plain ? imgTag : dnnl_format_tag_any;
  dnnl_format_tag_t weiAny = plain ? weiTag : dnnl_format_tag_any;
  dnnl_memory_desc_t anyImg, anyWei, anyOut, hintOut;
  if (a.dnnl_memory_desc_init_by_tag(&s->images.user, 2 + sp, img, imgT,
                                     imgTag) ||
      a.dnnl_memory_desc_init_by_tag(&s->weights.user, wd, wei, weiT,
                                     weiTag) ||
      a.dnnl_memory_desc_init_by_tag(&s->outputs.user, 2 + sp, out, outT,
                                     imgTag) ||
      a.dnnl_memory_desc_init_by_tag(&anyImg, 2 + sp, img, imgT, imgAny) ||
      a.dnnl_memory_desc_init_by_tag(&anyWei, wd, wei, weiT, weiAny) ||
      a.dnnl_memory_desc_init_by_tag(&anyOut, 2 + sp, out, outT, imgAny) ||
      a.dnnl_memory_desc_init_by_tag(&hintOut, 2 + sp, out, t, imgAny)) {
    why = "oneDNN refused the convolution's operands";
    return nullptr;
  }
  dnnl_primitive_attr_t attr = nullptr;
  a.dnnl_primitive_attr_create(&attr);
  a.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_convolution_desc_t fwd, bwd;
  dnnl_primitive_desc_t hint = nullptr, pd = nullptr;
  dnnl_status_t st = dnnl_success;
  if (key.pass == ConvPass::Forward) {
    st = a.dnnl_dilated_convolution_forward_desc_init(
        &fwd, dnnl_forward_inference, dnnl_convolution_direct, &anyImg,
        &anyWei, nullptr, &anyOut, strides, dil, padL, padR);
    if (st == dnnl_success)
      st = a.dnnl_primitive_desc_create(&pd, &fwd, attr, a.engine, nullptr);
  } else {
    // The backward passes take a forward primitive of the same problem as
    // a hint of the layouts; its operands are all of the key's dtype.
    dnnl_memory_desc_t hintImg, hintWei;
    a.dnnl_memory_desc_init_by_tag(&hintImg, 2 + sp, img, t, imgAny);
    a.dnnl_memory_desc_init_by_tag(&hintWei, wd, wei, t, weiAny);
    st = a.dnnl_dilated_convolution_forward_desc_init(
        &fwd, dnnl_forward_training, dnnl_convolution_direct, &hintImg,
        &hintWei, nullptr, &hintOut, strides, dil, padL, padR);
    if (st == dnnl_success)
      st = a.dnnl_primitive_desc_create(&hint, &fwd, nullptr, a.engine,
                                        nullptr);
    if (st == dnnl_success)
      st = bwdData ? a.dnnl_dilated_convolution_backward_data_desc_init(
                         &bwd, dnnl_convolution_direct, &anyImg, &anyWei,
                         &anyOut, strides, dil, padL, padR)
                   : a.dnnl_dilated_convolution_backward_weights_desc_init(
                         &bwd, dnnl_convolution_direct, &anyImg, &anyWei,
                         nullptr, &anyOut, strides, dil, padL, padR);
    if (st == dnnl_success)
      st = a.dnnl_primitive_desc_create(&pd, &bwd, attr, a.engine, hint);
  }
  a.dnnl_primitive_attr_destroy(attr);
  if (hint)
    a.dnnl_primitive_desc_destroy(hint);
  if (st != dnnl_success) {
    why = "oneDNN has no convolution for this problem";
    return nullptr;
  }
  auto c = std::make_unique<Conv>();
  c->pass = key.pass;
  const char *impl = nullptr;
  a.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  c->impl = impl ? impl : "?";
  bool ok =
      bind(a, pd, bwdData ? dnnl_query_diff_src_md : dnnl_query_src_md,
           s->images, !bwdData, true) &&
      bind(a, pd,
           bwdWeights ? dnnl_query_diff_weights_md : dnnl_query_weights_md,
           s->weights, !bwdWeights, false) &&
      bind(a, pd,
           key.pass == ConvPass::Forward ? dnnl_query_dst_md
                                         : dnnl_query_diff_dst_md,
           s->outputs, key.pass != ConvPass::Forward, true);
  if (ok) {
    s->scratchpad =
        *a.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    s->scratchpadBytes = a.dnnl_memory_desc_get_size(&s->scratchpad);
    ok = a.dnnl_primitive_create(&s->primitive, pd) == dnnl_success;
  }
  a.dnnl_primitive_desc_destroy(pd);
  if (!ok) {
    destroy(a, *s);
    why = "oneDNN could not create the convolution or its reorders";
    return nullptr;
  }
  c->packedWeightBytes = s->weights.primBytes;
  c->state = s.release();
  slot = std::move(c);
  return slot.get();
}

std::string ConvCache::implementations() const {
  std::lock_guard<std::mutex> lock(mutex);
  return implementationNames(entries);
}

bool packWeights(const Conv &c, const void *w, void *packed) {
  return reorderWeights(c, w, packed);
}

bool unpackWeights(const Conv &c, const void *packed, float *dw) {
  return reorderWeights(c, packed, dw);
}

namespace {

/// Whether data of dtype `type` read through `op` is widened on the way in:
/// 16-bit data of an f32 primitive.
bool widened(const Operand &op, ampc_dtype type) {
  return op.prim.data_type == dnnl_f32 &&
         (type == AMPC_F16 || type == AMPC_BF16);
}

/// Whether run() moves data of dtype `type` that the primitive reads through
/// `op` (widened to f32, reordered or put in channel blocks) rather than
/// reading it where it is.
bool moved(const Operand &op, ampc_dtype type) {
  return widened(op, type) || op.reorder;
}

} // namespace

bool run(const Conv &c, const ChunkIo &io) {
  const void *a = io.a, *b = io.b;
  ampc_dtype aType = io.aType, bType = io.bType;
  void *out = io.out;
  const Api &api = library().api;
  const State &s = *static_cast<const State *>(c.state);
  dnnl_stream_t stream;
  void *scratch;
  if (!threadStream(stream, s.scratchpadBytes, scratch))
    return false;
  // The calling thread's buffers for operands in the primitive's layout,
  // and for 16-bit ones widened in the plain layout.
  thread_local ThreadBuffer bufIn0, bufIn1, bufOut, wide[2];
  OneThread one(api);
  // (argument, operand, plain data, whether the primitive reads it,
  // whether it is already in the primitive's layout, its dtype)
  struct Arg {
    int arg;
    const Operand *op;
    void *plain;
    bool in;
    bool packed;
    ampc_dtype type;
  };
  Arg args[3] = {};
  void *wPtr = const_cast<void *>(b);
  switch (c.pass) {
  case ConvPass::Forward:
    args[0] = {DNNL_ARG_SRC, &s.images, const_cast<void *>(a), true, false,
               aType};
    args[1] = {DNNL_ARG_WEIGHTS, &s.weights, wPtr, true, true, bType};
    args[2] = {DNNL_ARG_DST, &s.outputs, out, false, false, AMPC_F32};
    break;
  case ConvPass::BackwardData:
    args[0] = {DNNL_ARG_DIFF_DST, &s.outputs, const_cast<void *>(a), true,
               false, aType};
    args[1] = {DNNL_ARG_WEIGHTS, &s.weights, wPtr, true, true, bType};
    args[2] = {DNNL_ARG_DIFF_SRC, &s.images, out, false, false, AMPC_F32};
    break;
  case ConvPass::BackwardWeights:
    args[0] = {DNNL_ARG_SRC, &s.images, const_cast<void *>(a), true, false,
               aType};
    args[1] = {DNNL_ARG_DIFF_DST, &s.outputs, wPtr, true, false, bType};
    args[2] = {DNNL_ARG_DIFF_WEIGHTS, &s.weights, out, false, true, AMPC_F32};
    break;
  }
  ThreadBuffer *bufs[3] = {&bufIn0, &bufIn1, &bufOut};
  void *primData[3];
  bool ok = true;
  auto buffer = [&](ThreadBuffer &t, size_t bytes) {
    void *p = t.get(bytes);
    if (!p)
      setError(AMPC_ERROR_OUT_OF_MEMORY,
               "cpu backend: cannot allocate %zu bytes for a convolution "
               "operand",
               bytes);
    return p;
  };
  for (int i = 0; i < 3 && ok; ++i) {
    const Arg &g = args[i];
    const Operand &op = *g.op;
    primData[i] = g.plain;
    if (g.packed)
      continue;
    // An output gradient shared with the other backward pass of the chunk
    // (convolveBackward): read where that pass moved it, or moved there.
    bool shared = g.arg == DNNL_ARG_DIFF_DST && io.diffDst;
    if (shared && io.diffDstReady) {
      primData[i] = io.diffDst;
      continue;
    }
    auto dest = [&](ThreadBuffer &t, size_t bytes) {
      return shared ? io.diffDst : buffer(t, bytes);
    };
    // 16-bit images (or output gradients) of an f32 primitive (f16, or
    // bf16 without bf16 units) are widened exactly on the way in: straight
    // into a channel-blocked or channels-last layout, else into a plain f32
    // buffer that is then reordered like f32 data. bf16 ones of a bf16
    // primitive enter such a layout the same way, 8x8 register transposes
    // in one pass, where oneDNN's reorder (jit:uni) took about 9% of a bf16
    // ResNet step (bench/README.md). f32 data keeps oneDNN's reorders,
    // which were as fast.
    bool widen = g.in && widened(op, g.type);
    bool same16 = g.in && op.prim.data_type == dnnl_bf16 &&
                  g.type == AMPC_BF16;
    if (!widen && !op.reorder)
      continue;
    if (op.block && (widen || same16)) {
      void *to = dest(*bufs[i], op.primBytes);
      if (!to)
        return false;
      int64_t image = op.channels * op.spatial;
      int64_t blockedImage = op.paddedChannels * op.spatial;
      size_t size = dtypeSize(g.type);
      for (int64_t n = 0; n < op.images; ++n) {
        const char *from =
            static_cast<const char *>(g.plain) + n * image * size;
        if (same16)
          cpufast::toChannelBlocks16(
              reinterpret_cast<const uint16_t *>(from), op.channels,
              op.spatial, op.block,
              static_cast<uint16_t *>(to) + n * blockedImage);
        else
          cpufast::toChannelBlocks(Buf{const_cast<char *>(from), g.type},
                                   op.channels, op.spatial, op.block,
                                   static_cast<float *>(to) + n * blockedImage);
      }
      primData[i] = to;
      continue;
    }
    const void *from = g.plain;
    if (widen) {
      int64_t n = op.images * op.channels * op.spatial;
      size_t wideBytes = static_cast<size_t>(n) * 4;
      float *w = static_cast<float *>(op.reorder ? buffer(wide[i], wideBytes)
                                                 : dest(wide[i], wideBytes));
      if (!w)
        return false;
      const uint16_t *h = static_cast<const uint16_t *>(g.plain);
      if (g.type == AMPC_F16)
        cpufast::f16ToF32N(h, w, n);
      else
        cpufast::bf16ToF32N(h, w, n);
      from = primData[i] = w;
      if (!op.reorder)
        continue;
    }
    primData[i] = dest(*bufs[i], op.primBytes);
    if (!primData[i])
      return false;
    if (g.in)
      ok = runReorder(api, stream, op.reorder, op.user, from, op.prim,
                      primData[i]);
  }
  dnnl_memory_t mem[4] = {};
  for (int i = 0; i < 3 && ok; ++i)
    ok = !api.dnnl_memory_create(&mem[i], &args[i].op->prim, api.engine,
                                 primData[i]);
  if (ok)
    ok = !api.dnnl_memory_create(&mem[3], &s.scratchpad, api.engine, scratch);
  if (ok) {
    dnnl_exec_arg_t execArgs[4] = {{args[0].arg, mem[0]},
                                   {args[1].arg, mem[1]},
                                   {args[2].arg, mem[2]},
                                   {DNNL_ARG_SCRATCHPAD, mem[3]}};
    ok = api.dnnl_primitive_execute(s.primitive, stream, 4, execArgs) ==
         dnnl_success;
  }
  for (dnnl_memory_t x : mem)
    if (x)
      api.dnnl_memory_destroy(x);
  const Arg &o = args[2];
  // A result wanted in 16 bits (io.final) is biased and rounded on the way
  // out of the primitive's layout: straight from a channel-blocked or
  // channels-last one, else after the reorder to the plain f32 layout.
  bool fin = ok && !o.packed && io.final.data;
  bool blocked = fin && o.op->block && o.op->reorder;
  if (ok && !o.packed && o.op->reorder && !blocked)
    ok = runReorder(api, stream, o.op->reorder, o.op->prim, primData[2],
                    o.op->user, o.plain);
  if (ok && fin) {
    const Operand &op = *o.op;
    const float *from =
        static_cast<const float *>(blocked || !op.reorder ? primData[2] : out);
    int64_t image = op.channels * op.spatial;
    int64_t fromImage = blocked ? op.paddedChannels * op.spatial : image;
    size_t size = dtypeSize(io.final.dtype);
    for (int64_t n = 0; n < op.images; ++n)
      cpufast::fromChannelBlocks(
          from + n * fromImage, op.channels, op.spatial,
          blocked ? op.block : 0, io.bias,
          Buf{static_cast<char *>(io.final.data) + n * image * size,
              io.final.dtype});
  }
  if (!ok)
    setError(AMPC_ERROR_INTERNAL, "cpu backend: oneDNN convolution %s failed",
             c.impl.c_str());
  return ok;
}


int convDtype(ampc_dtype a, ampc_dtype b) {
  static const bool off = [] {
    const char *e = getenv("AMPC_CPU_CONV");
    return e && (!strcmp(e, "direct") || !strcmp(e, "gemm"));
  }();
  if (off || !library().ok)
    return -1;
  if (a == AMPC_BF16 && b == AMPC_BF16 && library().nativeBf16)
    return AMPC_BF16;
  return AMPC_F32;
}

namespace {

struct FreeDeleter {
  void operator()(void *p) const { free(p); }
};
using Block = std::unique_ptr<void, FreeDeleter>;

Block allocBlock(size_t bytes) {
  return Block(
      aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) & ~size_t(63)));
}

/// A block kept by a thread from call to call and grown on demand (fresh
/// pages every step cost page faults); NULL when it cannot grow.
void *keptBlock(Block &b, size_t &have, size_t want) {
  if (have < want || !b) {
    b = allocBlock(want);
    have = b ? want : 0;
  }
  return b.get();
}

/// A batch in fixed chunks: about eight (items for the pool's threads; a
/// weight gradient costs one f32 partial per chunk), from n alone.
struct Chunks {
  int64_t chunk, count, tail;
  explicit Chunks(int64_t n)
      : chunk(std::max<int64_t>(1, (n + 7) / 8)),
        count((n + chunk - 1) / chunk), tail(n - (count - 1) * chunk) {}
};

/// Whether `call`'s operands can feed primitives of dtype `dt` (f32 or
/// bf16): weights (forward, backward data) of dt itself; images and output
/// gradients of dt, or 16-bit ones widened on the way in when dt is f32.
bool operandsFit(const ConvCall &call, ampc_dtype dt) {
  auto fits = [&](ampc_dtype t, bool weights) {
    return t == dt ||
           (!weights && dt == AMPC_F32 && (t == AMPC_F16 || t == AMPC_BF16));
  };
  return (dt == AMPC_F32 || dt == AMPC_BF16) && fits(call.a.dtype, false) &&
         fits(call.b.dtype, call.pass != ConvCall::BackwardWeights);
}

/// The primitives of `call`'s chunks (plans[0] a full chunk's, plans[1] the
/// last one's) in dtype `dt`, made or found in `cache`; false when oneDNN
/// has none for them or the operands do not fit (operandsFit). Reads no
/// data.
bool chunkPlans(ConvCache &cache, const ConvCall &call, ampc_dtype dt,
                const Chunks &c, const Conv *plans[2]) {
  const ConvGeom &g = call.g;
  if (!operandsFit(call, dt))
    return false;
  ConvPass pass = call.pass == ConvCall::Forward        ? ConvPass::Forward
                  : call.pass == ConvCall::BackwardData ? ConvPass::BackwardData
                                                        : ConvPass::BackwardWeights;
  auto keyFor = [&](int64_t mb) {
    ConvKey k{pass,
              mb,
              g.channels * call.groups,
              call.outChannels,
              call.groups,
              {g.d, g.h, g.w},
              {g.kd, g.kh, g.kw},
              {g.od, g.oh, g.ow},
              {g.sd, g.sh, g.sw},
              {g.pd, g.ph, g.pw},
              {g.dd, g.dh, g.dw},
              dt};
    return k;
  };
  std::string why;
  plans[0] = cache.get(keyFor(c.chunk), why);
  plans[1] = c.tail == c.chunk ? plans[0] : cache.get(keyFor(c.tail), why);
  return plans[0] && plans[1];
}

} // namespace

bool plan(ConvCache &cache, const ConvCall &call, ampc_dtype dt) {
  const Conv *plans[2];
  return chunkPlans(cache, call, dt, Chunks(call.n), plans);
}

namespace {

/// Forward or backward data over a call's chunks: the weights packed into
/// each plan's layout once (by the calling thread, kept from call to call;
/// the pool's items see them through `packed`), then chunk by chunk.
struct DataPass {
  const ConvCall &call;
  const Conv *const *plans;
  Chunks ch;
  ampc_dtype dt;
  void *packed[2] = {nullptr, nullptr};
  const float *bias = nullptr;

  DataPass(const ConvCall &c, const Conv *const *p, const Chunks &chunks,
           ampc_dtype d)
      : call(c), plans(p), ch(chunks), dt(d) {}
  const Conv *planOf(int64_t i) const {
    return plans[i == ch.count - 1 ? 1 : 0];
  }
  /// Packs the weights (and the f32 bias of a 16-bit result); false with
  /// `status` set when that fails.
  bool prepare(ampc_status &status) {
    thread_local Block kept[2];
    thread_local size_t keptBytes[2] = {0, 0};
    for (int p = 0; p < 2; ++p) {
      if (p == 1 && plans[1] == plans[0])
        break;
      void *to = packed[p] =
          keptBlock(kept[p], keptBytes[p], plans[p]->packedWeightBytes);
      if (!to || !packWeights(*plans[p], call.b.data, to)) {
        status = to ? AMPC_ERROR_INTERNAL
                    : setError(AMPC_ERROR_OUT_OF_MEMORY,
                               "cpu backend: cannot allocate packed "
                               "convolution weights");
        return false;
      }
    }
    thread_local std::vector<float> biasF32;
    if (call.final.data && call.pass == ConvCall::Forward && call.bias.data) {
      biasF32.resize(static_cast<size_t>(call.outChannels));
      for (int64_t o = 0; o < call.outChannels; ++o)
        biasF32[o] = loadF32(call.bias.data, call.bias.dtype, o);
      bias = biasF32.data();
    }
    return true;
  }
  /// Chunk i; backward data's output gradient in the primitive's layout
  /// put in `diffDst` when not null (ChunkIo).
  bool chunk(int64_t i, void *diffDst = nullptr) const {
    bool fwd = call.pass == ConvCall::Forward;
    int64_t imageElems = call.imageElemsEach();
    int64_t outElems = call.outputElemsEach();
    int64_t written = fwd ? outElems : imageElems;
    int64_t read = fwd ? imageElems : outElems;
    const Conv *c = planOf(i);
    ChunkIo io;
    io.a = static_cast<const char *>(call.a.data) +
           i * ch.chunk * read * dtypeSize(call.a.dtype);
    io.aType = call.a.dtype;
    io.b = packed[c == plans[0] ? 0 : 1];
    io.bType = dt;
    io.out = call.out + i * ch.chunk * written;
    if (call.final.data) {
      io.final = Buf{static_cast<char *>(call.final.data) +
                         i * ch.chunk * written * dtypeSize(call.final.dtype),
                     call.final.dtype};
      io.bias = bias;
    }
    io.diffDst = diffDst;
    return run(*c, io);
  }
};

/// Backward weights over a call's chunks: each chunk's gradient in the
/// plain layout, then their sum in chunk order (the same bits at every
/// thread count).
struct WeightsPass {
  const ConvCall &call;
  const Conv *const *plans;
  Chunks ch;
  float *part = nullptr;

  WeightsPass(const ConvCall &c, const Conv *const *p, const Chunks &chunks)
      : call(c), plans(p), ch(chunks) {}
  const Conv *planOf(int64_t i) const {
    return plans[i == ch.count - 1 ? 1 : 0];
  }
  /// The chunks' partial gradients (kept by the calling thread); false
  /// with `status` set when they cannot be allocated.
  bool prepare(ampc_status &status) {
    thread_local Block partials;
    thread_local size_t partialBytes = 0;
    part = static_cast<float *>(keptBlock(
        partials, partialBytes, ch.count * call.weightElems() * sizeof(float)));
    if (!part)
      status = setError(AMPC_ERROR_OUT_OF_MEMORY,
                        "cpu backend: cannot allocate %lld convolution "
                        "weight gradients",
                        static_cast<long long>(ch.count));
    return part != nullptr;
  }
  /// Chunk i; its output gradient read from `diffDst` (the primitive's
  /// layout) when `ready`, else moved there when `diffDst` is not null.
  bool chunk(int64_t i, void *diffDst = nullptr, bool ready = false) const {
    int64_t imageElems = call.imageElemsEach();
    int64_t outElems = call.outputElemsEach();
    const Conv *c = planOf(i);
    thread_local Block own;
    thread_local size_t ownBytes = 0;
    void *grad = keptBlock(own, ownBytes, c->packedWeightBytes);
    ChunkIo io{static_cast<const char *>(call.a.data) +
                   i * ch.chunk * imageElems * dtypeSize(call.a.dtype),
               call.a.dtype,
               static_cast<const char *>(call.b.data) +
                   i * ch.chunk * outElems * dtypeSize(call.b.dtype),
               call.b.dtype, grad};
    io.diffDst = diffDst;
    io.diffDstReady = ready;
    return grad && run(*c, io) &&
           unpackWeights(*c, grad, part + i * call.weightElems());
  }
  void finish() const {
    int64_t n = call.weightElems();
    cpupool::forChunks(n, cpupool::kItemElements, [&](int64_t e0, int64_t e1) {
      for (int64_t e = e0; e < e1; ++e) {
        float s = part[e];
        for (int64_t i = 1; i < ch.count; ++i)
          s += part[i * n + e];
        call.out[e] = s;
      }
    });
  }
};

std::string implOf(const Conv *const *plans) {
  std::string impl = plans[0]->impl;
  if (plans[1]->impl != plans[0]->impl)
    impl += ", " + plans[1]->impl;
  return impl;
}

} // namespace

bool convolve(ConvCache &cache, const ConvCall &call, ampc_dtype dt,
              ampc_status &status, std::string *impl) {
  Chunks ch(call.n);
  const Conv *plans[2];
  if (!chunkPlans(cache, call, dt, ch, plans))
    return false;
  if (impl)
    *impl = implOf(plans);
  std::atomic<bool> failed{false};
  status = AMPC_OK;
  if (call.pass != ConvCall::BackwardWeights) {
    DataPass pass(call, plans, ch, dt);
    if (!pass.prepare(status))
      return true;
    cpupool::parallelFor(ch.count, [&](int64_t i) {
      if (!pass.chunk(i))
        failed = true;
    });
  } else {
    WeightsPass pass(call, plans, ch);
    if (!pass.prepare(status))
      return true;
    cpupool::parallelFor(ch.count, [&](int64_t i) {
      if (!pass.chunk(i))
        failed = true;
    });
    if (!failed)
      pass.finish();
  }
  if (failed)
    status = AMPC_ERROR_INTERNAL; // the failing call set the message
  return true;
}

bool convolveBackward(ConvCache &cache, const ConvCall &data,
                      const ConvCall &weights, ampc_dtype dt,
                      ampc_status &status, std::string *impl) {
  if (data.pass != ConvCall::BackwardData ||
      weights.pass != ConvCall::BackwardWeights ||
      data.a.data != weights.b.data || data.a.dtype != weights.b.dtype ||
      data.n != weights.n)
    return false;
  Chunks ch(data.n);
  const Conv *dataPlans[2], *weightPlans[2];
  if (!chunkPlans(cache, data, dt, ch, dataPlans) ||
      !chunkPlans(cache, weights, dt, ch, weightPlans))
    return false;
  // Shared only where both primitives read the output gradient in one
  // layout that run() moves it into (reordered, widened or blocked).
  const Api &api = library().api;
  size_t bytes[2];
  for (int p = 0; p < 2; ++p) {
    const Operand &d = static_cast<const State *>(dataPlans[p]->state)->outputs;
    const Operand &w =
        static_cast<const State *>(weightPlans[p]->state)->outputs;
    if (!api.dnnl_memory_desc_equal(&d.prim, &w.prim) ||
        !moved(d, data.a.dtype) || !moved(w, weights.b.dtype))
      return false;
    bytes[p] = d.primBytes;
  }
  if (impl)
    *impl = implOf(dataPlans) + ", " + implOf(weightPlans);
  status = AMPC_OK;
  DataPass dx(data, dataPlans, ch, dt);
  WeightsPass dw(weights, weightPlans, ch);
  if (!dx.prepare(status) || !dw.prepare(status))
    return true;
  std::atomic<bool> failed{false};
  cpupool::parallelFor(ch.count, [&](int64_t i) {
    // The chunk's output gradient moved once, into the thread's buffer,
    // and read by both primitives.
    thread_local Block shared;
    thread_local size_t sharedBytes = 0;
    void *to = keptBlock(shared, sharedBytes,
                         bytes[i == ch.count - 1 ? 1 : 0]);
    if (!to) {
      setError(AMPC_ERROR_OUT_OF_MEMORY,
               "cpu backend: cannot allocate a convolution's output "
               "gradient");
      failed = true;
      return;
    }
    if (!dx.chunk(i, to) || !dw.chunk(i, to, true))
      failed = true;
  });
  if (!failed)
    dw.finish();
  else
    status = AMPC_ERROR_INTERNAL; // the failing call set the message
  return true;
}

#else // !AMPC_RUNTIME_WITH_ONEDNN

int convDtype(ampc_dtype, ampc_dtype) { return -1; }
bool convolve(ConvCache &, const ConvCall &, ampc_dtype, ampc_status &,
              std::string *) {
  return false;
}
bool convolveBackward(ConvCache &, const ConvCall &, const ConvCall &,
                      ampc_dtype, ampc_status &, std::string *) {
  return false;
}
bool plan(ConvCache &, const ConvCall &, ampc_dtype) { return false; }
bool ConvKey::operator<(const ConvKey &) const { return false; }
ConvCache::~ConvCache() = default;
const Conv *ConvCache::get(const ConvKey &, std::string &why) {
  why = engineSummary();
  return nullptr;
}
std::string ConvCache::implementations() const { return ""; }
bool packWeights(const Conv &, const void *, void *) { return false; }
bool unpackWeights(const Conv &, const void *, float *) { return false; }
bool run(const Conv &, const ChunkIo &) { return false; }

#endif // AMPC_RUNTIME_WITH_ONEDNN

} // namespace onednn
} // namespace ampc
