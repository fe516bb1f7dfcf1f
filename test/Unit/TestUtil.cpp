//===- TestUtil.cpp - Helpers for the runtime unit tests ------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/TestUtil.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace hkt;
using namespace hkt::test;
using runtime::DType;
using runtime::Tensor;

void TempDirTest::SetUp() {
  std::string base = ::testing::TempDir();
  if (base.empty() || base.back() != '/')
    base += '/';
  std::string templ = base + "hkt-rt-XXXXXX";
  ASSERT_NE(::mkdtemp(templ.data()), nullptr)
      << "mkdtemp failed: " << std::strerror(errno);
  dir = templ;
}

void TempDirTest::TearDown() {
  std::error_code ec;
  if (!dir.empty())
    std::filesystem::remove_all(dir, ec);
}

void hkt::test::writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(out) << "cannot write " << path;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out) << "cannot write " << path;
}

std::string hkt::test::readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool hkt::test::fileExists(const std::string &path) {
  return std::filesystem::exists(path);
}

static std::string le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string hkt::test::npyBytes(int major, const std::string &header,
                                const std::string &data) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  s += le(header.size(), major == 1 ? 2 : 4);
  return s + header + data;
}

std::string hkt::test::safetensorsBytes(const std::string &header,
                                        const std::string &data) {
  return le(header.size(), 8) + header + data;
}

std::string hkt::test::floatBytes(const std::vector<float> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * 4);
}

std::string hkt::test::int32Bytes(const std::vector<int32_t> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * 4);
}

Tensor hkt::test::makeF32(std::vector<int64_t> shape,
                          const std::vector<float> &values) {
  auto t = Tensor::allocate(DType::F32, std::move(shape));
  EXPECT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->numElements(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), t->dataAs<float>());
  return std::move(t).value();
}

Tensor hkt::test::makeI32(std::vector<int64_t> shape,
                          const std::vector<int32_t> &values) {
  auto t = Tensor::allocate(DType::I32, std::move(shape));
  EXPECT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->numElements(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), t->dataAs<int32_t>());
  return std::move(t).value();
}

std::vector<float> hkt::test::valuesF32(const Tensor &t) {
  EXPECT_EQ(t.dtype(), DType::F32);
  const float *p = t.dataAs<float>();
  return std::vector<float>(p, p + t.numElements());
}

::testing::AssertionResult hkt::test::mentions(const std::string &message,
                                               const std::string &part) {
  if (message.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "message \"" << message << "\" does not mention \"" << part << "\"";
}

static const char *const kTinyModuleSource = R"(
#include <stdint.h>
typedef struct { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } F32x1;
typedef struct { int32_t *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } I32x1;
typedef struct { int64_t *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } I64x1;
typedef struct { float *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } F32x2;
typedef struct { float *allocated, *aligned; int64_t offset; } F32x0;
#define AT(m, i) (m)->aligned[(m)->offset + (i) * (m)->strides[0]]

void _hkt_packed_add(void **args) {
  F32x1 *x = args[0], *y = args[1], *z = args[2];
  for (int64_t i = 0; i < z->sizes[0]; ++i)
    AT(z, i) = AT(x, i) + AT(y, i);
}

void _hkt_packed_masked(void **args) {
  F32x1 *x = args[0], *y = args[1], *z = args[3];
  I32x1 *keep = args[2];
  for (int64_t i = 0; i < z->sizes[0]; ++i)
    AT(z, i) = AT(keep, i) ? AT(x, i) + AT(y, i) : 0.0f;
}

void _hkt_packed_sum(void **args) {
  F32x1 *x = args[0];
  F32x0 *s = args[1];
  float acc = 0;
  for (int64_t i = 0; i < x->sizes[0]; ++i)
    acc += AT(x, i);
  s->aligned[s->offset] = acc;
}

/* p (in-out) -= 0.5 * g; s = sum of the new p. */
void _hkt_packed_step(void **args) {
  F32x1 *p = args[0], *g = args[1];
  F32x0 *s = args[2];
  float acc = 0;
  for (int64_t i = 0; i < p->sizes[0]; ++i) {
    AT(p, i) -= 0.5f * AT(g, i);
    acc += AT(p, i);
  }
  s->aligned[s->offset] = acc;
}

/* x: f32[B, 2] with B dynamic; y = 2 * x, same shape. */
void _hkt_packed_twice(void **args) {
  F32x2 *x = args[0], *y = args[1];
  for (int64_t i = 0; i < x->sizes[0]; ++i)
    for (int64_t j = 0; j < x->sizes[1]; ++j)
      y->aligned[y->offset + i * y->strides[0] + j * y->strides[1]] =
          2 * x->aligned[x->offset + i * x->strides[0] + j * x->strides[1]];
}

void _hkt_packed_probe(void **args) {
  F32x2 *in = args[0];
  I64x1 *out = args[1];
  AT(out, 0) = in->allocated == in->aligned;
  AT(out, 1) = in->offset;
  AT(out, 2) = in->sizes[0];
  AT(out, 3) = in->sizes[1];
  AT(out, 4) = in->strides[0];
  AT(out, 5) = in->strides[1];
  AT(out, 6) = (int64_t)((uintptr_t)in->aligned % 64);
  AT(out, 7) = (int64_t)(in->aligned[1 * in->strides[0] + 2 * in->strides[1]]);
}
)";

std::string hkt::test::tinyManifest(const std::vector<std::string> &entries,
                                    const std::vector<std::string> &features,
                                    const std::string &triple) {
  auto spec = [](const char *name, const char *role, const std::string &rest) {
    return std::string("{\"name\": \"") + name + "\", \"role\": \"" + role +
           "\", " + rest + "}";
  };
  const std::string f32x4 = "\"dtype\": \"f32\", \"shape\": [4]";
  const std::string f32x0 = "\"dtype\": \"f32\", \"shape\": []";
  std::string list;
  for (const std::string &e : entries) {
    std::string body;
    if (e == "add")
      body = "\"args\": [" + spec("x", "input", f32x4) + ", " +
             spec("y", "input", f32x4) + "], \"results\": [" +
             spec("z", "output", f32x4) + "]";
    else if (e == "masked")
      body = "\"args\": [" + spec("x", "input", f32x4) + ", " +
             spec("y", "parameter", f32x4) + ", " +
             spec("keep", "input",
                  "\"dtype\": \"i32\", \"shape\": [4], \"default\": 1, "
                  "\"range\": [0, 1]") +
             "], \"results\": [" + spec("z", "output", f32x4) + "]";
    else if (e == "sum")
      body = "\"args\": [" + spec("x", "input", f32x4) + "], \"results\": [" +
             spec("s", "output", f32x0) + "]";
    else if (e == "step")
      body = "\"args\": [" + spec("p", "inout", f32x4) + ", " +
             spec("g", "input", f32x4) + "], \"results\": [" +
             spec("s", "output", f32x0) + "]";
    else if (e == "twice") {
      std::string dyn = "\"dtype\": \"f32\", \"shape\": [-1, 2], \"dims\": "
                        "[{\"symbol\": \"B\", \"max\": 8}, null]";
      body = "\"args\": [" + spec("x", "input", dyn) + "], \"results\": [" +
             spec("y", "output", dyn) + "]";
    } else if (e == "probe")
      body = "\"args\": [" +
             spec("in", "input", "\"dtype\": \"f32\", \"shape\": [2, 3]") +
             "], \"results\": [" +
             spec("out", "output", "\"dtype\": \"i64\", \"shape\": [8]") + "]";
    else
      body = "\"args\": [], \"results\": []"; // names a missing symbol
    list += std::string(list.empty() ? "" : ",\n") + "    {\"name\": \"" + e +
            "\", \"symbol\": \"_hkt_packed_" + e + "\", " + body + "}";
  }
  std::string feats;
  for (const std::string &f : features)
    feats += std::string(feats.empty() ? "" : ", ") + "\"" + f + "\"";
  return "{\n  \"format\": \"hkt-module\",\n  \"version\": 2,\n"
         "  \"library\": \"module.so\",\n"
         "  \"target\": {\"kind\": \"cpu\", \"triple\": \"" +
         triple +
         "\", \"cpu\": \"x86-64\", "
         "\"features\": [" +
         feats +
         "]},\n"
         "  \"entries\": [\n" +
         list + "\n  ]\n}\n";
}

bool hkt::test::buildTinyModule(const std::string &dir, std::string &why,
                                const std::vector<std::string> &entries) {
  why.clear();
  std::string cc = HKT_TEST_CC;
  if (cc.empty() || cc.find("NOTFOUND") != std::string::npos ||
      ::access(cc.c_str(), X_OK) != 0)
    return false;
  std::string src = dir + "/tiny.c";
  {
    std::ofstream out(src);
    out << kTinyModuleSource;
  }
  std::string cmd = "'" + cc + "' -shared -fPIC -O1 -o '" + dir +
                    "/module.so' '" + src + "' 2>'" + dir + "/cc.log'";
  if (std::system(cmd.c_str()) != 0) {
    why = "compiling the test module failed: " + readBytes(dir + "/cc.log");
    return false;
  }
  std::ofstream(dir + "/manifest.json") << tinyManifest(entries);
  return true;
}
