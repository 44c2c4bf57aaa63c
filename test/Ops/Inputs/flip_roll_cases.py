# The cases of test/Ops/flip-roll-diff.test (tgdiff.py cases): flip alone
# against the PyTorch reference (torch.flip): forward, `grad` (flip's
# gradient is flip) and 20 training steps. Negative dims, several dims, all
# dims, odd sizes.
CASES = {
    "flip": ([("x", "f32", [3, 5])], "flip(x, dims=[0])"),
    "flip_dims": ([("x", "f32", [2, 3, 5])], "flip(x, dims=[-1, 0])"),
    "flip_all": ([("x", "f32", [3, 4, 2])], "flip(x)"),
    "flip_mixed": ([("x", "f32", [4, 3]), ("w", "f32", [3])], "flip(x, dims=[1]) * w"),
}
