//===- Gguf.h - The one reader of llama.cpp's GGUF files --------*- C++ -*-===//
//
// GGUF (llama.cpp's gguf.cpp, versions 2 and 3; docs/gguf.md) keeps a
// model's hyper-parameters, tokenizer and tensors in one file:
//   "GGUF", u32 version, u64 tensor count, u64 key count
//   key/value pairs: string key, u32 value type, value
//   tensor infos: string name, u32 n_dims, u64 dims[n_dims] (innermost
//     first), u32 ggml type, u64 offset from the data section's start
//   padding to the alignment (general.alignment, default 32), the data
// all little-endian; a string is a u64 byte length and its bytes, an array
// a u32 element type, a u64 count and the elements.
//
// This reads the header, the metadata and the tensor infos, never the
// tensor data: a file of many GB costs what its metadata costs (a
// tokenizer's 150,000 tokens are one buffer and one offset each). Every
// count and length is checked against the rest of the file before anything
// is allocated for it, and the layout is checked in full before a GgufFile
// is handed out: each tensor's bytes (from its type's block size) lie inside
// the file at an aligned offset and overlap no other tensor's. Any
// malformed, truncated or hostile file is one line naming the file and the
// key or tensor, never a crash.
//
// Nothing here throws: running out of memory is an error like the others.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_GGUF_H
#define TFMC_SUPPORT_GGUF_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::support {

/// A metadata value's type, by its number in the file (gguf.h's gguf_type).
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

/// "u8", "i32", "f32", "bool", "string", "array" (gguf.cpp's names, but
/// "string" for its "str").
const char *ggufTypeName(GgufType type);

/// Bytes of one number or bool of `type` in the file (1 to 8); 0 for a
/// string or an array, whose sizes vary.
std::size_t ggufScalarBytes(GgufType type);

/// "strings", "arrays", "bools", "u32": an array's elements, in messages.
std::string ggufPluralName(GgufType type);

/// How deep arrays may nest: an array of arrays of scalars is depth 2.
/// llama.cpp reads no nested array; the format allows them, and code that
/// walks a value recurses once per level.
constexpr int kMaxGgufArrayDepth = 3;

/// The alignment of a file without general.alignment.
constexpr uint32_t kGgufDefaultAlignment = 32;

/// What readGgufFile reads at a time.
constexpr std::size_t kGgufReadBufferBytes = std::size_t(1) << 20;

/// The most the header, the metadata and the tensor infos may take (1 GiB,
/// llama.cpp's bound on one string): real files need a few MB, a
/// tokenizer's vocabulary the most. Memory is a small multiple of it.
constexpr uint64_t kMaxGgufHeaderBytes = uint64_t(1) << 30;

/// A number, or a bool: the value's bytes, zero-extended (an f32's bits, an
/// i8's 8 bits: toSigned sign-extends).
struct GgufScalar {
  GgufType type = GgufType::U8;
  uint64_t bits = 0;

  bool isInteger() const;
  /// An integer type's value if it is at least 0.
  std::optional<uint64_t> toUnsigned() const;
  /// An integer type's value if it fits int64 (a u64 may not).
  std::optional<int64_t> toSigned() const;
  /// An f32's or f64's value.
  std::optional<double> toFloat() const;
  std::optional<bool> toBool() const;
  /// As messages and tfmc-gguf-dump show it: 42, -3, 1e-05, true.
  std::string format() const;
};

/// One metadata value: a scalar, a string or an array. Arrays are stored
/// compactly: numbers as their bytes, strings as one buffer and their ends.
class GgufValue {
public:
  GgufType type() const { return type_; }

  /// A number or bool (type() is neither String nor Array).
  const GgufScalar &scalar() const { return scalar_; }
  /// A string's bytes, as the file has them (tokens need not be UTF-8).
  std::string_view string() const { return bytes_; }

  /// An array's element type and length.
  GgufType elementType() const { return elementType_; }
  uint64_t size() const { return count_; }
  /// Element `i` (< size()) of an array of numbers or bools.
  GgufScalar scalarAt(uint64_t i) const;
  /// Element `i` of an array of strings.
  std::string_view stringAt(uint64_t i) const;
  /// Element `i` of an array of arrays.
  const GgufValue &arrayAt(uint64_t i) const { return items_[i]; }

  /// "a u32", "an f32", "a string", "an array of strings", "an array of
  /// arrays": what messages call it.
  std::string describeType() const;

private:
  friend class GgufParser;
  GgufType type_ = GgufType::U8;
  GgufScalar scalar_;
  GgufType elementType_ = GgufType::U8;
  uint64_t count_ = 0;
  /// A string; an array's numbers (little-endian, packed); an array's
  /// strings, one after another.
  std::string bytes_;
  /// An array of strings: where each ends in bytes_.
  std::vector<uint64_t> ends_;
  std::vector<GgufValue> items_;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

/// A tensor's element type, by its number in the file (ggml.h's ggml_type).
/// These are the types the reader knows the layout of (of the IQ types,
/// IQ4_NL: 32 values, an f16 scale and 16 bytes of indices into a table);
/// the other IQ, TQ and MXFP4 types are refused by name, others as unknown.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

/// A type's name (ggml's: "Q8_0", "BF16") and its block: `blockValues`
/// consecutive values of a row take `blockBytes` bytes (ggml.c's
/// type_traits: blck_size, type_size).
struct GgmlTypeInfo {
  GgmlType type;
  const char *name;
  uint32_t blockValues;
  uint32_t blockBytes;
};

const GgmlTypeInfo &ggmlTypeInfo(GgmlType type);
/// The type numbered `number` if the reader knows its layout.
std::optional<GgmlType> ggmlTypeFromNumber(uint32_t number);

struct GgufTensorInfo {
  std::string name;
  /// ggml's order, the reverse of numpy's: dims[0] is the row length. Each
  /// is at least 1; there are 1 to 4.
  std::vector<uint64_t> dims;
  GgmlType type = GgmlType::F32;
  /// From the start of the data section; a multiple of the alignment.
  uint64_t offset = 0;
  /// The product of dims.
  uint64_t elements = 0;
  /// elements / blockValues * blockBytes.
  uint64_t bytes = 0;
};

/// A checked GGUF file's header: metadata and tensor infos, in file order.
class GgufFile {
public:
  /// The path it was read from; every message starts with it.
  const std::string &path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t fileSize() const { return fileSize_; }
  /// general.alignment, or 32.
  uint32_t alignment() const { return alignment_; }
  /// Where the data section starts in the file (the end of the tensor
  /// infos, padded to the alignment); tensor offsets count from here.
  uint64_t dataOffset() const { return dataOffset_; }

  const std::vector<GgufKeyValue> &metadata() const { return metadata_; }
  /// The value of `key`, or null.
  const GgufValue *find(std::string_view key) const;

  /// The value of `key` as the type the caller expects, or nothing with
  /// `error` one line: `PATH: missing key 'K'`, `PATH: key 'K' is a string,
  /// expected an unsigned integer`, `PATH: key 'K' is -1, expected an
  /// unsigned integer`. Integers of any width and signedness are accepted
  /// where they hold the value; floats are f32 or f64 only.
  std::optional<uint64_t> getUnsigned(std::string_view key,
                                      std::string &error) const;
  std::optional<int64_t> getSigned(std::string_view key,
                                   std::string &error) const;
  std::optional<double> getFloat(std::string_view key,
                                 std::string &error) const;
  std::optional<bool> getBool(std::string_view key, std::string &error) const;
  std::optional<std::string_view> getString(std::string_view key,
                                            std::string &error) const;
  /// An array of any element type, or of `elementType` only (`PATH: key 'K'
  /// is an array of i32, expected an array of strings`).
  const GgufValue *getArray(std::string_view key, std::string &error) const;
  const GgufValue *getArray(std::string_view key, GgufType elementType,
                            std::string &error) const;

  const std::vector<GgufTensorInfo> &tensors() const { return tensors_; }
  /// The tensor called `name`, or null.
  const GgufTensorInfo *findTensor(std::string_view name) const;

private:
  friend class GgufParser;
  /// `key`'s value, or null with `error` "PATH: missing key 'K'".
  const GgufValue *require(std::string_view key, std::string &error) const;
  /// "PATH: key 'K' is WHAT, expected EXPECTED".
  std::string mismatch(std::string_view key, const std::string &what,
                       const char *expected) const;

  std::string path_;
  uint32_t version_ = 0;
  uint64_t fileSize_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t dataOffset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  /// Indices into metadata_ and tensors_, sorted by key and by name.
  std::vector<std::size_t> keyOrder_;
  std::vector<std::size_t> tensorOrder_;
};

/// Whether `path` names a GGUF file: a `.gguf` suffix, or a regular file
/// that starts with the magic "GGUF" (the compiler's model path and the
/// runtime's --weights both ask).
bool isGgufPath(const std::string &path);

/// Reads and checks the GGUF file at `path` (a regular file; noted as an
/// input, FileIO.h), `bufferBytes` at a time with pread, never its tensor
/// data. On failure returns nothing and sets `error` (one line, starting
/// with the path).
std::optional<GgufFile> readGgufFile(const std::string &path,
                                     std::string &error,
                                     std::size_t bufferBytes =
                                         kGgufReadBufferBytes);

/// The same checks over `size` bytes in memory: the first bytes of a file
/// of `fileSize` bytes (>= size), at least up to its tensor infos' end.
/// `path` names the file in messages. Reading past `size` is an error
/// ("the header continues past the N bytes given").
std::optional<GgufFile> parseGguf(const std::string &path, const void *bytes,
                                  std::size_t size, uint64_t fileSize,
                                  std::string &error);

} // namespace tfmc::support

#endif // TFMC_SUPPORT_GGUF_H
