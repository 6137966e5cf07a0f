//===- GgufTest.cpp - The GGUF reader on well-formed files ----------------===//
//
// support/Gguf.h over hand-built files (GgufBuilder.h): every value type
// read back, the typed getters and their one-line errors, each ggml type's
// byte size against ggml-common.h's block structs, the alignment and the
// data section's offset, and readGgufFile (any buffer size) against
// parseGguf, including its own errors (not a regular file, a file shorter
// than it says, memory running out). GgufErrorsTest.cpp has the bad files.
//
//===----------------------------------------------------------------------===//

#include "test/unit/GgufBuilder.h"

#include "support/Gguf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfmc::support;
using tfmc::test::GgufBytes;
namespace ggml = tfmc::test;

namespace {

std::optional<GgufFile> parse(const GgufBytes &bytes, std::string &error) {
  return parseGguf("m.gguf", bytes.data.data(), bytes.data.size(),
                   bytes.size(), error);
}

/// A temporary directory, removed with what the test put in it.
class TempDir {
public:
  TempDir() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/tfmc-gguf-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::string command = "rm -rf '" + path_ + "'";
    if (std::system(command.c_str()) != 0)
      std::fprintf(stderr, "cannot remove %s\n", path_.c_str());
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string path = file(name);
    FILE *out = std::fopen(path.c_str(), "wb");
    if (!out || std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size() ||
        std::fclose(out) != 0)
      std::abort();
    return path;
  }

private:
  std::string path_;
};

/// A file with a key of every value type and three tensors.
GgufBytes everyValueType() {
  GgufBytes b = GgufBytes::header(3, 16);
  b.keyString("general.architecture", "llama")
      .key("u8", GgufType::U8, uint8_t(200))
      .key("i8", GgufType::I8, int8_t(-5))
      .key("u16", GgufType::U16, uint16_t(60000))
      .key("i16", GgufType::I16, int16_t(-30000))
      .key("u32", GgufType::U32, uint32_t(4000000000u))
      .key("i32", GgufType::I32, int32_t(-2000000000))
      .key("f32", GgufType::F32, 1e-5f)
      .key("bool", GgufType::Bool, uint8_t(1))
      .key("u64", GgufType::U64, UINT64_MAX)
      .key("i64", GgufType::I64, int64_t(-9000000000000000000))
      .key("f64", GgufType::F64, 0.1);
  b.keyArray("tokens", GgufType::String, 3).str("<s>").str("").str("\xc3\xa9");
  b.keyArray("scores", GgufType::F32, 2).put(0.5f).put(-1.0f);
  b.keyArray("flags", GgufType::Bool, 2).u8(0).u8(1);
  // Two arrays in an array, of different element types.
  b.keyArray("nested", GgufType::Array, 2)
      .type(GgufType::U8).u64(2).u8(1).u8(2)
      .type(GgufType::String).u64(1).str("x");
  b.tensor("a", {4, 3}, ggml::kF32, 0)      // 48 bytes
      .tensor("b", {64, 2}, ggml::kQ8_0, 64) // 4 blocks of 34
      .tensor("c", {256}, ggml::kQ6_K, 224); // 1 super-block of 210
  return b;
}

TEST(Gguf, ReadsEveryValueType) {
  GgufBytes bytes = everyValueType();
  uint64_t headerEnd = bytes.size();
  bytes.dataSection(32, 434);
  std::string error;
  std::optional<GgufFile> file = parse(bytes, error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->path(), "m.gguf");
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_EQ(file->dataOffset(), (headerEnd + 31) / 32 * 32);
  EXPECT_EQ(file->fileSize(), bytes.size());

  // In file order.
  ASSERT_EQ(file->metadata().size(), 16u);
  EXPECT_EQ(file->metadata()[0].key, "general.architecture");
  EXPECT_EQ(file->metadata()[15].key, "nested");

  EXPECT_EQ(file->getString("general.architecture", error), "llama");
  EXPECT_EQ(file->getUnsigned("u8", error), 200u);
  EXPECT_EQ(file->getSigned("i8", error), -5);
  EXPECT_EQ(file->getUnsigned("u16", error), 60000u);
  EXPECT_EQ(file->getSigned("i16", error), -30000);
  EXPECT_EQ(file->getUnsigned("u32", error), 4000000000u);
  EXPECT_EQ(file->getSigned("u32", error), 4000000000);
  EXPECT_EQ(file->getSigned("i32", error), -2000000000);
  EXPECT_EQ(file->getFloat("f32", error), double(1e-5f));
  EXPECT_EQ(file->getBool("bool", error), true);
  EXPECT_EQ(file->getUnsigned("u64", error), UINT64_MAX);
  EXPECT_EQ(file->getSigned("i64", error), -9000000000000000000);
  EXPECT_EQ(file->getFloat("f64", error), 0.1);

  const GgufValue *tokens = file->getArray("tokens", GgufType::String, error);
  ASSERT_TRUE(tokens) << error;
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ(tokens->stringAt(0), "<s>");
  EXPECT_EQ(tokens->stringAt(1), "");
  EXPECT_EQ(tokens->stringAt(2), "\xc3\xa9");
  const GgufValue *scores = file->getArray("scores", GgufType::F32, error);
  ASSERT_TRUE(scores) << error;
  EXPECT_EQ(scores->scalarAt(0).toFloat(), 0.5);
  EXPECT_EQ(scores->scalarAt(1).toFloat(), -1.0);
  const GgufValue *flags = file->getArray("flags", error);
  ASSERT_TRUE(flags) << error;
  EXPECT_EQ(flags->elementType(), GgufType::Bool);
  EXPECT_EQ(flags->scalarAt(0).toBool(), false);
  EXPECT_EQ(flags->scalarAt(1).toBool(), true);
  const GgufValue *nested = file->getArray("nested", GgufType::Array, error);
  ASSERT_TRUE(nested) << error;
  ASSERT_EQ(nested->size(), 2u);
  EXPECT_EQ(nested->arrayAt(0).elementType(), GgufType::U8);
  EXPECT_EQ(nested->arrayAt(0).scalarAt(1).toUnsigned(), 2u);
  EXPECT_EQ(nested->arrayAt(1).stringAt(0), "x");

  ASSERT_EQ(file->tensors().size(), 3u);
  const GgufTensorInfo &a = file->tensors()[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dims, (std::vector<uint64_t>{4, 3}));
  EXPECT_EQ(a.type, GgmlType::F32);
  EXPECT_EQ(a.elements, 12u);
  EXPECT_EQ(a.bytes, 48u);
  const GgufTensorInfo *b = file->findTensor("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->type, GgmlType::Q8_0);
  EXPECT_EQ(b->offset, 64u);
  EXPECT_EQ(b->bytes, 136u);
  const GgufTensorInfo *c = file->findTensor("c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 210u);
  EXPECT_EQ(c->offset, 224u);
  EXPECT_FALSE(file->findTensor("d"));
  EXPECT_FALSE(file->findTensor(""));
  EXPECT_FALSE(file->find("general"));
}

TEST(Gguf, ScalarsConvertWhereTheValueFits) {
  GgufScalar u64{GgufType::U64, UINT64_MAX};
  EXPECT_EQ(u64.toUnsigned(), UINT64_MAX);
  EXPECT_FALSE(u64.toSigned());
  EXPECT_EQ(u64.format(), "18446744073709551615");
  GgufScalar i8{GgufType::I8, 0xfb}; // -5
  EXPECT_EQ(i8.toSigned(), -5);
  EXPECT_FALSE(i8.toUnsigned());
  EXPECT_EQ(i8.format(), "-5");
  EXPECT_FALSE(i8.toFloat());
  EXPECT_FALSE(i8.toBool());
  GgufScalar i64{GgufType::I64, uint64_t(INT64_MIN)};
  EXPECT_EQ(i64.toSigned(), INT64_MIN);
  EXPECT_EQ(i64.format(), "-9223372036854775808");
  float tenth = 0.1f;
  uint32_t bits;
  std::memcpy(&bits, &tenth, sizeof bits);
  GgufScalar f32{GgufType::F32, bits};
  EXPECT_EQ(f32.toFloat(), double(0.1f));
  EXPECT_EQ(f32.format(), "0.1"); // the shortest text of the f32
  EXPECT_FALSE(f32.isInteger());
  EXPECT_FALSE(f32.toSigned());
  GgufScalar yes{GgufType::Bool, 1};
  EXPECT_EQ(yes.format(), "true");
  EXPECT_EQ((GgufScalar{GgufType::Bool, 0}.format()), "false");
  EXPECT_FALSE(yes.isInteger());
  EXPECT_FALSE(yes.toUnsigned());
}

TEST(Gguf, GettersNameTheKeyAndTheExpectedType) {
  GgufBytes bytes = everyValueType();
  bytes.dataSection(32, 434);
  std::string error;
  std::optional<GgufFile> file = parse(bytes, error);
  ASSERT_TRUE(file) << error;
  auto expectError = [&](bool failed, const char *message) {
    EXPECT_TRUE(failed);
    EXPECT_EQ(error, message);
    error.clear();
  };
  expectError(!file->getUnsigned("llama.block_count", error),
              "m.gguf: missing key 'llama.block_count'");
  expectError(!file->getUnsigned("general.architecture", error),
              "m.gguf: key 'general.architecture' is a string, expected an "
              "unsigned integer");
  expectError(!file->getUnsigned("i8", error),
              "m.gguf: key 'i8' is -5, expected an unsigned integer");
  expectError(!file->getUnsigned("f32", error),
              "m.gguf: key 'f32' is an f32, expected an unsigned integer");
  expectError(!file->getUnsigned("bool", error),
              "m.gguf: key 'bool' is a bool, expected an unsigned integer");
  expectError(!file->getSigned("u64", error),
              "m.gguf: key 'u64' is 18446744073709551615, expected an integer "
              "of at most 2^63 - 1");
  expectError(!file->getSigned("tokens", error),
              "m.gguf: key 'tokens' is an array of strings, expected an "
              "integer");
  expectError(!file->getSigned("missing", error),
              "m.gguf: missing key 'missing'");
  expectError(!file->getFloat("u32", error),
              "m.gguf: key 'u32' is a u32, expected an f32 or f64");
  expectError(!file->getFloat("scores", error),
              "m.gguf: key 'scores' is an array of f32, expected an f32 or "
              "f64");
  expectError(!file->getFloat("missing", error),
              "m.gguf: missing key 'missing'");
  expectError(!file->getBool("u8", error),
              "m.gguf: key 'u8' is a u8, expected a bool");
  expectError(!file->getBool("flags", error),
              "m.gguf: key 'flags' is an array of bools, expected a bool");
  expectError(!file->getBool("missing", error),
              "m.gguf: missing key 'missing'");
  expectError(!file->getString("bool", error),
              "m.gguf: key 'bool' is a bool, expected a string");
  expectError(!file->getString("missing", error),
              "m.gguf: missing key 'missing'");
  expectError(!file->getArray("i16", error),
              "m.gguf: key 'i16' is an i16, expected an array");
  expectError(!file->getArray("missing", GgufType::String, error),
              "m.gguf: missing key 'missing'");
  expectError(!file->getArray("scores", GgufType::String, error),
              "m.gguf: key 'scores' is an array of f32, expected an array of "
              "strings");
  expectError(!file->getArray("nested", GgufType::U8, error),
              "m.gguf: key 'nested' is an array of arrays, expected an array "
              "of u8");
  // A key quoted as every message quotes: escaped, on one line.
  expectError(!file->getString("a\nkey", error),
              "m.gguf: missing key 'a\\nkey'");
}

/// ggml-common.h's block structs, field by field (QK_K = 256).
struct ExpectedBlock {
  uint32_t number;
  GgmlType type;
  const char *name;
  uint64_t values;
  uint64_t bytes;
};
constexpr uint64_t kHalf = 2;
const ExpectedBlock kExpectedBlocks[] = {
    {0, GgmlType::F32, "F32", 1, 4},
    {1, GgmlType::F16, "F16", 1, 2},
    {2, GgmlType::Q4_0, "Q4_0", 32, kHalf + 32 / 2},
    {3, GgmlType::Q4_1, "Q4_1", 32, 2 * kHalf + 32 / 2},
    {6, GgmlType::Q5_0, "Q5_0", 32, kHalf + 4 + 32 / 2},
    {7, GgmlType::Q5_1, "Q5_1", 32, 2 * kHalf + 4 + 32 / 2},
    {8, GgmlType::Q8_0, "Q8_0", 32, kHalf + 32},
    {9, GgmlType::Q8_1, "Q8_1", 32, 2 * kHalf + 32},
    {10, GgmlType::Q2_K, "Q2_K", 256, 2 * kHalf + 256 / 16 + 256 / 4},
    {11, GgmlType::Q3_K, "Q3_K", 256, kHalf + 256 / 4 + 256 / 8 + 12},
    {12, GgmlType::Q4_K, "Q4_K", 256, 2 * kHalf + 12 + 256 / 2},
    {13, GgmlType::Q5_K, "Q5_K", 256, 2 * kHalf + 12 + 256 / 2 + 256 / 8},
    {14, GgmlType::Q6_K, "Q6_K", 256, kHalf + 256 / 16 + 3 * 256 / 4},
    {15, GgmlType::Q8_K, "Q8_K", 256, 4 + 256 + 256 / 16 * 2},
    {20, GgmlType::IQ4_NL, "IQ4_NL", 32, kHalf + 32 / 2},
    {24, GgmlType::I8, "I8", 1, 1},
    {25, GgmlType::I16, "I16", 1, 2},
    {26, GgmlType::I32, "I32", 1, 4},
    {27, GgmlType::I64, "I64", 1, 8},
    {28, GgmlType::F64, "F64", 1, 8},
    {30, GgmlType::BF16, "BF16", 1, 2},
};

TEST(Gguf, EachTypeTakesItsBlocksBytes) {
  for (const ExpectedBlock &expected : kExpectedBlocks) {
    SCOPED_TRACE(expected.name);
    // Rows of two blocks, three rows: six blocks.
    GgufBytes bytes = GgufBytes::header(1, 0);
    bytes.tensor("w", {2 * expected.values, 3}, expected.number, 0)
        .dataSection(32, 6 * expected.bytes);
    std::string error;
    std::optional<GgufFile> file = parse(bytes, error);
    ASSERT_TRUE(file) << error;
    const GgufTensorInfo &tensor = file->tensors()[0];
    EXPECT_EQ(tensor.type, expected.type);
    EXPECT_EQ(tensor.elements, 6 * expected.values);
    EXPECT_EQ(tensor.bytes, 6 * expected.bytes);
    const GgmlTypeInfo &info = ggmlTypeInfo(expected.type);
    EXPECT_STREQ(info.name, expected.name);
    EXPECT_EQ(info.blockValues, expected.values);
    EXPECT_EQ(info.blockBytes, expected.bytes);
    EXPECT_EQ(ggmlTypeFromNumber(expected.number), expected.type);
    // One byte less of data is one byte too few.
    bytes.data.pop_back();
    EXPECT_FALSE(parse(bytes, error));
  }
  EXPECT_FALSE(ggmlTypeFromNumber(4)); // Q4_2, long removed from ggml
  EXPECT_FALSE(ggmlTypeFromNumber(16));
  EXPECT_FALSE(ggmlTypeFromNumber(23)); // IQ4_XS: refused by name
}

TEST(Gguf, AlignmentAndDataOffset) {
  // general.alignment 64: the data section and every offset on 64 bytes;
  // tensors may touch, and lie in any order.
  GgufBytes bytes = GgufBytes::header(2, 1);
  bytes.key("general.alignment", GgufType::U32, uint32_t(64))
      .tensor("second", {16}, ggml::kF32, 64)
      .tensor("first", {16}, ggml::kF32, 0);
  uint64_t headerEnd = bytes.size();
  bytes.dataSection(64, 128);
  std::string error;
  std::optional<GgufFile> file = parse(bytes, error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->dataOffset(), (headerEnd + 63) / 64 * 64);
  EXPECT_EQ(file->dataOffset() % 64, 0u);
  EXPECT_EQ(file->tensors()[0].name, "second");
  EXPECT_EQ(file->findTensor("first")->offset, 0u);

  // A header alone (no tensors, no keys): the data section would start at
  // 32, past the file's 24 bytes, and holds nothing. Version 2 reads as 3.
  GgufBytes empty = GgufBytes::header(0, 0, 2);
  file = parse(empty, error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->version(), 2u);
  EXPECT_EQ(file->dataOffset(), 32u);
  EXPECT_TRUE(file->metadata().empty());
  EXPECT_TRUE(file->tensors().empty());
}

TEST(Gguf, NestedArraysUpToTheBound) {
  // Three levels: an array of arrays of arrays of u8.
  GgufBytes bytes = GgufBytes::header(0, 1);
  bytes.keyArray("deep", GgufType::Array, 1)
      .type(GgufType::Array).u64(1)
      .type(GgufType::U8).u64(2).u8(7).u8(8);
  std::string error;
  std::optional<GgufFile> file = parse(bytes, error);
  ASSERT_TRUE(file) << error;
  const GgufValue &deep = *file->find("deep");
  EXPECT_EQ(deep.describeType(), "an array of arrays");
  EXPECT_EQ(deep.arrayAt(0).arrayAt(0).scalarAt(1).toUnsigned(), 8u);
  EXPECT_EQ(deep.arrayAt(0).arrayAt(0).describeType(), "an array of u8");
}

/// The metadata and tensors of two reads, as text, to compare them.
std::string describe(const GgufFile &file) {
  std::string text = std::to_string(file.dataOffset()) + "\n";
  for (const GgufKeyValue &entry : file.metadata()) {
    text += entry.key + ": " + entry.value.describeType() + " ";
    const GgufValue &value = entry.value;
    if (value.type() == GgufType::String)
      text += std::string(value.string());
    else if (value.type() == GgufType::Array &&
             value.elementType() == GgufType::String)
      for (uint64_t i = 0; i < value.size(); ++i)
        text += std::string(value.stringAt(i)) + ",";
    else if (value.type() == GgufType::Array &&
             value.elementType() != GgufType::Array)
      for (uint64_t i = 0; i < value.size(); ++i)
        text += value.scalarAt(i).format() + ",";
    else if (value.type() != GgufType::Array)
      text += value.scalar().format();
    text += "\n";
  }
  for (const GgufTensorInfo &tensor : file.tensors())
    text += tensor.name + " " + std::to_string(tensor.offset) + " " +
            std::to_string(tensor.bytes) + "\n";
  return text;
}

TEST(Gguf, FileReadsAsMemoryParsesWhateverTheBufferSize) {
  GgufBytes bytes = everyValueType();
  // A string longer than the smallest buffers, read across windows.
  bytes.data.replace(0, 24, GgufBytes::header(3, 17).data);
  bytes.data.insert(24, GgufBytes().keyString("long", std::string(1000, 'L')).data);
  bytes.dataSection(32, 434);
  TempDir dir;
  std::string path = dir.write("m.gguf", bytes.data);
  std::string error;
  std::optional<GgufFile> memory =
      parseGguf(path, bytes.data.data(), bytes.data.size(), bytes.size(), error);
  ASSERT_TRUE(memory) << error;
  EXPECT_EQ(memory->getString("long", error), std::string(1000, 'L'));
  for (std::size_t buffer : {std::size_t(1), std::size_t(16), std::size_t(17),
                             std::size_t(100), kGgufReadBufferBytes}) {
    SCOPED_TRACE(buffer);
    std::optional<GgufFile> file = readGgufFile(path, error, buffer);
    ASSERT_TRUE(file) << error;
    EXPECT_EQ(file->path(), path);
    EXPECT_EQ(describe(*file), describe(*memory));
  }
  // The same error either way, naming the path.
  std::string truncated = bytes.data.substr(0, 300);
  std::string cut = dir.write("cut.gguf", truncated);
  std::string fileError, memoryError;
  EXPECT_FALSE(readGgufFile(cut, fileError, 16));
  EXPECT_FALSE(parseGguf(cut, truncated.data(), truncated.size(),
                         truncated.size(), memoryError));
  EXPECT_EQ(fileError, memoryError);
  EXPECT_EQ(fileError.rfind(cut + ": ", 0), 0u) << fileError;
}

TEST(Gguf, OnlyRegularFilesAreRead) {
  TempDir dir;
  std::string error;
  EXPECT_FALSE(readGgufFile(dir.file("none.gguf"), error));
  EXPECT_EQ(error, dir.file("none.gguf") +
                       ": cannot read: No such file or directory");
  EXPECT_FALSE(readGgufFile(dir.file(""), error));
  EXPECT_EQ(error, dir.file("") + ": cannot read: a directory, not a regular file");
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_FALSE(readGgufFile(dir.file("fifo"), error));
  EXPECT_EQ(error, dir.file("fifo") + ": cannot read: a FIFO, not a regular file");
  EXPECT_FALSE(readGgufFile("/dev/null", error));
  EXPECT_EQ(error, "/dev/null: cannot read: a character device, not a regular file");
}

TEST(Gguf, AFileShorterThanItsSizeIsAnError) {
  // sysfs files say 4096 bytes and hold a few: as if the file were cut
  // while it was read.
  const char *path = "/sys/devices/system/cpu/online";
  struct stat info;
  if (::stat(path, &info) != 0 || info.st_size != 4096)
    GTEST_SKIP() << path << " is missing or not 4096 bytes";
  std::string error;
  EXPECT_FALSE(readGgufFile(path, error));
  EXPECT_EQ(error.rfind(std::string(path) + ": cannot read the magic at "
                                            "offset 0: the file ends at byte ",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find(", but it had 4096 bytes when it was opened (did it "
                       "change?)"),
            std::string::npos)
      << error;
}

#if defined(__SANITIZE_ADDRESS__)
#define TFMC_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TFMC_UNDER_ASAN 1
#endif
#endif

TEST(GgufDeathTest, RunningOutOfMemoryIsAnError) {
#ifdef TFMC_UNDER_ASAN
  GTEST_SKIP() << "ASan's allocator aborts instead of throwing bad_alloc";
#else
  // A key of nearly 1 GiB (within the header's bound) in a 2 GiB file,
  // with the address space held to 512 MiB: the allocation fails first.
  GgufBytes bytes = GgufBytes::header(0, 1);
  bytes.u64(kMaxGgufHeaderBytes - 100);
  TempDir dir;
  std::string path = dir.write("big.gguf", bytes.data);
  ASSERT_EQ(::truncate(path.c_str(), off_t(2) << 30), 0);
  auto limited = [](auto read) {
    struct rlimit limit = {512u << 20, 512u << 20};
    if (::setrlimit(RLIMIT_AS, &limit) != 0)
      std::exit(2);
    std::string error;
    bool read_ = read(error);
    std::fprintf(stderr, "[%s]\n", error.c_str()); // the whole message

    std::exit(read_ ? 1 : 0);
  };
  EXPECT_EXIT(limited([&](std::string &error) {
                return readGgufFile(path, error).has_value();
              }),
              testing::ExitedWithCode(0),
              "\\[/.*/big.gguf: cannot read: out of memory\\]");
  EXPECT_EXIT(limited([&](std::string &error) {
                return parseGguf("m.gguf", bytes.data.data(), bytes.size(),
                                 uint64_t(2) << 30, error)
                    .has_value();
              }),
              testing::ExitedWithCode(0),
              "\\[m.gguf: cannot read: out of memory\\]");
#endif
}

} // namespace
