//===- ReplayMain.cpp - Run a fuzz target on files, without libFuzzer -----===//
//
// tfmc-fuzz-T FILE|DIR...: feeds every file (a directory: every file in it,
// recursively, in name order, but dotfiles and README.md) to the target's LLVMFuzzerTestOneInput, as
// libFuzzer would replay it. A finding aborts; otherwise prints how many
// inputs ran and exits 0. This is how `make check` runs the seed corpora
// and the regression inputs with the normal (GCC) build.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const fs::directory_entry &entry :
           fs::recursive_directory_iterator(argv[i]))
        // .keep holds an empty directory in git; README.md explains one.
        if (entry.is_regular_file() &&
            entry.path().filename().string().front() != '.' &&
            entry.path().filename() != "README.md")
          files.push_back(entry.path());
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.push_back(argv[i]);
    } else {
      std::fprintf(stderr, "%s: error: no such file or directory: %s\n",
                   argv[0], argv[i]);
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path &file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), {}};
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: error: cannot read %s\n", argv[0],
                   file.c_str());
      return 1;
    }
    // A copy of exactly the input's size, so ASan sees reads past its end.
    std::vector<uint8_t> copy(bytes.begin(), bytes.end());
    std::fprintf(stderr, "replaying %s\n", file.c_str());
    LLVMFuzzerTestOneInput(copy.data(), copy.size());
  }
  std::printf("%s: %zu inputs replayed\n",
              fs::path(argv[0]).filename().c_str(), files.size());
  return 0;
}
