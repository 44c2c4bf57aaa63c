//===- Checkpoint.cpp - The framing of `ampc run` checkpoints -------------===//

#include "ampc/Executor/Checkpoint.h"

#include <cstring>

using namespace ampc::exec;

uint64_t ampc::exec::checkpointChecksum(const char *data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

namespace {
/// Reads the fields of `size` bytes at `data` in order; every read is
/// bounds-checked.
struct Reader {
  const char *data;
  size_t size, pos;
  template <typename T> bool get(T &v) {
    if (sizeof(T) > size - pos)
      return false;
    std::memcpy(&v, data + pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }
  bool bytes(size_t n, const char *&p) {
    if (n > size - pos)
      return false;
    p = data + pos;
    pos += n;
    return true;
  }
};
} // namespace

bool ampc::exec::parseCheckpoint(const std::string &s,
                                 CheckpointContents &contents,
                                 std::string &why) {
  auto bad = [&](const char *what) {
    why = what;
    return false;
  };
  if (s.size() < 8 || std::memcmp(s.data(), kCheckpointMagic, 8) != 0)
    return bad("is not an ampc checkpoint");
  if (s.size() < 8 + 8)
    return bad("is truncated");
  uint64_t stored;
  std::memcpy(&stored, s.data() + s.size() - 8, 8);
  if (checkpointChecksum(s.data(), s.size() - 8) != stored)
    return bad("is corrupt or truncated (checksum mismatch)");
  // The fields end where the checksum begins.
  Reader r{s.data(), s.size() - 8, 8};
  CheckpointContents c;
  if (!r.get(c.version) || (c.version != 1 && c.version != 2))
    return bad("has an unsupported version");
  if (!r.get(c.fingerprint) || !r.get(c.steps))
    return bad("is truncated");
  if (c.version >= 2 && (!r.get(c.epoch) || !r.get(c.batch)))
    return bad("is truncated");
  uint32_t count;
  if (!r.get(count))
    return bad("is truncated");
  for (uint32_t k = 0; k < count; ++k) {
    uint32_t len;
    const char *name;
    CheckpointEntry e;
    if (!r.get(len) || !r.bytes(len, name) || !r.get(e.dtype) ||
        !r.get(e.bytes) || e.bytes < 0 ||
        !r.bytes(static_cast<size_t>(e.bytes), e.data))
      return bad("is truncated");
    e.name.assign(name, len);
    c.entries.push_back(std::move(e));
  }
  contents = std::move(c);
  return true;
}
