//===- SafeTensors.cpp - safetensors files --------------------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/SafeTensors.h"
#include "runtime/FileIO.h"
#include "runtime/Internal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;
using json = nlohmann::ordered_json;

namespace {

/// Dtypes of the safetensors format that this runtime cannot hold; named
/// separately so the message says "unsupported" rather than "unknown".
const std::set<std::string> kKnownUnsupported = {
    "BOOL",    "U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4",  "F6_E2M3",
    "F6_E3M2", "I16", "U16", "F16",     "BF16",    "U32",     "U64", "C64"};

DType parseDType(const json &value, const std::string &what) {
  if (!value.is_string())
    fail(what, ": 'dtype' is not a string");
  std::string name = value.get<std::string>();
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (name == dtypeSafeTensorsName(t))
      return t;
  if (kKnownUnsupported.count(name))
    fail(what, ": unsupported dtype '", name,
         "' (supported: F32, F64, I32, I64)");
  fail(what, ": unknown dtype '", name, "' (supported: F32, F64, I32, I64)");
}

/// Reads a JSON array of non-negative integers.
std::vector<uint64_t> parseUInts(const json &value, const char *field,
                                 const std::string &what) {
  if (!value.is_array())
    fail(what, ": '", field, "' is not an array");
  std::vector<uint64_t> out;
  for (const json &v : value) {
    if (!v.is_number_integer() ||
        (v.is_number_integer() && !v.is_number_unsigned() &&
         v.get<int64_t>() < 0))
      fail(what, ": '", field,
           "' holds something other than non-negative integers");
    out.push_back(v.get<uint64_t>());
  }
  return out;
}

struct EntryInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

} // namespace

const Tensor *SafeTensorsFile::find(const std::string &name) const {
  for (const NamedTensor &t : tensors)
    if (t.name == name)
      return &t.tensor;
  return nullptr;
}

namespace {
/// One tensor's header entry, checked against the data buffer's size.
EntryInfo parseEntry(const std::string &name, const json &entry,
                     const std::string &what, uint64_t dataSize) {
  std::string tw = what + ": tensor " + inQuotes(name);
  if (!entry.is_object())
    fail(tw, ": the entry is not an object");
  for (const char *field : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(field))
      fail(tw, ": the entry lacks '", field, "'");
  EntryInfo info;
  info.name = name;
  info.dtype = parseDType(entry["dtype"], tw);
  for (uint64_t d : parseUInts(entry["shape"], "shape", tw)) {
    if (d > uint64_t(INT64_MAX))
      fail(tw, ": dimension ", d, " is too large");
    info.shape.push_back(static_cast<int64_t>(d));
  }
  std::vector<uint64_t> offsets =
      parseUInts(entry["data_offsets"], "data_offsets", tw);
  if (offsets.size() != 2)
    fail(tw,
         ": 'data_offsets' does not hold exactly two integers [begin, end]");
  info.begin = offsets[0];
  info.end = offsets[1];
  if (info.begin > info.end)
    fail(tw, ": data_offsets [", info.begin, ", ", info.end,
         "] has begin after end");
  if (info.end > dataSize)
    fail(tw, ": data_offsets [", info.begin, ", ", info.end,
         "] run past the end of the data buffer (", dataSize, " bytes)");
  std::optional<int64_t> numel =
      checkedNumElements(info.shape, dtypeSize(info.dtype));
  uint64_t bytes = numel ? uint64_t(*numel) * dtypeSize(info.dtype) : 0;
  if (!numel || bytes != info.end - info.begin)
    fail(tw, ": data_offsets [", info.begin, ", ", info.end, "] span ",
         info.end - info.begin, " bytes but ", dtypeSafeTensorsName(info.dtype),
         " ", formatShape(info.shape), " needs ",
         numel ? std::to_string(bytes) : std::string("too many"));
  return info;
}

/// The reader, over an InputFile or an InputBytes.
template <typename Source>
SafeTensorsFile readSafeTensorsFrom(const Source &file,
                                    const std::string &what) {
  if (file.size() < 8)
    fail(what, ": too short to be a safetensors file (", file.size(),
         " bytes)");
  unsigned char lenBytes[8];
  file.readAt(0, lenBytes, 8, "header length");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > kMaxSafeTensorsHeaderLength)
    fail(what, ": header length ", headerLen, " is larger than the ",
         kMaxSafeTensorsHeaderLength,
         "-byte limit; the file is corrupt or not "
         "a safetensors file");
  if (headerLen > file.size() - 8)
    fail(what, ": header length ", headerLen, " exceeds the file size (",
         file.size(),
         " bytes); the file is truncated or not a safetensors file");
  std::string text(headerLen, '\0');
  file.readAt(8, text.data(), headerLen, "header");

  // nlohmann keeps the last of duplicated keys silently; catch them while
  // parsing instead.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t onEvent = [&](int depth, json::parse_event_t event,
                                        json &parsed) {
    if (event == json::parse_event_t::key && depth == 1) {
      std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second && duplicate.empty())
        duplicate = key;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, onEvent);
  } catch (const json::exception &e) {
    fail(what, ": the header is not valid JSON: ", e.what());
  }
  if (!header.is_object())
    fail(what, ": the header is not a JSON object");
  if (!duplicate.empty())
    fail(what, ": tensor '", duplicate, "' appears twice in the header");

  SafeTensorsFile result;
  std::vector<EntryInfo> entries;
  uint64_t dataSize = file.size() - 8 - headerLen;
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        fail(what, ": '__metadata__' is not an object");
      for (auto &[key, value] : entry.items()) {
        if (!value.is_string())
          fail(what, ": '__metadata__' entry '", key, "' is not a string");
        result.metadata[key] = value.template get<std::string>();
      }
      continue;
    }
    entries.push_back(parseEntry(name, entry, what, dataSize));
  }

  std::stable_sort(
      entries.begin(), entries.end(),
      [](const EntryInfo &a, const EntryInfo &b) { return a.begin < b.begin; });
  // Empty tensors occupy no bytes and so overlap nothing.
  const EntryInfo *previous = nullptr;
  for (const EntryInfo &e : entries) {
    if (e.begin == e.end)
      continue;
    if (previous && e.begin < previous->end)
      fail(what, ": tensors '", previous->name, "' [", previous->begin, ", ",
           previous->end, "] and '", e.name, "' [", e.begin, ", ", e.end,
           "] overlap");
    previous = &e;
  }

  for (const EntryInfo &e : entries) {
    Expected<Tensor> t = Tensor::allocate(e.dtype, e.shape);
    if (!t)
      fail(what, ": tensor '", e.name, "': ", t.message());
    file.readAt(8 + headerLen + e.begin, t->data(), e.end - e.begin, "data");
    result.tensors.push_back({e.name, std::move(t).value()});
  }
  return result;
}
} // namespace

Expected<SafeTensorsFile>
hkt::runtime::readSafeTensors(const std::string &path) {
  std::string what = "safetensors file " + inQuotes(path);
  return guarded<Expected<SafeTensorsFile>>(
      what, [&]() -> Expected<SafeTensorsFile> {
        InputFile file(path, what);
        return readSafeTensorsFrom(file, what);
      });
}

Expected<SafeTensorsFile>
hkt::runtime::parseSafeTensors(const void *data, size_t size,
                               const std::string &name) {
  std::string what = "safetensors file " + inQuotes(name);
  return guarded<Expected<SafeTensorsFile>>(
      what, [&]() -> Expected<SafeTensorsFile> {
        return readSafeTensorsFrom(InputBytes(data, size, what), what);
      });
}

Status hkt::runtime::writeSafeTensors(
    const std::string &path,
    const std::vector<std::pair<std::string, const Tensor *>> &tensors,
    const std::map<std::string, std::string> &metadata) {
  return guarded<Status>("safetensors file " + inQuotes(path), [&]() -> Status {
    json header = json::object();
    if (!metadata.empty())
      header["__metadata__"] = metadata;
    uint64_t offset = 0;
    std::vector<ByteSpan> pieces(2);
    for (const auto &[name, tensor] : tensors) {
      if (name == "__metadata__" || header.contains(name))
        return Status::error(concat("cannot write safetensors file ",
                                    inQuotes(path), ": tensor name '", name,
                                    "' is reserved or used twice"));
      header[name] = {{"dtype", dtypeSafeTensorsName(tensor->dtype())},
                      {"shape", tensor->shape()},
                      {"data_offsets", {offset, offset + tensor->byteSize()}}};
      offset += tensor->byteSize();
      pieces.push_back({tensor->data(), tensor->byteSize()});
    }
    std::string text = header.dump();
    // Pad with spaces so the data buffer starts 8-byte aligned, as the
    // reference implementation does.
    text.append((8 - text.size() % 8) % 8, ' ');
    unsigned char lenBytes[8];
    for (int i = 0; i < 8; ++i)
      lenBytes[i] =
          static_cast<unsigned char>((uint64_t(text.size()) >> (8 * i)) & 0xff);
    pieces[0] = {lenBytes, 8};
    pieces[1] = {text.data(), text.size()};
    return writeFileAtomically(path, pieces);
  });
}
