//===- test_checkpoint.cpp - The checkpoint writer and reader (1.8) -------===//
//
// ampc_checkpoint_save / _load round trips, the byte layout docs/runtime.md
// gives, version-1 files, and the refusal of corrupt, truncated and foreign
// files with a message naming the path; a failed save leaves the file that
// was there as it was.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::string tempDir() {
  std::string dir = ::testing::TempDir() + "ampc_ckpt_XXXXXX";
  if (!mkdtemp(&dir[0]))
    return "";
  return dir;
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

template <typename T> T at(const std::string &s, size_t offset) {
  T v;
  std::memcpy(&v, s.data() + offset, sizeof(T));
  return v;
}
template <typename T> void put(std::string &s, T v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

/// `s` with its last 8 bytes made the checksum of the bytes before.
std::string resummed(std::string s) {
  uint64_t sum = 0;
  EXPECT_EQ(ampc_checkpoint_checksum(s.data(), s.size() - 8, &sum), AMPC_OK);
  std::memcpy(&s[s.size() - 8], &sum, 8);
  return s;
}

/// The message a parse of `bytes` fails with ("" if it succeeds).
std::string parseError(const std::string &bytes) {
  ampc_checkpoint c = nullptr;
  ampc_status st = ampc_checkpoint_parse(bytes.data(), bytes.size(), "x.ckpt", &c);
  if (st == AMPC_OK) {
    ampc_checkpoint_free(c);
    return "";
  }
  EXPECT_EQ(st, AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
  return ampc_last_error();
}

void expectHeader(ampc_checkpoint c, const ampc_checkpoint_header &want) {
  ampc_checkpoint_header h{};
  ASSERT_EQ(ampc_checkpoint_get_header(c, &h), AMPC_OK);
  EXPECT_EQ(h.version, want.version);
  EXPECT_EQ(h.fingerprint, want.fingerprint);
  EXPECT_EQ(h.steps, want.steps);
  EXPECT_EQ(h.epoch, want.epoch);
  EXPECT_EQ(h.batch, want.batch);
}

struct Saved {
  std::string dir, path;
  std::vector<float> w = {1.5f, -2.0f, 3.25f};
  std::vector<int32_t> counter = {42};
  ampc_checkpoint_header header{};
  std::vector<ampc_checkpoint_entry> entries;

  Saved() {
    dir = tempDir();
    path = dir + "/a.ckpt";
    header.version = 99; // ignored on writing
    header.fingerprint = 0x0123456789abcdefull;
    header.steps = 7;
    header.epoch = 3;
    header.batch = 2;
    entries = {{"w", AMPC_F32, 12, w.data()},
               {"lr_schedule.step", AMPC_I32, 4, counter.data()},
               {"empty", AMPC_F16, 0, nullptr}};
  }
  ampc_status save() {
    return ampc_checkpoint_save(path.c_str(), &header, entries.data(),
                                static_cast<int64_t>(entries.size()));
  }
};

TEST(Checkpoint, RoundTrip) {
  Saved s;
  ASSERT_FALSE(s.dir.empty());
  ASSERT_EQ(s.save(), AMPC_OK) << ampc_last_error();
  ampc_checkpoint c = nullptr;
  ASSERT_EQ(ampc_checkpoint_load(s.path.c_str(), &c), AMPC_OK)
      << ampc_last_error();
  expectHeader(c, {2, 0x0123456789abcdefull, 7, 3, 2});
  int64_t count = 0;
  ASSERT_EQ(ampc_checkpoint_count(c, &count), AMPC_OK);
  ASSERT_EQ(count, 3);
  for (int64_t i = 0; i < count; ++i) {
    ampc_checkpoint_entry e{};
    ASSERT_EQ(ampc_checkpoint_get_entry(c, i, &e), AMPC_OK);
    EXPECT_STREQ(e.name, s.entries[i].name);
    EXPECT_EQ(e.dtype, s.entries[i].dtype);
    ASSERT_EQ(e.bytes, s.entries[i].bytes);
    if (e.bytes > 0)
      EXPECT_EQ(std::memcmp(e.data, s.entries[i].data, e.bytes), 0);
  }
  ampc_checkpoint_entry e{};
  EXPECT_EQ(ampc_checkpoint_get_entry(c, 3, &e), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_checkpoint_get_entry(c, -1, &e), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_checkpoint_free(c), AMPC_OK);
  EXPECT_EQ(ampc_checkpoint_free(nullptr), AMPC_OK);
  // No temporary file is left beside it.
  EXPECT_NE(access((s.path + ".tmp." + std::to_string(getpid())).c_str(), F_OK),
            0);
}

// The layout docs/runtime.md gives, byte for byte.
TEST(Checkpoint, ByteLayout) {
  Saved s;
  ASSERT_EQ(s.save(), AMPC_OK) << ampc_last_error();
  std::string f = slurp(s.path);
  size_t entries = (4 + 1 + 4 + 8 + 12) + (4 + 16 + 4 + 8 + 4) + (4 + 5 + 4 + 8);
  ASSERT_EQ(f.size(), 8 + 4 + 8 + 8 + 8 + 8 + 4 + entries + 8);
  EXPECT_EQ(f.compare(0, 8, "AMPCCKPT"), 0);
  EXPECT_EQ(at<uint32_t>(f, 8), 2u);
  EXPECT_EQ(at<uint64_t>(f, 12), 0x0123456789abcdefull);
  EXPECT_EQ(at<int64_t>(f, 20), 7);
  EXPECT_EQ(at<int64_t>(f, 28), 3);
  EXPECT_EQ(at<int64_t>(f, 36), 2);
  EXPECT_EQ(at<uint32_t>(f, 44), 3u);
  EXPECT_EQ(at<uint32_t>(f, 48), 1u);
  EXPECT_EQ(f[52], 'w');
  EXPECT_EQ(at<int32_t>(f, 53), int32_t(AMPC_F32));
  EXPECT_EQ(at<int64_t>(f, 57), 12);
  EXPECT_EQ(at<float>(f, 65), 1.5f);
  // FNV-1a 64 of everything before the last 8 bytes.
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i + 8 < f.size(); ++i) {
    h ^= static_cast<unsigned char>(f[i]);
    h *= 1099511628211ull;
  }
  EXPECT_EQ(at<uint64_t>(f, f.size() - 8), h);
}

// Version 1 (no data position) is read: epoch 1, batch 0.
TEST(Checkpoint, ReadsVersion1) {
  std::string v1("AMPCCKPT", 8);
  put<uint32_t>(v1, 1);
  put<uint64_t>(v1, 5);
  put<int64_t>(v1, 11);
  put<uint32_t>(v1, 1);
  put<uint32_t>(v1, 1);
  v1 += "b";
  put<int32_t>(v1, AMPC_F32);
  put<int64_t>(v1, 4);
  put<float>(v1, 0.5f);
  put<uint64_t>(v1, 0);
  v1 = resummed(v1);
  ampc_checkpoint c = nullptr;
  ASSERT_EQ(ampc_checkpoint_parse(v1.data(), v1.size(), "v1.ckpt", &c), AMPC_OK)
      << ampc_last_error();
  expectHeader(c, {1, 5, 11, 1, 0});
  ampc_checkpoint_entry e{};
  ASSERT_EQ(ampc_checkpoint_get_entry(c, 0, &e), AMPC_OK);
  EXPECT_STREQ(e.name, "b");
  float got = 0; // entry data is packed, not aligned: copied out
  std::memcpy(&got, e.data, sizeof got);
  EXPECT_EQ(got, 0.5f);
  ampc_checkpoint_free(c);
}

TEST(Checkpoint, RefusesCorruptFiles) {
  Saved s;
  ASSERT_EQ(s.save(), AMPC_OK) << ampc_last_error();
  const std::string good = slurp(s.path);
  EXPECT_EQ(parseError(good), "");
  EXPECT_EQ(parseError("not a checkpoint"),
            "checkpoint 'x.ckpt' is not an ampc checkpoint");
  EXPECT_EQ(parseError("AMPCCKPT1234"), "checkpoint 'x.ckpt' is truncated");
  EXPECT_EQ(parseError(good.substr(0, 100)),
            "checkpoint 'x.ckpt' is corrupt or truncated (checksum mismatch)");
  std::string flipped = good;
  flipped[66] ^= 1;
  EXPECT_EQ(parseError(flipped),
            "checkpoint 'x.ckpt' is corrupt or truncated (checksum mismatch)");
  // Past the checksum (made right again), the fields are checked too.
  std::string v7 = good;
  v7[8] = 7;
  EXPECT_EQ(parseError(resummed(v7)),
            "checkpoint 'x.ckpt' has an unsupported version 7 (1 and 2 are "
            "read)");
  std::string more = good;
  more[44] = 4; // one entry more than there is
  EXPECT_EQ(parseError(resummed(more)),
            "checkpoint 'x.ckpt' is truncated (in entry 3)");
  std::string huge = good;
  int64_t big = INT64_MAX;
  std::memcpy(&huge[57], &big, 8); // entry 0 claims 2^63 - 1 bytes
  EXPECT_EQ(parseError(resummed(huge)),
            "checkpoint 'x.ckpt' is truncated (in entry 0)");
  std::string negative = good;
  big = -1;
  std::memcpy(&negative[57], &big, 8);
  EXPECT_EQ(parseError(resummed(negative)),
            "checkpoint 'x.ckpt' is truncated (in entry 0)");
  std::string nul = good;
  nul[52] = '\0';
  EXPECT_EQ(parseError(resummed(nul)),
            "checkpoint 'x.ckpt' is corrupt (the name of entry 0 holds a NUL "
            "byte)");
  // Files: a missing one and a directory name the system's reason.
  ampc_checkpoint c = nullptr;
  std::string missing = s.dir + "/missing.ckpt";
  EXPECT_EQ(ampc_checkpoint_load(missing.c_str(), &c),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(ampc_last_error()),
            "cannot read checkpoint '" + missing +
                "': No such file or directory");
  EXPECT_EQ(ampc_checkpoint_load(s.dir.c_str(), &c),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(ampc_last_error()),
            "cannot read checkpoint '" + s.dir + "': Is a directory");
  EXPECT_EQ(ampc_checkpoint_load(nullptr, &c), AMPC_ERROR_NULL_POINTER);
}

// A save that fails leaves the checkpoint that was there as it was.
TEST(Checkpoint, FailedSaveKeepsTheOldFile) {
  Saved s;
  ASSERT_EQ(s.save(), AMPC_OK) << ampc_last_error();
  const std::string before = slurp(s.path);
  s.header.steps = 8;
  s.entries[0].dtype = static_cast<ampc_dtype>(17);
  EXPECT_EQ(s.save(), AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_STREQ(ampc_last_error(),
               "ampc_checkpoint_save: entry 'w' has dtype 17");
  s.entries[0].dtype = AMPC_F32;
  s.entries[1].name = "w";
  EXPECT_EQ(s.save(), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ampc_last_error(),
               "ampc_checkpoint_save: entry name 'w' is given twice");
  s.entries[1].name = "lr_schedule.step";
  s.entries[0].bytes = -4;
  EXPECT_EQ(s.save(), AMPC_ERROR_INVALID_ARGUMENT);
  s.entries[0].bytes = 12;
  EXPECT_EQ(slurp(s.path), before);
  // Then it is replaced whole.
  ASSERT_EQ(s.save(), AMPC_OK) << ampc_last_error();
  EXPECT_EQ(at<int64_t>(slurp(s.path), 20), 8);
  // A directory is refused; a missing directory's temporary file cannot be
  // created; a full device fails the write with the system's reason.
  EXPECT_EQ(ampc_checkpoint_save(s.dir.c_str(), &s.header, s.entries.data(),
                                 3),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(ampc_last_error()),
            "cannot write checkpoint '" + s.dir + "': Is a directory");
  std::string nodir = s.dir + "/nodir/a.ckpt";
  EXPECT_EQ(ampc_checkpoint_save(nodir.c_str(), &s.header, s.entries.data(),
                                 3),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(ampc_last_error()),
            "cannot create '" + nodir + ".tmp." + std::to_string(getpid()) +
                "' for checkpoint '" + nodir + "': No such file or directory");
  if (access("/dev/full", W_OK) == 0) {
    EXPECT_EQ(ampc_checkpoint_save("/dev/full", &s.header, s.entries.data(), 3),
              AMPC_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(ampc_last_error(),
                 "cannot write checkpoint '/dev/full': No space left on device");
  }
  EXPECT_EQ(ampc_checkpoint_save(nullptr, &s.header, nullptr, 0),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_checkpoint_save(s.path.c_str(), &s.header, s.entries.data(),
                                 -1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(at<int64_t>(slurp(s.path), 20), 8);
}

} // namespace
