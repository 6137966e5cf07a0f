//===- FileIO.cpp - Reading inputs and writing outputs safely -------------===//

#include "support/FileIO.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfmc::support {

const char *fileKind(mode_t mode) {
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
  if (S_ISLNK(mode))
    return "a symbolic link";
  return "not a regular file";
}

namespace {

/// `path`'s directory, for the temporary and the directory fsync.
std::string directoryOf(const std::string &path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// The permissions a new file gets from open(2) with mode 0666.
mode_t defaultMode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

struct InputFile {
  dev_t device;
  ino_t inode;
  std::string path;
};

/// noteInputFile's list; a process reads a handful of files.
std::mutex inputsMutex;
std::vector<InputFile> &inputFiles() {
  static std::vector<InputFile> files;
  return files;
}

/// The error for an output at `where` that is the input `input`.
std::string sameAsInput(const std::string &where, const std::string &input) {
  return fmt::format("{}is the same file as the input {}; writing it would "
                     "destroy the input",
                     where, input);
}

} // namespace

void noteInputFile(const std::string &path, dev_t device, ino_t inode) {
  std::lock_guard<std::mutex> lock(inputsMutex);
  // The name it was read by last: an entry whose file was deleted, and
  // whose inode number this file now has, must not hide it.
  for (InputFile &file : inputFiles())
    if (file.device == device && file.inode == inode) {
      file.path = path;
      return;
    }
  inputFiles().push_back({device, inode, path});
}

std::optional<std::string> inputFileAt(dev_t device, ino_t inode) {
  std::lock_guard<std::mutex> lock(inputsMutex);
  for (const InputFile &file : inputFiles()) {
    if (file.device != device || file.inode != inode)
      continue;
    // Still that file under the name it was read by: an input deleted
    // since then may have left its inode number to a new file.
    struct stat now;
    if (::stat(file.path.c_str(), &now) == 0 && now.st_dev == device &&
        now.st_ino == inode)
      return file.path;
  }
  return std::nullopt;
}

bool readRegularFile(const std::string &path, std::string &contents,
                     ReadFailure &failure, uint64_t maxBytes) {
  auto systemError = [&] {
    failure = {fmt::format("cannot read: {}", std::strerror(errno)), errno};
    return false;
  };
  auto refuse = [&](std::string reason) {
    failure = {std::move(reason), 0};
    return false;
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is then
  // refused by the type check below, made on the open descriptor so that a
  // rename in between cannot swap in another file.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return systemError();
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return systemError();
  if (!S_ISREG(info.st_mode))
    return refuse(fmt::format("cannot read: {}, not a regular file",
                              fileKind(info.st_mode)));
  noteInputFile(path, info.st_dev, info.st_ino);
  if (static_cast<uint64_t>(info.st_size) > maxBytes)
    return refuse(fmt::format("cannot read: {} bytes is more than the limit "
                              "of {}",
                              info.st_size, maxBytes));
  contents.clear();
  contents.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return systemError();
    if (got == 0)
      break;
    // A file that grows while it is read is still bounded.
    if (contents.size() + static_cast<std::size_t>(got) > maxBytes)
      return refuse(fmt::format("cannot read: more than the limit of {} bytes",
                                maxBytes));
    contents.append(buffer, static_cast<std::size_t>(got));
  }
  return true;
}

bool readRegularFile(const std::string &path, std::string &contents,
                     std::string &error, uint64_t maxBytes) {
  ReadFailure failure;
  if (readRegularFile(path, contents, failure, maxBytes))
    return true;
  error = fmt::format("{}: {}", path, failure.reason);
  return false;
}

std::optional<OutputFile> OutputFile::create(
    const std::string &flag, const std::string &path,
    const std::vector<std::pair<std::string, std::string>> &inputs,
    bool refuseFilesRead, std::string &error) {
  OutputFile file;
  file.flag_ = flag;
  file.path_ = path;
  file.refuseFilesRead_ = refuseFilesRead;
  if (path.empty() || path.back() == '/') {
    error = fmt::format("{}cannot write: not a file name", file.where());
    return std::nullopt;
  }
  mode_t mode = defaultMode();
  struct stat existing;
  if (::lstat(path.c_str(), &existing) == 0) {
    if (S_ISLNK(existing.st_mode)) {
      error = fmt::format("{}refusing to replace a symbolic link; give its "
                          "target or a new path",
                          file.where());
      return std::nullopt;
    }
    if (!S_ISREG(existing.st_mode)) {
      error = fmt::format("{}refusing to replace {}; give a regular file or "
                          "a new path",
                          file.where(), fileKind(existing.st_mode));
      return std::nullopt;
    }
    for (const auto &[inputFlag, inputPath] : inputs) {
      struct stat input;
      if (::stat(inputPath.c_str(), &input) == 0 &&
          input.st_dev == existing.st_dev && input.st_ino == existing.st_ino) {
        error = fmt::format("{}is the same file as {} {}; writing it would "
                            "destroy the input",
                            file.where(), inputFlag, inputPath);
        return std::nullopt;
      }
    }
    if (std::optional<std::string> input =
            refuseFilesRead ? inputFileAt(existing.st_dev, existing.st_ino)
                            : std::nullopt) {
      error = sameAsInput(file.where(), *input);
      return std::nullopt;
    }
    // Replacing a file keeps its permissions.
    mode = existing.st_mode & 07777;
  } else if (errno != ENOENT) {
    error = fmt::format("{}cannot write: {}", file.where(),
                        std::strerror(errno));
    return std::nullopt;
  }

  std::string name = path;
  name += ".tmp-XXXXXX";
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  int fd = ::mkostemp(buffer.data(), O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("{}cannot write: {}", file.where(),
                        std::strerror(errno));
    return std::nullopt;
  }
  file.fd_ = fd;
  file.temporary_ = buffer.data();
  if (::fchmod(fd, mode) != 0) {
    error = fmt::format("{}cannot write: {}", file.where(),
                        std::strerror(errno));
    return std::nullopt; // ~OutputFile removes the temporary
  }
  return file;
}

OutputFile::OutputFile(OutputFile &&other) noexcept
    : flag_(std::move(other.flag_)), path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(std::exchange(other.fd_, -1)),
      refuseFilesRead_(other.refuseFilesRead_) {
  other.temporary_.clear();
}

OutputFile &OutputFile::operator=(OutputFile &&other) noexcept {
  if (this != &other) {
    discard();
    flag_ = std::move(other.flag_);
    path_ = std::move(other.path_);
    temporary_ = std::move(other.temporary_);
    other.temporary_.clear();
    fd_ = std::exchange(other.fd_, -1);
    refuseFilesRead_ = other.refuseFilesRead_;
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty())
    ::unlink(temporary_.c_str());
  temporary_.clear();
}

std::string OutputFile::where() const {
  return flag_.empty() ? fmt::format("{}: ", path_)
                       : fmt::format("{} {}: ", flag_, path_);
}

bool OutputFile::write(const void *data, std::size_t bytes,
                       std::string &error) {
  if (fd_ < 0) {
    error = fmt::format("{}cannot write: the file is closed", where());
    return false;
  }
  const char *cursor = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t written = ::write(fd_, cursor, bytes);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      error = fmt::format("{}cannot write: {}", where(), std::strerror(errno));
      discard();
      return false;
    }
    cursor += written;
    bytes -= static_cast<std::size_t>(written);
  }
  return true;
}

bool OutputFile::commit(std::string &error) {
  if (fd_ < 0) {
    error = fmt::format("{}cannot write: the file is closed", where());
    return false;
  }
  // fsync before rename: after a crash the path holds the old file or the
  // complete new one. What the temporary's name holds now is synced: a
  // tool given temporaryPath() may have replaced the file created here.
  int written = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
  bool synced = written >= 0 && ::fsync(written) == 0;
  int savedErrno = errno;
  if (written >= 0)
    ::close(written);
  if (!synced) {
    error = fmt::format("{}cannot write: {}", where(), std::strerror(savedErrno));
    discard();
    return false;
  }
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    error = fmt::format("{}cannot write: {}", where(), std::strerror(errno));
    discard();
    return false;
  }
  // The files read since create() (a tokenizer's, say) are on the list
  // too: the path must be none of them.
  struct stat existing;
  if (refuseFilesRead_ && ::lstat(path_.c_str(), &existing) == 0)
    if (std::optional<std::string> input =
            inputFileAt(existing.st_dev, existing.st_ino)) {
      error = sameAsInput(where(), *input);
      discard();
      return false;
    }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    error = fmt::format("{}cannot write: renaming {} failed: {}", where(),
                        temporary_, std::strerror(errno));
    discard();
    return false;
  }
  temporary_.clear();
  // The rename itself is durable once the directory is.
  int dir = ::open(directoryOf(path_).c_str(),
                   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

} // namespace tfmc::support
