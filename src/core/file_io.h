// Whole-file reading and checked, atomic writing for every file the project reads or writes
// (models, artifacts, .npy/.npz, IR3 images). Inputs are untrusted: only regular files are read
// (a directory, FIFO or device such as /dev/zero is refused without blocking), and the size is
// checked against a maximum before anything is allocated. Writes never leave a partial file
// under the final name. Every error is an opv::Error naming the path and, for system-call
// failures, the errno reason (strerror).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace opv {

// The largest file any reader accepts by default (protobuf itself stops at 2 GiB).
constexpr uint64_t kMaxInputFileBytes = uint64_t(4) << 30;

// Opens `path` read-only without blocking on FIFOs, checks that it is a regular file of at
// most `max_bytes`, and returns the open descriptor (O_CLOEXEC, blocking mode restored) and its
// size. `what` names the file's role in messages ("ONNX model", "artifact"). The caller closes.
int open_regular_file(const std::string& path, const char* what, uint64_t max_bytes, uint64_t* size);

// Reads a whole regular file (see open_regular_file).
std::vector<uint8_t> read_file_bytes(const std::string& path, const char* what = "file",
                                     uint64_t max_bytes = kMaxInputFileBytes);
std::string read_file_string(const std::string& path, const char* what = "file",
                             uint64_t max_bytes = kMaxInputFileBytes);

// Writes `size` bytes to `path`. A regular (or new) target is written through a unique temp
// file in the same folder (O_CREAT|O_EXCL|O_NOFOLLOW), fully written, fsync'ed, closed with
// the result checked and renamed over the target; a planted symlink at the final name is
// replaced, never followed. An existing character device or FIFO (/dev/stdout, /dev/full) is
// written in place with every write checked. On failure the temp file is removed.
void write_file_atomic(const std::string& path, const void* data, size_t size, const char* what = "file");
inline void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes, const char* what = "file") {
  write_file_atomic(path, bytes.data(), bytes.size(), what);
}
inline void write_file_atomic(const std::string& path, const std::string& bytes, const char* what = "file") {
  write_file_atomic(path, bytes.data(), bytes.size(), what);
}

}  // namespace opv
