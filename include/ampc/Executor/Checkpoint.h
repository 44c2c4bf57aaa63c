//===- Checkpoint.h - The framing of `ampc run` checkpoints -----*- C++ -*-===//
//
// A checkpoint file: "AMPCCKPT" | u32 version | u64 fingerprint | i64 steps |
// (version 2: i64 epoch | i64 batch) | u32 count | per entry: u32 name
// length, name, i32 dtype, i64 bytes, data | u64 FNV-1a of everything
// before. parseCheckpoint reads the framing of such bytes, with no program
// (plain C++: the checkpoint fuzz target links it alone); Executor::load
// matches the entries to the program's slots.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_CHECKPOINT_H
#define AMPC_EXECUTOR_CHECKPOINT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ampc::exec {

constexpr char kCheckpointMagic[8] = {'A', 'M', 'P', 'C', 'C', 'K', 'P', 'T'};
constexpr uint32_t kCheckpointVersion = 2;

/// FNV-1a of `n` bytes: a checkpoint's last 8 bytes, of all bytes before.
uint64_t checkpointChecksum(const char *data, size_t n);

/// One entry of a checkpoint; `data` points into the bytes parsed.
struct CheckpointEntry {
  std::string name;
  int32_t dtype = 0;
  int64_t bytes = 0;
  const char *data = nullptr;
};

struct CheckpointContents {
  uint32_t version = 0;
  uint64_t fingerprint = 0;
  int64_t steps = 0, epoch = 1, batch = 0;
  std::vector<CheckpointEntry> entries;
};

/// Reads the framing of checkpoint `bytes`. On failure returns false with
/// `why` saying what is wrong ("is truncated", "is not an ampc checkpoint",
/// ...), to follow "checkpoint 'PATH' ". Nothing is allocated from a size
/// the file gives before the bytes it promises are known to be there.
bool parseCheckpoint(const std::string &bytes, CheckpointContents &contents,
                     std::string &why);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_CHECKPOINT_H
