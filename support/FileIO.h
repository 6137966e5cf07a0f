//===- FileIO.h - Reading inputs and writing outputs safely -----*- C++ -*-===//
//
// The one bounded reader and the one atomic writer, for the compiler and
// the runtime alike. Every file tfmc writes (its -o outputs, the kernel
// cache's objects, and a compiled program's run --output, generate
// --dump-logits, init-weights --output, the C API's outputs) goes through
// OutputFile: a unique temporary in the output's directory (mkstemp), the
// data, fsync, rename over the output, fsync of the directory. Any failure
// removes the temporary and leaves an old file at the path untouched, and a
// process killed mid-write leaves at most the temporary behind, never a
// partial output. The output is checked when the OutputFile is created,
// before the caller does the work: an existing symbolic link, device node,
// FIFO or directory at the path is refused (never replaced or written
// through), and so is a path that is the same file as one of the inputs.
//
// Inputs read whole (model descriptions, config.json, id lists, text,
// tokenizer files) go through readRegularFile: a FIFO or a device is an
// error, never a blocking read, and a file over its stated limit an error,
// never an unbounded read.
//
// No function here throws but std::bad_alloc; errors are one line.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_FILEIO_H
#define TFMC_SUPPORT_FILEIO_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sys/types.h>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::support {

/// "a FIFO", "a directory", ...: what a file that is not a regular one is,
/// for messages (its stat's st_mode).
const char *fileKind(mode_t mode);

/// Input files larger than this are refused by readRegularFile (id lists,
/// prompts and tokenizer files are far smaller).
inline constexpr uint64_t kMaxInputFileBytes = uint64_t(1) << 30;

/// Why a read failed: `reason` is one line without the path ("cannot read:
/// No such file or directory", "cannot read: a FIFO, not a regular file",
/// "cannot read: 17 bytes is more than the limit of 16"); `systemError` is
/// the failed system call's errno, or 0 when the file itself was refused.
struct ReadFailure {
  std::string reason;
  int systemError = 0;
};

/// Reads the regular file `path` whole, at most `maxBytes` (also when it
/// grows while it is read), and notes it as an input (noteInputFile).
bool readRegularFile(const std::string &path, std::string &contents,
                     ReadFailure &failure,
                     uint64_t maxBytes = kMaxInputFileBytes);

/// The same, the error as one line "PATH: REASON".
bool readRegularFile(const std::string &path, std::string &contents,
                     std::string &error,
                     uint64_t maxBytes = kMaxInputFileBytes);

/// Every file this process has opened for reading (readRegularFile, a
/// safetensors file's mapping), by device and inode: the one list that the
/// output checks read, so that no output replaces a file the program read,
/// whichever part of it (weights, ids, tokenizer, SentencePiece model) read
/// it. `path` is the name it was opened by, for messages.
void noteInputFile(const std::string &path, dev_t device, ino_t inode);

/// The path an input of this process was opened by, if the file at
/// (device, inode) is one and that path still names it.
std::optional<std::string> inputFileAt(dev_t device, ino_t inode);

/// A file being written: see the file comment. Move-only; destroying one
/// that was not committed removes its temporary. A program's output that is
/// the same file as any input it read (noteInputFile) is refused, when it
/// is created and again before it is renamed into place.
class OutputFile {
public:
  /// Checks `path` and creates the temporary next to it. `flag` ("--output",
  /// or empty) starts every message. `inputs` are (flag, path) pairs of the
  /// files the caller reads; the output may be none of them (same inode).
  /// With `refuseFilesRead` (a program's outputs: cli::checkOutputs), nor
  /// any file this process has read (noteInputFile), checked again at
  /// commit; a library caller that means to replace a file it read passes
  /// false.
  static std::optional<OutputFile>
  create(const std::string &flag, const std::string &path,
         const std::vector<std::pair<std::string, std::string>> &inputs,
         bool refuseFilesRead, std::string &error);

  OutputFile(OutputFile &&other) noexcept;
  OutputFile &operator=(OutputFile &&other) noexcept;
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  ~OutputFile();

  const std::string &path() const { return path_; }
  const std::string &flag() const { return flag_; }
  /// The temporary's path (tests and messages).
  const std::string &temporaryPath() const { return temporary_; }

  /// Appends `bytes` bytes. On failure the temporary is removed.
  bool write(const void *data, std::size_t bytes, std::string &error);

  /// fsync, rename over the path, fsync the directory. On failure (also:
  /// the path is now a file this process read) the temporary is removed
  /// and the path is as it was. The temporary may also have been written
  /// by another program (a compiler, `ar`) through temporaryPath(): what
  /// the path names is what is synced and renamed.
  bool commit(std::string &error);

  /// Removes the temporary (also what the destructor does).
  void discard();

private:
  OutputFile() = default;
  /// "--output out.safetensors: cannot write: " and the like.
  std::string where() const;

  std::string flag_;
  std::string path_;
  std::string temporary_;
  int fd_ = -1;
  bool refuseFilesRead_ = false;
};

} // namespace tfmc::support

#endif // TFMC_SUPPORT_FILEIO_H
