// Drives code from `ampc --emit=cpp` through its check and overflow API:
// GRAPH is the graph's name, the arguments are the inputs as .npy files (in
// graph order), then the step count. After each step it asks GRAPH_check
// for a failed device-side check (then prints it and exits 3), and after a
// skipped step GRAPH_overflow for the op that overflowed; it prints one line
// per step in the shape of `ampc run --log`. The harness is
// test/Run/Inputs/cpp_main.cpp's, with its checks turned on.
#define AMPC_MAIN_CHECKS
#include "../../Run/Inputs/cpp_main.cpp"
