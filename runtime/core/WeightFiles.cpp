//===- WeightFiles.cpp - A model's weights: one file or a sharded set -----===//
//
// The index format, as transformers writes it (save_pretrained with
// max_shard_size):
//   {"metadata": {"total_size": N}, "weight_map": {TENSOR: SHARD_FILE, ...}}
// Everything in it is untrusted: a shard name may not leave the index's
// directory, nlohmann's exceptions stop here, and duplicate keys (which
// nlohmann would silently collapse) are refused.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/WeightFiles.h"
#include "support/EmbeddedWeights.h"
#include "support/FileIO.h"
#include "support/Gguf.h"
#include "support/Json.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <set>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfmc::runtime {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

/// What `--weights PATH` names: a safetensors file or an index.
struct Resolved {
  std::string path;
  bool index = false;
};

std::optional<Resolved> resolve(const std::string &path, std::string &error) {
  if (isDirectory(path)) {
    // A checkpoint directory: the single file wins, as in transformers.
    for (bool index : {false, true}) {
      std::string candidate =
          (fs::path(path) / (index ? kCheckpointIndex : kCheckpointFile))
              .string();
      if (exists(candidate))
        return Resolved{candidate, index};
    }
    error = fmt::format("{}: the directory has no {} or {}", path,
                        kCheckpointFile, kCheckpointIndex);
    return std::nullopt;
  }
  return Resolved{path, endsWith(path, ".json")};
}

/// One tensor's place as the index gives it.
struct IndexEntry {
  std::string tensor;
  std::string shard; ///< the shard's path (the index's directory joined)
};

/// Parses the index at `path` into its weight_map entries (in the map's
/// name order).
bool readIndex(const std::string &path, std::vector<IndexEntry> &entries,
               std::string &error) {
  std::string text;
  if (!support::readRegularFile(path, text, error))
    return false;
  // support/Json.h: nesting bounded, and every object's keys unique: a
  // top-level key or a tensor named twice in weight_map is ambiguous.
  support::JsonError failure;
  std::optional<Json> parsed = support::parseJson(text, failure);
  if (!parsed && failure.duplicateKey) {
    error = fmt::format(
        "{}: the index has {} twice", path,
        failure.duplicateParent == "weight_map"
            ? fmt::format("weight_map's tensor {}", support::quote(*failure.duplicateKey))
            : failure.duplicateParent.empty()
                  ? fmt::format("the key {}", support::quote(*failure.duplicateKey))
                  : fmt::format("the key {} in {}", support::quote(*failure.duplicateKey),
                                support::quote(failure.duplicateParent)));
    return false;
  }
  if (!parsed) {
    error = support::oneLine(failure.message(path));
    return false;
  }
  Json root = std::move(*parsed);
  if (!root.is_object() || !root.contains("weight_map")) {
    error = fmt::format("{}: the index has no weight_map (expected a Hugging "
                        "Face model.safetensors.index.json)",
                        path);
    return false;
  }
  const Json &map = root["weight_map"];
  if (!map.is_object() || map.empty()) {
    error = fmt::format("{}: weight_map is {}, expected an object mapping "
                        "each tensor to its shard file",
                        path,
                        map.is_object()
                            ? "empty"
                            : fmt::format("a JSON {}", map.type_name()));
    return false;
  }
  const fs::path directory = fs::path(path).parent_path();
  for (const auto &[tensor, shard] : map.items()) {
    if (!shard.is_string() || shard.get_ref<const std::string &>().empty()) {
      error = fmt::format("{}: weight_map's tensor {} maps to {}, expected a "
                          "shard file name",
                          path, support::quote(tensor),
                          shard.is_string()
                              ? "an empty string"
                              : fmt::format("a JSON {}", shard.type_name()));
      return false;
    }
    const std::string &name = shard.get_ref<const std::string &>();
    // A file name holds no NUL: the one in "a.safetensors\u0000x" cut the
    // name the system opened to "a.safetensors" (issue 25).
    if (name.find('\0') != std::string::npos) {
      error = fmt::format("{}: weight_map's tensor {} maps to {}, which holds "
                          "a NUL character (no file name does)",
                          path, support::quote(tensor), support::quote(name));
      return false;
    }
    fs::path relative(name);
    bool escapes = relative.is_absolute();
    for (const fs::path &part : relative)
      escapes = escapes || part == "..";
    if (escapes) {
      error = fmt::format("{}: weight_map's tensor {} maps to {}, outside the "
                          "index's directory",
                          path, support::quote(tensor), support::quote(name));
      return false;
    }
    entries.push_back(
        {tensor, (directory / relative).lexically_normal().string()});
  }
  return true;
}

} // namespace

namespace {

/// The running program's file, and the region its trailer names.
struct SelfRegion {
  int fd = -1;
  std::string name; // "PROGRAM (embedded weights)"
  format::EmbeddedRegion region;
};

std::optional<SelfRegion> selfRegion(std::string &error) {
  SelfRegion self;
  std::error_code code;
  const std::string program =
      std::filesystem::read_symlink("/proc/self/exe", code).string();
  self.name = (code ? std::string("this program") : program) +
              " (embedded weights)";
  self.fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  struct stat info;
  unsigned char trailer[format::kEmbeddedTrailerBytes];
  if (self.fd < 0 || ::fstat(self.fd, &info) != 0) {
    error = fmt::format("{}: cannot open: {}", self.name, std::strerror(errno));
  } else if (uint64_t(info.st_size) < format::kEmbeddedTrailerBytes ||
             ::pread(self.fd, trailer, sizeof trailer,
                     info.st_size - off_t(sizeof trailer)) !=
                 ssize_t(sizeof trailer)) {
    error = fmt::format("{}: the program carries no weights", self.name);
  } else if (std::optional<format::EmbeddedRegion> region =
                 format::readEmbeddedTrailer(trailer,
                                             uint64_t(info.st_size))) {
    self.region = *region;
    support::noteInputFile(program, info.st_dev, info.st_ino);
    return self;
  } else {
    error = fmt::format("{}: the program carries no weights: give --weights",
                        self.name);
  }
  if (self.fd >= 0)
    ::close(self.fd);
  return std::nullopt;
}

bool ggufMagic(const void *data, std::size_t size) {
  return size >= 4 && std::memcmp(data, "GGUF", 4) == 0;
}

} // namespace

std::optional<WeightFiles::Embedded> WeightFiles::embedded() {
  std::string error;
  std::optional<SelfRegion> self = selfRegion(error);
  if (!self)
    return std::nullopt;
  char magic[4] = {};
  const bool read = ::pread(self->fd, magic, sizeof magic,
                            off_t(self->region.offset)) == ssize_t(sizeof magic);
  ::close(self->fd);
  return Embedded{self->region.size,
                  read && ggufMagic(magic, sizeof magic) ? "GGUF"
                                                         : "safetensors"};
}

std::optional<WeightFiles> WeightFiles::open(const std::string &path,
                                             std::string &error) {
  if (path.empty()) {
    std::optional<SelfRegion> self = selfRegion(error);
    if (!self)
      return std::nullopt;
    std::optional<FileMapping> mapping =
        FileMapping::map(self->fd, std::size_t(self->region.size), self->name,
                         error, self->region.offset);
    ::close(self->fd);
    if (!mapping)
      return std::nullopt;
    WeightFiles files;
    files.path_ = self->name;
    if (ggufMagic(mapping->data(), mapping->size())) {
      files.gguf_ = GgufWeights::fromMapping(std::move(*mapping), self->name,
                                             error);
      if (!files.gguf_)
        return std::nullopt;
      return files;
    }
    std::optional<SafetensorsFile> file =
        SafetensorsFile::fromMapping(std::move(*mapping), self->name, error);
    if (!file)
      return std::nullopt;
    files.files_.push_back(std::move(*file));
    return files;
  }
  try {
    std::optional<Resolved> resolved = resolve(path, error);
    if (!resolved)
      return std::nullopt;
    WeightFiles files;
    files.path_ = resolved->path;
    if (!resolved->index && support::isGgufPath(resolved->path)) {
      files.gguf_ = GgufWeights::open(resolved->path, error);
      if (!files.gguf_)
        return std::nullopt;
      return files;
    }
    if (!resolved->index) {
      std::optional<SafetensorsFile> file =
          SafetensorsFile::open(resolved->path, error);
      if (!file)
        return std::nullopt;
      files.files_.push_back(std::move(*file));
      return files;
    }

    files.sharded_ = true;
    const std::string &index = resolved->path;
    std::vector<IndexEntry> entries;
    if (!readIndex(index, entries, error))
      return std::nullopt;
    // Each shard once, in name order, with the tensors the index puts there.
    std::map<std::string, std::vector<const IndexEntry *>> byShard;
    for (const IndexEntry &entry : entries)
      byShard[entry.shard].push_back(&entry);
    std::map<std::string, std::size_t> shardNumber;
    for (const auto &[shard, tensors] : byShard) {
      std::optional<SafetensorsFile> file = SafetensorsFile::open(shard, error);
      if (!file) {
        error = fmt::format("{} (the index {} puts {}{} in this shard)", error,
                            index, support::quote(tensors.front()->tensor),
                            tensors.size() > 1
                                ? fmt::format(" and {} more", tensors.size() - 1)
                                : "");
        return std::nullopt;
      }
      shardNumber[shard] = files.files_.size();
      files.files_.push_back(std::move(*file));
    }

    // The index and the shards must agree both ways: every tensor the index
    // places is in its shard, and every tensor of a shard is placed there.
    for (const IndexEntry &entry : entries) {
      std::size_t number = shardNumber.at(entry.shard);
      if (!files.files_[number].find(entry.tensor)) {
        error = fmt::format("{}: missing tensor {} (the index {} puts it in "
                            "this shard)",
                            entry.shard, support::quote(entry.tensor), index);
        return std::nullopt;
      }
      files.shardOf_.emplace(entry.tensor, number);
    }
    for (const SafetensorsFile &file : files.files_)
      for (const TensorView &tensor : file.tensors()) {
        auto placed = files.shardOf_.find(tensor.name);
        if (placed == files.shardOf_.end()) {
          error = fmt::format("{}: tensor {} is not in the index {}",
                              file.path(), support::quote(tensor.name), index);
          return std::nullopt;
        }
        const SafetensorsFile &other = files.files_[placed->second];
        if (&other != &file) {
          error = fmt::format("{}: tensor {} is in two places: this shard "
                              "and {}, where the index {} puts it",
                              file.path(), support::quote(tensor.name), other.path(),
                              index);
          return std::nullopt;
        }
      }
    return files;
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot read: {}", path, support::oneLine(e.what()));
    return std::nullopt;
  }
}

std::vector<std::string> WeightFiles::inputPaths(const std::string &path) {
  try {
    std::string error;
    std::optional<Resolved> resolved = resolve(path, error);
    if (!resolved)
      return {path};
    std::vector<std::string> paths = {resolved->path};
    std::vector<IndexEntry> entries;
    if (resolved->index && readIndex(resolved->path, entries, error)) {
      std::set<std::string> shards;
      for (const IndexEntry &entry : entries)
        if (shards.insert(entry.shard).second)
          paths.push_back(entry.shard);
    }
    return paths;
  } catch (const std::exception &) {
    return {path};
  }
}

const SafetensorsFile *WeightFiles::holder(std::string_view name) const {
  if (gguf_)
    return nullptr;
  if (!sharded_)
    return files_.front().find(name) ? &files_.front() : nullptr;
  auto it = shardOf_.find(name);
  return it == shardOf_.end() ? nullptr : &files_[it->second];
}

const std::string &WeightFiles::pathOf(std::string_view name) const {
  const SafetensorsFile *file = holder(name);
  return file ? file->path() : path_;
}

const std::map<std::string, std::string> &
WeightFiles::metadataOf(std::string_view name) const {
  static const std::map<std::string, std::string> none;
  const SafetensorsFile *file = holder(name);
  return file ? file->metadata() : none;
}

std::vector<const TensorView *> WeightFiles::allTensors() const {
  std::vector<const TensorView *> all;
  if (gguf_)
    for (const TensorView &tensor : gguf_->tensors())
      all.push_back(&tensor);
  for (const SafetensorsFile &file : files_)
    for (const TensorView &tensor : file.tensors())
      all.push_back(&tensor);
  return all;
}

const TensorView *WeightFiles::find(std::string_view name) const {
  if (gguf_)
    return gguf_->find(name);
  const SafetensorsFile *file = holder(name);
  return file ? file->find(name) : nullptr;
}

} // namespace tfmc::runtime
