//===- ReadFile.cpp - Reading an input file, bounded ----------------------===//

#include "compiler/frontend/ReadFile.h"

#include <cerrno>
#include <algorithm>
#include <cstring>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfmc::frontend {
namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a plain file";
}

/// Closes the descriptor on every path out.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

std::optional<std::string> readInputFile(const std::string &path,
                                         int64_t maxBytes, std::string &error) {
  auto systemError = [&](const char *what) {
    int saved = errno;
    error = fmt::format("{}: {}", what, std::strerror(saved));
    errno = saved;
    return std::nullopt;
  };
  auto refuse = [&](std::string message) {
    error = std::move(message);
    errno = 0;
    return std::nullopt;
  };
  // O_NONBLOCK: opening a FIFO with no writer would wait for one. The type
  // is checked on the open descriptor, so a rename in between cannot swap
  // in another file.
  Descriptor file{::open(path.c_str(),
                         O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (file.fd < 0)
    return systemError("cannot open file");
  struct stat info;
  if (::fstat(file.fd, &info) != 0)
    return systemError("cannot read file");
  if (!S_ISREG(info.st_mode))
    return refuse(fmt::format("not a regular file ({})", kindOf(info.st_mode)));
  if (info.st_size > maxBytes)
    return refuse(fmt::format("the file is {} bytes, more than the limit of "
                              "{}",
                              static_cast<int64_t>(info.st_size), maxBytes));

  // Read until the end, in case the file grew since fstat, but never more
  // than the limit.
  std::string contents(static_cast<size_t>(info.st_size), '\0');
  size_t used = 0;
  while (true) {
    if (used == contents.size()) {
      if (static_cast<int64_t>(used) > maxBytes)
        return refuse(fmt::format("the file grew past the limit of {} bytes "
                                  "while it was read",
                                  maxBytes));
      contents.resize(std::min<size_t>(contents.size() + 65536,
                                       static_cast<size_t>(maxBytes) + 1));
    }
    ssize_t count = ::read(file.fd, contents.data() + used,
                           contents.size() - used);
    if (count < 0) {
      if (errno == EINTR)
        continue;
      return systemError("cannot read file");
    }
    if (count == 0)
      break;
    used += static_cast<size_t>(count);
  }
  contents.resize(used);
  return contents;
}

} // namespace tfmc::frontend
