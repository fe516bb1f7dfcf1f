//===- Status.h - Error reporting for the HKT runtime -----------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The runtime's public API never throws: a function that can fail returns a
// Status (success or a message) or an Expected<T> (a value or a message).
// Messages are complete sentences for a user, naming the file, entry or
// tensor involved, without a trailing period and without the tool's prefix.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_STATUS_H
#define HKT_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace hkt::runtime {

/// The outcome of an operation that produces no value: success, or a failure
/// carrying a human-readable message.
class [[nodiscard]] Status {
public:
  /// A successful status.
  Status() = default;

  static Status success() { return Status(); }
  /// A failure with the given message (which must not be empty).
  static Status error(std::string message) {
    assert(!message.empty() && "an error needs a message");
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  /// The failure message; empty on success.
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

/// Either a value of type T or a failure Status. Converts to true on success,
/// like std::optional; accessing the value of a failure is a programming
/// error (asserted).
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : val(std::move(value)) {}
  /// Wraps a failure; `error` must not be a success.
  Expected(Status error) : st(std::move(error)) {
    assert(!st.ok() && "Expected built from a successful Status");
  }

  bool ok() const { return val.has_value(); }
  explicit operator bool() const { return ok(); }

  T &value() & {
    assert(ok() && "value() of a failed Expected");
    return *val;
  }
  const T &value() const & {
    assert(ok() && "value() of a failed Expected");
    return *val;
  }
  T &&value() && {
    assert(ok() && "value() of a failed Expected");
    return std::move(*val);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The failure (or a success Status when a value is held).
  const Status &status() const { return st; }
  /// The failure message; empty on success.
  const std::string &message() const { return st.message(); }

private:
  std::optional<T> val;
  Status st;
};

} // namespace hkt::runtime

#endif // HKT_RUNTIME_STATUS_H
