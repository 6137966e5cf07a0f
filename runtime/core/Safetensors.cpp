//===- Safetensors.cpp - Read and write safetensors files -----------------===//
//
// The file format, as the reference implementation defines it:
//   [0, 8)        N, the header length, u64 little-endian
//   [8, 8 + N)    a JSON object: {"__metadata__": {str: str}?,
//                   NAME: {"dtype": D, "shape": [dims], "data_offsets": [b, e]}}
//   [8 + N, end)  the data section; offsets are relative to its start
//
// Everything from the file is untrusted: each number is range-checked before
// it becomes a size or a pointer, and nlohmann's exceptions stop here.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Safetensors.h"
#include "support/FileIO.h"
#include "support/Json.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; tensors are read in place");

namespace tfmc::runtime {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kHeaderLengthBytes = 8;
constexpr uint64_t kMaxInt64 =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());


/// "an array", "a string", ...: what a JSON value is, for messages.
std::string withArticle(const Json &value) {
  switch (value.type()) {
  case Json::value_t::array: return "an array";
  case Json::value_t::object: return "an object";
  case Json::value_t::string: return "a string";
  case Json::value_t::boolean: return "a boolean";
  case Json::value_t::null: return "null";
  default: return "a number";
  }
}

/// A JSON value as messages show it: scalars as JSON (dump escapes control
/// characters; long strings are cut), containers by kind only (dumping them
/// could be long or deeply recursive).
std::string describe(const Json &value) {
  if (value.is_array() || value.is_object())
    return withArticle(value);
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}


/// A non-negative JSON integer as u64, or nothing (negative, float, other).
std::optional<uint64_t> asU64(const Json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::string allDTypeNames() {
  std::string text;
  constexpr std::size_t count = std::size(kAllDTypes);
  for (std::size_t i = 0; i < count; ++i) {
    if (i)
      text += i + 1 == count ? " or " : ", ";
    text += dtypeName(kAllDTypes[i]);
  }
  return text;
}

/// Where a tensor's bytes lie in the data section, kept for the overlap check.
struct Extent {
  uint64_t begin;
  uint64_t end;
  std::size_t tensor; ///< index into the tensors
};

/// Validates one header entry and appends its view. `data` is the start of
/// the data section (`dataBytes` long).
bool parseTensorEntry(const std::string &path, const std::string &name,
                      const Json &entry, const unsigned char *data,
                      uint64_t dataBytes, std::vector<TensorView> &tensors,
                      std::vector<Extent> &extents, std::string &error) {
  std::string where = fmt::format("{}: tensor {}", path, support::quote(name));
  if (!entry.is_object()) {
    error = fmt::format("{}: entry is {}, expected an object with dtype, "
                        "shape and data_offsets",
                        where, withArticle(entry));
    return false;
  }
  for (const auto &[key, value] : entry.items()) {
    (void)value;
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      error = fmt::format("{}: unexpected key {} (expected dtype, shape and "
                          "data_offsets)",
                          where, support::quote(key));
      return false;
    }
  }
  for (const char *key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) {
      error = fmt::format("{}: missing '{}'", where, key);
      return false;
    }
  }

  // dtype
  const Json &dtypeValue = entry["dtype"];
  if (!dtypeValue.is_string()) {
    error = fmt::format("{}: dtype is {}, expected a string", where,
                        withArticle(dtypeValue));
    return false;
  }
  std::optional<DType> dtype = parseDType(dtypeValue.get_ref<const std::string &>());
  if (!dtype) {
    error = fmt::format("{}: unknown dtype {} (expected {})", where,
                        support::quote(dtypeValue.get_ref<const std::string &>()),
                        allDTypeNames());
    return false;
  }

  // shape
  const Json &shapeValue = entry["shape"];
  if (!shapeValue.is_array()) {
    error = fmt::format("{}: shape is {}, expected an array of integers", where,
                        withArticle(shapeValue));
    return false;
  }
  std::vector<uint64_t> dims;
  std::string shapeText = "[";
  for (std::size_t i = 0; i < shapeValue.size(); ++i) {
    std::optional<uint64_t> dim = asU64(shapeValue[i]);
    if (!dim) {
      error = fmt::format("{}: shape[{}] is {}, expected a non-negative integer",
                          where, i, describe(shapeValue[i]));
      return false;
    }
    dims.push_back(*dim);
    shapeText += fmt::format("{}{}", i ? ", " : "", *dim);
  }
  shapeText += "]";
  // Multiplying in order, as the reference implementation does: a shape
  // whose running product overflows is rejected even if a later dim is 0.
  uint64_t count = 1;
  for (uint64_t dim : dims) {
    if (dim > kMaxInt64 || __builtin_mul_overflow(count, dim, &count) ||
        count > kMaxInt64) {
      error = fmt::format("{}: shape {} has too many elements (the count "
                          "overflows 64 bits)",
                          where, shapeText);
      return false;
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, dtypeSize(*dtype), &bytes) ||
      bytes > kMaxInt64) {
    error = fmt::format("{}: {} {} is too large (its byte size overflows 64 "
                        "bits)",
                        where, dtypeName(*dtype), shapeText);
    return false;
  }

  // data_offsets
  const Json &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    error = fmt::format("{}: data_offsets is {}, expected [begin, end]", where,
                        offsets.is_array()
                            ? fmt::format("an array of {} elements",
                                          offsets.size())
                            : withArticle(offsets));
    return false;
  }
  std::optional<uint64_t> begin = asU64(offsets[0]);
  std::optional<uint64_t> end = asU64(offsets[1]);
  std::string offsetsText =
      fmt::format("[{}, {}]", describe(offsets[0]), describe(offsets[1]));
  if (!begin || !end) {
    error = fmt::format("{}: data_offsets {} are not non-negative integers",
                        where, offsetsText);
    return false;
  }
  if (*begin > *end) {
    error = fmt::format("{}: data_offsets {} begin after they end", where,
                        offsetsText);
    return false;
  }
  if (*end - *begin != bytes) {
    error = fmt::format("{}: data_offsets {} hold {} bytes, but {} {} needs {}",
                        where, offsetsText, *end - *begin, dtypeName(*dtype),
                        shapeText, bytes);
    return false;
  }
  if (*end > dataBytes) {
    error = fmt::format("{}: data_offsets {} end beyond the data section ({} "
                        "bytes)",
                        where, offsetsText, dataBytes);
    return false;
  }

  TensorView view;
  view.name = name;
  view.dtype = *dtype;
  view.shape.assign(dims.begin(), dims.end());
  view.data = data + *begin;
  view.bytes = static_cast<std::size_t>(bytes);
  tensors.push_back(std::move(view));
  if (bytes > 0)
    extents.push_back({*begin, *end, tensors.size() - 1});
  return true;
}

/// Parses and validates the header; fills `tensors` (name order) and
/// `metadata`.
bool parseHeader(const std::string &path, const unsigned char *header,
                 uint64_t headerBytes, const unsigned char *data,
                 uint64_t dataBytes, std::vector<TensorView> &tensors,
                 std::map<std::string, std::string> &metadata,
                 std::string &error) {
  // support/Json.h: nesting bounded, and every object's keys unique (a
  // weights file with two entries for one name is ambiguous).
  support::JsonError failure;
  std::optional<Json> parsed = support::parseJson(
      std::string_view(reinterpret_cast<const char *>(header),
                       static_cast<std::size_t>(headerBytes)),
      failure);
  if (!parsed && failure.duplicateKey && failure.duplicateParent.empty()) {
    error = fmt::format("{}: header names {} twice", path,
                        support::quote(*failure.duplicateKey));
    return false;
  }
  if (!parsed) {
    error = support::oneLine(fmt::format("{}: header: {}", path, failure.describe()));
    return false;
  }
  Json root = std::move(*parsed);
  if (!root.is_object()) {
    error = fmt::format("{}: header is {}, expected a JSON object", path,
                        withArticle(root));
    return false;
  }

  std::vector<Extent> extents;
  for (auto &[name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        error = fmt::format("{}: __metadata__ is {}, expected an object of "
                            "strings",
                            path, withArticle(entry));
        return false;
      }
      for (auto &[key, value] : entry.items()) {
        if (!value.is_string()) {
          error = fmt::format("{}: __metadata__ entry {} is {}, expected a "
                              "string",
                              path, support::quote(key), withArticle(value));
          return false;
        }
        metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    if (name.empty()) {
      error = fmt::format("{}: header has a tensor with an empty name", path);
      return false;
    }
    // items() walks a std::map: tensors come in byte-wise name order, as
    // `find` needs.
    if (!parseTensorEntry(path, name, entry, data, dataBytes, tensors, extents,
                          error))
      return false;
  }

  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // Empty tensors occupy no bytes and overlap nothing. Among the others,
  // sorted by begin, any overlap shows up between some range and the one
  // reaching furthest before it.
  const Extent *furthest = nullptr;
  for (const Extent &extent : extents) {
    if (furthest && extent.begin < furthest->end) {
      error = fmt::format("{}: tensors {} and {} overlap: data_offsets [{}, {}] "
                          "and [{}, {}]",
                          path, support::quote(tensors[furthest->tensor].name),
                          support::quote(tensors[extent.tensor].name),
                          furthest->begin, furthest->end, extent.begin,
                          extent.end);
      return false;
    }
    if (!furthest || extent.end > furthest->end)
      furthest = &extent;
  }
  return true;
}

std::string systemError() { return std::strerror(errno); }


} // namespace

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

std::optional<SafetensorsFile> SafetensorsFile::open(const std::string &path,
                                                     std::string &error) {
  try {
    // O_NONBLOCK: a FIFO must not hang us; it is rejected below anyway.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      error = fmt::format("{}: cannot open: {}", path, systemError());
      return std::nullopt;
    }
    struct stat info;
    if (::fstat(fd, &info) != 0) {
      error = fmt::format("{}: cannot open: {}", path, systemError());
      ::close(fd);
      return std::nullopt;
    }
    if (S_ISDIR(info.st_mode) || !S_ISREG(info.st_mode)) {
      error = fmt::format("{}: cannot open: {}", path,
                          S_ISDIR(info.st_mode) ? std::strerror(EISDIR)
                                                : "not a regular file");
      ::close(fd);
      return std::nullopt;
    }
    support::noteInputFile(path, info.st_dev, info.st_ino);
    uint64_t fileBytes = static_cast<uint64_t>(info.st_size);
    if (fileBytes == 0) {
      error = fmt::format("{}: file is empty", path);
      ::close(fd);
      return std::nullopt;
    }
    if (fileBytes < kHeaderLengthBytes) {
      error = fmt::format("{}: file is truncated: {} bytes, but the header "
                          "length alone takes 8",
                          path, fileBytes);
      ::close(fd);
      return std::nullopt;
    }

    std::optional<FileMapping> mapping = FileMapping::map(
        fd, static_cast<std::size_t>(fileBytes), path, error);
    ::close(fd);
    if (!mapping)
      return std::nullopt;
    return fromMapping(std::move(*mapping), path, error);
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot read: {}", path, support::oneLine(e.what()));
    return std::nullopt;
  }
}

std::optional<SafetensorsFile>
SafetensorsFile::fromMapping(FileMapping mapping, const std::string &path,
                             std::string &error) {
  try {
    const uint64_t fileBytes = mapping.size();
    if (fileBytes < kHeaderLengthBytes) {
      error = fmt::format("{}: file is truncated: {} bytes, but the header "
                          "length alone takes 8",
                          path, fileBytes);
      return std::nullopt;
    }
    SafetensorsFile file;
    file.path_ = path;
    file.mapping_ = std::move(mapping);

    const auto *bytes = static_cast<const unsigned char *>(file.mapping_.data());
    uint64_t headerBytes = 0;
    std::memcpy(&headerBytes, bytes, sizeof headerBytes); // little-endian host
    uint64_t follow = fileBytes - kHeaderLengthBytes;
    if (headerBytes > kMaxSafetensorsHeaderBytes) {
      error = fmt::format("{}: header length {} exceeds the limit of {} bytes "
                          "(is this a safetensors file?)",
                          path, headerBytes, kMaxSafetensorsHeaderBytes);
      return std::nullopt;
    }
    if (headerBytes > follow) {
      error = fmt::format("{}: file is truncated: header length {} but only {} "
                          "bytes follow",
                          path, headerBytes, follow);
      return std::nullopt;
    }
    const unsigned char *header = bytes + kHeaderLengthBytes;
    if (!parseHeader(path, header, headerBytes, header + headerBytes,
                     follow - headerBytes, file.tensors_, file.metadata_,
                     error))
      return std::nullopt;
    return file;
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot read: {}", path, support::oneLine(e.what()));
    return std::nullopt;
  }
}

const TensorView *SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const TensorView &tensor, std::string_view key) {
        return std::string_view(tensor.name) < key;
      });
  if (it == tensors_.end() || it->name != name)
    return nullptr;
  return &*it;
}

//===----------------------------------------------------------------------===//
// Aligned copies
//===----------------------------------------------------------------------===//

void AlignedBuffer::Free::operator()(void *pointer) const {
  if (mappedBytes > 0)
    ::munmap(pointer, mappedBytes);
  else
    std::free(pointer);
}

bool hugePageBuffers() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool hugePages = [] {
    const char *value = std::getenv("TFMC_HUGE_PAGES");
    return !value || std::string_view(value) != "0";
  }();
  return hugePages;
#endif
}

AlignedBuffer::AlignedBuffer(std::size_t bytes) {
  constexpr std::size_t alignment = 64;
  // Buffers of a huge page or more (the arena, the KV cache, converted
  // weights) in transparent huge pages where the kernel offers them
  // (madvise mode included): a page touched for the first time costs a
  // fault, and a decode step touches a new KV row per sequence, layer and
  // K/V. On a 2-core VM, where a fault cost about 14 us, a batch-8 decode
  // step of GPT-2 small took some 210 of them (docs/performance.md).
  // AddressSanitizer builds keep malloc, whose bounds it checks;
  // TFMC_HUGE_PAGES=0 keeps it too (where the kernel's THP `defrag` setting
  // makes such faults stall in compaction): hugePageBuffers().
  constexpr std::size_t hugePage = kHugePageBytes;
  if (hugePageBuffers() && bytes >= hugePage && bytes <= SIZE_MAX - 2 * hugePage) {
    const std::size_t rounded = (bytes + hugePage - 1) / hugePage * hugePage;
    // Map one huge page more, then unmap the ends around an aligned start.
    void *mapped = ::mmap(nullptr, rounded + hugePage, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED)
      return;
    const auto start = reinterpret_cast<std::uintptr_t>(mapped);
    const std::uintptr_t aligned = (start + hugePage - 1) / hugePage * hugePage;
    if (aligned > start)
      ::munmap(mapped, aligned - start);
    if (const std::size_t tail = start + hugePage - aligned)
      ::munmap(reinterpret_cast<void *>(aligned + rounded), tail);
    void *data = reinterpret_cast<void *>(aligned);
    (void)::madvise(data, rounded, MADV_HUGEPAGE); // advice: may be refused
    storage_ = std::unique_ptr<void, Free>(data, Free{rounded});
    bytes_ = bytes;
    return;
  }
  // aligned_alloc wants a size that is a multiple of the alignment.
  std::size_t rounded = (std::max<std::size_t>(bytes, 1) + alignment - 1) /
                        alignment * alignment;
  if (rounded < bytes)
    return; // overflow
  storage_.reset(std::aligned_alloc(alignment, rounded));
  if (storage_)
    bytes_ = bytes;
}

AlignedBuffer copyToAligned(const TensorView &tensor) {
  AlignedBuffer buffer(tensor.bytes);
  if (buffer.data() && tensor.bytes > 0)
    std::memcpy(buffer.data(), tensor.data, tensor.bytes);
  return buffer;
}

//===----------------------------------------------------------------------===//
// Checked lookups
//===----------------------------------------------------------------------===//

const TensorView *expectTensor(const SafetensorsFile &file,
                               std::string_view name, DType dtype,
                               const std::vector<int64_t> &shape,
                               std::string &error) {
  try {
    const TensorView *tensor = file.find(name);
    if (!tensor) {
      error = fmt::format("{}: missing tensor {}", file.path(), support::quote(name));
      return nullptr;
    }
    if (tensor->dtype != dtype) {
      error = fmt::format("{}: tensor {} has dtype {}, expected {}",
                          file.path(), support::quote(name), dtypeName(tensor->dtype),
                          dtypeName(dtype));
      return nullptr;
    }
    if (tensor->shape != shape) {
      error = fmt::format("{}: tensor {} has shape {}, expected {}",
                          file.path(), support::quote(name),
                          formatShape(tensor->shape), formatShape(shape));
      return nullptr;
    }
    return tensor;
  } catch (const std::exception &e) {
    error = fmt::format("{}: {}", file.path(), support::oneLine(e.what()));
    return nullptr;
  }
}

std::optional<IntegerTensor> readIntegerTensor(const SafetensorsFile &file,
                                               std::string_view name,
                                               IntegerInputKind kind,
                                               std::string &error) {
  try {
    const TensorView *tensor = file.find(name);
    if (!tensor) {
      error = fmt::format("{}: missing tensor {}", file.path(), support::quote(name));
      return std::nullopt;
    }
    bool accepted = tensor->dtype == DType::I64 || tensor->dtype == DType::I32;
    if (kind == IntegerInputKind::Mask)
      accepted = accepted || tensor->dtype == DType::Bool ||
                 tensor->dtype == DType::U8;
    if (!accepted) {
      error = fmt::format("{}: tensor {} has dtype {}, expected {}",
                          file.path(), support::quote(name), dtypeName(tensor->dtype),
                          kind == IntegerInputKind::Mask
                              ? "I64, I32, BOOL or U8"
                              : "I64 or I32");
      return std::nullopt;
    }

    IntegerTensor result;
    result.shape = tensor->shape;
    std::size_t count = static_cast<std::size_t>(tensor->numElements());
    result.values.resize(count);
    // Element by element through memcpy: the data need not be aligned.
    const auto *source = static_cast<const unsigned char *>(tensor->data);
    for (std::size_t i = 0; i < count; ++i) {
      switch (tensor->dtype) {
      case DType::I64:
        std::memcpy(&result.values[i], source + 8 * i, 8);
        break;
      case DType::I32: {
        int32_t value;
        std::memcpy(&value, source + 4 * i, 4);
        result.values[i] = value;
        break;
      }
      case DType::Bool:
        result.values[i] = source[i] != 0;
        break;
      default: // U8
        result.values[i] = source[i];
        break;
      }
    }
    return result;
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot read tensor {}: {}", file.path(),
                        support::quote(name), support::oneLine(e.what()));
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// Checks what the caller asks to write; the layout code below trusts it.
bool checkTensorsToWrite(const std::string &path,
                         const std::vector<TensorView> &tensors,
                         std::string &error) {
  std::set<std::string_view> names;
  for (const TensorView &tensor : tensors) {
    if (tensor.name.empty()) {
      error = fmt::format("{}: cannot write a tensor with an empty name", path);
      return false;
    }
    std::string where =
        fmt::format("{}: cannot write tensor {}", path, support::quote(tensor.name));
    if (tensor.name == "__metadata__") {
      error = fmt::format("{}: the name is reserved", where);
      return false;
    }
    if (!names.insert(tensor.name).second) {
      error = fmt::format("{}: the name is given twice", where);
      return false;
    }
    std::optional<int64_t> count = elementCount(tensor.shape);
    int64_t bytes = 0;
    if (!count) {
      error = fmt::format("{}: shape {} has a negative dimension or too many "
                          "elements",
                          where, formatShape(tensor.shape));
      return false;
    }
    if (__builtin_mul_overflow(*count, static_cast<int64_t>(dtypeSize(tensor.dtype)),
                               &bytes)) {
      error = fmt::format("{}: {} {} is too large", where,
                          dtypeName(tensor.dtype), formatShape(tensor.shape));
      return false;
    }
    if (static_cast<uint64_t>(bytes) != tensor.bytes) {
      error = fmt::format("{}: {} bytes given, but {} {} needs {}", where,
                          tensor.bytes, dtypeName(tensor.dtype),
                          formatShape(tensor.shape), bytes);
      return false;
    }
    if (tensor.bytes > 0 && !tensor.data) {
      error = fmt::format("{}: its data is null", where);
      return false;
    }
  }
  return true;
}

} // namespace

namespace {

/// The file's bytes for `tensors`, checked: the header, then each tensor's
/// data in `order`.
bool layOut(const std::string &path, const std::vector<TensorView> &tensors,
            const std::map<std::string, std::string> &metadata,
            std::string &header, std::vector<const TensorView *> &order,
            std::string &error) {
  if (!checkTensorsToWrite(path, tensors, error))
    return false;

  // Largest element size first, so that every tensor starts naturally
  // aligned (the data section starts at a multiple of 8); no gaps, as the
  // reference implementation requires.
  for (const TensorView &tensor : tensors)
    order.push_back(&tensor);
  std::sort(order.begin(), order.end(),
            [](const TensorView *a, const TensorView *b) {
              if (dtypeSize(a->dtype) != dtypeSize(b->dtype))
                return dtypeSize(a->dtype) > dtypeSize(b->dtype);
              return a->name < b->name;
            });

  Json json = Json::object(); // a std::map: keys come out sorted
  if (!metadata.empty())
    json["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorView *tensor : order) {
    json[tensor->name] = {
        {"dtype", dtypeName(tensor->dtype)},
        {"shape", tensor->shape},
        {"data_offsets", {offset, offset + tensor->bytes}},
    };
    offset += tensor->bytes;
  }
  // Names and metadata are the caller's strings: invalid UTF-8 is
  // replaced rather than thrown about.
  std::string text = json.dump(-1, ' ', false, Json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t headerBytes = text.size();
  header.assign(reinterpret_cast<const char *>(&headerBytes),
                sizeof headerBytes);
  header += text;
  return true;
}

} // namespace

bool writeSafetensors(support::OutputFile &file, const std::vector<TensorView> &tensors,
                      std::string &error,
                      const std::map<std::string, std::string> &metadata) {
  try {
    std::string header;
    std::vector<const TensorView *> order;
    if (!layOut(file.path(), tensors, metadata, header, order, error)) {
      file.discard();
      return false;
    }
    if (!file.write(header.data(), header.size(), error))
      return false;
    for (const TensorView *tensor : order)
      if (!file.write(tensor->data, tensor->bytes, error))
        return false;
    return file.commit(error);
  } catch (const std::exception &e) {
    file.discard();
    error = fmt::format("{}: cannot write: {}", file.path(), support::oneLine(e.what()));
    return false;
  }
}

bool writeSafetensors(const std::string &path,
                      const std::vector<TensorView> &tensors,
                      std::string &error,
                      const std::map<std::string, std::string> &metadata) {
  try {
    // Checked before the temporary exists, so a bad tensor leaves nothing.
    if (!checkTensorsToWrite(path, tensors, error))
      return false;
    // A library writer: its caller decides what it may replace (a test may
    // rewrite a file it read); a program's outputs refuse every file read.
    std::optional<support::OutputFile> file =
        support::OutputFile::create("", path, {}, /*refuseFilesRead=*/false, error);
    if (!file)
      return false;
    return writeSafetensors(*file, tensors, error, metadata);
  } catch (const std::exception &e) {
    error = fmt::format("{}: cannot write: {}", path, support::oneLine(e.what()));
    return false;
  }
}

} // namespace tfmc::runtime
