//===- ConfigJson.h - reading layer and model config values -----*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The value checks that layer configs and model configs share, with the same
// messages: an integer >= 1 that is neither a fraction, nor beyond int64, nor
// another JSON kind; a boolean.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_FRONTEND_CONFIGJSON_H
#define HKT_COMPILER_FRONTEND_CONFIGJSON_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>

namespace mlir::hkt {

/// "string", "boolean", "null", "array", "object" or "number".
const char *jsonKindName(const llvm::json::Value &value);

/// `value` of config key `key` as an integer >= 1; `what` names the config
/// ("layer config") in the message. Never wraps: values beyond int64 are
/// refused as such.
llvm::Expected<int64_t> readPositiveInteger(const llvm::json::Value &value,
                                            const char *what, const char *key);

/// `value` of config key `key` as a boolean.
llvm::Expected<bool> readBoolean(const llvm::json::Value &value,
                                 const char *what, const char *key);

} // namespace mlir::hkt

#endif // HKT_COMPILER_FRONTEND_CONFIGJSON_H
