//===- TasksTest.cpp - Tests of the training tasks ------------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Tasks.h"
#include "test/Unit/TestUtil.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

using namespace hkt::runtime;
using namespace hkt::train;
using namespace hkt::test;

namespace {

//===----------------------------------------------------------------------===//
// An independent ListOps evaluator: renders the tokens as SPEC writes them
// ("[MAX 2 9 [MIN 4 7 ] 0 ]") and parses the words by recursive descent.
//===----------------------------------------------------------------------===//

std::string render(const std::vector<int32_t> &tokens) {
  static const char *names[] = {"<pad>", "0",    "1",   "2", "3", "4",
                                "5",     "6",    "7",   "8", "9", "[MAX",
                                "[MIN",  "[MED", "[SM", "]"};
  std::string s;
  for (int32_t t : tokens) {
    if (!s.empty())
      s += ' ';
    s += t >= 0 && t < 16 ? names[t] : "<bad>";
  }
  return s;
}

/// Parses one expression from `words` at `pos`; -1 on malformed input.
int parseExpr(const std::vector<std::string> &words, size_t &pos) {
  if (pos >= words.size())
    return -1;
  const std::string w = words[pos++];
  if (w.size() == 1 && w[0] >= '0' && w[0] <= '9')
    return w[0] - '0';
  if (w != "[MAX" && w != "[MIN" && w != "[MED" && w != "[SM")
    return -1;
  std::vector<int> args;
  while (pos < words.size() && words[pos] != "]") {
    int v = parseExpr(words, pos);
    if (v < 0)
      return -1;
    args.push_back(v);
  }
  if (pos >= words.size() || args.empty())
    return -1;
  ++pos; // ']'
  std::sort(args.begin(), args.end());
  if (w == "[MAX")
    return args.back();
  if (w == "[MIN")
    return args.front();
  if (w == "[MED")
    return args[(args.size() - 1) / 2];
  int sum = 0;
  for (int a : args)
    sum += a;
  return sum % 10;
}

int referenceValue(const std::vector<int32_t> &tokens) {
  std::istringstream in(render(tokens));
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  size_t pos = 0;
  int v = parseExpr(words, pos);
  return pos == words.size() ? v : -1;
}

/// Tokens from SPEC's notation.
std::vector<int32_t> parseTokens(const std::string &text) {
  std::istringstream in(text);
  std::vector<int32_t> out;
  for (std::string w; in >> w;) {
    if (w.size() == 1 && w[0] >= '0' && w[0] <= '9')
      out.push_back(1 + (w[0] - '0'));
    else if (w == "[MAX")
      out.push_back(11);
    else if (w == "[MIN")
      out.push_back(12);
    else if (w == "[MED")
      out.push_back(13);
    else if (w == "[SM")
      out.push_back(14);
    else if (w == "]")
      out.push_back(15);
    else
      ADD_FAILURE() << "bad word in test input: " << w;
  }
  return out;
}

std::unique_ptr<Task> openOrFail(const std::string &spec, int64_t maxLen,
                                 uint64_t seed = 1) {
  auto task = openTask(spec, maxLen, seed);
  EXPECT_TRUE(task.ok()) << task.message();
  return task.ok() ? std::move(*task) : nullptr;
}

std::string openError(const std::string &spec, int64_t maxLen) {
  auto task = openTask(spec, maxLen, 1);
  EXPECT_FALSE(task.ok()) << "task '" << spec << "' was accepted";
  return task.ok() ? "" : task.message();
}

Example getOrFail(const Task &task, Split split, int64_t index) {
  auto ex = task.get(split, index);
  EXPECT_TRUE(ex.ok()) << ex.message();
  return ex.ok() ? *ex : Example{};
}

const Split kSplits[] = {Split::Train, Split::Valid, Split::Test};

//===----------------------------------------------------------------------===//
// evaluateListOps
//===----------------------------------------------------------------------===//

int32_t valueOf(const std::string &text) {
  auto v = evaluateListOps(parseTokens(text));
  EXPECT_TRUE(v.ok()) << text << ": " << v.message();
  return v.ok() ? *v : -1;
}

std::string evalError(const std::vector<int32_t> &tokens) {
  auto v = evaluateListOps(tokens);
  EXPECT_FALSE(v.ok()) << render(tokens) << " evaluated to " << *v;
  return v.ok() ? "" : v.message();
}

TEST(TasksEvaluateListOps, HandWritten) {
  EXPECT_EQ(valueOf("[MAX 2 9 [MIN 4 7 ] 0 ]"), 9); // SPEC's example
  EXPECT_EQ(valueOf("7"), 7);
  EXPECT_EQ(valueOf("[MIN 4 7 ]"), 4);
  EXPECT_EQ(valueOf("[MAX 0 0 ]"), 0);
  EXPECT_EQ(valueOf("[MED 5 1 3 ]"), 3);
  // An even count takes the lower middle: sorted 1 3 5 8 -> 3.
  EXPECT_EQ(valueOf("[MED 8 1 5 3 ]"), 3);
  EXPECT_EQ(valueOf("[MED 9 0 ]"), 0);
  EXPECT_EQ(valueOf("[SM 5 7 9 ]"), 1); // 21 mod 10
  EXPECT_EQ(valueOf("[SM 0 0 ]"), 0);
  EXPECT_EQ(valueOf("[SM 9 [MAX 3 8 ] [MED 2 2 7 7 ] ]"), 9); // 9+8+2
  EXPECT_EQ(valueOf("[MIN [MAX 1 [SM 4 4 ] ] [MED 9 9 9 ] 6 ]"), 6);
}

TEST(TasksEvaluateListOps, DeepNestingDoesNotOverflow) {
  // A million nested operators: an explicit stack, not recursion.
  std::vector<int32_t> tokens;
  const int n = 1000000;
  for (int i = 0; i < n; ++i)
    tokens.push_back(11);
  tokens.push_back(1 + 4);
  for (int i = 0; i < n; ++i)
    tokens.push_back(15);
  auto v = evaluateListOps(tokens);
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_EQ(*v, 4);
}

TEST(TasksEvaluateListOps, Malformed) {
  EXPECT_TRUE(mentions(evalError({}), "empty"));
  EXPECT_TRUE(mentions(evalError(parseTokens("[MAX 1 2")), "not closed"));
  EXPECT_TRUE(mentions(evalError(parseTokens("[MAX 1 2")), "position 0"));
  EXPECT_TRUE(mentions(evalError(parseTokens("[MAX 1 [MIN 2 ]")),
                       "'[MAX' at position 0 is not closed"));
  EXPECT_TRUE(mentions(evalError(parseTokens("1 ]")),
                       "unexpected tokens after the end"));
  EXPECT_TRUE(mentions(evalError(parseTokens("] 1")), "']' at position 0"));
  EXPECT_TRUE(mentions(evalError(parseTokens("[MAX 1 ] ]")), "position 3"));
  EXPECT_TRUE(mentions(evalError(parseTokens("[MAX 1 2 ] 3")),
                       "unexpected tokens after the end"));
  EXPECT_TRUE(mentions(evalError(parseTokens("[SM 1 [MIN ] ]")),
                       "'[MIN' at position 2 has no arguments"));
  EXPECT_TRUE(mentions(evalError({11, 2, 0, 15}), "token 0 at position 2"));
  EXPECT_TRUE(mentions(evalError({11, 2, 16, 15}), "token 16"));
  EXPECT_TRUE(mentions(evalError({-3}), "token -3"));
}

//===----------------------------------------------------------------------===//
// ListOps generator
//===----------------------------------------------------------------------===//

TEST(TasksListOps, Basics) {
  auto task = openOrFail("listops", 512);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->name(), "listops");
  EXPECT_EQ(task->size(Split::Train), 20000);
  EXPECT_EQ(task->size(Split::Valid), 2000);
  EXPECT_EQ(task->size(Split::Test), 2000);
  EXPECT_EQ(task->classes(), 10);
  EXPECT_EQ(task->vocab(), 16);
  EXPECT_TRUE(mentions(task->get(Split::Valid, 2000).message(),
                       "example 2000 of the valid split is out of range"));
  EXPECT_FALSE(task->get(Split::Train, -1).ok());
  EXPECT_TRUE(task->get(Split::Test, 1999).ok());
}

TEST(TasksListOps, Deterministic) {
  auto a = openOrFail("listops", 200, 7), b = openOrFail("listops", 200, 7);
  auto c = openOrFail("listops", 200, 8);
  ASSERT_TRUE(a && b && c);
  int sameAcrossSeeds = 0, sameAcrossSplits = 0;
  for (int64_t i = 0; i < 50; ++i) {
    Example x = getOrFail(*a, Split::Train, i);
    Example y = getOrFail(*b, Split::Train, i);
    EXPECT_EQ(x.tokens, y.tokens) << "example " << i;
    EXPECT_EQ(x.label, y.label);
    // Asking again, and in another order, gives the same.
    EXPECT_EQ(getOrFail(*a, Split::Train, 49 - i).tokens,
              getOrFail(*b, Split::Train, 49 - i).tokens);
    sameAcrossSeeds += x.tokens == getOrFail(*c, Split::Train, i).tokens;
    sameAcrossSplits += x.tokens == getOrFail(*a, Split::Valid, i).tokens;
  }
  EXPECT_EQ(sameAcrossSeeds, 0);
  EXPECT_EQ(sameAcrossSplits, 0);
  // Neighbouring examples differ too.
  EXPECT_NE(getOrFail(*a, Split::Test, 0).tokens,
            getOrFail(*a, Split::Test, 1).tokens);
}

/// The deepest bracket nesting, and the argument counts of the operators.
void shape(const std::vector<int32_t> &tokens, int &depth,
           std::vector<int> &argCounts) {
  std::vector<int> open;
  depth = 0;
  argCounts.clear();
  for (int32_t t : tokens) {
    if (t >= 11 && t <= 14) {
      if (!open.empty())
        ++open.back();
      open.push_back(0);
      depth = std::max(depth, static_cast<int>(open.size()));
    } else if (t == 15) {
      ASSERT_FALSE(open.empty());
      argCounts.push_back(open.back());
      open.pop_back();
    } else if (!open.empty()) {
      ++open.back();
    }
  }
}

class TasksListOpsMaxLen : public ::testing::TestWithParam<int64_t> {};

TEST_P(TasksListOpsMaxLen, WithinMaxLenAndWellFormed) {
  int64_t maxLen = GetParam();
  auto task = openOrFail("listops:train=300,valid=50,test=50", maxLen, 3);
  ASSERT_TRUE(task);
  for (Split split : kSplits) {
    for (int64_t i = 0; i < task->size(split); ++i) {
      Example ex = getOrFail(*task, split, i);
      SCOPED_TRACE(::testing::Message() << splitName(split) << " example " << i
                                        << ": " << render(ex.tokens));
      ASSERT_FALSE(ex.tokens.empty());
      ASSERT_LE(static_cast<int64_t>(ex.tokens.size()), maxLen);
      for (int32_t t : ex.tokens)
        ASSERT_TRUE(t >= 1 && t <= 15) << t;
      ASSERT_EQ(ex.label, referenceValue(ex.tokens));
      if (maxLen >= 4) {
        ASSERT_TRUE(ex.tokens[0] >= 11 && ex.tokens[0] <= 14)
            << "the top level must be an operator";
        ASSERT_GE(ex.tokens.size(), 4u);
      } else {
        ASSERT_EQ(ex.tokens.size(), 1u);
      }
      int depth;
      std::vector<int> argCounts;
      shape(ex.tokens, depth, argCounts);
      ASSERT_LE(depth, 10);
      for (int n : argCounts)
        ASSERT_TRUE(n >= 2 && n <= 10) << n << " arguments";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TasksListOps, TasksListOpsMaxLen,
                         ::testing::Values(1, 2, 3, 4, 5, 8, 16, 100, 512));

TEST(TasksListOps, DistributionAt512) {
  auto task = openOrFail("listops", 512, 1);
  ASSERT_TRUE(task);
  std::map<int32_t, int> labels;
  int64_t total = 0, inWindow = 0, nested = 0;
  const int n = 500;
  for (int64_t i = 0; i < n; ++i) {
    Example ex = getOrFail(*task, Split::Train, i);
    ++labels[ex.label];
    total += ex.tokens.size();
    inWindow += ex.tokens.size() >= 128 && ex.tokens.size() <= 512;
    int depth;
    std::vector<int> argCounts;
    shape(ex.tokens, depth, argCounts);
    nested += depth >= 3;
  }
  EXPECT_GE(labels.size(), 5u);
  for (auto &[label, count] : labels)
    EXPECT_LT(count, n * 6 / 10) << "label " << label << " dominates";
  EXPECT_GT(total / n, 100);
  EXPECT_GE(inWindow, n * 9 / 10) << "lengths mostly in [maxLen/4, maxLen]";
  EXPECT_GE(nested, n / 2) << "most trees should nest";
}

TEST(TasksListOps, Options) {
  auto task = openOrFail("listops:test=7,train=30,depth=1,args=4", 64);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->name(), "listops:test=7,train=30,depth=1,args=4");
  EXPECT_EQ(task->size(Split::Train), 30);
  EXPECT_EQ(task->size(Split::Valid), 2000);
  EXPECT_EQ(task->size(Split::Test), 7);
  for (int64_t i = 0; i < 30; ++i) {
    Example ex = getOrFail(*task, Split::Train, i);
    int depth;
    std::vector<int> argCounts;
    shape(ex.tokens, depth, argCounts);
    EXPECT_EQ(depth, 1) << render(ex.tokens);
    ASSERT_EQ(argCounts.size(), 1u);
    EXPECT_TRUE(argCounts[0] >= 2 && argCounts[0] <= 4);
    EXPECT_EQ(ex.label, referenceValue(ex.tokens));
  }
  // Binary trees: every operator has exactly two arguments, so the lengths
  // are 1 mod 3.
  auto binary = openOrFail("listops:train=50,args=2", 100);
  ASSERT_TRUE(binary);
  for (int64_t i = 0; i < 50; ++i) {
    Example ex = getOrFail(*binary, Split::Train, i);
    EXPECT_LE(ex.tokens.size(), 100u);
    EXPECT_EQ(ex.tokens.size() % 3, 1u) << render(ex.tokens);
    EXPECT_EQ(ex.label, referenceValue(ex.tokens));
  }
  // Trees that almost never fit (a huge argument count at a tiny max_len)
  // still give valid examples, from the budgeted fallback.
  for (int64_t maxLen : {4, 6, 40}) {
    auto wide = openOrFail("listops:train=20,args=1000000,depth=3", maxLen);
    ASSERT_TRUE(wide);
    for (int64_t i = 0; i < 20; ++i) {
      Example ex = getOrFail(*wide, Split::Train, i);
      EXPECT_LE(static_cast<int64_t>(ex.tokens.size()), maxLen);
      EXPECT_GE(ex.tokens.size(), 4u);
      int depth;
      std::vector<int> argCounts;
      shape(ex.tokens, depth, argCounts);
      EXPECT_LE(depth, 3);
      EXPECT_EQ(ex.label, referenceValue(ex.tokens)) << render(ex.tokens);
    }
  }
  auto empty = openOrFail("listops:valid=0", 16);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->size(Split::Valid), 0);
  EXPECT_FALSE(empty->get(Split::Valid, 0).ok());
}

TEST(TasksListOps, OptionErrors) {
  std::string e = openError("listops:train=10,size=3", 64);
  EXPECT_TRUE(mentions(e, "unknown option 'size'"));
  EXPECT_TRUE(mentions(e, "train, valid, test, depth, args"));
  e = openError("listops:train=ten", 64);
  EXPECT_TRUE(mentions(e, "option 'train' is 'ten'"));
  EXPECT_TRUE(mentions(openError("listops:train=-1", 64), "'train'"));
  EXPECT_TRUE(mentions(openError("listops:valid=", 64), "'valid'"));
  EXPECT_TRUE(
      mentions(openError("listops:test=99999999999999999999", 64), "'test'"));
  EXPECT_TRUE(mentions(openError("listops:depth=0", 64), "from 1"));
  EXPECT_TRUE(mentions(openError("listops:args=1", 64), "from 2"));
  EXPECT_TRUE(mentions(openError("listops:depth=3,depth=4", 64), "twice"));
  EXPECT_TRUE(mentions(openError("listops:train", 64), "not KEY=VALUE"));
  EXPECT_TRUE(mentions(openError("listops:", 64), "empty option"));
  EXPECT_TRUE(mentions(openError("listops:train=5,", 64), "empty option"));
}

//===----------------------------------------------------------------------===//
// openTask
//===----------------------------------------------------------------------===//

TEST(TasksOpen, UnknownTaskAndBadMaxLen) {
  for (const char *spec : {"", "mnist", "listop", "listopsx", "text", "imdb"}) {
    std::string e = openError(spec, 64);
    EXPECT_TRUE(mentions(e, "unknown task"));
    EXPECT_TRUE(mentions(e, "fmnist[:DIR]"));
    EXPECT_TRUE(mentions(e, "text:FILE"));
    EXPECT_TRUE(mentions(e, "listops"));
  }
  EXPECT_TRUE(mentions(openError("listops", 0), "max_len is 0"));
  EXPECT_TRUE(mentions(openError("listops", -5), "at least 1"));
  EXPECT_TRUE(mentions(openError("text:", 64), "no file"));
  EXPECT_TRUE(mentions(openError("fmnist:", 1000), "no directory"));
  EXPECT_STREQ(splitName(Split::Train), "train");
  EXPECT_STREQ(splitName(Split::Valid), "valid");
  EXPECT_STREQ(splitName(Split::Test), "test");
}

//===----------------------------------------------------------------------===//
// Labelled text
//===----------------------------------------------------------------------===//

class TasksText : public TempDirTest {
protected:
  /// Writes `content` to a file and returns "text:PATH".
  std::string textSpec(const std::string &content) {
    std::string file = path("data.tsv");
    writeBytes(file, content);
    return "text:" + file;
  }
  /// The error of opening `content`, which must name the file.
  std::string textError(const std::string &content, int64_t maxLen = 64) {
    std::string spec = textSpec(content);
    std::string e = openError(spec, maxLen);
    EXPECT_TRUE(mentions(e, path("data.tsv")));
    return e;
  }
};

std::string bytesOf(const Example &ex) {
  std::string s;
  for (int32_t t : ex.tokens)
    s += static_cast<char>(t - 1);
  return s;
}

TEST_F(TasksText, ParsesAndSplits) {
  std::string content;
  for (int n = 0; n < 25; ++n)
    content += std::to_string(n % 3) + "\tline " + std::to_string(n) + "\n";
  auto task = openOrFail(textSpec(content), 64);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->name(), "text:" + path("data.tsv"));
  EXPECT_EQ(task->classes(), 3);
  EXPECT_EQ(task->vocab(), 257);
  // Lines 8 and 18 are valid, 9 and 19 test, the other 21 train.
  ASSERT_EQ(task->size(Split::Train), 21);
  ASSERT_EQ(task->size(Split::Valid), 2);
  ASSERT_EQ(task->size(Split::Test), 2);
  EXPECT_EQ(bytesOf(getOrFail(*task, Split::Valid, 0)), "line 8");
  EXPECT_EQ(bytesOf(getOrFail(*task, Split::Valid, 1)), "line 18");
  EXPECT_EQ(bytesOf(getOrFail(*task, Split::Test, 1)), "line 19");
  EXPECT_EQ(getOrFail(*task, Split::Test, 1).label, 19 % 3);
  EXPECT_EQ(bytesOf(getOrFail(*task, Split::Train, 8)), "line 10");
  EXPECT_EQ(bytesOf(getOrFail(*task, Split::Train, 20)), "line 24");
  EXPECT_EQ(getOrFail(*task, Split::Train, 20).label, 0);
  EXPECT_TRUE(mentions(task->get(Split::Test, 2).message(), "out of range"));
}

TEST_F(TasksText, BytesAndLineEnds) {
  // CRLF, a tab inside the text, bytes >= 0x80, no final newline, leading
  // zeros in a label; trailing blank lines are ignored.
  std::string content = "1\ta\tb\r\n007\t\xff\x01 x\n0\tlast\n\n\r\n";
  auto task = openOrFail(textSpec(content), 16);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->classes(), 8);
  ASSERT_EQ(task->size(Split::Train), 3);
  EXPECT_EQ(task->size(Split::Valid), 0);
  Example a = getOrFail(*task, Split::Train, 0);
  EXPECT_EQ(a.label, 1);
  EXPECT_EQ(a.tokens, (std::vector<int32_t>{'a' + 1, '\t' + 1, 'b' + 1}));
  Example b = getOrFail(*task, Split::Train, 1);
  EXPECT_EQ(b.label, 7);
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{256, 2, ' ' + 1, 'x' + 1}));
  EXPECT_EQ(bytesOf(getOrFail(*task, Split::Train, 2)), "last");

  auto noNewline = openOrFail(textSpec("0\tab\n1\tcd"), 2);
  ASSERT_TRUE(noNewline);
  EXPECT_EQ(noNewline->classes(), 2);
  EXPECT_EQ(bytesOf(getOrFail(*noNewline, Split::Train, 1)), "cd");
  // Exactly max_len bytes fit.
  EXPECT_TRUE(openTask(textSpec("0\tabcd\n"), 4, 1).ok());
}

TEST_F(TasksText, Errors) {
  EXPECT_TRUE(mentions(textError(""), "no examples"));
  EXPECT_TRUE(mentions(textError("\n\n"), "no examples"));
  std::string e = textError("0\tok\n1 no tab\n");
  EXPECT_TRUE(mentions(e, "line 2"));
  EXPECT_TRUE(mentions(e, "no tab"));
  e = textError("0\tok\n\n1\tafter a blank line\n");
  EXPECT_TRUE(mentions(e, "line 2"));
  EXPECT_TRUE(mentions(e, "blank"));
  e = textError("0\tok\n0\tok\nx\tbad label\n");
  EXPECT_TRUE(mentions(e, "line 3"));
  EXPECT_TRUE(mentions(e, "label 'x'"));
  EXPECT_TRUE(mentions(textError("-1\tnegative\n"), "label '-1'"));
  EXPECT_TRUE(mentions(textError("+1\tsigned\n"), "label '+1'"));
  EXPECT_TRUE(mentions(textError(" 1\tspace\n"), "label ' 1'"));
  EXPECT_TRUE(mentions(textError("\tno label\n"), "label ''"));
  EXPECT_TRUE(mentions(textError("99999999999999999999999\tbig\n"), "label"));
  EXPECT_TRUE(mentions(textError("70000\ttoo many classes\n"), "too large"));
  e = textError("0\tok\n1\t\n");
  EXPECT_TRUE(mentions(e, "line 2"));
  EXPECT_TRUE(mentions(e, "empty"));
  EXPECT_TRUE(mentions(textError("1\t\r\n"), "empty"));
  std::string lines;
  for (int n = 0; n < 11; ++n)
    lines += "0\tshort\n";
  lines += "1\t" + std::string(1500, 'y') + "\n";
  e = textError(lines, 1024);
  EXPECT_TRUE(mentions(e, "line 12: the text is 1500 bytes, longer than "
                          "max_len 1024"));

  std::string missing = path("nope.tsv");
  e = openError("text:" + missing, 64);
  EXPECT_TRUE(mentions(e, missing));
  EXPECT_TRUE(mentions(e, "No such file or directory"));
  e = openError("text:" + dir, 64);
  EXPECT_TRUE(mentions(e, "not a regular file"));
}

TEST(TasksTextSample, ShippedSampleFile) {
  // test/Tools/Inputs/sample-text.tsv, used by the hkt-run tests.
  std::string file =
      std::string(HKT_SOURCE_ROOT) + "/test/Tools/Inputs/sample-text.tsv";
  auto task = openOrFail("text:" + file, 100);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->classes(), 2);
  EXPECT_GE(task->size(Split::Train), 40);
  EXPECT_GE(task->size(Split::Valid), 5);
  EXPECT_GE(task->size(Split::Test), 5);
  for (Split split : kSplits) {
    int counts[2] = {0, 0};
    for (int64_t i = 0; i < task->size(split); ++i) {
      Example ex = getOrFail(*task, split, i);
      ASSERT_TRUE(ex.label == 0 || ex.label == 1);
      ++counts[ex.label];
      // The rule: class 1 lines are questions.
      EXPECT_EQ(ex.label == 1, bytesOf(ex).back() == '?') << bytesOf(ex);
    }
    EXPECT_GT(counts[0], 0) << splitName(split);
    EXPECT_GT(counts[1], 0) << splitName(split);
  }
}

//===----------------------------------------------------------------------===//
// Fashion-MNIST
//===----------------------------------------------------------------------===//

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
  return s;
}

void writeGz(const std::string &file, const std::string &bytes) {
  gzFile f = gzopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr) << "cannot write " << file;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::string idxImages(uint32_t count, uint32_t rows = 28, uint32_t cols = 28,
                      uint32_t magic = 2051, int64_t pixelBytes = -1) {
  std::string s = be32(magic) + be32(count) + be32(rows) + be32(cols);
  int64_t n = pixelBytes >= 0 ? pixelBytes : int64_t(count) * rows * cols;
  for (int64_t i = 0; i < n; ++i)
    s += static_cast<char>((i * 7 + i / 784) & 0xff);
  return s;
}

std::string idxLabels(uint32_t count, uint32_t magic = 2049, int bad = -1) {
  std::string s = be32(magic) + be32(count);
  for (uint32_t i = 0; i < count; ++i)
    s += static_cast<char>(int(i) == bad ? 10 : i % 10);
  return s;
}

class TasksFmnist : public TempDirTest {
protected:
  /// A synthetic dataset: 24 training and 3 test images.
  void writeDataset() {
    writeGz(path("train-images-idx3-ubyte.gz"), idxImages(24));
    writeGz(path("train-labels-idx1-ubyte.gz"), idxLabels(24));
    writeGz(path("t10k-images-idx3-ubyte.gz"), idxImages(3));
    writeGz(path("t10k-labels-idx1-ubyte.gz"), idxLabels(3));
  }
  std::string fmnistError(const std::string &file) {
    std::string e = openError("fmnist:" + dir, 784);
    EXPECT_TRUE(mentions(e, path(file)));
    return e;
  }
};

TEST_F(TasksFmnist, SyntheticDataset) {
  writeDataset();
  auto task = openOrFail("fmnist:" + dir + "/", 784);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->name(), "fmnist:" + dir + "/");
  EXPECT_EQ(task->classes(), 10);
  EXPECT_EQ(task->vocab(), 257);
  // valid = the last twelfth of the training images (5000 of 60000).
  ASSERT_EQ(task->size(Split::Train), 22);
  ASSERT_EQ(task->size(Split::Valid), 2);
  ASSERT_EQ(task->size(Split::Test), 3);
  std::string pixels = idxImages(24).substr(16);
  auto expectImage = [&](Split split, int64_t index, int64_t image) {
    Example ex = getOrFail(*task, split, index);
    ASSERT_EQ(ex.tokens.size(), 784u);
    for (int64_t i = 0; i < 784; ++i)
      ASSERT_EQ(ex.tokens[i],
                int32_t(static_cast<unsigned char>(pixels[image * 784 + i])) +
                    1)
          << "pixel " << i;
    EXPECT_EQ(ex.label, image % 10);
  };
  expectImage(Split::Train, 0, 0);
  expectImage(Split::Train, 21, 21);
  expectImage(Split::Valid, 0, 22);
  expectImage(Split::Valid, 1, 23);
  expectImage(Split::Test, 2, 2);
  EXPECT_TRUE(mentions(task->get(Split::Valid, 2).message(), "out of range"));
  // Larger max_len is fine.
  EXPECT_TRUE(openTask("fmnist:" + dir, 1024, 1).ok());
}

TEST_F(TasksFmnist, MaxLenTooSmall) {
  writeDataset();
  std::string e = openError("fmnist:" + dir, 512);
  EXPECT_TRUE(mentions(e, "784 tokens"));
  EXPECT_TRUE(mentions(e, "max_len is 512"));
}

TEST_F(TasksFmnist, MissingFiles) {
  std::string e = fmnistError("train-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "No such file or directory"));
  EXPECT_TRUE(mentions(e, "dataset-fashion-mnist"));
  EXPECT_TRUE(mentions(e, "fmnist:DIR"));
  writeDataset();
  std::filesystem::remove(path("t10k-labels-idx1-ubyte.gz"));
  e = fmnistError("t10k-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "cannot open"));
}

TEST_F(TasksFmnist, BadMagic) {
  writeDataset();
  writeGz(path("train-images-idx3-ubyte.gz"), idxImages(24, 28, 28, 2049));
  std::string e = fmnistError("train-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "magic number is 2049, expected 2051"));
  writeDataset();
  writeGz(path("t10k-labels-idx1-ubyte.gz"), idxLabels(3, 2051));
  e = fmnistError("t10k-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "magic number is 2051, expected 2049"));
  // Not gzip at all: zlib reads it as is, and the magic is wrong.
  writeBytes(path("t10k-images-idx3-ubyte.gz"), "hello, world, not IDX");
  e = fmnistError("t10k-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "magic number"));
}

TEST_F(TasksFmnist, WrongDimensions) {
  writeDataset();
  writeGz(path("train-images-idx3-ubyte.gz"), idxImages(24, 32, 32));
  std::string e = fmnistError("train-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "32x32, expected 28x28"));
}

TEST_F(TasksFmnist, Truncated) {
  writeDataset();
  // A complete gzip stream of too few pixels.
  writeGz(path("train-images-idx3-ubyte.gz"),
          idxImages(24, 28, 28, 2051, 24 * 784 - 100));
  std::string e = fmnistError("train-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "truncated"));
  EXPECT_TRUE(mentions(e, "pixels"));
  // A header that claims four billion images.
  writeGz(path("train-images-idx3-ubyte.gz"),
          idxImages(0xffffffffu, 28, 28, 2051, 784));
  e = fmnistError("train-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "truncated"));
  // A gzip file cut short.
  writeDataset();
  std::string gz = readBytes(path("train-labels-idx1-ubyte.gz"));
  writeBytes(path("train-labels-idx1-ubyte.gz"), gz.substr(0, 12));
  e = fmnistError("train-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "truncated")) << e;
  // Too short for the header.
  writeGz(path("train-labels-idx1-ubyte.gz"), be32(2049));
  e = fmnistError("train-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "truncated: it ends inside the IDX header"));
}

TEST_F(TasksFmnist, CorruptGzip) {
  writeDataset();
  std::string gz = readBytes(path("t10k-images-idx3-ubyte.gz"));
  ASSERT_GT(gz.size(), 40u);
  // Damage the deflate data (after the 10-byte gzip header).
  for (size_t i = 12; i < 30; ++i)
    gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  writeBytes(path("t10k-images-idx3-ubyte.gz"), gz);
  std::string e = fmnistError("t10k-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "corrupt") || mentions(e, "truncated") ||
              mentions(e, "magic"))
      << e;
}

TEST_F(TasksFmnist, CountMismatchAndBadLabels) {
  writeDataset();
  writeGz(path("train-labels-idx1-ubyte.gz"), idxLabels(23));
  std::string e = fmnistError("train-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "has 23 labels"));
  EXPECT_TRUE(mentions(e, "has 24 images"));
  writeDataset();
  writeGz(path("t10k-labels-idx1-ubyte.gz"), idxLabels(3, 2049, 1));
  e = fmnistError("t10k-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "label of image 1 is 10"));
  writeDataset();
  writeGz(path("t10k-labels-idx1-ubyte.gz"), idxLabels(3) + "x");
  e = fmnistError("t10k-labels-idx1-ubyte.gz");
  EXPECT_TRUE(mentions(e, "data after the labels"));
  writeGz(path("t10k-labels-idx1-ubyte.gz"), idxLabels(3));
  writeGz(path("t10k-images-idx3-ubyte.gz"), idxImages(0));
  e = fmnistError("t10k-images-idx3-ubyte.gz");
  EXPECT_TRUE(mentions(e, "no images"));
}

/// The first label of an IDX label file, read with zlib here.
int firstLabel(const std::string &file) {
  gzFile f = gzopen(file.c_str(), "rb");
  if (!f)
    return -1;
  unsigned char buf[9];
  int got = gzread(f, buf, 9);
  gzclose(f);
  return got == 9 ? buf[8] : -1;
}

TEST(TasksFmnistReal, DebianDataset) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << dir << " is absent (Debian package dataset-fashion-mnist)";
  auto task = openOrFail("fmnist", 784);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->size(Split::Train), 55000);
  EXPECT_EQ(task->size(Split::Valid), 5000);
  EXPECT_EQ(task->size(Split::Test), 10000);
  EXPECT_EQ(task->classes(), 10);
  EXPECT_EQ(task->vocab(), 257);
  std::set<int32_t> labels;
  for (Split split : kSplits) {
    for (int64_t i :
         {int64_t(0), task->size(split) / 2, task->size(split) - 1}) {
      Example ex = getOrFail(*task, split, i);
      ASSERT_EQ(ex.tokens.size(), 784u);
      int32_t lo = 1000, hi = -1;
      for (int32_t t : ex.tokens) {
        lo = std::min(lo, t);
        hi = std::max(hi, t);
      }
      EXPECT_GE(lo, 1);
      EXPECT_LE(hi, 256);
      EXPECT_GT(hi, lo) << "an image is not blank";
      EXPECT_TRUE(ex.label >= 0 && ex.label < 10);
      labels.insert(ex.label);
    }
  }
  EXPECT_GE(labels.size(), 3u);
  EXPECT_EQ(getOrFail(*task, Split::Train, 0).label,
            firstLabel(dir + "/train-labels-idx1-ubyte.gz"));
  EXPECT_EQ(getOrFail(*task, Split::Test, 0).label,
            firstLabel(dir + "/t10k-labels-idx1-ubyte.gz"));
}

} // namespace
