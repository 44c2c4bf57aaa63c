//===- Npy.h - NumPy .npy files for `ampc run` -------------------*- C++
//-*-===//
//
// Reading and writing the C-order, little-endian .npy files `ampc run`
// exchanges with users: inputs (--input), parameters (--params-in/-out) and
// outputs (--outputs-out). bf16 has no NumPy dtype: its tensors are
// exchanged as '<u2' arrays holding the bit patterns.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_NPY_H
#define AMPC_EXECUTOR_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace ampc::exec {

/// The NumPy dtype string ('<f4', '<f2', '<u2' for bf16, '<i4', '<i8',
/// '|b1') of an ampc_dtype.
const char *npyDescr(int32_t dtype);

/// One array of a .npy file.
struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// Reads a .npy file (format 1.x to 3.x, C order). On failure sets `error`
/// (naming the file) and returns false.
bool readNpy(const std::string &path, NpyArray &array, std::string &error);

/// readNpy's work on the bytes `s` of file `path`. The header is checked
/// whole (its dict's keys, a shape of non-negative 64-bit dims), and for a
/// numeric dtype (kinds b, i, u, f, c) the data must be exactly as many
/// bytes as the shape claims: a header claiming a huge shape is an error
/// naming the file, never an allocation. An error in the header names its
/// byte offset in the file.
bool parseNpy(const std::string &s, const std::string &path, NpyArray &array,
              std::string &error);

/// Reads `path` and checks that it holds `what` (e.g. "input 'x'"): dtype
/// `dtype`, shape `shape`, `bytes` bytes of data.
bool readNpyAs(const std::string &path, const std::string &what, int32_t dtype,
               const std::vector<int64_t> &shape, int64_t bytes,
               std::vector<char> &data, std::string &error);

/// The bytes of a .npy file (format 1.0) holding `data`.
std::string encodeNpy(int32_t dtype, const std::vector<int64_t> &shape,
                      const char *data, size_t bytes);

/// Reads a whole file; false if it cannot be read.
bool readWholeFile(const std::string &path, std::string &contents);

/// Writes several files so that each is replaced whole or not at all: all
/// contents go to temporary files in the target directories first (written
/// and fsync'ed), and are renamed into place only when every one was
/// written. A target that exists and is not a regular file (/dev/null, a
/// FIFO) is written in place instead. Returns false (and removes the
/// temporaries) if any open, write, fsync or rename fails, with `error`
/// naming the file, what it holds (`what`, e.g. "checkpoint") and the
/// system's reason: "cannot write checkpoint 'c.ckpt': No space left on
/// device".
bool writeFilesAtomically(
    const std::vector<std::pair<std::string, std::string>> &files,
    std::string &error, const std::string &what = "");

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_NPY_H
