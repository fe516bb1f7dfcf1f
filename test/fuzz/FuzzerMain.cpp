//===- FuzzerMain.cpp - Runs fuzz targets without libFuzzer ---------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The normal build links each target with this main instead of libFuzzer
// (as LLVM's fuzzers do when libFuzzer is absent): every file named on the
// command line, and every file in a directory named there (as libFuzzer takes
// corpus directories), goes through LLVMFuzzerTestOneInput once, so the seed
// corpora and the regression inputs run as ordinary tests.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// The files of `path`: itself, or the regular files directly inside it, in
// name order (so that a failure names the same input every run).
static bool collect(const std::string &path, std::vector<std::string> &files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    files.push_back(path);
    return true;
  }
  std::vector<std::string> inside;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_regular_file(ec))
      inside.push_back(it->path().string());
  if (ec) {
    std::fprintf(stderr, "cannot list %s: %s\n", path.c_str(),
                 ec.message().c_str());
    return false;
  }
  std::sort(inside.begin(), inside.end());
  files.insert(files.end(), inside.begin(), inside.end());
  return true;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
    return 2;
  }
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    if (!collect(argv[i], files))
      return 2;
  for (const std::string &file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
      return 2;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    // data() of an empty vector may be null; libFuzzer passes a valid pointer.
    static const uint8_t empty = 0;
    LLVMFuzzerTestOneInput(bytes.empty() ? &empty : bytes.data(), bytes.size());
  }
  std::printf("%s: %zu inputs ran\n", argv[0], files.size());
  return 0;
}
