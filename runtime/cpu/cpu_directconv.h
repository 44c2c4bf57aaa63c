//===- cpu_directconv.h - Direct 2-D convolutions of the CPU backend -*- C++
//-*-===//
//
// Register-blocked direct convolutions (forward, backward-data and
// backward-weight) for one group of a 2-D convolution in NCHW, any stride,
// padding and dilation, on f32 data:
//
//  - Every output element is ONE sequential chain of fused multiply-adds,
//    started from +0, over its terms in a fixed order:
//      forward      y[o, oy, ox]  over (c, ky, kx), c outer;
//      backward-x   dx[c, iy, ix] over (o, ky, kx), o outer, only the taps
//                   that reach the pixel (for a stride s > 1 the taps of the
//                   pixel's phase, see below);
//      backward-w   dw[o, c, ky, kx] over (image, oy, ox), image outer.
//    The forward's bias is added to the finished chain (one f32 addition).
//    Zero padding takes part as terms w * 0. The AVX-512, AVX2 and scalar
//    (fmaf) paths compute exactly these chains, so they give the same bits,
//    and blocking or a future split of the work items over threads does not
//    change any result.
//  - The input is packed once per image into its stride phases: with stride
//    (sh, sw) the zero-padded image is split into sh * sw planes
//    (row phase, column phase), which turns every tap of a strided
//    convolution into a shifted contiguous view (a "wide" output column
//    q = oy * WJ + ox, where WJ is the phase plane's width; columns with
//    ox >= ow are computed and dropped). Backward-x works on the padded dy
//    per phase of dx the same way; backward-w reads a channels-last copy of
//    the packed image.
//  - Work is split in items a thread pool could run with a fixed partition:
//    pack(image), then blocks of output channels (8 per block in the forward
//    and backward-x, blocksW() in backward-w) of that image. Backward-w
//    chains through the images: its items are its output-channel blocks,
//    run image after image in order.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_DIRECTCONV_H
#define AMPC_RUNTIME_CPU_CPU_DIRECTCONV_H

#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace ampc {
namespace cpudirect {

/// The kernel paths, each giving the same bits.
enum class Isa : int { Scalar = 0, AVX2 = 1, AVX512 = 2 };

/// Whether this CPU runs `isa` (Scalar always; AVX2 needs AVX2 and FMA;
/// AVX-512 needs AVX-512F).
bool supported(Isa isa);
/// The path used by the backend: the best supported one, or the one named
/// by AMPC_CPU_CONV_ISA (scalar, avx2, avx512) when this CPU supports it.
Isa defaultIsa();
const char *isaName(Isa isa);

/// The storage type of an image read by pack() or written by run() (f16 and
/// bf16 are converted exactly to f32 on the way in and rounded once on the
/// way out; the kernels compute in f32).
enum class Dt : int { F32 = 0, F16 = 1, BF16 = 2 };

/// One group of a 2-D convolution: x [c, h, w] -> y [o, oh, ow] with w
/// [o, c, kh, kw]; strides sh, sw, paddings ph, pw, dilations dh, dw.
struct Geom {
  int64_t c, o, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
};

/// The forward convolution of one group.
class Forward {
public:
  /// Packs w (f32 [o, c, kh, kw]) for `isa`.
  Forward(const Geom &g, const float *w, Isa isa);
  /// Floats of one image's packed input (shared by its items) and of one
  /// worker's scratch.
  size_t packedFloats() const { return packedN; }
  size_t workFloats() const { return workN; }
  int64_t blocks() const { return nBlocks; }
  /// packed = x [c, h, w] split into stride phases, zero padded.
  void pack(const void *x, Dt xdt, float *packed) const;
  /// y [o, oh, ow] rows of the output-channel blocks [b0, b1) (8 channels
  /// each) from `packed`, plus bias[o] (when bias is not null).
  void run(const float *packed, float *work, void *y, Dt ydt, const float *bias,
           int64_t b0, int64_t b1) const;

private:
  Geom g;
  Isa isa;
  int64_t hi, wj, plane, nq, ws, nBlocks;
  size_t packedN, workN;
  std::vector<int64_t> used, offs; // phases some tap reads; tap offsets
  std::vector<float> wpk;          // [block][c][tap][8]
};

/// The input gradient of one group.
class BackwardData {
public:
  /// Packs w (f32 [o, c, kh, kw]) per phase for `isa`.
  BackwardData(const Geom &g, const float *w, Isa isa);
  size_t packedFloats() const { return packedN; }
  size_t workFloats() const { return workN; }
  int64_t blocks() const { return nBlocks; }
  /// packed = dy [o, oh, ow] zero padded.
  void pack(const void *dy, Dt dydt, float *packed) const;
  /// dx [c, h, w] rows of the input-channel blocks [b0, b1) (8 channels
  /// each), every element written.
  void run(const float *packed, float *work, void *dx, Dt dxdt, int64_t b0,
           int64_t b1) const;

private:
  Geom g;
  Isa isa;
  int64_t ha, wb, my, mx, rd, wdp, plane, nq, ws, nBlocks;
  size_t packedN, workN;
  struct Phase {
    std::vector<int64_t> offs;
    std::vector<float> wpk; // [block][o][tap][8]
  };
  std::vector<Phase> phases; // sh * sw, row phase major
};

/// The weight gradient of one group, accumulated image by image.
class BackwardWeight {
public:
  BackwardWeight(const Geom &g, Isa isa);
  size_t packedFloats() const { return packedN; }
  /// Floats of the accumulator (zero it before the first image).
  size_t accFloats() const { return accN; }
  int64_t blocks() const { return nBlocks; }
  /// packed = x [c, h, w] channels-last in stride phases, zero padded.
  void pack(const void *x, Dt xdt, float *packed) const;
  /// acc += this image's terms for the output-channel blocks [b0, b1),
  /// dy [o, oh, ow] of the image.
  void accumulate(const float *packed, const float *dy, float *acc, int64_t b0,
                  int64_t b1) const;
  /// dw [o, c, kh, kw] = acc.
  void finish(const float *acc, float *dw) const;

private:
  Geom g;
  Isa isa;
  int64_t hi, wj, plane, cp, taps, tg, obw, nBlocks;
  bool expand; // lanes are (channel, kernel column) pairs
  size_t packedN, accN;
  std::vector<int64_t> used, offs, offX;
  std::vector<float> zeros; // a dy row of zeros for padded channels
};

/// The bias gradient's sums, image by image: acc[r] += dy[r, 0], dy[r, 1],
/// ... dy[r, n - 1] one after the other in f64 (f32 dy [rows, n]), the
/// order and precision of the runtime's sum over (image, pixel); eight rows'
/// chains are interleaved.
void addRowSums(double *acc, const float *dy, int64_t rows, int64_t n);

} // namespace cpudirect
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_DIRECTCONV_H
