//===- ConfigJson.cpp - reading layer and model config values -------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/ConfigJson.h"

using namespace mlir::hkt;

const char *mlir::hkt::jsonKindName(const llvm::json::Value &v) {
  switch (v.kind()) {
  case llvm::json::Value::String:
    return "string";
  case llvm::json::Value::Boolean:
    return "boolean";
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Array:
    return "array";
  case llvm::json::Value::Object:
    return "object";
  default:
    return "number";
  }
}

llvm::Expected<int64_t>
mlir::hkt::readPositiveInteger(const llvm::json::Value &v, const char *what,
                               const char *key) {
  // llvm::json keeps integers up to uint64 exact.
  std::optional<int64_t> i = v.getAsInteger();
  if (!i) {
    if (v.getAsUINT64())
      return llvm::createStringError(
          "%s key '%s' must be an integer >= 1 (got %llu, beyond int64; see "
          "docs/limits.md)",
          what, key, static_cast<unsigned long long>(*v.getAsUINT64()));
    if (std::optional<double> d = v.getAsNumber())
      return llvm::createStringError(
          "%s key '%s' must be an integer >= 1 (got %g)", what, key, *d);
    return llvm::createStringError(
        "%s key '%s' must be an integer >= 1 (got a JSON %s)", what, key,
        jsonKindName(v));
  }
  if (*i < 1)
    return llvm::createStringError(
        "%s key '%s' must be an integer >= 1 (got %lld)", what, key,
        static_cast<long long>(*i));
  return *i;
}

llvm::Expected<bool> mlir::hkt::readBoolean(const llvm::json::Value &v,
                                            const char *what, const char *key) {
  if (std::optional<bool> b = v.getAsBoolean())
    return *b;
  return llvm::createStringError("%s key '%s' must be true or false (got a "
                                 "JSON %s)",
                                 what, key, jsonKindName(v));
}
