// Runs one kernel through the installed runtime; exits 0 on success.
#include <ampc/runtime.h>

#include <cstdio>
#include <cstring>

int main() {
  if (ampc_runtime_version() != AMPC_RUNTIME_VERSION)
    return 1;
  // 1.4: what code from --emit=cpp calls to fail with a message.
  if (ampc_set_last_error(AMPC_ERROR_INVALID_ARGUMENT, "consumer") !=
          AMPC_ERROR_INVALID_ARGUMENT ||
      std::strcmp(ampc_last_error(), "consumer") != 0)
    return 5;
  ampc_context ctx;
  if (ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx) != AMPC_OK)
    return 2;
  float x[4] = {-1, 2, -3, 4}, y[4];
  int64_t shape[1] = {4};
  ampc_status s =
      ampc_relu_fwd(ctx, y, AMPC_F32, shape, 1, x, AMPC_F32, shape, 1);
  ampc_context_destroy(ctx);
  std::printf("relu: %g %g %g %g\n", y[0], y[1], y[2], y[3]);
  if (s != AMPC_OK || y[0] != 0 || y[3] != 4)
    return 3;
#ifdef AMPC_EXPECT_CUDA_BACKEND
  ampc_context gpu = nullptr;
  s = ampc_context_create(AMPC_BACKEND_CUDA, 0, &gpu);
  std::printf("cuda context: %s (%s)\n", ampc_status_string(s),
              ampc_last_error());
  if (s == AMPC_OK)
    ampc_context_destroy(gpu);
  else if (s != AMPC_ERROR_NO_DEVICE)
    return 4; // the backend library was not found or did not load
#endif
  return 0;
}
