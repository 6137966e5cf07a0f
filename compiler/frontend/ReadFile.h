//===- ReadFile.h - Reading an input file, bounded --------------*- C++ -*-===//
//
// Every file tfmc reads as input goes through here: the path must name a
// regular file (a FIFO would block, /dev/zero never ends) of at most a
// stated size (README, "Limits"), so that no input makes tfmc wait forever
// or read until it runs out of memory.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_READFILE_H
#define TFMC_FRONTEND_READFILE_H

#include <cstdint>
#include <optional>
#include <string>

namespace tfmc::frontend {

/// Reads the regular file `path` whole. On failure returns nullopt with
/// `error` set to one line without the path ("cannot open file: No such
/// file or directory", "not a regular file (a FIFO)", "the file is N bytes,
/// more than the limit of M") and `errno` holding the system's reason, or 0
/// when the file itself was refused.
std::optional<std::string> readInputFile(const std::string &path,
                                         int64_t maxBytes, std::string &error);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_READFILE_H
