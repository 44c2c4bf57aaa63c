//===- ampc-fuzz-npy.cpp - libFuzzer target for the .npy reader -----------===//
//
// Takes arbitrary bytes as a .npy file (`ampc run`'s --input, --data,
// --params-in) and reads them with parseNpy. The contract: no crash or
// sanitizer report, no allocation sized from the header's shape (libFuzzer's
// malloc limit), an error naming the file on failure, and on success an
// array whose data is exactly what a numeric dtype's shape claims.
//
// Run: build-asan/bin/ampc-fuzz-npy CORPUS test/Run/fuzz-npy
//
//===----------------------------------------------------------------------===//

#include "ampc/Executor/Npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

static void check(bool cond, const char *what) {
  if (cond)
    return;
  std::fprintf(stderr, "ampc-fuzz-npy: reader contract broken: %s\n", what);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  ampc::exec::NpyArray array;
  std::string error;
  if (!ampc::exec::parseNpy(bytes, "fuzz.npy", array, error)) {
    check(error.rfind("'fuzz.npy' ", 0) == 0, "an error not naming the file");
    return 0;
  }
  check(error.empty(), "success with an error");
  check(array.data.size() <= size, "more data than the file holds");
  for (int64_t d : array.shape)
    check(d >= 0, "a negative dim");
  // What `ampc run` does next with an array of one of its dtypes: compare
  // the data's size with the shape's.
  for (int32_t dtype = 0; dtype < 6; ++dtype) {
    if (array.descr != ampc::exec::npyDescr(dtype))
      continue;
    unsigned long long elements = 1;
    for (int64_t d : array.shape)
      elements *= static_cast<unsigned long long>(d);
    check(elements * (array.descr[2] - '0') == array.data.size(),
          "data and shape disagree");
  }
  return 0;
}
