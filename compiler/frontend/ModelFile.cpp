//===- ModelFile.cpp - A model path, whatever it names --------------------===//

#include "compiler/frontend/ModelFile.h"
#include "compiler/frontend/GgufImport.h"
#include "compiler/frontend/HfConfig.h"
#include "compiler/frontend/Limits.h"
#include "support/FileIO.h"
#include "support/Gguf.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <sys/stat.h>

namespace tfmc::frontend {
namespace {

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// `DIR/config.json` for a directory.
std::string configPathIn(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  return dir == "/" ? "/config.json" : dir + "/config.json";
}

bool endsWith(const std::string &text, const char *suffix) {
  std::size_t length = std::strlen(suffix);
  return text.size() >= length &&
         text.compare(text.size() - length, length, suffix) == 0;
}

} // namespace

ModelFormat modelFormatOf(const std::string &path) {
  if (isDirectory(path) || endsWith(path, ".json"))
    return ModelFormat::HfConfig;
  if (support::isGgufPath(path))
    return ModelFormat::Gguf;
  return ModelFormat::Tfm;
}

ParseResult parseModelFile(const std::string &path) {
  ModelFormat format = modelFormatOf(path);
  // GGUF: header and metadata only, read in bounded pieces (support/Gguf.h);
  // the cap below is for text formats.
  if (format == ModelFormat::Gguf)
    return importGgufFile(path);
  bool fromDirectory = format == ModelFormat::HfConfig && isDirectory(path);
  std::string file = fromDirectory ? configPathIn(path) : path;
  std::string text;
  support::ReadFailure failure;
  if (!support::readRegularFile(file, text, failure, kMaxModelFileBytes)) {
    if (fromDirectory && failure.systemError == ENOENT)
      failure.reason += "; a Hugging Face model directory holds config.json";
    ParseResult result;
    result.error = Diagnostic{SourceLoc{file, 0, 0}, failure.reason};
    return result;
  }
  if (format == ModelFormat::HfConfig)
    return importHfConfigText(text, file);
  return parseModel(text, file);
}

} // namespace tfmc::frontend
