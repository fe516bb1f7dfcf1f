//===- Internal.h - Helpers private to the HKT runtime ----------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Inside the library, parsers throw `Failure` with a finished message; each
// public entry point catches at its boundary (`guarded`) and turns it into a
// Status, so the validation code reads straight through.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_INTERNAL_H
#define HKT_RUNTIME_INTERNAL_H

#include "runtime/Status.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace hkt::runtime::detail {

/// A failure with a message meant for the user.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Concatenates the arguments with operator<<.
template <typename... Args> std::string concat(Args &&...args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

/// Throws a Failure whose message is the concatenation of the arguments.
template <typename... Args> [[noreturn]] void fail(Args &&...args) {
  throw Failure(concat(std::forward<Args>(args)...));
}

/// The value of `e`, or its failure thrown (inside `guarded` bodies).
template <typename T> T take(Expected<T> e) {
  if (!e)
    fail(e.message());
  return std::move(e).value();
}
/// Throws `s`'s failure, if any (inside `guarded` bodies).
inline void check(const Status &s) {
  if (!s.ok())
    fail(s.message());
}

/// Runs `body` and turns any exception it throws into a failure; `context`
/// prefixes messages of exceptions that are not our own Failures.
template <typename R, typename F>
R guarded(const std::string &context, F &&body) {
  try {
    return body();
  } catch (const Failure &e) {
    return Status::error(e.what());
  } catch (const std::bad_alloc &) {
    return Status::error(context + ": out of memory");
  } catch (const std::exception &e) {
    return Status::error(context + ": " + e.what());
  } catch (...) {
    return Status::error(context + ": unknown error");
  }
}

/// A file opened for reading whole-or-nothing, with errors thrown as
/// Failures that start with `what` (e.g. "npy file 'x.npy'").
class InputFile {
public:
  /// Opens `path`; refuses anything but a regular file.
  InputFile(const std::string &path, std::string what);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  uint64_t size() const { return fileSize; }
  /// Reads exactly `n` bytes at `offset`; fails naming `part` if the file
  /// ends first.
  void readAt(uint64_t offset, void *dst, size_t n, const char *part) const;

private:
  int fd = -1;
  uint64_t fileSize = 0;
  std::string what;
};

/// A byte buffer with InputFile's interface, so the readers can parse memory
/// (fuzzing, embedded data) with the same code and messages as files.
class InputBytes {
public:
  InputBytes(const void *data, size_t size, std::string what)
      : bytes(static_cast<const char *>(data)), byteCount(size),
        what(std::move(what)) {}

  uint64_t size() const { return byteCount; }
  void readAt(uint64_t offset, void *dst, size_t n, const char *part) const {
    if (offset > byteCount || n > byteCount - offset)
      fail(what, " is truncated: it ends inside the ", part);
    if (n)
      std::memcpy(dst, bytes + offset, n);
  }

private:
  const char *bytes;
  size_t byteCount;
  std::string what;
};

/// Quotes a string for a message: 'name'.
inline std::string inQuotes(const std::string &s) { return "'" + s + "'"; }

} // namespace hkt::runtime::detail

#endif // HKT_RUNTIME_INTERNAL_H
