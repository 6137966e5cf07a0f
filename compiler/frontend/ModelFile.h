//===- ModelFile.h - A model path, whatever it names ------------*- C++ -*-===//
//
// The one place that reads a model path and decides what it is: a .tfm
// description (parseModel), a Hugging Face model, given as the directory
// holding config.json or as a path ending in `.json` (importHfConfigText),
// or a GGUF file, by its `.gguf` suffix or its magic (importGgufFile). The
// text formats are read through support/FileIO's readRegularFile, with the
// limits of docs/user-guide.md, "Limits"; a GGUF file's header through
// support/Gguf.h, never its tensor data.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_MODELFILE_H
#define TFMC_FRONTEND_MODELFILE_H

#include "compiler/frontend/AST.h"

#include <string>

namespace tfmc::frontend {

/// The kinds of model a path can name.
enum class ModelFormat { Tfm, HfConfig, Gguf };

/// What `path` names: a directory, or a name ending in `.json`, is a
/// Hugging Face config; a name ending in `.gguf`, or a regular file that
/// starts with "GGUF", a GGUF file; anything else a .tfm description.
ModelFormat modelFormatOf(const std::string &path);

/// Reads and parses the model at `path`. A file that cannot be read is an
/// error whose location is the file alone (line and column 0); for a
/// Hugging Face directory, the file is DIR/config.json.
ParseResult parseModelFile(const std::string &path);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_MODELFILE_H
