#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace opv {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path, const char* what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("cannot write ", what, " '", path, "': ", errno_text(errno));
    }
    if (w == 0) fail("cannot write ", what, " '", path, "': no progress");
    p += w;
    n -= size_t(w);
  }
}

}  // namespace

int open_regular_file(const std::string& path, const char* what, uint64_t max_bytes, uint64_t* size) {
  Fd f;
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) fail("cannot open ", what, " '", path, "': ", errno_text(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) fail("cannot stat ", what, " '", path, "': ", errno_text(errno));
  OPV_CHECK(S_ISREG(st.st_mode), "cannot read ", what, " '", path, "': it is ", kind_of(st.st_mode),
            ", not a regular file");
  OPV_CHECK(st.st_size >= 0 && uint64_t(st.st_size) <= max_bytes, "cannot read ", what, " '", path, "': ",
            st.st_size, " bytes is more than the limit of ", max_bytes, " bytes");
  int fl = ::fcntl(f.fd, F_GETFL);
  if (fl >= 0) ::fcntl(f.fd, F_SETFL, fl & ~O_NONBLOCK);
  if (size) *size = uint64_t(st.st_size);
  return f.release();
}

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* what, uint64_t max_bytes) {
  uint64_t size = 0;
  Fd f;
  f.fd = open_regular_file(path, what, max_bytes, &size);
  std::vector<uint8_t> out(size_t(size), 0);
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::read(f.fd, out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("cannot read ", what, " '", path, "': ", errno_text(errno));
    }
    if (r == 0) break;  // the file shrank while reading
    got += size_t(r);
  }
  OPV_CHECK(got == out.size(), "cannot read ", what, " '", path, "': it changed size while being read");
  return out;
}

std::string read_file_string(const std::string& path, const char* what, uint64_t max_bytes) {
  std::vector<uint8_t> b = read_file_bytes(path, what, max_bytes);
  return std::string(b.begin(), b.end());
}

void write_file_atomic(const std::string& path, const void* data, size_t size, const char* what) {
  OPV_CHECK(!path.empty(), "cannot write ", what, ": empty path");
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    OPV_CHECK(!S_ISDIR(st.st_mode), "cannot write ", what, " '", path, "': it is a directory");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      // A stream the user named on purpose (/dev/stdout): write in place, every byte checked.
      Fd f;
      f.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
      if (f.fd < 0) fail("cannot open ", what, " '", path, "' for writing: ", errno_text(errno));
      write_all(f.fd, bytes, size, path, what);
      int fd = f.release();
      if (::close(fd) != 0) fail("cannot write ", what, " '", path, "': ", errno_text(errno));
      return;
    }
    OPV_CHECK(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode), "cannot write ", what, " '", path, "': it is ",
              kind_of(st.st_mode));
  }
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path();
  std::string base = target.filename().string();
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  Fd f;
  for (int attempt = 0; attempt < 100 && f.fd < 0; ++attempt) {
    uint64_t salt = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    (uint64_t(::getpid()) << 32) ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%012llx", static_cast<unsigned long long>(salt & 0xFFFFFFFFFFFFull));
    tmp = (dir / ("." + base + suffix)).string();
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f.fd < 0 && errno != EEXIST)
      fail("cannot create a temporary file for ", what, " '", path, "' in '", dir.empty() ? "." : dir.string(),
           "': ", errno_text(errno));
  }
  OPV_CHECK(f.fd >= 0, "cannot create a temporary file for ", what, " '", path, "': too many name collisions");
  try {
    write_all(f.fd, bytes, size, tmp, what);
    if (::fsync(f.fd) != 0) fail("cannot write ", what, " '", tmp, "' (fsync): ", errno_text(errno));
    int fd = f.release();
    if (::close(fd) != 0) fail("cannot write ", what, " '", tmp, "' (close): ", errno_text(errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      fail("cannot rename '", tmp, "' to '", path, "': ", errno_text(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename durable (best effort: some file systems refuse fsync on directories).
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace opv
