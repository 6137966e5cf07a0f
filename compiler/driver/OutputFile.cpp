//===- OutputFile.cpp - tfmc's textual -o, whole or not at all ------------===//

#include "compiler/driver/OutputFile.h"

#include "llvm/Support/raw_ostream.h"

namespace tfmc::driver {

std::optional<support::OutputFile>
OutputFile::create(std::string &error) const {
  return support::OutputFile::create("-o", path, {{"the model", input}},
                                     /*refuseFilesRead=*/true, error);
}

bool OutputFile::open(std::string &error) {
  if (path == "-")
    return true;
  // A trial: the checks and a temporary in the directory, discarded.
  return create(error).has_value();
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
  std::optional<support::OutputFile> file = create(error);
  return file && file->write(contents.data(), contents.size(), error) &&
         file->commit(error);
}

} // namespace tfmc::driver
