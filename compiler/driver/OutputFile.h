//===- OutputFile.h - Outputs that appear whole or not at all ---*- C++ -*-===//
//
// tfmc's textual outputs (-o FILE with --emit ast/mlir/mlir-opt/halide) are
// written only when the compile succeeds, and then atomically: into a
// temporary file of a unique name in the same directory, flushed to disk,
// then renamed over FILE. A failed compile, a kill or a full disk leaves an
// existing FILE as it was and no partial file behind.
//
// A FILE that is not a regular file (a character device such as /dev/null
// or a terminal, a FIFO) cannot be replaced by a rename and must not be
// turned into a regular file: tfmc writes through it, once, on success. A
// symbolic link to a regular file is kept: its target is replaced.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_DRIVER_OUTPUTFILE_H
#define TFMC_DRIVER_OUTPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

#include <optional>
#include <string>

namespace tfmc::driver {

class OutputFile {
public:
  /// `path` is the file to write; "-" is stdout.
  explicit OutputFile(std::string path) : path(std::move(path)) {}

  /// Checks that the path can be written and creates the temporary file,
  /// so that a bad -o is reported before any work. On failure `error` is
  /// one line: "cannot open output file 'PATH': REASON".
  bool open(std::string &error);

  /// Writes `contents` and moves it into place. Until then, nothing at the
  /// path has changed; a failure leaves it unchanged.
  bool commit(llvm::StringRef contents, std::string &error);

private:
  llvm::Expected<llvm::sys::fs::TempFile> createTemporary() const;

  std::string path;
  /// The file the rename replaces: `path`, or the target of a link.
  std::string target;
  /// Mode of the file being replaced, so that a rename keeps it.
  std::optional<unsigned> existingMode;
  bool writeThrough = false;
};

} // namespace tfmc::driver

#endif // TFMC_DRIVER_OUTPUTFILE_H
