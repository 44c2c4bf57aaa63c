# The cases of test/Ops/conv-nd-diff.test (tgdiff.py cases): conv1d, conv3d,
# conv_transpose1d and conv_transpose3d, each alone against the PyTorch
# reference, with strides, padding, dilation, groups and output padding,
# odd sizes (small shapes: the CPU runs them in milliseconds).
CASES = {
    "conv1d": ([("x", "f32", [2, 3, 9]), ("w", "f32", [4, 3, 3]), ("b", "f32", [4])],
               "conv1d(x, w, b, padding=1)"),
    "conv1d_strided": ([("x", "f32", [1, 4, 11]), ("w", "f32", [6, 2, 3])],
                       "conv1d(x, w, stride=2, padding=[2], dilation=2, groups=2)"),
    "conv3d": ([("x", "f32", [2, 2, 4, 5, 3]), ("w", "f32", [3, 2, 2, 3, 3]),
                ("b", "f32", [3])], "conv3d(x, w, b, padding=1)"),
    "conv3d_strided": ([("x", "f32", [1, 4, 5, 7, 6]), ("w", "f32", [6, 2, 3, 2, 3])],
                       "conv3d(x, w, stride=[2, 1, 2], padding=[1, 0, 2], "
                       "dilation=[1, 2, 1], groups=2)"),
    "conv_transpose1d": ([("x", "f32", [2, 4, 5]), ("w", "f32", [4, 3, 3]), ("b", "f32", [3])],
                         "conv_transpose1d(x, w, b, padding=1)"),
    "conv_transpose1d_strided": ([("x", "f32", [1, 4, 6]), ("w", "f32", [4, 3, 3])],
                                 "conv_transpose1d(x, w, stride=3, padding=1, "
                                 "output_padding=2, groups=2, dilation=2)"),
    "conv_transpose3d": ([("x", "f32", [1, 3, 3, 2, 4]), ("w", "f32", [3, 2, 2, 3, 3]),
                          ("b", "f32", [2])], "conv_transpose3d(x, w, b, padding=1)"),
    "conv_transpose3d_strided": (
        [("x", "f32", [1, 4, 2, 3, 3]), ("w", "f32", [4, 1, 3, 2, 3])],
        "conv_transpose3d(x, w, stride=[2, 1, 2], padding=[1, 0, 1], "
        "output_padding=[1, 0, 1], groups=2, dilation=[1, 2, 1])"),
}
