//===- FuzzCommon.h - Shared pieces of the libFuzzer targets ----*- C++ -*-===//
//
// Each target defines LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize where
// it needs set-up). The same source links with libFuzzer in the clang build
// (TFMC_FUZZ) and with ReplayMain.cpp in the normal build, where
// test/fuzz/replay.test feeds it the seed corpus and every regression input.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_FUZZ_FUZZCOMMON_H
#define TFMC_TEST_FUZZ_FUZZCOMMON_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace tfmc::fuzz {

/// A property of the code under test that an input broke: a finding, like a
/// crash. abort() so that libFuzzer and the replay tool both report it.
#define TFMC_FUZZ_CHECK(condition)                                             \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__,      \
                   __LINE__, #condition);                                      \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

/// A file in memory (memfd) that holds one input, for loaders that take a
/// path: /proc/self/fd/N is a regular file, as they require.
class MemoryFile {
public:
  explicit MemoryFile(const char *name) {
    fd_ = ::memfd_create(name, 0);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile &) = delete;
  MemoryFile &operator=(const MemoryFile &) = delete;

  /// Replaces the contents with `bytes`; returns the path.
  const std::string &write(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, bytes.data(), bytes.size(), 0) !=
            static_cast<ssize_t>(bytes.size())) {
      std::perror("memfd write");
      std::abort();
    }
    return path_;
  }
  const std::string &path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

/// Where the targets' fixed inputs are (test/fuzz/data).
inline std::string dataDir() { return TFMC_FUZZ_DATA_DIR; }

inline std::string_view asText(const uint8_t *data, size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

} // namespace tfmc::fuzz

#endif // TFMC_TEST_FUZZ_FUZZCOMMON_H
