//===- api_checkpoint.cpp - The checkpoint file's writer and reader -------===//
//
// The one implementation of the checkpoint format (docs/runtime.md,
// "Checkpoints"), used by `ampc run` and by the code --emit=cpp writes:
//
//   "AMPCCKPT" | u32 version | u64 fingerprint | i64 steps |
//   (version 2: i64 epoch | i64 batch) | u32 count |
//   count x (u32 name length | name | i32 dtype | i64 bytes | data) |
//   u64 FNV-1a of every byte before
//
// all little-endian (the host's order; the runtime runs on x86-64 and
// aarch64 Linux). A save streams the fields to a temporary file, computing
// the checksum as it goes, flushes it to the disk and renames it over the
// path; a load reads the file whole and checks every field against the
// bytes that are there before it takes a size from it.
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace ampc;

struct ampc_checkpoint_impl {
  std::string bytes;
  ampc_checkpoint_header header{};
  std::vector<std::string> names;
  std::vector<ampc_checkpoint_entry> entries;
};

namespace {

constexpr char kMagic[8] = {'A', 'M', 'P', 'C', 'C', 'K', 'P', 'T'};

uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}
constexpr uint64_t kFnvBasis = 1469598103934665603ull;

/// "checkpoint 'PATH'", as every message names the file.
std::string named(const char *path) {
  return std::string("checkpoint '") + path + "'";
}

ampc_status fileError(const std::string &what, int err) {
  return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: %s", what.c_str(),
                  std::strerror(err));
}

/// Writes to a file descriptor through a buffer, folding every byte into
/// the checksum; the first failure's errno is kept and later writes do
/// nothing.
class SummingWriter {
public:
  explicit SummingWriter(int fd) : fd(fd) {}

  template <typename T> void put(T v) { append(&v, sizeof(T)); }
  void append(const void *data, size_t n) {
    if (n == 0)
      return;
    sum = fnv1a(sum, data, n);
    raw(data, n);
  }
  /// Appends the checksum and flushes; false with errno() set on failure.
  bool finish() {
    uint64_t s = sum;
    raw(&s, sizeof(s));
    flush();
    return err == 0;
  }
  int error() const { return err; }

private:
  void raw(const void *data, size_t n) {
    const char *p = static_cast<const char *>(data);
    if (n >= kChunk) {
      flush();
      drain(p, n);
      return;
    }
    if (buffer.size() + n > kChunk)
      flush();
    buffer.append(p, n);
  }
  void flush() {
    drain(buffer.data(), buffer.size());
    buffer.clear();
  }
  void drain(const char *p, size_t n) {
    while (n > 0 && err == 0) {
      ssize_t done = ::write(fd, p, n);
      if (done < 0 && errno == EINTR)
        continue;
      if (done <= 0)
        err = done == 0 ? EIO : errno;
      else {
        p += done;
        n -= static_cast<size_t>(done);
      }
    }
  }

  static constexpr size_t kChunk = 1 << 16;
  int fd;
  int err = 0;
  uint64_t sum = kFnvBasis;
  std::string buffer;
};

ampc_status checkEntries(const ampc_checkpoint_entry *entries, int64_t count) {
  std::set<std::string> seen;
  for (int64_t i = 0; i < count; ++i) {
    const ampc_checkpoint_entry &e = entries[i];
    if (!e.name)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_checkpoint_save: entries[%lld].name is NULL",
                      static_cast<long long>(i));
    if (!isValidDtype(e.dtype))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "ampc_checkpoint_save: entry '%s' has dtype %d", e.name,
                      static_cast<int>(e.dtype));
    if (e.bytes < 0 || (e.bytes > 0 && !e.data))
      return setError(e.bytes < 0 ? AMPC_ERROR_INVALID_ARGUMENT
                                  : AMPC_ERROR_NULL_POINTER,
                      "ampc_checkpoint_save: entry '%s' has %s", e.name,
                      e.bytes < 0 ? "a negative size" : "NULL data");
    if (std::strlen(e.name) > UINT32_MAX || !seen.insert(e.name).second)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_checkpoint_save: entry name '%s' is %s", e.name,
                      seen.count(e.name) ? "given twice" : "too long");
  }
  return AMPC_OK;
}

/// The checkpoint's fields, in file order, to `out`.
void writeFields(SummingWriter &out, const ampc_checkpoint_header &header,
                 const ampc_checkpoint_entry *entries, int64_t count) {
  out.append(kMagic, sizeof(kMagic));
  out.put<uint32_t>(AMPC_CHECKPOINT_VERSION);
  out.put<uint64_t>(header.fingerprint);
  out.put<int64_t>(header.steps);
  out.put<int64_t>(header.epoch);
  out.put<int64_t>(header.batch);
  out.put<uint32_t>(static_cast<uint32_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const ampc_checkpoint_entry &e = entries[i];
    size_t len = std::strlen(e.name);
    out.put<uint32_t>(static_cast<uint32_t>(len));
    out.append(e.name, len);
    out.put<int32_t>(static_cast<int32_t>(e.dtype));
    out.put<int64_t>(e.bytes);
    out.append(e.data, static_cast<size_t>(e.bytes));
  }
}

/// Reads the fields of `size` bytes at `data` in order; every read is
/// bounds-checked.
struct FieldReader {
  const char *data;
  size_t size, pos;
  template <typename T> bool get(T &v) {
    if (sizeof(T) > size - pos)
      return false;
    std::memcpy(&v, data + pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }
  bool skip(size_t n, const char *&at) {
    if (n > size - pos)
      return false;
    at = data + pos;
    pos += n;
    return true;
  }
};

/// Checks c->bytes and fills the rest of `c`; on failure the reason, to
/// follow "checkpoint 'PATH' ".
bool parseInto(ampc_checkpoint_impl &c, std::string &why) {
  const std::string &s = c.bytes;
  if (s.size() < sizeof(kMagic) ||
      std::memcmp(s.data(), kMagic, sizeof(kMagic)) != 0) {
    why = "is not an ampc checkpoint";
    return false;
  }
  why = "is truncated";
  if (s.size() < sizeof(kMagic) + 8)
    return false;
  uint64_t stored;
  std::memcpy(&stored, s.data() + s.size() - 8, 8);
  if (fnv1a(kFnvBasis, s.data(), s.size() - 8) != stored) {
    why = "is corrupt or truncated (checksum mismatch)";
    return false;
  }
  // The fields end where the checksum begins.
  FieldReader r{s.data(), s.size() - 8, sizeof(kMagic)};
  ampc_checkpoint_header &h = c.header;
  h.epoch = 1;
  h.batch = 0;
  if (!r.get(h.version))
    return false;
  if (h.version != 1 && h.version != 2) {
    why = "has an unsupported version " + std::to_string(h.version) +
          " (1 and 2 are read)";
    return false;
  }
  uint32_t count;
  if (!r.get(h.fingerprint) || !r.get(h.steps) ||
      (h.version >= 2 && (!r.get(h.epoch) || !r.get(h.batch))) ||
      !r.get(count))
    return false;
  for (uint32_t k = 0; k < count; ++k) {
    uint32_t len;
    const char *name, *data;
    int32_t dtype;
    int64_t bytes;
    if (!r.get(len) || !r.skip(len, name) || !r.get(dtype) ||
        !r.get(bytes) || bytes < 0 ||
        !r.skip(static_cast<size_t>(bytes), data)) {
      why = "is truncated (in entry " + std::to_string(k) + ")";
      return false;
    }
    if (std::memchr(name, 0, len)) {
      why = "is corrupt (the name of entry " + std::to_string(k) +
            " holds a NUL byte)";
      return false;
    }
    c.names.emplace_back(name, len);
    c.entries.push_back({nullptr, static_cast<ampc_dtype>(dtype), bytes,
                         data});
  }
  // The names' storage is final only now.
  for (size_t k = 0; k < c.entries.size(); ++k)
    c.entries[k].name = c.names[k].c_str();
  return true;
}

ampc_status parseOwned(std::string bytes, const char *path,
                       ampc_checkpoint *out) {
  std::unique_ptr<ampc_checkpoint_impl> c(new ampc_checkpoint_impl);
  c->bytes = std::move(bytes);
  std::string why;
  if (!parseInto(*c, why))
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s %s",
                    named(path).c_str(), why.c_str());
  *out = c.release();
  return AMPC_OK;
}

/// The whole file at `path`; false with errno set.
bool readFile(const char *path, std::string &bytes) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char chunk[1 << 16];
  ssize_t got;
  while ((got = ::read(fd, chunk, sizeof(chunk))) != 0) {
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    bytes.append(chunk, static_cast<size_t>(got));
  }
  ::close(fd);
  return true;
}

} // namespace

extern "C" {

ampc_status ampc_checkpoint_checksum(const void *bytes, size_t size,
                                     uint64_t *sum) {
  if (!sum || (!bytes && size > 0))
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_checkpoint_checksum: %s is NULL",
                    !sum ? "sum" : "bytes");
  *sum = fnv1a(kFnvBasis, bytes, size);
  return AMPC_OK;
}

ampc_status ampc_checkpoint_save(const char *path,
                                 const ampc_checkpoint_header *header,
                                 const ampc_checkpoint_entry *entries,
                                 int64_t count) {
  return guard("ampc_checkpoint_save", [&]() -> ampc_status {
    if (!path || !header || (!entries && count > 0))
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_checkpoint_save: %s is NULL",
                      !path ? "path" : !header ? "header" : "entries");
    if (count < 0 || count > UINT32_MAX)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "ampc_checkpoint_save: count %lld (0 to 2^32 - 1)",
                      static_cast<long long>(count));
    AMPC_TRY(checkEntries(entries, count));
    // What exists and is not a regular file (a device such as /dev/null or
    // /dev/full, a FIFO) is written in place: a rename would replace it.
    struct stat st;
    bool exists = ::stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
      return fileError("cannot write " + named(path), EISDIR);
    bool inPlace = exists && !S_ISREG(st.st_mode);
    std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
    int fd = inPlace ? ::open(path, O_WRONLY | O_CLOEXEC)
                     : ::open(tmp.c_str(),
                              O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
      return fileError(inPlace ? "cannot open " + named(path)
                               : "cannot create '" + tmp + "' for " +
                                     named(path),
                       errno);
    SummingWriter out(fd);
    writeFields(out, *header, entries, count);
    // The data reaches the disk before the rename makes it the file (else
    // a crash could leave an empty file under the name).
    bool ok = out.finish() && (inPlace || ::fsync(fd) == 0);
    int err = out.error() ? out.error() : errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      err = errno;
    }
    if (!ok) {
      if (!inPlace)
        std::remove(tmp.c_str());
      return fileError("cannot write " + named(path), err);
    }
    if (!inPlace && std::rename(tmp.c_str(), path) != 0) {
      err = errno;
      std::remove(tmp.c_str());
      return fileError("cannot rename '" + tmp + "' to " + named(path), err);
    }
    return AMPC_OK;
  });
}

ampc_status ampc_checkpoint_parse(const void *bytes, size_t size,
                                  const char *path, ampc_checkpoint *out) {
  return guard("ampc_checkpoint_parse", [&]() -> ampc_status {
    if (!out || (!bytes && size > 0))
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_checkpoint_parse: %s is NULL",
                      !out ? "out" : "bytes");
    *out = nullptr;
    std::string copy;
    if (size > 0)
      copy.assign(static_cast<const char *>(bytes), size);
    return parseOwned(std::move(copy), path ? path : "<memory>", out);
  });
}

ampc_status ampc_checkpoint_load(const char *path, ampc_checkpoint *out) {
  return guard("ampc_checkpoint_load", [&]() -> ampc_status {
    if (!path || !out)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_checkpoint_load: %s is NULL",
                      !path ? "path" : "out");
    *out = nullptr;
    std::string bytes;
    if (!readFile(path, bytes))
      return fileError("cannot read " + named(path), errno);
    return parseOwned(std::move(bytes), path, out);
  });
}

ampc_status ampc_checkpoint_get_header(ampc_checkpoint checkpoint,
                                       ampc_checkpoint_header *header) {
  if (!checkpoint || !header)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_checkpoint_get_header: %s is NULL",
                    !checkpoint ? "checkpoint" : "header");
  *header = checkpoint->header;
  return AMPC_OK;
}

ampc_status ampc_checkpoint_count(ampc_checkpoint checkpoint, int64_t *count) {
  if (!checkpoint || !count)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_checkpoint_count: %s is NULL",
                    !checkpoint ? "checkpoint" : "count");
  *count = static_cast<int64_t>(checkpoint->entries.size());
  return AMPC_OK;
}

ampc_status ampc_checkpoint_get_entry(ampc_checkpoint checkpoint,
                                      int64_t index,
                                      ampc_checkpoint_entry *entry) {
  if (!checkpoint || !entry)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_checkpoint_get_entry: %s is NULL",
                    !checkpoint ? "checkpoint" : "entry");
  if (index < 0 || index >= static_cast<int64_t>(checkpoint->entries.size()))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "ampc_checkpoint_get_entry: index %lld of a checkpoint "
                    "of %zu entries",
                    static_cast<long long>(index),
                    checkpoint->entries.size());
  *entry = checkpoint->entries[static_cast<size_t>(index)];
  return AMPC_OK;
}

ampc_status ampc_checkpoint_free(ampc_checkpoint checkpoint) {
  delete checkpoint;
  return AMPC_OK;
}

} // extern "C"
