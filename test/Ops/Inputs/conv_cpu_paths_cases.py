# The cases of test/Ops/conv-cpu-paths.test (tgdiff.py cases): the shapes
# that select the CPU backend's special convolution paths, each alone
# against the PyTorch reference: stride-1 2-D convolutions with at least 8
# channels per group (one GEMM per kernel tap over a padded image: padding,
# dilation, groups, non-square kernels, a bias) and one with 3 (im2col), pointwise 1x1 convolutions (the image is the column
# matrix), and 3-D convolutions of depth 1 with and without depth padding
# (only the unpadded one may take the per-tap path), and strided ones. By
# default they all run on oneDNN's convolution primitives; with
# AMPC_CPU_CONV=direct every 2-D case but the pointwise one runs on the
# direct kernels; AMPC_CPU_CONV=gemm selects the GEMM paths named above.
CASES = {
    "conv2d_s1_pad_bias": ([("x", "f32", [2, 8, 7, 6]), ("w", "f32", [4, 8, 3, 3]),
                            ("b", "f32", [4])], "conv2d(x, w, b, padding=1)"),
    "conv2d_s1_dil_groups": ([("x", "f32", [2, 16, 8, 7]), ("w", "f32", [6, 8, 3, 2])],
                             "conv2d(x, w, padding=[2, 1], dilation=[2, 1], groups=2)"),
    "conv2d_s1_wide_kernel": ([("x", "f32", [1, 8, 5, 9]), ("w", "f32", [3, 8, 1, 5])],
                              "conv2d(x, w, padding=[0, 2])"),
    "conv2d_s1_rgb": ([("x", "f32", [2, 3, 7, 6]), ("w", "f32", [4, 3, 3, 3]),
                       ("b", "f32", [4])], "conv2d(x, w, b, padding=1)"),
    "conv2d_pointwise": ([("x", "f32", [2, 5, 4, 3]), ("w", "f32", [3, 5, 1, 1]),
                          ("b", "f32", [3])], "conv2d(x, w, b)"),
    "conv3d_depth1": ([("x", "f32", [1, 8, 1, 4, 5]), ("w", "f32", [3, 8, 1, 3, 3])],
                      "conv3d(x, w, padding=[0, 1, 1])"),
    "conv3d_depth1_padded": ([("x", "f32", [1, 8, 1, 4, 5]), ("w", "f32", [3, 8, 1, 3, 3])],
                             "conv3d(x, w, padding=1)"),
    "conv_transpose3d_depth1": ([("x", "f32", [1, 2, 3, 3, 4]), ("w", "f32", [2, 8, 1, 2, 1])],
                                "conv_transpose3d(x, w, padding=1)"),
    # Strided convolutions (the direct kernels' stride phases).
    "conv2d_s2_pad_bias": ([("x", "f32", [2, 16, 9, 8]), ("w", "f32", [8, 16, 3, 3]),
                            ("b", "f32", [8])], "conv2d(x, w, b, stride=2, padding=1)"),
    "conv2d_s23_dil": ([("x", "f32", [1, 8, 11, 13]), ("w", "f32", [5, 8, 3, 2])],
                       "conv2d(x, w, stride=[2, 3], padding=[2, 1], dilation=[2, 1])"),
    "conv2d_1x1_s2": ([("x", "f32", [2, 16, 8, 7]), ("w", "f32", [8, 16, 1, 1])],
                      "conv2d(x, w, stride=2)"),
    "conv2d_rgb_s2": ([("x", "f32", [2, 3, 12, 11]), ("w", "f32", [8, 3, 3, 3]),
                       ("b", "f32", [8])], "conv2d(x, w, b, stride=2, padding=1)"),
    "conv_transpose2d_s2": ([("x", "f32", [1, 4, 5, 4]), ("w", "f32", [4, 6, 3, 3])],
                            "conv_transpose2d(x, w, stride=2, padding=1)"),
}
