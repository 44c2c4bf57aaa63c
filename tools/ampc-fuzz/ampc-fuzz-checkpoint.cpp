//===- ampc-fuzz-checkpoint.cpp - libFuzzer target for checkpoints --------===//
//
// Takes arbitrary bytes as an `ampc run` checkpoint (--load) and reads its
// framing with parseCheckpoint, twice: as given, and with the last 8 bytes
// replaced by the right checksum, so that mutated inputs get past the
// checksum into the fields behind it. The contract: no crash or sanitizer
// report, no allocation sized from a field (libFuzzer's malloc limit), a
// reason on failure, and on success entries whose data lie inside the file.
//
// Run: build-asan/bin/ampc-fuzz-checkpoint CORPUS test/Run/fuzz-checkpoint
//
//===----------------------------------------------------------------------===//

#include "ampc/Executor/Checkpoint.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace ampc::exec;

static void check(bool cond, const char *what) {
  if (cond)
    return;
  std::fprintf(stderr, "ampc-fuzz-checkpoint: reader contract broken: %s\n",
               what);
  std::abort();
}

static void read(const std::string &bytes) {
  CheckpointContents contents;
  std::string why;
  if (!parseCheckpoint(bytes, contents, why)) {
    check(!why.empty(), "failure without a reason");
    return;
  }
  check(bytes.size() >= 16, "a checkpoint shorter than its magic and sum");
  const char *begin = bytes.data(), *end = begin + bytes.size() - 8;
  uint64_t total = 0;
  for (const CheckpointEntry &e : contents.entries) {
    check(e.bytes >= 0, "an entry of negative size");
    check(e.data >= begin && e.data <= end &&
              static_cast<uint64_t>(e.bytes) <=
                  static_cast<uint64_t>(end - e.data),
          "an entry's data outside the file");
    total += static_cast<uint64_t>(e.bytes) + e.name.size();
  }
  check(total <= bytes.size(), "entries hold more than the file");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  read(bytes);
  if (size >= 16) {
    uint64_t sum = checkpointChecksum(bytes.data(), size - 8);
    std::memcpy(&bytes[size - 8], &sum, 8);
    read(bytes);
  }
  return 0;
}
