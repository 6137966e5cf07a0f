//===- GgufWeights.cpp - A GGUF file's tensors as weights -----------------===//
//===----------------------------------------------------------------------===//

#include "runtime/core/GgufWeights.h"
#include "support/FileIO.h"
#include "support/Gguf.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfmc::runtime {
namespace {

using support::GgmlType;

std::optional<DType> plainDType(GgmlType type) {
  switch (type) {
  case GgmlType::F32: return DType::F32;
  case GgmlType::F16: return DType::F16;
  case GgmlType::BF16: return DType::BF16;
  case GgmlType::F64: return DType::F64;
  case GgmlType::I8: return DType::I8;
  case GgmlType::I16: return DType::I16;
  case GgmlType::I32: return DType::I32;
  case GgmlType::I64: return DType::I64;
  default: return std::nullopt;
  }
}

} // namespace

const char *ggmlBlockName(int32_t type) {
  if (type < 0)
    return "?";
  std::optional<GgmlType> known =
      support::ggmlTypeFromNumber(static_cast<uint32_t>(type));
  return known ? support::ggmlTypeInfo(*known).name : "?";
}

std::optional<GgufWeights> GgufWeights::open(const std::string &path,
                                             std::string &error) {
  try {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat info;
    if (fd < 0 || ::fstat(fd, &info) != 0) {
      error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
      if (fd >= 0)
        ::close(fd);
      return std::nullopt;
    }
    if (!S_ISREG(info.st_mode)) {
      error = fmt::format("{}: not a regular file", path);
      ::close(fd);
      return std::nullopt;
    }
    support::noteInputFile(path, info.st_dev, info.st_ino);
    const auto size = static_cast<std::size_t>(info.st_size);
    std::optional<FileMapping> mapping = FileMapping::map(fd, size, path, error);
    ::close(fd);
    if (!mapping)
      return std::nullopt;
    return fromMapping(std::move(*mapping), path, error);
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot read: {}", path, support::oneLine(e.what()));
    return std::nullopt;
  }
}

std::optional<GgufWeights> GgufWeights::fromMapping(FileMapping mapping,
                                                    const std::string &path,
                                                    std::string &error) {
  try {
    const std::size_t size = mapping.size();
    // The header is parsed from the mapping the tensors are read from (a
    // vocabulary's metadata took 2.8 ms read through a window with pread,
    // as the compiler reads it).
    std::optional<support::GgufFile> header =
        support::parseGguf(path, mapping.data(), size, size, error);
    if (!header)
      return std::nullopt;
    GgufWeights file;
    file.path_ = path;
    std::optional<std::string_view> arch =
        header->getString("general.architecture", error);
    if (!arch)
      return std::nullopt;
    file.architecture_ = std::string(*arch);
    file.mapping_ = std::move(mapping);
    const auto *base =
        static_cast<const uint8_t *>(file.mapping_.data()) + header->dataOffset();

    for (const support::GgufTensorInfo &tensor : header->tensors()) {
      TensorView view;
      view.name = tensor.name;
      for (auto dim = tensor.dims.rbegin(); dim != tensor.dims.rend(); ++dim)
        view.shape.push_back(static_cast<int64_t>(*dim));
      view.data = base + tensor.offset;
      view.bytes = static_cast<std::size_t>(tensor.bytes);
      if (std::optional<DType> dtype = plainDType(tensor.type)) {
        view.dtype = *dtype;
      } else {
        view.dtype = DType::U8;
        view.ggmlBlocks = static_cast<int32_t>(tensor.type);
      }
      file.byName_.emplace(view.name, file.tensors_.size());
      file.tensors_.push_back(std::move(view));
    }
    return file;
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot read: {}", path, support::oneLine(e.what()));
    return std::nullopt;
  }
}

const TensorView *GgufWeights::find(std::string_view name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

} // namespace tfmc::runtime
