//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "runtime/FileIO.h"
#include "runtime/Internal.h"

#include <cctype>
#include <cstring>
#include <map>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .npy and safetensors code assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

/// A value of the Python literal subset that .npy headers use.
struct PyValue {
  enum Kind { String, Bool, None, Int, Tuple, List, Dict } kind = None;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;                           // Tuple, List
  std::vector<std::pair<std::string, PyValue>> entries; // Dict
};

/// Parses the header, a Python dict literal such as
///   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
/// (numpy reads it with ast.literal_eval; this accepts the subset it writes).
class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &what)
      : text(text), what(what) {}

  PyValue parseTop() {
    skipSpace();
    if (pos >= text.size() || text[pos] != '{')
      fail(what, ": the header is not a dict: ", inQuotes(excerpt()));
    PyValue v = parseValue();
    skipSpace();
    if (pos != text.size())
      error("unexpected text after the dict");
    return v;
  }

private:
  const std::string &text;
  const std::string &what;
  size_t pos = 0;

  std::string excerpt() const {
    std::string s = text.substr(0, 60);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
      s.pop_back();
    return s;
  }
  [[noreturn]] void error(const char *problem) {
    fail(what, ": cannot parse the header (", problem, " at offset ", pos,
         "): ", inQuotes(excerpt()));
  }
  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  /// Parses comma-separated values up to `close`; a trailing comma is allowed.
  template <typename F> void parseSequence(char close, F &&element) {
    while (true) {
      if (consume(close))
        return;
      element();
      if (consume(close))
        return;
      if (!consume(','))
        error("expected ',' or a closing bracket");
    }
  }

  PyValue parseValue() {
    skipSpace();
    if (pos >= text.size())
      error("unexpected end");
    PyValue v;
    char c = text[pos];
    if (c == '{') {
      ++pos;
      v.kind = PyValue::Dict;
      parseSequence('}', [&] {
        PyValue key = parseValue();
        if (key.kind != PyValue::String)
          error("dict key is not a string");
        if (!consume(':'))
          error("expected ':'");
        v.entries.emplace_back(key.str, parseValue());
      });
    } else if (c == '(' || c == '[') {
      ++pos;
      v.kind = c == '(' ? PyValue::Tuple : PyValue::List;
      parseSequence(c == '(' ? ')' : ']',
                    [&] { v.items.push_back(parseValue()); });
    } else if (c == '\'' || c == '"') {
      ++pos;
      v.kind = PyValue::String;
      while (pos < text.size() && text[pos] != c) {
        if (text[pos] == '\\')
          error("escapes in strings are not supported");
        v.str += text[pos++];
      }
      if (pos >= text.size())
        error("unterminated string");
      ++pos;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
               c == '+') {
      v.kind = PyValue::Int;
      bool negative = c == '-';
      if (c == '-' || c == '+')
        ++pos;
      if (pos >= text.size() ||
          !std::isdigit(static_cast<unsigned char>(text[pos])))
        error("expected a digit");
      uint64_t n = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (n > (uint64_t(INT64_MAX) - 9) / 10)
          error("integer too large");
        n = n * 10 + static_cast<uint64_t>(text[pos++] - '0');
      }
      if (pos < text.size() && (text[pos] == 'L' || text[pos] == 'l'))
        ++pos; // Python 2 longs, as old numpy wrote shapes: (3L,)
      v.integer = negative ? -static_cast<int64_t>(n) : static_cast<int64_t>(n);
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        ++pos;
      std::string word = text.substr(start, pos - start);
      if (word == "True" || word == "False") {
        v.kind = PyValue::Bool;
        v.boolean = word == "True";
      } else if (word == "None") {
        v.kind = PyValue::None;
      } else {
        pos = start;
        error("unexpected name");
      }
    } else {
      error("unexpected character");
    }
    return v;
  }
};

uint64_t readLE(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

DType parseDescr(const PyValue &descr, const std::string &what) {
  if (descr.kind != PyValue::String)
    fail(what, ": unsupported dtype: structured (record) arrays are not "
               "supported, only <f4, <f8, <i4 and <i8");
  const std::string &d = descr.str;
  if (d.size() >= 2 && d[0] == '>' && d.substr(1) != "i1" &&
      d.substr(1) != "u1" && d.substr(1) != "b1")
    fail(what, ": big-endian dtype '", d,
         "' is not supported (convert with "
         "arr.astype(arr.dtype.newbyteorder('<')))");
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (d == dtypeNumpyCode(t))
      return t;
  fail(what, ": unsupported dtype '", d, "' (supported: <f4, <f8, <i4, <i8)");
}

} // namespace

namespace {
/// The reader, over an InputFile or an InputBytes.
template <typename Source>
Tensor readNpyFrom(const Source &file, const std::string &what) {
  unsigned char prefix[12];
  if (file.size() < 10)
    fail(what, ": not a .npy file (too short: ", file.size(), " bytes)");
  file.readAt(0, prefix, 10, "preamble");
  if (std::memcmp(prefix, kMagic, kMagicSize) != 0)
    fail(what, ": not a .npy file (bad magic; expected \\x93NUMPY)");
  int major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(what, ": unsupported .npy format version ", major, ".", minor,
         " (supported: 1.0, 2.0, 3.0)");
  uint64_t headerStart = major == 1 ? 10 : 12, headerLen;
  if (major == 1) {
    headerLen = readLE(prefix + 8, 2);
  } else {
    file.readAt(10, prefix + 10, 2, "preamble");
    headerLen = readLE(prefix + 8, 4);
  }
  if (headerLen > kMaxNpyHeaderLength)
    fail(what, ": absurd header length ", headerLen, " (more than ",
         kMaxNpyHeaderLength, " bytes); the file is corrupt");
  if (headerStart + headerLen > file.size())
    fail(what, ": header length ", headerLen, " exceeds the file size (",
         file.size(), " bytes); the file is truncated or corrupt");
  std::string header(headerLen, '\0');
  file.readAt(headerStart, header.data(), headerLen, "header");

  PyValue dict = HeaderParser(header, what).parseTop();
  std::map<std::string, const PyValue *> keys;
  for (auto &[key, value] : dict.entries) {
    if (key != "descr" && key != "fortran_order" && key != "shape")
      fail(what, ": the header has an unexpected key '", key,
           "' (expected descr, fortran_order, shape)");
    keys[key] = &value;
  }
  for (const char *key : {"descr", "fortran_order", "shape"})
    if (!keys.count(key))
      fail(what, ": the header lacks the key '", key, "'");

  DType dtype = parseDescr(*keys["descr"], what);
  const PyValue &fortran = *keys["fortran_order"];
  if (fortran.kind != PyValue::Bool)
    fail(what, ": fortran_order in the header is not True or False");
  if (fortran.boolean)
    fail(what,
         ": Fortran-order arrays (fortran_order: True) are not supported; "
         "save a C-order array (np.ascontiguousarray)");
  const PyValue &shapeValue = *keys["shape"];
  if (shapeValue.kind != PyValue::Tuple)
    fail(what, ": shape in the header is not a tuple");
  std::vector<int64_t> shape;
  for (const PyValue &d : shapeValue.items) {
    if (d.kind != PyValue::Int || d.integer < 0)
      fail(what,
           ": shape in the header is not a tuple of non-negative integers");
    shape.push_back(d.integer);
  }

  uint64_t dataStart = headerStart + headerLen;
  uint64_t available = file.size() - dataStart;
  std::optional<int64_t> numel = checkedNumElements(shape, dtypeSize(dtype));
  if (!numel)
    fail(what, ": shape ", formatShape(shape), " is too large");
  uint64_t needed = static_cast<uint64_t>(*numel) * dtypeSize(dtype);
  // Compare sizes before allocating, so a corrupt shape cannot ask for
  // terabytes.
  if (available < needed)
    fail(what, ": data is truncated: shape ", formatShape(shape), " of ",
         dtypeNumpyCode(dtype), " needs ", needed, " bytes but the file holds ",
         available);
  if (available > needed)
    fail(what, ": ", available - needed,
         " trailing bytes after the data (shape ", formatShape(shape), " of ",
         dtypeNumpyCode(dtype), " needs ", needed, " bytes)");
  Expected<Tensor> tensor = Tensor::allocate(dtype, shape);
  if (!tensor)
    fail(what, ": ", tensor.message());
  file.readAt(dataStart, tensor->data(), needed, "data");
  return std::move(tensor).value();
}
} // namespace

Expected<Tensor> hkt::runtime::readNpy(const std::string &path) {
  std::string what = "npy file " + inQuotes(path);
  return guarded<Expected<Tensor>>(what, [&]() -> Expected<Tensor> {
    InputFile file(path, what);
    return readNpyFrom(file, what);
  });
}

Expected<Tensor> hkt::runtime::parseNpy(const void *data, size_t size,
                                        const std::string &name) {
  std::string what = "npy file " + inQuotes(name);
  return guarded<Expected<Tensor>>(what, [&]() -> Expected<Tensor> {
    return readNpyFrom(InputBytes(data, size, what), what);
  });
}

Status hkt::runtime::writeNpy(const std::string &path, const Tensor &tensor) {
  std::string header = "{'descr': '";
  header += dtypeNumpyCode(tensor.dtype());
  header += "', 'fortran_order': False, 'shape': (";
  for (int64_t d : tensor.shape())
    header += std::to_string(d) + ", ";
  if (tensor.rank() >= 1)
    header.resize(header.size() - 1); // "(3,)" and "(2, 3)", as numpy writes
  if (tensor.rank() > 1)
    header.pop_back();
  header += "), }";

  // Pad with spaces and a final newline so the data starts 64-byte aligned.
  auto padded = [&](size_t prefixSize) {
    size_t total = prefixSize + header.size() + 1;
    size_t pad =
        (kTensorAlignment - total % kTensorAlignment) % kTensorAlignment;
    return header + std::string(pad, ' ') + "\n";
  };
  std::string prefix(kMagic, kMagicSize);
  std::string full = padded(10);
  if (full.size() <= 0xffff) {
    prefix += std::string("\x01\x00", 2);
    prefix += static_cast<char>(full.size() & 0xff);
    prefix += static_cast<char>(full.size() >> 8);
  } else {
    full = padded(12);
    prefix += std::string("\x02\x00", 2);
    for (int i = 0; i < 4; ++i)
      prefix += static_cast<char>((full.size() >> (8 * i)) & 0xff);
  }
  return writeFileAtomically(path, {{prefix.data(), prefix.size()},
                                    {full.data(), full.size()},
                                    {tensor.data(), tensor.byteSize()}});
}
