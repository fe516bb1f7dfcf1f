//===- Tasks.cpp - The training tasks: ListOps, Fashion-MNIST, byte text --===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Tasks.h"
#include "runtime/Internal.h"
#include "runtime/Random.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <sys/stat.h>

using namespace hkt::runtime;
using namespace hkt::train;
using namespace hkt::runtime::detail;

const char *hkt::train::splitName(Split split) {
  switch (split) {
  case Split::Train:
    return "train";
  case Split::Valid:
    return "valid";
  case Split::Test:
    return "test";
  }
  return "?";
}

namespace {

int splitIndex(Split split) { return static_cast<int>(split); }

/// Fails unless `index` is an example of a split of `size` examples.
void checkIndex(const std::string &task, Split split, int64_t index,
                int64_t size) {
  if (index < 0 || index >= size)
    fail(task, ": example ", index, " of the ", splitName(split),
         " split is out of range (the split has ", size, " examples)");
}

/// Parses a whole string as a non-negative decimal integer (digits only, so
/// "+1", " 1" and "1e3" are refused); nullopt if it is not one or overflows.
std::optional<int64_t> parseDecimal(const std::string &s) {
  if (s.empty())
    return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    if (v > (INT64_MAX - (c - '0')) / 10)
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

//===----------------------------------------------------------------------===//
// ListOps
//===----------------------------------------------------------------------===//

// Token ids (SPEC "Tasks"): 0 padding, 1..10 the digits, then these.
constexpr int32_t kDigit0 = 1;
constexpr int32_t kMax = 11, kMin = 12, kMed = 13, kSm = 14, kClose = 15;
constexpr int32_t kListOpsVocab = 16;

const char *opName(int32_t token) {
  switch (token) {
  case kMax:
    return "[MAX";
  case kMin:
    return "[MIN";
  case kMed:
    return "[MED";
  case kSm:
    return "[SM";
  }
  return "?";
}

using Rng = SplitMix64;

/// The seed of one example; the mixing between the parts makes neighbouring
/// indices, splits and data seeds give unrelated streams.
uint64_t exampleSeed(uint64_t dataSeed, Split split, int64_t index) {
  uint64_t h = mix64(dataSeed ^ 0x6a09e667f3bcc908ULL);
  h = mix64(h ^ (static_cast<uint64_t>(splitIndex(split)) + 1) *
                    0xd1b54a32d192ed03ULL);
  return mix64(h ^ static_cast<uint64_t>(index));
}

struct ListOpsOptions {
  int64_t sizes[3] = {20000, 2000, 2000};
  int64_t depth = 10;
  int64_t args = 10;
};

ListOpsOptions parseListOpsOptions(const std::string &spec,
                                   const std::string &list) {
  ListOpsOptions o;
  struct Key {
    const char *name;
    int64_t *value;
    int64_t min;
    bool seen;
  } keys[] = {{"train", &o.sizes[0], 0, false},
              {"valid", &o.sizes[1], 0, false},
              {"test", &o.sizes[2], 0, false},
              {"depth", &o.depth, 1, false},
              {"args", &o.args, 2, false}};
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      fail("task ", inQuotes(spec), ": ",
           item.empty() ? std::string("an empty option")
                        : "option " + inQuotes(item) + " is not KEY=VALUE",
           " (options: train=N,valid=N,test=N,depth=D,args=A)");
    std::string name = item.substr(0, eq), text = item.substr(eq + 1);
    Key *key = nullptr;
    for (Key &k : keys)
      if (name == k.name)
        key = &k;
    if (!key)
      fail("task ", inQuotes(spec), ": unknown option ", inQuotes(name),
           " (options: train, valid, test, depth, args)");
    if (key->seen)
      fail("task ", inQuotes(spec), ": option ", inQuotes(name),
           " is given twice");
    key->seen = true;
    std::optional<int64_t> v = parseDecimal(text);
    if (!v || *v < key->min || *v > INT32_MAX)
      fail("task ", inQuotes(spec), ": option ", inQuotes(name), " is ",
           inQuotes(text), ", expected an integer from ", key->min, " to ",
           INT32_MAX);
    *key->value = *v;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return o;
}

/// The generator. Example i of a split is drawn from a stream seeded by
/// (data seed, split, i), so any example can be made on demand, in any
/// order, and nothing is stored.
///
/// The trees follow the Long Range Arena ListOps generator: below the
/// depth bound, a node is an operator with probability 1/4 (else a digit),
/// with 2..args arguments; LRA then keeps trees whose length is in
/// [500, 2000]. We do the same for [max(4, maxLen/4), maxLen] by rejection,
/// abandoning a tree as soon as it cannot fit. The top level is always an
/// operator (LRA's length window implies it) unless maxLen < 4, where only a
/// digit fits.
class ListOpsTask : public Task {
public:
  ListOpsTask(std::string spec, ListOpsOptions options, int64_t maxLen,
              uint64_t dataSeed)
      : spec(std::move(spec)), options(options), maxLen(maxLen),
        dataSeed(dataSeed) {}

  std::string name() const override { return spec; }
  int64_t size(Split split) const override {
    return options.sizes[splitIndex(split)];
  }
  int64_t classes() const override { return 10; }
  int64_t vocab() const override { return kListOpsVocab; }

  Expected<Example> get(Split split, int64_t index) const override {
    return guarded<Expected<Example>>(
        "task " + inQuotes(spec), [&]() -> Expected<Example> {
          checkIndex("task " + inQuotes(spec), split, index, size(split));
          Example ex;
          ex.tokens = generate(split, index);
          Expected<int32_t> value = evaluateListOps(ex.tokens);
          if (!value) // A generator bug, not a user error; say so.
            fail("task ", inQuotes(spec), ": internal error: generated ",
                 splitName(split), " example ", index,
                 " is malformed: ", value.message());
          ex.label = *value;
          return ex;
        });
  }

private:
  // Enough that a miss is practically impossible for the default options
  // (each try is accepted with probability >= ~6% at any maxLen); a miss
  // falls back to the longest tree that fit, or to a budgeted tree.
  static constexpr int kAttempts = 200;

  std::string spec;
  ListOpsOptions options;
  int64_t maxLen;
  uint64_t dataSeed;

  std::vector<int32_t> generate(Split split, int64_t index) const {
    Rng rng(exampleSeed(dataSeed, split, index));
    if (maxLen < 4)
      return {kDigit0 + static_cast<int32_t>(rng.below(10))};
    size_t minLen = static_cast<size_t>(std::max<int64_t>(4, maxLen / 4));
    std::vector<int32_t> tokens, best;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      if (!sample(rng, /*budgeted=*/false, tokens))
        continue;
      if (tokens.size() >= minLen)
        return tokens;
      if (tokens.size() > best.size())
        best.swap(tokens);
    }
    if (!best.empty())
      return best;
    sample(rng, /*budgeted=*/true, tokens);
    return tokens;
  }

  /// Draws one tree into `out`, iteratively (no recursion, whatever the
  /// depth). Unbudgeted: returns false as soon as the tree cannot fit in
  /// maxLen. Budgeted: always fits, by turning a node into a digit, or
  /// giving an operator fewer arguments, when the tokens left demand it.
  bool sample(Rng &rng, bool budgeted, std::vector<int32_t> &out) const {
    out.clear();
    const int64_t len = maxLen;
    std::vector<int64_t> left; // arguments still to draw, per open operator
    int64_t pending = 0;       // the sum of `left`
    auto openOperator = [&](int64_t maxArgs) {
      out.push_back(kMax + static_cast<int32_t>(rng.below(4)));
      int64_t k = rng.between(2, maxArgs);
      left.push_back(k);
      pending += k;
    };
    openOperator(budgeted ? std::min(options.args, len - 2) : options.args);
    while (!left.empty()) {
      if (left.back() == 0) {
        out.push_back(kClose);
        left.pop_back();
        continue;
      }
      --left.back();
      --pending;
      // Tokens this argument may use: all but one ']' per open operator and
      // one token for every argument still to come.
      int64_t room = len - static_cast<int64_t>(out.size()) -
                     static_cast<int64_t>(left.size()) - pending;
      bool isOperator = static_cast<int64_t>(left.size()) < options.depth &&
                        rng.below(4) == 0;
      if (budgeted && room < 4)
        isOperator = false;
      if (isOperator)
        openOperator(budgeted ? std::min(options.args, room - 2)
                              : options.args);
      else
        out.push_back(kDigit0 + static_cast<int32_t>(rng.below(10)));
      // The tree will need at least this many tokens.
      if (!budgeted &&
          static_cast<int64_t>(out.size() + left.size()) + pending > len)
        return false;
    }
    return true;
  }
};

//===----------------------------------------------------------------------===//
// Fashion-MNIST
//===----------------------------------------------------------------------===//

constexpr const char *kDefaultFmnistDir = "/usr/share/datasets/fashion-mnist";
constexpr int64_t kImageSide = 28;
constexpr int64_t kImagePixels = kImageSide * kImageSide;

/// A gzip file read sequentially with zlib, with errors naming the file.
class GzInput {
public:
  explicit GzInput(const std::string &path) : what(inQuotes(path)) {
    // gzopen would open a directory and fail only on reading; check first.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      int err = errno;
      fail("cannot open ", what, ": ", std::strerror(err),
           err == ENOENT ? "; install Debian's dataset-fashion-mnist or give "
                           "fmnist:DIR"
                         : "");
    }
    if (!S_ISREG(st.st_mode))
      fail("cannot read ", what, ": not a regular file");
    file = gzopen(path.c_str(), "rb");
    if (!file)
      fail("cannot open ", what, ": ",
           errno ? std::strerror(errno) : "out of memory");
  }
  ~GzInput() {
    if (file)
      gzclose(file);
  }
  GzInput(const GzInput &) = delete;
  GzInput &operator=(const GzInput &) = delete;

  const std::string &name() const { return what; }

  /// Reads exactly `n` bytes; fails naming `part` if the data ends first.
  void read(void *dst, size_t n, const char *part) {
    size_t got = readSome(dst, n);
    if (got < n)
      fail(what, " is truncated: it ends inside the ", part, " (", got, " of ",
           n, " bytes)");
  }

  /// Appends exactly `n` bytes to `out`, growing it as the data arrives so
  /// that a header claiming a huge count fails as truncated rather than
  /// allocating that much first.
  void readInto(std::vector<uint8_t> &out, uint64_t n, const char *part) {
    constexpr size_t kChunk = size_t(1) << 20;
    uint64_t done = 0;
    while (done < n) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, n - done));
      size_t old = out.size();
      out.resize(old + want);
      size_t got = readSome(out.data() + old, want);
      done += got;
      if (got < want)
        fail(what, " is truncated: it ends inside the ", part, " (", done,
             " of ", n, " bytes)");
    }
  }

  /// Fails if anything follows the data (a sign of a wrong or damaged file).
  void expectEnd(const char *after) {
    char c;
    if (readSome(&c, 1) != 0)
      fail(what, " is corrupt: it has data after the ", after);
  }

private:
  std::string what;
  gzFile file = nullptr;

  size_t readSome(void *dst, size_t n) {
    char *p = static_cast<char *>(dst);
    size_t total = 0;
    while (total < n) {
      unsigned want =
          static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
      int got = gzread(file, p + total, want);
      if (got < 0) {
        int errnum = Z_OK;
        const char *msg = gzerror(file, &errnum);
        if (errnum == Z_ERRNO)
          fail("cannot read ", what, ": ", std::strerror(errno));
        fail(what, " is corrupt: ", msg && *msg ? msg : "gzip error");
      }
      if (got == 0)
        break;
      total += static_cast<size_t>(got);
    }
    return total;
  }
};

uint32_t bigEndian32(const uint8_t *p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
         (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

/// An IDX image file (magic 2051, count, rows, cols, then the pixels).
std::vector<uint8_t> readIdxImages(const std::string &path, uint32_t &count) {
  GzInput in(path);
  uint8_t header[16];
  in.read(header, sizeof header, "IDX header");
  uint32_t magic = bigEndian32(header);
  if (magic != 2051)
    fail(in.name(), " is not an IDX image file: its magic number is ", magic,
         ", expected 2051");
  count = bigEndian32(header + 4);
  uint32_t rows = bigEndian32(header + 8), cols = bigEndian32(header + 12);
  if (rows != kImageSide || cols != kImageSide)
    fail(in.name(), ": the images are ", rows, "x", cols, ", expected ",
         kImageSide, "x", kImageSide);
  if (count == 0)
    fail(in.name(), " holds no images");
  std::vector<uint8_t> pixels;
  in.readInto(pixels, uint64_t(count) * kImagePixels, "pixels");
  in.expectEnd("images");
  return pixels;
}

/// An IDX label file (magic 2049, count, then the labels).
std::vector<uint8_t> readIdxLabels(const std::string &path,
                                   uint32_t expectedCount,
                                   const std::string &imagesPath) {
  GzInput in(path);
  uint8_t header[8];
  in.read(header, sizeof header, "IDX header");
  uint32_t magic = bigEndian32(header);
  if (magic != 2049)
    fail(in.name(), " is not an IDX label file: its magic number is ", magic,
         ", expected 2049");
  uint32_t count = bigEndian32(header + 4);
  if (count != expectedCount)
    fail(in.name(), " has ", count, " labels but ", inQuotes(imagesPath),
         " has ", expectedCount, " images");
  std::vector<uint8_t> labels;
  in.readInto(labels, count, "labels");
  in.expectEnd("labels");
  for (uint32_t i = 0; i < count; ++i)
    if (labels[i] >= 10)
      fail(in.name(), ": the label of image ", i, " is ",
           static_cast<int>(labels[i]), ", outside 0..9");
  return labels;
}

/// Sequential Fashion-MNIST. The pixels stay bytes (47 MB for the 70000
/// images); get() widens one image to tokens.
class FmnistTask : public Task {
public:
  FmnistTask(std::string spec, const std::string &dir) : spec(std::move(spec)) {
    uint32_t trainCount = 0, testCount = 0;
    std::string trainImages = dir + "/train-images-idx3-ubyte.gz";
    std::string testImages = dir + "/t10k-images-idx3-ubyte.gz";
    trainPixels = readIdxImages(trainImages, trainCount);
    trainLabels = readIdxLabels(dir + "/train-labels-idx1-ubyte.gz", trainCount,
                                trainImages);
    testPixels = readIdxImages(testImages, testCount);
    testLabels = readIdxLabels(dir + "/t10k-labels-idx1-ubyte.gz", testCount,
                               testImages);
    // The usual 55000 / 5000 split of the 60000 training images; the same
    // proportion for other (test) directories.
    validCount = trainCount / 12;
    trainOnlyCount = trainCount - validCount;
  }

  std::string name() const override { return spec; }
  int64_t size(Split split) const override {
    switch (split) {
    case Split::Train:
      return trainOnlyCount;
    case Split::Valid:
      return validCount;
    case Split::Test:
      return static_cast<int64_t>(testLabels.size());
    }
    return 0;
  }
  int64_t classes() const override { return 10; }
  int64_t vocab() const override { return 257; }

  Expected<Example> get(Split split, int64_t index) const override {
    return guarded<Expected<Example>>(
        "task " + inQuotes(spec), [&]() -> Expected<Example> {
          checkIndex("task " + inQuotes(spec), split, index, size(split));
          const std::vector<uint8_t> &pixels =
              split == Split::Test ? testPixels : trainPixels;
          const std::vector<uint8_t> &labels =
              split == Split::Test ? testLabels : trainLabels;
          int64_t image =
              split == Split::Valid ? trainOnlyCount + index : index;
          Example ex;
          ex.tokens.resize(kImagePixels);
          const uint8_t *p = pixels.data() + image * kImagePixels;
          for (int64_t i = 0; i < kImagePixels; ++i)
            ex.tokens[i] = int32_t(p[i]) + 1;
          ex.label = labels[image];
          return ex;
        });
  }

private:
  std::string spec;
  std::vector<uint8_t> trainPixels, trainLabels, testPixels, testLabels;
  int64_t trainOnlyCount = 0, validCount = 0;
};

//===----------------------------------------------------------------------===//
// Labelled text
//===----------------------------------------------------------------------===//

/// The largest label a text file may use, so that a typo such as a number
/// in the label column cannot ask for a model with millions of classes.
constexpr int64_t kMaxTextLabel = 65535;

/// Byte-level text classification from `LABEL<TAB>TEXT` lines. The file's
/// bytes are kept; an example is a range of them.
class TextTask : public Task {
public:
  TextTask(std::string spec, const std::string &path, int64_t maxLen)
      : spec(std::move(spec)) {
    std::string what = "text file " + inQuotes(path);
    {
      InputFile file(path, what);
      data.resize(file.size());
      file.readAt(0, data.data(), data.size(), "file");
    }
    // The lines, without their '\n'; a final line without one counts too.
    std::vector<std::pair<size_t, size_t>> lines; // begin, end
    for (size_t begin = 0; begin < data.size();) {
      size_t nl = data.find('\n', begin);
      size_t end = nl == std::string::npos ? data.size() : nl;
      lines.emplace_back(begin, end);
      begin = nl == std::string::npos ? data.size() : nl + 1;
    }
    auto isBlank = [&](const std::pair<size_t, size_t> &l) {
      return l.second == l.first ||
             (l.second == l.first + 1 && data[l.first] == '\r');
    };
    // Blank lines at the very end are an editor's habit, not examples.
    while (!lines.empty() && isBlank(lines.back()))
      lines.pop_back();
    if (lines.empty())
      fail(what, " holds no examples (it is empty)");

    int64_t maxLabel = 0;
    for (size_t n = 0; n < lines.size(); ++n) {
      size_t begin = lines[n].first, end = lines[n].second;
      std::string where = concat(what, " line ", n + 1);
      if (end > begin && data[end - 1] == '\r')
        --end;
      if (end == begin)
        fail(where, ": the line is blank (expected LABEL<TAB>TEXT)");
      size_t tab = data.find('\t', begin);
      if (tab == std::string::npos || tab >= end)
        fail(where, ": no tab (expected LABEL<TAB>TEXT)");
      std::string labelText = data.substr(begin, tab - begin);
      std::optional<int64_t> label = parseDecimal(labelText);
      if (!label)
        fail(where, ": the label ", inQuotes(labelText),
             " is not a non-negative decimal integer");
      if (*label > kMaxTextLabel)
        fail(where, ": the label ", *label, " is too large (at most ",
             kMaxTextLabel, ")");
      size_t textBegin = tab + 1;
      int64_t bytes = static_cast<int64_t>(end - textBegin);
      if (bytes == 0)
        fail(where, ": the text is empty");
      if (bytes > maxLen)
        fail(where, ": the text is ", bytes, " bytes, longer than max_len ",
             maxLen);
      maxLabel = std::max(maxLabel, *label);
      Split split = n % 10 == 9   ? Split::Test
                    : n % 10 == 8 ? Split::Valid
                                  : Split::Train;
      examples[splitIndex(split)].push_back({textBegin,
                                             static_cast<size_t>(bytes),
                                             static_cast<int32_t>(*label)});
    }
    classCount = maxLabel + 1;
  }

  std::string name() const override { return spec; }
  int64_t size(Split split) const override {
    return static_cast<int64_t>(examples[splitIndex(split)].size());
  }
  int64_t classes() const override { return classCount; }
  int64_t vocab() const override { return 257; }

  Expected<Example> get(Split split, int64_t index) const override {
    return guarded<Expected<Example>>(
        "task " + inQuotes(spec), [&]() -> Expected<Example> {
          checkIndex("task " + inQuotes(spec), split, index, size(split));
          const Range &r = examples[splitIndex(split)][index];
          Example ex;
          ex.tokens.resize(r.size);
          for (size_t i = 0; i < r.size; ++i)
            ex.tokens[i] =
                int32_t(static_cast<unsigned char>(data[r.begin + i])) + 1;
          ex.label = r.label;
          return ex;
        });
  }

private:
  struct Range {
    size_t begin, size;
    int32_t label;
  };
  std::string spec;
  std::string data;
  std::vector<Range> examples[3];
  int64_t classCount = 1;
};

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

Expected<int32_t>
hkt::train::evaluateListOps(const std::vector<int32_t> &tokens) {
  return guarded<Expected<int32_t>>(
      "ListOps expression", [&]() -> Expected<int32_t> {
        // An explicit stack rather than recursion: the input may nest as
        // deep as it is long.
        struct Open {
          int32_t op;
          size_t pos;
          std::vector<int32_t> values;
        };
        std::vector<Open> stack;
        std::optional<int32_t> result;
        auto deliver = [&](int32_t v) {
          if (stack.empty())
            result = v;
          else
            stack.back().values.push_back(v);
        };
        for (size_t i = 0; i < tokens.size(); ++i) {
          int32_t t = tokens[i];
          if (result)
            fail("ListOps expression: unexpected tokens after the end of the "
                 "expression, from position ",
                 i);
          if (t >= kDigit0 && t < kDigit0 + 10) {
            deliver(t - kDigit0);
          } else if (t >= kMax && t <= kSm) {
            stack.push_back({t, i, {}});
          } else if (t == kClose) {
            if (stack.empty())
              fail("ListOps expression: ']' at position ", i,
                   " closes no operator");
            Open open = std::move(stack.back());
            stack.pop_back();
            std::vector<int32_t> &v = open.values;
            if (v.empty())
              fail("ListOps expression: '", opName(open.op), "' at position ",
                   open.pos, " has no arguments");
            int32_t value = 0;
            switch (open.op) {
            case kMax:
              value = *std::max_element(v.begin(), v.end());
              break;
            case kMin:
              value = *std::min_element(v.begin(), v.end());
              break;
            case kMed: {
              auto mid = v.begin() + (v.size() - 1) / 2; // the lower middle
              std::nth_element(v.begin(), mid, v.end());
              value = *mid;
              break;
            }
            case kSm:
              for (int32_t x : v)
                value = (value + x) % 10;
              break;
            }
            deliver(value);
          } else {
            fail("ListOps expression: token ", t, " at position ", i,
                 " is not a ListOps token (expected 1..15)");
          }
        }
        if (!stack.empty())
          fail("ListOps expression: '", opName(stack.back().op),
               "' at position ", stack.back().pos, " is not closed");
        if (!result)
          fail("ListOps expression: the expression is empty");
        return *result;
      });
}

Expected<std::unique_ptr<Task>> hkt::train::openTask(const std::string &spec,
                                                     int64_t maxLen,
                                                     uint64_t dataSeed) {
  using Result = Expected<std::unique_ptr<Task>>;
  return guarded<Result>("task " + inQuotes(spec), [&]() -> Result {
    auto startsWith = [&](const char *prefix) {
      return spec.compare(0, std::strlen(prefix), prefix) == 0;
    };
    if (maxLen < 1)
      fail("task ", inQuotes(spec), ": max_len is ", maxLen,
           ", it must be at least 1");

    if (spec == "listops" || startsWith("listops:")) {
      ListOpsOptions options;
      if (spec != "listops")
        options = parseListOpsOptions(spec, spec.substr(8));
      return std::unique_ptr<Task>(
          new ListOpsTask(spec, options, maxLen, dataSeed));
    }

    if (spec == "fmnist" || startsWith("fmnist:")) {
      std::string dir = spec == "fmnist" ? kDefaultFmnistDir : spec.substr(7);
      if (dir.empty())
        fail("task ", inQuotes(spec), ": no directory after 'fmnist:'");
      while (dir.size() > 1 && dir.back() == '/')
        dir.pop_back();
      // Before reading 30 MB of gzip: the model must hold a whole image.
      if (maxLen < kImagePixels)
        fail("task ", inQuotes(spec), ": the images are ", kImagePixels,
             " tokens (", kImageSide, "x", kImageSide,
             " pixels) and max_len is ", maxLen);
      return std::unique_ptr<Task>(new FmnistTask(spec, dir));
    }

    if (startsWith("text:")) {
      std::string path = spec.substr(5);
      if (path.empty())
        fail("task ", inQuotes(spec), ": no file after 'text:'");
      return std::unique_ptr<Task>(new TextTask(spec, path, maxLen));
    }

    fail("unknown task ", inQuotes(spec),
         ": expected listops[:train=N,valid=N,test=N,depth=D,args=A], "
         "fmnist[:DIR] or text:FILE");
  });
}
