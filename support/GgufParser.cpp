//===- GgufParser.cpp - Reading and checking a GGUF file's header ---------===//
//
// Everything from the file is untrusted: each count is checked against the
// bytes that remain before it sizes an allocation, each length before it
// is read, and each size a tensor derives is computed with overflow checks.
// The order of the checks is the file's: the header, the keys one by one,
// the alignment, the tensor infos one by one, then the layout as a whole
// (duplicates, the data section's bounds, overlaps).
//
//===----------------------------------------------------------------------===//

#include "support/Gguf.h"
#include "support/FileIO.h"
#include "support/Text.h"
#include "support/Utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "GGUF numbers are little-endian and are read in place");

namespace tfmc::support {
namespace {

constexpr uint64_t kMaxInt64 =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
/// "GGUF", the version, the tensor count and the key count.
constexpr uint64_t kHeaderBytes = 24;
/// The least a key/value pair takes: a length, one byte of key, the value
/// type, a u8. A tensor info: a length, one byte of name, n_dims, one dim,
/// the ggml type and the offset.
constexpr uint64_t kMinKeyBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorBytes = 8 + 1 + 4 + 8 + 4 + 8;
/// An array's element type and count: the least an array element takes.
constexpr uint64_t kArrayHeaderBytes = 4 + 8;
constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kLastGgufType = static_cast<uint32_t>(GgufType::F64);
constexpr std::size_t kMinBufferBytes = 16;

/// ggml's types whose layout the reader does not know: named in the error.
struct UnreadType {
  uint32_t number;
  const char *name;
};
constexpr UnreadType kUnreadTypes[] = {
    {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
    {21, "IQ3_S"},   {22, "IQ2_S"},   {23, "IQ4_XS"},
    {29, "IQ1_M"},   {34, "TQ1_0"},  {35, "TQ2_0"},   {39, "MXFP4"},
};

std::string dimsText(const std::vector<uint64_t> &dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}


/// Where the parser's bytes come from: memory (parseGguf) or a file read
/// `capacity` bytes at a time into a window (readGgufFile).
class GgufInput {
public:
  GgufInput(const unsigned char *bytes, std::size_t size)
      : memory_(bytes), memorySize_(size) {}
  GgufInput(int fd, uint64_t fileSize, std::size_t capacity)
      : fd_(fd), fileSize_(fileSize), buffer_(capacity) {}

  /// The most one call of `at` may ask for.
  std::size_t capacity() const {
    return fd_ < 0 ? std::numeric_limits<std::size_t>::max() : buffer_.size();
  }

  /// `n` bytes at `offset` if they are at hand (in memory, or in the
  /// window) without reading; otherwise null.
  const unsigned char *peek(uint64_t offset, uint64_t n) const {
    if (fd_ < 0)
      return offset <= memorySize_ && n <= memorySize_ - offset
                 ? memory_ + offset
                 : nullptr;
    return offset >= windowStart_ && offset - windowStart_ <= windowBytes_ &&
                   n <= windowBytes_ - (offset - windowStart_)
               ? buffer_.data() + (offset - windowStart_)
               : nullptr;
  }

  /// `n` (<= capacity()) bytes at `offset`, which the caller checked lie in
  /// the file; null with `reason` set when they cannot be read.
  const unsigned char *at(uint64_t offset, std::size_t n, std::string &reason) {
    if (fd_ < 0) {
      if (offset > memorySize_ || n > memorySize_ - offset) {
        reason = fmt::format("the header continues past the {} bytes given",
                             memorySize_);
        return nullptr;
      }
      return memory_ + offset;
    }
    if (offset >= windowStart_ && offset - windowStart_ <= windowBytes_ &&
        n <= windowBytes_ - (offset - windowStart_))
      return buffer_.data() + (offset - windowStart_);
    // The window's bytes are all there was when the file was opened: a
    // shorter read means the file changed under us.
    std::size_t want = static_cast<std::size_t>(
        std::min<uint64_t>(buffer_.size(), fileSize_ - offset));
    windowBytes_ = 0;
    std::size_t got = 0;
    while (got < want) {
      ssize_t read = ::pread(fd_, buffer_.data() + got, want - got,
                             static_cast<off_t>(offset + got));
      if (read < 0 && errno == EINTR)
        continue;
      if (read < 0) {
        reason = std::strerror(errno);
        return nullptr;
      }
      if (read == 0) {
        reason = fmt::format("the file ends at byte {}, but it had {} bytes "
                             "when it was opened (did it change?)",
                             offset + got, fileSize_);
        return nullptr;
      }
      got += static_cast<std::size_t>(read);
    }
    windowStart_ = offset;
    windowBytes_ = want;
    return buffer_.data();
  }

private:
  const unsigned char *memory_ = nullptr;
  std::size_t memorySize_ = 0;
  int fd_ = -1;
  uint64_t fileSize_ = 0;
  std::vector<unsigned char> buffer_;
  uint64_t windowStart_ = 0;
  std::size_t windowBytes_ = 0;
};

} // namespace

/// Reads one file front to back (see the file comment).
class GgufParser {
public:
  GgufParser(GgufInput &input, const std::string &path, uint64_t fileSize,
             std::string &error)
      : input_(input), fileSize_(fileSize), error_(error) {
    file_.path_ = path;
    file_.fileSize_ = fileSize;
  }

  std::optional<GgufFile> parse() {
    if (!readHeader() || !readKeys() || !readAlignment() || !readTensors() ||
        !checkLayout())
      return std::nullopt;
    return std::move(file_);
  }

private:
  bool fail(const std::string &message) {
    error_ = oneLine(file_.path_ + ": " + message);
    return false;
  }

  /// Where the bytes the parser may read end: the file, or the header's
  /// limit in a larger file.
  uint64_t limit() const { return std::min(fileSize_, kMaxGgufHeaderBytes); }
  /// "the rest of the file" or the limit, for "cannot fit in ...".
  std::string restName() const {
    return fileSize_ > kMaxGgufHeaderBytes
               ? fmt::format("the {} bytes the header may take",
                             kMaxGgufHeaderBytes)
               : std::string("the rest of the file");
  }

  /// What a read is of, for messages: "the key", "string 3", "the key's
  /// length". Spelled out only when a message needs it (a vocabulary's
  /// strings are read by the 100,000).
  struct Item {
    std::string_view name;
    uint64_t index = kNoIndex;
    std::string_view suffix = {};
    static constexpr uint64_t kNoIndex = ~uint64_t(0);

    Item(const char *name) : name(name) {}
    Item(std::string_view name, uint64_t index, std::string_view suffix)
        : name(name), index(index), suffix(suffix) {}
    Item lengthOf() const { return Item(name, index, "'s length"); }
  };

  /// "key 'K': WHAT", or WHAT alone in the header.
  std::string within(const Item &what) const {
    std::string text(what.name);
    if (what.index != Item::kNoIndex)
      text += fmt::format(" {}", what.index);
    text += what.suffix;
    return where_.empty() ? text : fmt::format("{}: {}", where_, text);
  }

  /// Checks that `n` bytes at the position lie within limit().
  bool need(uint64_t n, const Item &what) {
    if (n <= fileSize_ - pos_ && n <= limit() - pos_)
      return true;
    if (n > fileSize_ - pos_)
      return fail(fmt::format("{} ({} bytes at offset {}) runs past the end "
                              "of the file ({} bytes)",
                              within(what), n, pos_, fileSize_));
    return fail(fmt::format("{} ({} bytes at offset {}) runs past the {} "
                            "bytes the header may take",
                            within(what), n, pos_, kMaxGgufHeaderBytes));
  }

  /// Copies `n` bytes at the position to `out` and moves past them.
  bool copy(unsigned char *out, uint64_t n, const Item &what) {
    if (!need(n, what))
      return false;
    while (n > 0) {
      std::size_t chunk =
          static_cast<std::size_t>(std::min<uint64_t>(n, input_.capacity()));
      std::string reason;
      const unsigned char *bytes = input_.at(pos_, chunk, reason);
      if (!bytes)
        return fail(fmt::format("cannot read {} at offset {}: {}",
                                within(what), pos_, reason));
      std::memcpy(out, bytes, chunk);
      out += chunk;
      pos_ += chunk;
      n -= chunk;
    }
    return true;
  }

  template <typename T> bool read(T &value, const Item &what) {
    return copy(reinterpret_cast<unsigned char *>(&value), sizeof value, what);
  }

  /// Appends a string (a u64 length, then its bytes) to `out`: `what` names
  /// it ("the key", "string 3").
  bool readString(std::string &out, const Item &what) {
    uint64_t length = 0;
    if (!read(length, what.lengthOf()) || !need(length, what))
      return false;
    if (const unsigned char *bytes = input_.peek(pos_, length)) {
      // At hand: appended as it is (a zero-filled resize and a copy took
      // a vocabulary's 32,000 strings 2.8 ms, this 1.2).
      out.append(reinterpret_cast<const char *>(bytes),
                 static_cast<std::size_t>(length));
      pos_ += length;
      return true;
    }
    std::size_t old = out.size();
    out.resize(old + static_cast<std::size_t>(length));
    return copy(reinterpret_cast<unsigned char *>(out.data() + old), length,
                what);
  }

  bool readHeader() {
    if (fileSize_ == 0)
      return fail("file is empty");
    std::size_t magicBytes =
        static_cast<std::size_t>(std::min<uint64_t>(4, fileSize_));
    char magic[4] = {};
    if (!copy(reinterpret_cast<unsigned char *>(magic), magicBytes,
              "the magic"))
      return false;
    if (std::string_view(magic, magicBytes) !=
        std::string_view("GGUF", magicBytes))
      return fail(fmt::format("not a GGUF file: it starts with {}, expected "
                              "'GGUF'",
                              quote(std::string_view(magic, magicBytes))));
    if (fileSize_ < kHeaderBytes)
      return fail(fmt::format("file is truncated: {} bytes, but a GGUF header "
                              "takes {}",
                              fileSize_, kHeaderBytes));
    uint64_t tensorCount = 0, keyCount = 0;
    if (!read(file_.version_, "the version"))
      return false;
    if (file_.version_ != 2 && file_.version_ != 3)
      return fail(fmt::format(
          "GGUF version {} is not supported (tfmc reads versions 2 and 3{})",
          file_.version_,
          file_.version_ != 0 && (file_.version_ & 0xFFFF) == 0
              ? "; is this a big-endian file?"
              : ""));
    if (!read(tensorCount, "the tensor count") ||
        !read(keyCount, "the key count"))
      return false;
    uint64_t rest = limit() - pos_;
    uint64_t keyBytes = 0, tensorBytes = 0, total = 0;
    if (__builtin_mul_overflow(keyCount, kMinKeyBytes, &keyBytes) ||
        __builtin_mul_overflow(tensorCount, kMinTensorBytes, &tensorBytes) ||
        __builtin_add_overflow(keyBytes, tensorBytes, &total) || total > rest)
      return fail(fmt::format(
          "the header's counts, {} keys and {} tensors, cannot fit in {}: a "
          "key takes at least {} bytes, a tensor info {}, and {} bytes follow "
          "the header",
          keyCount, tensorCount, restName(), kMinKeyBytes, kMinTensorBytes,
          rest));
    keyCount_ = keyCount;
    tensorCount_ = tensorCount;
    return true;
  }

  bool readKeys() {
    for (uint64_t i = 0; i < keyCount_; ++i) {
      where_ = fmt::format("key {}", i);
      GgufKeyValue entry;
      if (!readString(entry.key, "the key"))
        return false;
      if (entry.key.empty())
        return fail(fmt::format("key {} is empty", i));
      if (!isValidUtf8(entry.key))
        return fail(fmt::format("key {} is not valid UTF-8: {}", i,
                                quote(entry.key)));
      where_ = fmt::format("key {}", quote(entry.key));
      uint32_t type = 0;
      if (!read(type, "the value type"))
        return false;
      if (type > kLastGgufType)
        return fail(fmt::format("{} has unknown value type {}", where_, type));
      if (!readValue(static_cast<GgufType>(type), entry.value, 0))
        return false;
      file_.metadata_.push_back(std::move(entry));
    }
    where_.clear();
    std::vector<std::size_t> &order = file_.keyOrder_;
    order.resize(file_.metadata_.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    const auto &metadata = file_.metadata_;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return metadata[a].key < metadata[b].key;
    });
    for (std::size_t i = 1; i < order.size(); ++i)
      if (metadata[order[i - 1]].key == metadata[order[i]].key)
        return fail(fmt::format("key {} appears twice",
                                quote(metadata[order[i]].key)));
    return true;
  }

  bool readValue(GgufType type, GgufValue &value, int depth) {
    value.type_ = type;
    if (type == GgufType::String)
      return readString(value.bytes_, "the string");
    if (type == GgufType::Array)
      return readArray(value, depth + 1);
    value.scalar_.type = type;
    if (!copy(reinterpret_cast<unsigned char *>(&value.scalar_.bits),
              ggufScalarBytes(type), "the value"))
      return false;
    if (type == GgufType::Bool && value.scalar_.bits > 1)
      return fail(fmt::format("{} is a bool of value {}, expected 0 or 1",
                              where_, value.scalar_.bits));
    return true;
  }

  /// An array at nesting `depth` (1 for a key's array).
  bool readArray(GgufValue &value, int depth) {
    uint32_t element = 0;
    uint64_t count = 0;
    if (!read(element, "the array's element type") ||
        !read(count, "the array's length"))
      return false;
    if (element > kLastGgufType)
      return fail(fmt::format("{}: an array of unknown element type {}",
                              where_, element));
    GgufType type = static_cast<GgufType>(element);
    if (type == GgufType::Array && depth >= kMaxGgufArrayDepth)
      return fail(fmt::format("{}: arrays nest deeper than {} levels", where_,
                              kMaxGgufArrayDepth));
    value.type_ = GgufType::Array;
    value.elementType_ = type;
    value.count_ = count;
    uint64_t each = type == GgufType::String ? 8
                    : type == GgufType::Array ? kArrayHeaderBytes
                                              : ggufScalarBytes(type);
    uint64_t rest = limit() - pos_;
    if (count > rest / each)
      return fail(fmt::format("{}: an array of {} {} cannot fit in {}: each "
                              "takes {}{} bytes, and {} remain after offset {}",
                              where_, count, ggufPluralName(type), restName(),
                              ggufScalarBytes(type) != 0 ? "" : "at least ", each, rest,
                              pos_));
    if (type == GgufType::String) {
      value.ends_.reserve(static_cast<std::size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        if (!readString(value.bytes_, Item("string", i, {})))
          return false;
        value.ends_.push_back(value.bytes_.size());
      }
      return true;
    }
    if (type == GgufType::Array) {
      for (uint64_t i = 0; i < count; ++i) {
        value.items_.emplace_back();
        if (!readArray(value.items_.back(), depth + 1))
          return false;
      }
      return true;
    }
    value.bytes_.resize(static_cast<std::size_t>(count * each));
    if (!copy(reinterpret_cast<unsigned char *>(value.bytes_.data()),
              count * each, "the array"))
      return false;
    if (type == GgufType::Bool)
      for (uint64_t i = 0; i < count; ++i)
        if (static_cast<unsigned char>(value.bytes_[i]) > 1)
          return fail(fmt::format("{}: element {} is a bool of value {}, "
                                  "expected 0 or 1",
                                  where_, i,
                                  static_cast<unsigned char>(value.bytes_[i])));
    return true;
  }

  bool readAlignment() {
    const GgufValue *value = file_.find("general.alignment");
    if (!value)
      return true;
    if (value->type() != GgufType::U32)
      return fail(fmt::format("key 'general.alignment' is {}, expected a u32",
                              value->describeType()));
    uint64_t alignment = value->scalar().bits;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      return fail(fmt::format("key 'general.alignment' is {}, expected a "
                              "power of two",
                              alignment));
    file_.alignment_ = static_cast<uint32_t>(alignment);
    return true;
  }

  bool readTensors() {
    for (uint64_t i = 0; i < tensorCount_; ++i) {
      where_ = fmt::format("tensor {}", i);
      GgufTensorInfo info;
      if (!readString(info.name, "the name"))
        return false;
      if (info.name.empty())
        return fail(fmt::format("tensor {} has an empty name", i));
      if (!isValidUtf8(info.name))
        return fail(fmt::format("tensor {}'s name is not valid UTF-8: {}", i,
                                quote(info.name)));
      where_ = fmt::format("tensor {}", quote(info.name));
      if (!readTensorInfo(info))
        return false;
      file_.tensors_.push_back(std::move(info));
    }
    where_.clear();
    return true;
  }

  /// The rest of a tensor info, after its name.
  bool readTensorInfo(GgufTensorInfo &info) {
    uint32_t dimCount = 0;
    if (!read(dimCount, "the dimension count"))
      return false;
    if (dimCount == 0 || dimCount > kMaxDims)
      return fail(fmt::format("{} has {} dimensions (ggml allows 1 to {})",
                              where_, dimCount, kMaxDims));
    uint64_t dims[kMaxDims] = {};
    if (!copy(reinterpret_cast<unsigned char *>(dims), 8 * dimCount,
              "the shape"))
      return false;
    info.dims.assign(dims, dims + dimCount);
    std::string shape = dimsText(info.dims);
    uint64_t elements = 1;
    for (uint64_t dim : info.dims) {
      if (dim == 0)
        return fail(fmt::format("{} has a zero dimension: {}", where_, shape));
      if (__builtin_mul_overflow(elements, dim, &elements) ||
          elements > kMaxInt64)
        return fail(fmt::format("{}: dimensions {} hold more than 2^63 - 1 "
                                "elements",
                                where_, shape));
    }
    uint32_t number = 0;
    if (!read(number, "the ggml type"))
      return false;
    std::optional<GgmlType> type = ggmlTypeFromNumber(number);
    if (!type) {
      for (const UnreadType &unread : kUnreadTypes)
        if (unread.number == number)
          return fail(fmt::format("{} has ggml type {} ({}), which tfmc does "
                                  "not read",
                                  where_, unread.name, number));
      return fail(fmt::format("{} has unknown ggml type {}", where_, number));
    }
    const GgmlTypeInfo &traits = ggmlTypeInfo(*type);
    if (info.dims[0] % traits.blockValues != 0)
      return fail(fmt::format("{}: {} stores rows in blocks of {} values, but "
                              "the rows of {} have {}",
                              where_, traits.name, traits.blockValues, shape,
                              info.dims[0]));
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements / traits.blockValues,
                               uint64_t(traits.blockBytes), &bytes) ||
        bytes > kMaxInt64)
      return fail(fmt::format("{}: {} {} takes more than 2^63 - 1 bytes",
                              where_, traits.name, shape));
    if (!read(info.offset, "the data offset"))
      return false;
    if (info.offset % file_.alignment_ != 0)
      return fail(fmt::format("{}: offset {} is not a multiple of the "
                              "alignment {}",
                              where_, info.offset, file_.alignment_));
    info.type = *type;
    info.elements = elements;
    info.bytes = bytes;
    return true;
  }

  /// Names unique, each tensor inside the data section, none overlapping.
  bool checkLayout() {
    const std::vector<GgufTensorInfo> &tensors = file_.tensors_;
    std::vector<std::size_t> &order = file_.tensorOrder_;
    order.resize(tensors.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return tensors[a].name < tensors[b].name;
    });
    for (std::size_t i = 1; i < order.size(); ++i)
      if (tensors[order[i - 1]].name == tensors[order[i]].name)
        return fail(fmt::format("tensor {} appears twice",
                                quote(tensors[order[i]].name)));

    // pos_ <= 2^30 here (the header's limit): the padding cannot overflow.
    uint64_t alignment = file_.alignment_;
    file_.dataOffset_ = (pos_ + alignment - 1) / alignment * alignment;
    uint64_t dataBytes =
        fileSize_ > file_.dataOffset_ ? fileSize_ - file_.dataOffset_ : 0;
    for (const GgufTensorInfo &tensor : tensors)
      if (tensor.offset > dataBytes || tensor.bytes > dataBytes - tensor.offset)
        return fail(fmt::format(
            "tensor {}: its {} bytes at offset {} of the data section run "
            "past the end of the file (the data section starts at byte {} "
            "and holds {} bytes)",
            quote(tensor.name), tensor.bytes, tensor.offset, file_.dataOffset_,
            dataBytes));

    // Every tensor holds at least one byte. Sorted by offset, an overlap
    // shows between some tensor and the one reaching furthest before it.
    std::vector<std::size_t> byOffset(order);
    std::stable_sort(byOffset.begin(), byOffset.end(),
                     [&](std::size_t a, std::size_t b) {
                       return tensors[a].offset < tensors[b].offset;
                     });
    const GgufTensorInfo *furthest = nullptr;
    for (std::size_t index : byOffset) {
      const GgufTensorInfo &tensor = tensors[index];
      uint64_t furthestEnd = furthest ? furthest->offset + furthest->bytes : 0;
      if (furthest && tensor.offset < furthestEnd)
        return fail(fmt::format("tensors {} and {} overlap: bytes [{}, {}) and "
                                "[{}, {}) of the data section",
                                quote(furthest->name), quote(tensor.name),
                                furthest->offset, furthestEnd, tensor.offset,
                                tensor.offset + tensor.bytes));
      if (!furthest || tensor.offset + tensor.bytes > furthestEnd)
        furthest = &tensor;
    }
    return true;
  }

  GgufInput &input_;
  uint64_t fileSize_;
  std::string &error_;
  GgufFile file_;
  uint64_t pos_ = 0;
  uint64_t keyCount_ = 0;
  uint64_t tensorCount_ = 0;
  /// "key 'K'", "tensor 3": what is being read, for messages.
  std::string where_;
};

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::optional<GgufFile> readGgufFile(const std::string &path,
                                     std::string &error,
                                     std::size_t bufferBytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // by the type check, made on the open descriptor.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    error = oneLine(fmt::format("{}: cannot read: {}", path,
                                std::strerror(errno)));
    return std::nullopt;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    error = oneLine(fmt::format("{}: cannot read: {}", path,
                                std::strerror(errno)));
    return std::nullopt;
  }
  if (!S_ISREG(info.st_mode)) {
    error = oneLine(fmt::format("{}: cannot read: {}, not a regular file",
                                path, fileKind(info.st_mode)));
    return std::nullopt;
  }
  noteInputFile(path, info.st_dev, info.st_ino);
  try {
    GgufInput input(fd, static_cast<uint64_t>(info.st_size),
                    std::max(bufferBytes, kMinBufferBytes));
    return GgufParser(input, path, static_cast<uint64_t>(info.st_size), error)
        .parse();
  } catch (const std::bad_alloc &) {
    error = oneLine(fmt::format("{}: cannot read: out of memory", path));
    return std::nullopt;
  }
}

std::optional<GgufFile> parseGguf(const std::string &path, const void *bytes,
                                  std::size_t size, uint64_t fileSize,
                                  std::string &error) {
  try {
    GgufInput input(static_cast<const unsigned char *>(bytes),
                    static_cast<std::size_t>(std::min<uint64_t>(size, fileSize)));
    return GgufParser(input, path, fileSize, error).parse();
  } catch (const std::bad_alloc &) {
    error = oneLine(fmt::format("{}: cannot read: out of memory", path));
    return std::nullopt;
  }
}

bool isGgufPath(const std::string &path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0)
    return true;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat info;
  char magic[4] = {};
  bool gguf = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
              ::pread(fd, magic, 4, 0) == 4 &&
              std::memcmp(magic, "GGUF", 4) == 0;
  ::close(fd);
  return gguf;
}

} // namespace tfmc::support
