//===- Npy.cpp - NumPy .npy files for `ampc run`
//----------------------------===//

#include "ampc/Executor/Npy.h"

#include "ampc/runtime.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace ampc::exec;

const char *ampc::exec::npyDescr(int32_t dtype) {
  switch (dtype) {
  case AMPC_F32:
    return "<f4";
  case AMPC_F16:
    return "<f2";
  case AMPC_BF16:
    return "<u2";
  case AMPC_I32:
    return "<i4";
  case AMPC_I64:
    return "<i8";
  case AMPC_BOOL:
    return "|b1";
  case AMPC_F64:
    return "<f8";
  case AMPC_U8:
    return "|u1";
  case AMPC_I8:
    return "|i1";
  case AMPC_I16:
    return "<i2";
  }
  return "";
}

static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

bool ampc::exec::readWholeFile(const std::string &path, std::string &contents) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::stringstream ss;
  ss << f.rdbuf();
  contents = ss.str();
  return !f.bad();
}

namespace {
/// The header of a .npy file, a Python dict literal such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`, read by
/// hand (the regular expressions that read it before recursed out of the
/// stack on a long header). An error names the byte of the file where the
/// header stops making sense.
class HeaderParser {
public:
  HeaderParser(const std::string &text, size_t offset)
      : text(text), offset(offset) {}

  bool parse(NpyArray &array, bool &fortran, std::string &why) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!expect('{', "'{'", why))
      return false;
    skipSpace();
    while (peek() != '}') {
      std::string key;
      size_t keyAt = pos;
      if (!quoted(key, "a quoted key", why))
        return false;
      skipSpace();
      if (!expect(':', "':'", why))
        return false;
      skipSpace();
      bool *seen = key == "descr"           ? &haveDescr
                   : key == "fortran_order" ? &haveOrder
                   : key == "shape"         ? &haveShape
                                            : nullptr;
      if (!seen)
        return failAt(keyAt, "unknown key '" + key + "'", why);
      if (*seen)
        return failAt(keyAt, "key '" + key + "' is given twice", why);
      *seen = true;
      if (key == "descr" && !quoted(array.descr, "a quoted dtype", why))
        return false;
      if (key == "fortran_order" && !boolean(fortran, why))
        return false;
      if (key == "shape" && !shape(array.shape, why))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos;
        skipSpace();
      } else if (peek() != '}') {
        return failAt(pos, "expected ',' or '}'", why);
      }
    }
    ++pos;
    skipSpace();
    if (pos != text.size())
      return failAt(pos, "text after the header's '}'", why);
    if (!haveDescr || !haveOrder || !haveShape)
      return failAt(pos, std::string("no '") +
                             (!haveDescr   ? "descr"
                              : !haveOrder ? "fortran_order"
                                           : "shape") +
                             "' key",
                    why);
    return true;
  }

private:
  const std::string &text;
  size_t offset, pos = 0;

  int peek() const {
    return pos < text.size() ? static_cast<unsigned char>(text[pos]) : -1;
  }
  void skipSpace() {
    while (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
           peek() == '\r')
      ++pos;
  }
  bool failAt(size_t at, const std::string &what, std::string &why) const {
    why = "at byte " + std::to_string(offset + at) + ": " + what;
    return false;
  }
  bool expect(char c, const char *what, std::string &why) {
    if (peek() != static_cast<unsigned char>(c))
      return failAt(pos, std::string("expected ") + what, why);
    ++pos;
    return true;
  }
  /// A string in single or double quotes, without escapes (NumPy writes
  /// none in its keys and dtypes).
  bool quoted(std::string &out, const char *what, std::string &why) {
    int q = peek();
    if (q != '\'' && q != '"')
      return failAt(pos, std::string("expected ") + what, why);
    size_t start = ++pos;
    while (pos < text.size() && text[pos] != q) {
      if (pos - start == 256)
        return failAt(start - 1, "a string of more than 256 characters", why);
      if (text[pos] == '\\' || text[pos] == '\n')
        return failAt(pos, "unexpected character in a string", why);
      ++pos;
    }
    if (pos == text.size())
      return failAt(start - 1, "unterminated string", why);
    out.assign(text, start, pos - start);
    ++pos;
    return true;
  }
  bool boolean(bool &out, std::string &why) {
    if (text.compare(pos, 4, "True") == 0) {
      out = true;
      pos += 4;
      return true;
    }
    if (text.compare(pos, 5, "False") == 0) {
      out = false;
      pos += 5;
      return true;
    }
    return failAt(pos, "expected True or False", why);
  }
  /// `(D0, D1, ...)`: non-negative integers, a trailing comma allowed.
  bool shape(std::vector<int64_t> &dims, std::string &why) {
    dims.clear();
    if (!expect('(', "'(' (the shape)", why))
      return false;
    skipSpace();
    while (peek() != ')') {
      size_t at = pos;
      if (peek() < '0' || peek() > '9')
        return failAt(pos, "expected a dim (a non-negative integer)", why);
      int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(d, int64_t(10), &d) ||
            __builtin_add_overflow(d, int64_t(peek() - '0'), &d))
          return failAt(at, "dim " + std::to_string(dims.size()) +
                                " does not fit in 64 bits",
                        why);
        ++pos;
      }
      if (peek() == 'L') // Python 2's long integers
        ++pos;
      if (dims.size() == 64)
        return failAt(at, "more than 64 dims", why);
      dims.push_back(d);
      skipSpace();
      if (peek() == ',') {
        ++pos;
        skipSpace();
      } else if (peek() != ')') {
        return failAt(pos, "expected ',' or ')' in the shape", why);
      }
    }
    ++pos;
    return true;
  }
};

/// The size in bytes of one element of a numeric NumPy dtype ('<f4': 4,
/// '|b1': 1), 0 for another kind.
size_t itemSize(const std::string &descr) {
  if (descr.size() < 3 || descr.size() > 4 ||
      std::string("<>|=").find(descr[0]) == std::string::npos ||
      std::string("biufc").find(descr[1]) == std::string::npos)
    return 0;
  size_t n = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9')
      return 0;
    n = n * 10 + (descr[i] - '0');
  }
  return n;
}
} // namespace

bool ampc::exec::parseNpy(const std::string &s, const std::string &path,
                          NpyArray &array, std::string &error) {
  auto bad = [&](const std::string &why) {
    error = "'" + path + "' " + why;
    return false;
  };
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0)
    return bad("is not a .npy file");
  int major = static_cast<uint8_t>(s[6]);
  if (major < 1 || major > 3)
    return bad("is a .npy file of format version " + std::to_string(major) +
               ", which ampc does not read (versions 1 to 3)");
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(s[8]) | (static_cast<uint8_t>(s[9]) << 8);
    start = 10;
  } else {
    if (s.size() < 12)
      return bad("is truncated (in its header)");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(s[8 + i]))
                   << (8 * i);
    start = 12;
  }
  if (headerLen > s.size() - start)
    return bad("is truncated (its header claims " + std::to_string(headerLen) +
               " bytes, the file holds " + std::to_string(s.size() - start) +
               " after the preamble)");
  std::string header = s.substr(start, headerLen);
  NpyArray parsed;
  bool fortran = false;
  std::string why;
  if (!HeaderParser(header, start).parse(parsed, fortran, why))
    return bad("has a malformed .npy header " + why);
  if (fortran)
    return bad("is in Fortran order (save a C-order array)");
  // The data must be exactly what the header claims: a shape that claims
  // more than the file holds is refused here, before any caller sizes a
  // buffer from it.
  size_t dataBytes = s.size() - start - headerLen;
  if (size_t item = itemSize(parsed.descr)) {
    uint64_t bytes = item;
    bool overflow = false;
    for (int64_t d : parsed.shape)
      overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(d),
                                         &bytes);
    std::string shapeText = shapeString(parsed.shape);
    if (overflow)
      return bad("claims shape " + shapeText + " of '" + parsed.descr +
                 "', more than 2^64 bytes");
    if (bytes != dataBytes)
      return bad("claims shape " + shapeText + " of '" + parsed.descr +
                 "' (" + std::to_string(bytes) + " data bytes) but holds " +
                 std::to_string(dataBytes) + " data bytes");
  }
  parsed.data.assign(s.begin() + start + headerLen, s.end());
  array = std::move(parsed);
  return true;
}

bool ampc::exec::readNpy(const std::string &path, NpyArray &array,
                         std::string &error) {
  std::string s;
  if (!readWholeFile(path, s)) {
    error = "cannot read '" + path + "'";
    return false;
  }
  return parseNpy(s, path, array, error);
}

bool ampc::exec::readNpyAs(const std::string &path, const std::string &what,
                           int32_t dtype, const std::vector<int64_t> &shape,
                           int64_t bytes, std::vector<char> &data,
                           std::string &error) {
  NpyArray array;
  if (!readNpy(path, array, error))
    return false;
  std::string want = npyDescr(dtype);
  if (array.descr != want) {
    error = what + " from '" + path + "': dtype '" + array.descr +
            "', expected '" + want + "'" +
            (dtype == AMPC_BF16 ? " (bf16 bit patterns)" : "");
    return false;
  }
  if (array.shape != shape) {
    error = what + " from '" + path + "': shape " + shapeString(array.shape) +
            ", expected " + shapeString(shape);
    return false;
  }
  if (array.data.size() != static_cast<size_t>(bytes)) {
    error = "'" + path + "' holds " + std::to_string(array.data.size()) +
            " data bytes, expected " + std::to_string(bytes);
    return false;
  }
  data = std::move(array.data);
  return true;
}

std::string ampc::exec::encodeNpy(int32_t dtype,
                                  const std::vector<int64_t> &shape,
                                  const char *data, size_t bytes) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    dims += ",";
  std::string header = "{'descr': '" + std::string(npyDescr(dtype)) +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // The data starts at a multiple of 64 bytes; the header ends with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(data, bytes);
  return out;
}

namespace {
/// "cannot ACTION: REASON", the reason from the errno value `err`.
std::string ioError(const std::string &action, int err) {
  return "cannot " + action + ": " + std::strerror(err);
}

/// Writes all of `data` to `fd`; false with errno set if it cannot.
bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}
} // namespace

bool ampc::exec::writeFilesAtomically(
    const std::vector<std::pair<std::string, std::string>> &files,
    std::string &error, const std::string &what) {
  // "checkpoint 'c.ckpt'" or "'p/w1.npy'".
  auto named = [&](const std::string &path) {
    return (what.empty() ? "'" : what + " '") + path + "'";
  };
  std::vector<std::string> temps; // "" for a file written in place
  auto cleanup = [&] {
    for (const std::string &t : temps)
      if (!t.empty())
        std::remove(t.c_str());
  };
  for (const auto &[path, contents] : files) {
    // What exists and is not a regular file (a device such as /dev/null,
    // a FIFO) is written in place: a rename would replace it.
    struct stat st;
    bool exists = ::stat(path.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
      error = ioError("write " + named(path), EISDIR);
      cleanup();
      return false;
    }
    bool inPlace = exists && !S_ISREG(st.st_mode);
    std::string tmp =
        inPlace ? "" : path + ".tmp." + std::to_string(getpid());
    temps.push_back(tmp);
    int fd = inPlace ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                     : ::open(tmp.c_str(),
                              O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      int err = errno;
      error = inPlace ? ioError("open " + named(path), err)
                      : ioError("create '" + tmp + "' for " + named(path), err);
      temps.back().clear();
      cleanup();
      return false;
    }
    // The data reaches the disk before the rename makes it the file (else a
    // crash could leave an empty file under the name).
    bool ok = writeAll(fd, contents.data(), contents.size());
    if (ok && !inPlace && ::fsync(fd) != 0)
      ok = false;
    int saved = errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      saved = errno;
    }
    if (!ok) {
      error = ioError("write " + named(path), saved);
      cleanup();
      return false;
    }
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (!temps[i].empty() &&
        std::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      int err = errno;
      error = ioError(
          "rename '" + temps[i] + "' to " + named(files[i].first), err);
      cleanup();
      return false;
    }
  return true;
}
