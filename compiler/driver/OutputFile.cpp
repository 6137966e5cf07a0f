//===- OutputFile.cpp - Outputs that appear whole or not at all -----------===//

#include "compiler/driver/OutputFile.h"
#include "compiler/frontend/Quote.h"

#include "llvm/Support/Errc.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfmc::driver {
namespace {

std::string cannotOpen(const std::string &path, const std::string &reason) {
  return "cannot open output file " + frontend::quoted(path, 400) + ": " +
         reason;
}

/// Writes all of `contents` to `fd`, retrying short writes.
bool writeAll(int fd, llvm::StringRef contents) {
  const char *data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  return true;
}

} // namespace

bool OutputFile::open(std::string &error) {
  if (path == "-")
    return true;
  struct stat link, info;
  bool exists = ::stat(path.c_str(), &info) == 0;
  if (!exists && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    error = cannotOpen(path, "a symbolic link to a missing file");
    return false;
  }
  if (exists && S_ISDIR(info.st_mode)) {
    error = cannotOpen(path, "Is a directory");
    return false;
  }
  if (exists && !S_ISREG(info.st_mode)) {
    writeThrough = true;
    return true;
  }
  target = path;
  if (exists) {
    existingMode = info.st_mode & 07777;
    // Replace what the link points at, not the link.
    char resolved[PATH_MAX];
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      if (!::realpath(path.c_str(), resolved)) {
        error = cannotOpen(path, std::strerror(errno));
        return false;
      }
      target = resolved;
    }
  }
  // A trial temporary file says now whether the directory takes one; the
  // real one exists only while commit() writes, so that a compile killed
  // midway leaves nothing behind.
  llvm::Expected<llvm::sys::fs::TempFile> trial = createTemporary();
  if (!trial) {
    error = cannotOpen(path, llvm::toString(trial.takeError()));
    return false;
  }
  if (llvm::Error discarded = trial->discard()) {
    error = cannotOpen(path, llvm::toString(std::move(discarded)));
    return false;
  }
  return true;
}

llvm::Expected<llvm::sys::fs::TempFile> OutputFile::createTemporary() const {
  return llvm::sys::fs::TempFile::create(target + ".tmp-%%%%%%%%");
}

bool OutputFile::commit(llvm::StringRef contents, std::string &error) {
  if (path == "-") {
    llvm::outs() << contents;
    llvm::outs().flush();
    if (llvm::outs().has_error()) {
      error = "cannot write to standard output: " +
              llvm::outs().error().message();
      llvm::outs().clear_error();
      return false;
    }
    return true;
  }
  auto cannotWrite = [&](const std::string &reason) {
    error = "cannot write output file " + frontend::quoted(path, 400) + ": " +
            reason;
    return false;
  };
  if (writeThrough) {
    int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
      return cannotWrite(std::strerror(errno));
    bool written = writeAll(fd, contents);
    int savedErrno = errno;
    ::close(fd);
    return written || cannotWrite(std::strerror(savedErrno));
  }
  llvm::Expected<llvm::sys::fs::TempFile> temporary = createTemporary();
  if (!temporary)
    return cannotWrite(llvm::toString(temporary.takeError()));
  int fd = temporary->FD;
  if (!writeAll(fd, contents) ||
      (existingMode && ::fchmod(fd, *existingMode) != 0) || ::fsync(fd) != 0) {
    std::string reason = std::strerror(errno);
    llvm::consumeError(temporary->discard());
    return cannotWrite(reason);
  }
  if (llvm::Error kept = temporary->keep(target))
    return cannotWrite(llvm::toString(std::move(kept)));
  return true;
}

} // namespace tfmc::driver
