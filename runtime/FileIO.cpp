//===- FileIO.cpp - File helpers for the HKT runtime ----------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/FileIO.h"
#include "runtime/Internal.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;

Status hkt::runtime::writeFileAtomically(const std::string &path,
                                         const std::vector<ByteSpan> &pieces) {
  static std::atomic<unsigned> counter{0};
  std::string dir = ".", base = path;
  if (size_t slash = path.rfind('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
    base = path.substr(slash + 1);
  }
  if (base.empty())
    return Status::error(concat("cannot write '", path, "': not a file name"));

  // O_EXCL on a fresh name instead of mkstemp: open() applies the umask, so
  // the result gets the permissions any other new file would.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = (dir == "/" ? "" : dir) + "/." + base + ".tmp" +
          std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return Status::error(concat("cannot write '", path,
                                "': cannot create a temporary file in '", dir,
                                "': ", std::strerror(errno)));

  auto failWith = [&](const char *what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::error(
        concat("cannot write '", path, "': ", what, ": ", std::strerror(err)));
  };
  for (const ByteSpan &piece : pieces) {
    const char *p = static_cast<const char *>(piece.first);
    size_t left = piece.second;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        return failWith("write failed", errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  // On disk before the rename: a crash (or power loss) after it then finds
  // the whole new file, before it the old one.
  if (::fsync(fd) != 0)
    return failWith("fsync failed", errno);
  // A test hook (test/Tools/atomic-write.test): wait N seconds with the
  // complete temporary file written, so a test can kill the writer there.
  if (const char *pause = std::getenv("HKT_TEST_PAUSE_BEFORE_RENAME"))
    ::sleep(static_cast<unsigned>(std::atoi(pause)));
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::error(concat("cannot write '", path,
                                "': close failed: ", std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::error(
        concat("cannot write '", path, "': ", std::strerror(err)));
  }
  // The rename itself, durable: fsync the directory (best effort: some file
  // systems refuse to open or sync a directory).
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    (void)::fsync(dirFd);
    ::close(dirFd);
  }
  return Status::success();
}

InputFile::InputFile(const std::string &path, std::string whatArg)
    : what(std::move(whatArg)) {
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("cannot open ", what, ": ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot read ", what, ": ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("cannot read ", what, ": not a regular file");
  }
  fileSize = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd >= 0)
    ::close(fd);
}

void InputFile::readAt(uint64_t offset, void *dst, size_t n,
                       const char *part) const {
  char *p = static_cast<char *>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot read ", what, ": ", std::strerror(errno));
    }
    if (got == 0)
      fail(what, " is truncated: it ends inside the ", part);
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

Expected<std::string> hkt::runtime::readTextFile(const std::string &path) {
  return guarded<Expected<std::string>>(path, [&]() -> Expected<std::string> {
    InputFile file(path, inQuotes(path));
    std::string text(file.size(), '\0');
    file.readAt(0, text.data(), text.size(), "file");
    return text;
  });
}
