//===- ampc-fuzz-checkpoint.cpp - libFuzzer target for checkpoints --------===//
//
// Takes arbitrary bytes as a checkpoint (`ampc run --load`, the emitted
// NAME_load) and reads them with the runtime's reader,
// ampc_checkpoint_parse, twice: as given, and with the last 8 bytes
// replaced by the right checksum, so that mutated inputs get past the
// checksum into the fields behind it. The contract: no crash or sanitizer
// report, no allocation sized from a field (libFuzzer's malloc limit), a
// reason on failure, and on success entries whose data lie inside the file.
//
// Run: build-asan/bin/ampc-fuzz-checkpoint CORPUS test/Run/fuzz-checkpoint
//
//===----------------------------------------------------------------------===//

#include "ampc/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static void check(bool cond, const char *what) {
  if (cond)
    return;
  std::fprintf(stderr, "ampc-fuzz-checkpoint: reader contract broken: %s\n",
               what);
  std::abort();
}

static void read(const std::string &bytes) {
  ampc_checkpoint c = nullptr;
  if (ampc_checkpoint_parse(bytes.data(), bytes.size(), "fuzz", &c) !=
      AMPC_OK) {
    check(c == nullptr, "a checkpoint returned on failure");
    check(ampc_last_error()[0] != '\0', "failure without a reason");
    return;
  }
  check(bytes.size() >= 16, "a checkpoint shorter than its magic and sum");
  int64_t count = 0;
  check(ampc_checkpoint_count(c, &count) == AMPC_OK && count >= 0,
        "no entry count");
  uint64_t total = 0;
  const char *previousEnd = nullptr;
  for (int64_t k = 0; k < count; ++k) {
    ampc_checkpoint_entry e;
    check(ampc_checkpoint_get_entry(c, k, &e) == AMPC_OK, "an entry unread");
    check(e.bytes >= 0, "an entry of negative size");
    check(e.name && std::strlen(e.name) < bytes.size(), "a name past the file");
    const char *data = static_cast<const char *>(e.data);
    // The data follow the previous entry's, inside the copy the reader
    // keeps (the file less its checksum).
    check(!previousEnd || data > previousEnd, "entries out of order");
    previousEnd = data + e.bytes;
    total += static_cast<uint64_t>(e.bytes) + std::strlen(e.name);
  }
  check(total <= bytes.size(), "entries hold more than the file");
  ampc_checkpoint_free(c);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  read(bytes);
  if (size >= 16) {
    uint64_t sum = 0;
    ampc_checkpoint_checksum(bytes.data(), size - 8, &sum);
    std::memcpy(&bytes[size - 8], &sum, 8);
    read(bytes);
  }
  return 0;
}
