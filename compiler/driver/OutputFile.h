//===- OutputFile.h - tfmc's textual -o, whole or not at all ----*- C++ -*-===//
//
// tfmc's textual outputs (-o FILE with --emit ast/mlir/mlir-opt/halide) are
// written only when the compile succeeds, through support/FileIO's
// OutputFile and its one policy: a temporary of a unique name in FILE's
// directory, flushed to disk, renamed over FILE. A failed compile, a kill
// or a full disk leaves an existing FILE as it was and no partial file
// behind. A FILE that is a symbolic link, a device, a FIFO or a directory
// is refused (never replaced or written through), and so is the model
// being compiled or any other file the compile read. "-" is stdout.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_DRIVER_OUTPUTFILE_H
#define TFMC_DRIVER_OUTPUTFILE_H

#include "support/FileIO.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace tfmc::driver {

class OutputFile {
public:
  /// `path` is the file to write ("-": stdout); `input` is the model the
  /// compile reads, which the output may not be.
  OutputFile(std::string path, std::string input)
      : path(std::move(path)), input(std::move(input)) {}

  /// Checks that the path can be written, so that a bad -o is reported
  /// before any work: `error` is one line ("-o PATH: refusing to replace a
  /// symbolic link; ..."). The temporary exists only while commit()
  /// writes, so that a compile killed midway leaves nothing behind.
  bool open(std::string &error);

  /// Writes `contents` and moves it into place. Until then, nothing at the
  /// path has changed; a failure leaves it unchanged.
  bool commit(llvm::StringRef contents, std::string &error);

private:
  std::optional<support::OutputFile> create(std::string &error) const;

  std::string path;
  std::string input;
};

} // namespace tfmc::driver

#endif // TFMC_DRIVER_OUTPUTFILE_H
