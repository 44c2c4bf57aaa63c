# The cases of test/Ops/flip-roll-diff.test (tgdiff.py cases): flip and roll,
# each alone against the PyTorch reference (torch.flip, torch.roll): forward,
# `grad` (flip's gradient is flip, roll's is roll by -shifts) and 20
# training steps. Negative dims, several dims, odd sizes, shifts beyond the
# size and negative, a repeated dim, and roll without dims (flattened).
CASES = {
    "flip": ([("x", "f32", [3, 5])], "flip(x, dims=[0])"),
    "flip_dims": ([("x", "f32", [2, 3, 5])], "flip(x, dims=[-1, 0])"),
    "flip_all": ([("x", "f32", [3, 4, 2])], "flip(x)"),
    "flip_mixed": ([("x", "f32", [4, 3]), ("w", "f32", [3])], "flip(x, dims=[1]) * w"),
    "roll": ([("x", "f32", [7])], "roll(x, shifts=[2], dims=[0])"),
    "roll_dims": ([("x", "f32", [3, 4, 5])], "roll(x, shifts=[-1, 7], dims=[-1, 0])"),
    "roll_flat": ([("x", "f32", [3, 5])], "roll(x, shifts=4)"),
    "roll_flat_negative": ([("x", "f32", [2, 3, 2])], "roll(x, shifts=[-13])"),
    "roll_repeated": ([("x", "f32", [4, 6])], "roll(x, shifts=[1, 2], dims=[1, 1])"),
}
