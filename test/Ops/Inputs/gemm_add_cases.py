# The cases of test/Ops/gemm-add-diff.test (tgdiff.py cases): the
# GEMM-plus-add family and prelu, each alone against the PyTorch reference.
# Inputs (name, dtype, shape) and the expression; odd sizes, `c` broadcast
# along rows, columns and batches, beta and alpha away from 1.
CASES = {
    "addmm": ([("c", "f32", [3, 5]), ("a", "f32", [3, 4]), ("b", "f32", [4, 5])],
              "addmm(c, a, b)"),
    "addmm_row": ([("c", "f32", [5]), ("a", "f32", [3, 7]), ("b", "f32", [7, 5])],
                  "addmm(c, a, b, beta=0.5, alpha=2.0)"),
    "addmm_col": ([("c", "f32", [3, 1]), ("a", "f32", [3, 4]), ("b", "f32", [4, 5])],
                  "addmm(c, a, b, beta=1.5, alpha=0.75)"),
    "addmm_beta0": ([("c", "f32", [3, 5]), ("a", "f32", [3, 4]), ("b", "f32", [4, 5])],
                    "addmm(c, a, b, beta=0.0)"),
    "baddbmm": ([("c", "f32", [2, 3, 5]), ("a", "f32", [2, 3, 4]), ("b", "f32", [2, 4, 5])],
                "baddbmm(c, a, b)"),
    "baddbmm_bcast": ([("c", "f32", [3, 1]), ("a", "f32", [3, 3, 6]),
                       ("b", "f32", [3, 6, 5])], "baddbmm(c, a, b, beta=0.5, alpha=1.5)"),
    "addbmm": ([("c", "f32", [3, 5]), ("a", "f32", [4, 3, 2]), ("b", "f32", [4, 2, 5])],
               "addbmm(c, a, b)"),
    "addbmm_row": ([("c", "f32", [5]), ("a", "f32", [3, 3, 4]), ("b", "f32", [3, 4, 5])],
                   "addbmm(c, a, b, beta=0.25, alpha=0.5)"),
    "addmv": ([("c", "f32", [7]), ("a", "f32", [7, 5]), ("v", "f32", [5])],
              "addmv(c, a, v)"),
    "addmv_bcast": ([("c", "f32", [1]), ("a", "f32", [6, 5]), ("v", "f32", [5])],
                    "addmv(c, a, v, beta=2.0, alpha=0.5)"),
    "addr": ([("c", "f32", [3, 4]), ("u", "f32", [3]), ("v", "f32", [4])],
             "addr(c, u, v)"),
    "addr_col": ([("c", "f32", [5, 1]), ("u", "f32", [5]), ("v", "f32", [3])],
                 "addr(c, u, v, beta=0.5, alpha=1.5)"),
    "prelu": ([("x", "f32", [2, 3, 5]), ("w", "f32", [3])], "prelu(x, w)"),
    "prelu_single": ([("x", "f32", [4, 7]), ("w", "f32", [1])], "prelu(x, w)"),
    "prelu_4d": ([("x", "f32", [2, 3, 4, 3]), ("w", "f32", [3])], "prelu(x, w) * 2.0"),
}
