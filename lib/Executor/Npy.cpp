//===- Npy.cpp - NumPy .npy files for `ampc run`
//----------------------------===//

#include "ampc/Executor/Npy.h"

#include "ampc/runtime.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
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

bool ampc::exec::readNpy(const std::string &path, NpyArray &array,
                         std::string &error) {
  std::string s;
  if (!readWholeFile(path, s)) {
    error = "cannot read '" + path + "'";
    return false;
  }
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  size_t headerLen, start;
  if (s[6] == 1) {
    headerLen = static_cast<uint8_t>(s[8]) | (static_cast<uint8_t>(s[9]) << 8);
    start = 10;
  } else {
    if (s.size() < 12) {
      error = "'" + path + "' is truncated";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(s[8 + i]))
                   << (8 * i);
    start = 12;
  }
  if (start + headerLen > s.size()) {
    error = "'" + path + "' is truncated";
    return false;
  }
  std::string header = s.substr(start, headerLen);
  std::smatch m;
  std::string shapeText;
  array.descr.clear();
  if (std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    array.descr = m[1];
  if (std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    shapeText = m[1];
  if (header.find("'fortran_order': True") != std::string::npos) {
    error = "'" + path + "' is in Fortran order (save a C-order array)";
    return false;
  }
  array.shape.clear();
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(shapeText.begin(), shapeText.end(), num);
       it != std::sregex_iterator(); ++it)
    array.shape.push_back(std::stoll(it->str()));
  array.data.assign(s.begin() + start + headerLen, s.end());
  return true;
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
