//===- SafetensorsTest.cpp - Tests of the safetensors reader and writer ---===//
//
// Round trips through writeSafetensors and SafetensorsFile::open, then one
// test per way a file can be malformed, each building the file byte by byte
// and checking the exact one-line message a user would see.
//
//===----------------------------------------------------------------------===//

#include "support/FileIO.h"
#include "support/Utf8.h"
#include "runtime/core/Safetensors.h"
#include "support/Text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfmc::runtime;

namespace {

class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfmc-safetensors-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  /// Writes `bytes` verbatim to `name` in the temp dir; returns the path.
  std::string writeBytes(const std::string &name, const std::string &bytes) {
    std::string path = pathOf(name);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  /// An 8-byte little-endian length (`headerLength`, or the header's own
  /// size), then `header`, then `data`.
  std::string writeFile(const std::string &name, const std::string &header,
                        const std::string &data = "",
                        std::optional<uint64_t> headerLength = std::nullopt) {
    uint64_t length = headerLength.value_or(header.size());
    std::string bytes;
    for (int i = 0; i < 8; ++i)
      bytes += static_cast<char>((length >> (8 * i)) & 0xff);
    return writeBytes(name, bytes + header + data);
  }

  /// Opens `path`, expects a failure, and returns its one-line message.
  std::string openError(const std::string &path) {
    std::string error;
    std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
    EXPECT_FALSE(file.has_value()) << path << " opened";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    return error;
  }

  /// Writes a file with one tensor entry and returns the message opening
  /// it gives, minus the path prefix.
  std::string entryError(const std::string &header, const std::string &data) {
    std::string path = writeFile("bad.safetensors", header, data);
    std::string error = openError(path);
    std::string prefix = path + ": ";
    EXPECT_EQ(error.compare(0, prefix.size(), prefix), 0) << error;
    return error.substr(std::min(prefix.size(), error.size()));
  }

  std::string dir;
};

template <typename T> std::string bytesOf(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(T));
}

TensorView viewOf(const std::string &name, DType dtype,
                  std::vector<int64_t> shape, const std::string &bytes) {
  TensorView view;
  view.name = name;
  view.dtype = dtype;
  view.shape = std::move(shape);
  view.data = bytes.data();
  view.bytes = bytes.size();
  return view;
}

std::string readWholeFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, RoundTripKeepsEveryDTypeShapeAndByte) {
  std::string f32 = bytesOf<float>({1.5f, -2.f, 3.25f, 0.f, 1e-8f, 7.f});
  std::string f64 = bytesOf<double>({3.141592653589793});
  std::string f16 = bytesOf<uint16_t>({0x3c00, 0xc000, 0x7bff});
  std::string bf16 = bytesOf<uint16_t>({0x3f80, 0x4000});
  std::string i64 = bytesOf<int64_t>({1, -2, INT64_MAX, INT64_MIN});
  std::string i32 = bytesOf<int32_t>({-7, 8, 9});
  std::string i16 = bytesOf<int16_t>({-300, 300});
  std::string i8 = bytesOf<int8_t>({-1, 2, -3});
  std::string u8 = bytesOf<uint8_t>({0, 255, 1, 2, 3});
  std::string boolean = bytesOf<uint8_t>({1, 0, 1});
  std::string empty;
  std::vector<TensorView> tensors = {
      viewOf("weight", DType::F32, {2, 3}, f32),
      viewOf("scale", DType::F64, {}, f64),
      viewOf("half", DType::F16, {3}, f16),
      viewOf("brain", DType::BF16, {1, 2}, bf16),
      viewOf("input_ids", DType::I64, {2, 2}, i64),
      viewOf("ids32", DType::I32, {3}, i32),
      viewOf("shorts", DType::I16, {2, 1}, i16),
      viewOf("bytes", DType::I8, {3}, i8),
      viewOf("mask", DType::U8, {5}, u8),
      viewOf("flags", DType::Bool, {3}, boolean),
      viewOf("nothing", DType::F32, {0, 4}, empty),
  };
  std::string path = pathOf("out.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, tensors, error,
                               {{"format", "pt"}, {"producer", "tfmc"}}))
      << error;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->path(), path);
  ASSERT_EQ(file->tensors().size(), tensors.size());
  for (const TensorView &expected : tensors) {
    SCOPED_TRACE(expected.name);
    const TensorView *actual = file->find(expected.name);
    ASSERT_NE(actual, nullptr);
    EXPECT_EQ(actual->name, expected.name);
    EXPECT_EQ(actual->dtype, expected.dtype);
    EXPECT_EQ(actual->shape, expected.shape);
    ASSERT_EQ(actual->bytes, expected.bytes);
    EXPECT_EQ(std::memcmp(actual->data, expected.data, expected.bytes), 0);
    // The writer lays tensors out so that each is aligned in the mapping.
    EXPECT_TRUE(actual->isNaturallyAligned());
  }
  EXPECT_EQ(file->find("scale")->numElements(), 1);
  EXPECT_EQ(file->find("nothing")->numElements(), 0);
  EXPECT_EQ(file->find("weight")->numElements(), 6);
  EXPECT_EQ(file->find("absent"), nullptr);
  EXPECT_EQ(file->find(""), nullptr);

  std::vector<std::string> names;
  for (const TensorView &tensor : file->tensors())
    names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "brain", "bytes", "flags", "half", "ids32", "input_ids",
                       "mask", "nothing", "scale", "shorts", "weight"}));
  EXPECT_EQ(file->metadata(),
            (std::map<std::string, std::string>{{"format", "pt"},
                                                {"producer", "tfmc"}}));

  // The header is padded to 8 bytes and the data section has no gaps.
  std::string raw = readWholeFile(path);
  uint64_t headerLength = 0;
  std::memcpy(&headerLength, raw.data(), 8);
  EXPECT_EQ(headerLength % 8, 0u);
  std::size_t dataBytes = 0;
  for (const TensorView &tensor : tensors)
    dataBytes += tensor.bytes;
  EXPECT_EQ(raw.size(), 8 + headerLength + dataBytes);
  EXPECT_EQ(raw.substr(8, 2), "{\"");
}

TEST_F(SafetensorsTest, MovedFileKeepsItsViewsValid) {
  std::string data = bytesOf<float>({1.f, 2.f});
  std::string path = pathOf("m.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {viewOf("w", DType::F32, {2}, data)},
                               error))
      << error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  const void *before = file->find("w")->data;
  SafetensorsFile moved = std::move(*file);
  file.reset();
  ASSERT_NE(moved.find("w"), nullptr);
  EXPECT_EQ(moved.find("w")->data, before);
  EXPECT_EQ(std::memcmp(moved.find("w")->data, data.data(), 8), 0);
  EXPECT_TRUE(moved.metadata().empty());
}

TEST_F(SafetensorsTest, WriterReplacesAnOpenFileAtomically) {
  std::string path = pathOf("o.safetensors");
  std::string first = bytesOf<int64_t>({1, 2, 3});
  std::string second = bytesOf<int64_t>({4, 5});
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {viewOf("x", DType::I64, {3}, first)},
                               error));
  std::optional<SafetensorsFile> old = SafetensorsFile::open(path, error);
  ASSERT_TRUE(old) << error;
  ASSERT_TRUE(writeSafetensors(path, {viewOf("x", DType::I64, {2}, second)},
                               error))
      << error;
  // The old mapping still sees the old file; a new open sees the new one.
  EXPECT_EQ(std::memcmp(old->find("x")->data, first.data(), first.size()), 0);
  std::optional<SafetensorsFile> fresh = SafetensorsFile::open(path, error);
  ASSERT_TRUE(fresh) << error;
  EXPECT_EQ(fresh->find("x")->shape, (std::vector<int64_t>{2}));
}

TEST_F(SafetensorsTest, EmptyFileOfTensorsRoundTrips) {
  std::string path = pathOf("none.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {}, error)) << error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  EXPECT_TRUE(file->tensors().empty());
}

TEST_F(SafetensorsTest, UnalignedDataIsReportedAndCopiedToAlignedMemory) {
  // Header of 3 + 62 bytes: the data section starts at 8 + 65 = 73, odd.
  std::string header =
      R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})";
  header.append(65 - header.size(), ' ');
  std::string data = bytesOf<float>({1.f, 2.f, 3.f});
  std::string path = writeFile("u.safetensors", header, data);
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  const TensorView *x = file->find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_FALSE(x->isNaturallyAligned());
  EXPECT_FALSE(x->isAligned(4));
  AlignedBuffer copy = copyToAligned(*x);
  ASSERT_NE(copy.data(), nullptr);
  EXPECT_EQ(copy.size(), 12u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % 64, 0u);
  EXPECT_EQ(copy.as<float>()[0], 1.f);
  EXPECT_EQ(copy.as<float>()[2], 3.f);
}

// Buffers of 2 MiB or more are mapped at a huge-page boundary (outside
// AddressSanitizer builds, which keep malloc); every size is 64-byte
// aligned, writable to its last byte, and moves without a second free.
TEST(AlignedBufferTest, SmallAndHugeBuffersAreAlignedAndWritable) {
  constexpr std::size_t hugePage = std::size_t(2) << 20;
  for (std::size_t bytes :
       {std::size_t(1), std::size_t(4096), hugePage - 1, hugePage,
        3 * hugePage + 12345}) {
    AlignedBuffer buffer(bytes);
    ASSERT_NE(buffer.data(), nullptr) << bytes;
    EXPECT_EQ(buffer.size(), bytes);
    const auto address = reinterpret_cast<uintptr_t>(buffer.data());
    EXPECT_EQ(address % 64, 0u) << bytes;
#if !defined(__SANITIZE_ADDRESS__)
    if (bytes >= hugePage)
      EXPECT_EQ(address % hugePage, 0u) << bytes;
#endif
    auto *data = static_cast<unsigned char *>(buffer.data());
    std::memset(data, 0x5a, bytes);
    EXPECT_EQ(data[bytes - 1], 0x5a);
    AlignedBuffer moved = std::move(buffer);
    EXPECT_EQ(moved.data(), data);
    EXPECT_EQ(buffer.data(), nullptr);
  }
}

TEST_F(SafetensorsTest, ReaderAcceptsWhitespacePaddingAndAnyKeyOrder) {
  std::string header = R"({ "b" : {"shape":[1],"data_offsets":[4,8],"dtype":"I32"},)"
                       R"( "a":{"data_offsets":[0,4],"dtype":"U8","shape":[2,2]},)"
                       R"( "__metadata__":{}}    )";
  std::string path = writeFile("p.safetensors", header, "abcdefgh");
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->tensors()[0].name, "a");
  EXPECT_EQ(std::string(static_cast<const char *>(file->find("b")->data), 4),
            "efgh");
}

//===----------------------------------------------------------------------===//
// Writer errors
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, WriterRejectsBadTensorsAndLeavesNoFile) {
  std::string path = pathOf("w.safetensors");
  std::string twelve(12, '\0');
  std::string error;
  EXPECT_FALSE(writeSafetensors(path, {viewOf("x", DType::F32, {2, 2}, twelve)},
                                error));
  EXPECT_EQ(error, path + ": cannot write tensor 'x': 12 bytes given, but F32 "
                          "[2, 2] needs 16");
  EXPECT_FALSE(writeSafetensors(path,
                                {viewOf("x", DType::U8, {12}, twelve),
                                 viewOf("x", DType::U8, {12}, twelve)},
                                error));
  EXPECT_EQ(error, path + ": cannot write tensor 'x': the name is given twice");
  EXPECT_FALSE(writeSafetensors(path, {viewOf("", DType::U8, {12}, twelve)},
                                error));
  EXPECT_EQ(error, path + ": cannot write a tensor with an empty name");
  EXPECT_FALSE(writeSafetensors(
      path, {viewOf("__metadata__", DType::U8, {12}, twelve)}, error));
  EXPECT_EQ(error,
            path + ": cannot write tensor '__metadata__': the name is reserved");
  EXPECT_FALSE(writeSafetensors(path, {viewOf("x", DType::U8, {-12}, twelve)},
                                error));
  EXPECT_EQ(error, path + ": cannot write tensor 'x': shape [-12] has a "
                          "negative dimension or too many elements");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(SafetensorsTest, WriterReportsAnUnwritablePath) {
  std::string path = pathOf("no/such/dir/out.safetensors");
  std::string error;
  EXPECT_FALSE(writeSafetensors(path, {}, error));
  EXPECT_EQ(error, path + ": cannot write: No such file or directory");
}

//===----------------------------------------------------------------------===//
// Reader errors: the file as a whole
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, MissingFile) {
  std::string path = pathOf("absent.safetensors");
  EXPECT_EQ(openError(path), path + ": cannot open: No such file or directory");
}

TEST_F(SafetensorsTest, Directory) {
  EXPECT_EQ(openError(dir), dir + ": cannot open: Is a directory");
}

TEST_F(SafetensorsTest, EmptyFile) {
  std::string path = writeBytes("empty.safetensors", "");
  EXPECT_EQ(openError(path), path + ": file is empty");
}

TEST_F(SafetensorsTest, SevenByteFile) {
  std::string path = writeBytes("seven.safetensors", std::string(7, '\0'));
  EXPECT_EQ(openError(path), path + ": file is truncated: 7 bytes, but the "
                                    "header length alone takes 8");
}

TEST_F(SafetensorsTest, HeaderLengthBeyondTheFile) {
  std::string path = writeFile("t.safetensors", std::string(100, ' '), "",
                               uint64_t{4096});
  EXPECT_EQ(openError(path), path + ": file is truncated: header length 4096 "
                                    "but only 100 bytes follow");
}

TEST_F(SafetensorsTest, HeaderLengthBeyondTheLimit) {
  // A PyTorch .bin (a zip) read as safetensors.
  std::string path =
      writeBytes("zip.safetensors", std::string("PK\x03\x04\x14\0\0\0", 8) +
                                        std::string(100, '\0'));
  EXPECT_EQ(openError(path),
            path + ": header length 85966670672 exceeds the limit of "
                   "100000000 bytes (is this a safetensors file?)");
}

TEST_F(SafetensorsTest, HeaderNotJson) {
  std::string path = writeFile("j.safetensors", "{not json}");
  EXPECT_EQ(openError(path),
            path + ": header: invalid JSON at line 1, column 3: syntax error while "
                   "parsing object key - invalid literal; last read: '{no'; "
                   "expected string literal");
}

TEST_F(SafetensorsTest, HeaderNotJsonWithNewlineStaysOneLine) {
  std::string path = writeFile("nl.safetensors", "{\n\"a\"\n:\n");
  std::string error = openError(path);
  EXPECT_EQ(error.rfind(path + ": header: invalid JSON at line 4, column 1: ", 0), 0u)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST_F(SafetensorsTest, EmptyHeader) {
  std::string path = writeFile("e.safetensors", "");
  EXPECT_EQ(openError(path),
            path + ": header: invalid JSON at line 1, column 1: syntax error while "
                   "parsing value - unexpected end of input; expected '[', "
                   "'{', or a literal");
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  std::string path = writeFile("a.safetensors", "[1, 2, 3]");
  EXPECT_EQ(openError(path),
            path + ": header is an array, expected a JSON object");
}

TEST_F(SafetensorsTest, DeeplyNestedHeaderIsRejectedWithoutCrashing) {
  std::string header = std::string(100000, '[') + std::string(100000, ']');
  std::string path = writeFile("deep.safetensors", header);
  // Refused while parsing (support/Json.h), before anything walks it.
  EXPECT_EQ(openError(path),
            path + ": header: invalid JSON: nested deeper than 64 levels");
}

TEST_F(SafetensorsTest, MetadataNotAnObject) {
  std::string path = writeFile("m.safetensors", R"({"__metadata__": ["pt"]})");
  EXPECT_EQ(openError(path),
            path + ": __metadata__ is an array, expected an object of strings");
}

TEST_F(SafetensorsTest, MetadataValueNotAString) {
  std::string path =
      writeFile("m.safetensors", R"({"__metadata__": {"format": 1}})");
  EXPECT_EQ(openError(path), path + ": __metadata__ entry 'format' is a "
                                    "number, expected a string");
}

TEST_F(SafetensorsTest, DuplicateTensorName) {
  std::string path = writeFile(
      "d.safetensors",
      R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
      "ab");
  EXPECT_EQ(openError(path), path + ": header names 'x' twice");
}

TEST_F(SafetensorsTest, EmptyTensorName) {
  EXPECT_EQ(entryError(R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                       "a"),
            "header has a tensor with an empty name");
}

//===----------------------------------------------------------------------===//
// Reader errors: one tensor entry
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, EntryNotAnObject) {
  EXPECT_EQ(entryError(R"({"x": [0, 1]})", ""),
            "tensor 'x': entry is an array, expected an object with dtype, "
            "shape and data_offsets");
}

TEST_F(SafetensorsTest, EntryWithAnExtraKey) {
  EXPECT_EQ(entryError(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1],)"
                       R"("stride":[1]}})",
                       "a"),
            "tensor 'x': unexpected key 'stride' (expected dtype, shape and "
            "data_offsets)");
}

TEST_F(SafetensorsTest, EntryWithoutShape) {
  EXPECT_EQ(entryError(R"({"x":{"dtype":"U8","data_offsets":[0,1]}})", "a"),
            "tensor 'x': missing 'shape'");
}

TEST_F(SafetensorsTest, UnknownDType) {
  EXPECT_EQ(
      entryError(
          R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "a"),
      "tensor 'w': unknown dtype 'F8_E4M3' (expected F64, F32, F16, BF16, I64, "
      "I32, I16, I8, U8 or BOOL)");
}

TEST_F(SafetensorsTest, DTypeNotAString) {
  EXPECT_EQ(
      entryError(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})",
                 "abcd"),
      "tensor 'w': dtype is a number, expected a string");
}

TEST_F(SafetensorsTest, NegativeDimension) {
  EXPECT_EQ(
      entryError(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,0]}})",
                 ""),
      "tensor 'w': shape[1] is -3, expected a non-negative integer");
}

TEST_F(SafetensorsTest, FractionalDimension) {
  EXPECT_EQ(
      entryError(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,0]}})",
                 ""),
      "tensor 'w': shape[0] is 2.5, expected a non-negative integer");
}

TEST_F(SafetensorsTest, ShapeNotAnArray) {
  EXPECT_EQ(
      entryError(R"({"w":{"dtype":"F32","shape":"2x2","data_offsets":[0,0]}})",
                 ""),
      "tensor 'w': shape is a string, expected an array of integers");
}

TEST_F(SafetensorsTest, ElementCountOverflows) {
  EXPECT_EQ(entryError(R"({"w":{"dtype":"F32",)"
                       R"("shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})",
                       ""),
            "tensor 'w': shape [4294967296, 4294967296, 4] has too many "
            "elements (the count overflows 64 bits)");
}

TEST_F(SafetensorsTest, ByteSizeOverflows) {
  EXPECT_EQ(entryError(R"({"w":{"dtype":"F64",)"
                       R"("shape":[4611686018427387904],"data_offsets":[0,0]}})",
                       ""),
            "tensor 'w': F64 [4611686018427387904] is too large (its byte size "
            "overflows 64 bits)");
}

TEST_F(SafetensorsTest, SizeDisagreesWithOffsets) {
  EXPECT_EQ(entryError(R"({"w":{"dtype":"F32","shape":[2,2],)"
                       R"("data_offsets":[0,12]}})",
                       std::string(16, '\0')),
            "tensor 'w': data_offsets [0, 12] hold 12 bytes, but F32 [2, 2] "
            "needs 16");
}

TEST_F(SafetensorsTest, OffsetsBeyondTheDataSection) {
  std::string data(768, '\0');
  std::string path = writeFile(
      "weights.safetensors",
      R"({"decoder.norm.weight":{"dtype":"F32","shape":[256],)"
      R"("data_offsets":[0,1024]}})",
      data);
  EXPECT_EQ(openError(path),
            path + ": tensor 'decoder.norm.weight': data_offsets [0, 1024] end "
                   "beyond the data section (768 bytes)");
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  EXPECT_EQ(entryError(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                       std::string(24, '\0')),
            "tensors 'a' and 'b' overlap: data_offsets [0, 16] and [8, 24]");
}

TEST_F(SafetensorsTest, OverlapHiddenBehindAShorterTensor) {
  // 'big' spans everything; 'c' overlaps it although 'b' ends before 'c'.
  EXPECT_EQ(entryError(R"({"big":{"dtype":"U8","shape":[10],"data_offsets":[0,10]},)"
                       R"("b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                       R"("c":{"dtype":"U8","shape":[1],"data_offsets":[5,6]}})",
                       std::string(10, '\0')),
            "tensors 'big' and 'b' overlap: data_offsets [0, 10] and [1, 2]");
}

TEST_F(SafetensorsTest, EmptyTensorsOverlapNothing) {
  std::string path = writeFile(
      "z.safetensors",
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("z":{"dtype":"F32","shape":[0,4],"data_offsets":[4,4]}})",
      std::string(8, '\0'));
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->find("z")->bytes, 0u);
}

TEST_F(SafetensorsTest, BeginAfterEnd) {
  EXPECT_EQ(entryError(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})",
                       std::string(8, '\0')),
            "tensor 'w': data_offsets [8, 4] begin after they end");
}

TEST_F(SafetensorsTest, NonIntegerOffsets) {
  EXPECT_EQ(entryError(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,"1"]}})",
                       "a"),
            "tensor 'w': data_offsets [0, \"1\"] are not non-negative integers");
  EXPECT_EQ(entryError(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})",
                       "a"),
            "tensor 'w': data_offsets [-1, 0] are not non-negative integers");
  EXPECT_EQ(entryError(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0.5,1]}})",
                       "a"),
            "tensor 'w': data_offsets [0.5, 1] are not non-negative integers");
}

TEST_F(SafetensorsTest, OffsetsNotAPair) {
  EXPECT_EQ(entryError(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})",
                       "ab"),
            "tensor 'w': data_offsets is an array of 3 elements, expected "
            "[begin, end]");
}

TEST_F(SafetensorsTest, ControlCharactersInNamesAreEscaped) {
  EXPECT_EQ(entryError(R"({"a\nb":{"dtype":"X","shape":[1],"data_offsets":[0,1]}})",
                       "a"),
            "tensor 'a\\nb': unknown dtype 'X' (expected F64, F32, F16, BF16, "
            "I64, I32, I16, I8, U8 or BOOL)");
}

//===----------------------------------------------------------------------===//
// expectTensor and integer inputs
//===----------------------------------------------------------------------===//

class SafetensorsLookupTest : public SafetensorsTest {
protected:
  void SetUp() override {
    SafetensorsTest::SetUp();
    f32 = bytesOf<float>(std::vector<float>(12, 0.5f));
    ids32 = bytesOf<int32_t>({5, -1, 70000, 0});
    ids64 = bytesOf<int64_t>({1, 2, 3});
    mask = bytesOf<uint8_t>({1, 0, 2});
    path = pathOf("weights.safetensors");
    std::string error;
    ASSERT_TRUE(writeSafetensors(
        path,
        {viewOf("x", DType::F32, {3, 4}, f32),
         viewOf("ids32", DType::I32, {2, 2}, ids32),
         viewOf("ids64", DType::I64, {1, 3}, ids64),
         viewOf("bool_mask", DType::Bool, {1, 3}, mask),
         viewOf("u8_mask", DType::U8, {3}, mask)},
        error))
        << error;
    std::optional<SafetensorsFile> opened = SafetensorsFile::open(path, error);
    ASSERT_TRUE(opened) << error;
    file.emplace(std::move(*opened));
  }

  std::string f32, ids32, ids64, mask, path;
  std::optional<SafetensorsFile> file;
};

TEST_F(SafetensorsLookupTest, ExpectTensorAcceptsTheRightDTypeAndShape) {
  std::string error;
  const TensorView *x = expectTensor(*file, "x", DType::F32, {3, 4}, error);
  ASSERT_NE(x, nullptr) << error;
  EXPECT_EQ(x->bytes, 48u);
}

TEST_F(SafetensorsLookupTest, ExpectTensorMessages) {
  std::string error;
  EXPECT_EQ(expectTensor(*file, "decoder.layers.0.linear1.weight", DType::F32,
                         {4, 4}, error),
            nullptr);
  EXPECT_EQ(error,
            path + ": missing tensor 'decoder.layers.0.linear1.weight'");
  EXPECT_EQ(expectTensor(*file, "x", DType::F32, {4, 4}, error), nullptr);
  EXPECT_EQ(error, path + ": tensor 'x' has shape [3, 4], expected [4, 4]");
  EXPECT_EQ(expectTensor(*file, "x", DType::F16, {3, 4}, error), nullptr);
  EXPECT_EQ(error, path + ": tensor 'x' has dtype F32, expected F16");
  EXPECT_EQ(expectTensor(*file, "x", DType::F32, {}, error), nullptr);
  EXPECT_EQ(error, path + ": tensor 'x' has shape [3, 4], expected []");
}

TEST_F(SafetensorsLookupTest, IntegerInputs) {
  std::string error;
  std::optional<IntegerTensor> ids =
      readIntegerTensor(*file, "ids32", IntegerInputKind::Ids, error);
  ASSERT_TRUE(ids) << error;
  EXPECT_EQ(ids->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ids->values, (std::vector<int64_t>{5, -1, 70000, 0}));

  ids = readIntegerTensor(*file, "ids64", IntegerInputKind::Ids, error);
  ASSERT_TRUE(ids) << error;
  EXPECT_EQ(ids->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ids->values, (std::vector<int64_t>{1, 2, 3}));

  std::optional<IntegerTensor> mask =
      readIntegerTensor(*file, "bool_mask", IntegerInputKind::Mask, error);
  ASSERT_TRUE(mask) << error;
  EXPECT_EQ(mask->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(mask->values, (std::vector<int64_t>{1, 0, 1}));

  mask = readIntegerTensor(*file, "u8_mask", IntegerInputKind::Mask, error);
  ASSERT_TRUE(mask) << error;
  EXPECT_EQ(mask->values, (std::vector<int64_t>{1, 0, 2}));
}

TEST_F(SafetensorsLookupTest, IntegerInputErrors) {
  std::string error;
  EXPECT_FALSE(readIntegerTensor(*file, "x", IntegerInputKind::Ids, error));
  EXPECT_EQ(error, path + ": tensor 'x' has dtype F32, expected I64 or I32");
  EXPECT_FALSE(readIntegerTensor(*file, "x", IntegerInputKind::Mask, error));
  EXPECT_EQ(error,
            path + ": tensor 'x' has dtype F32, expected I64, I32, BOOL or U8");
  EXPECT_FALSE(
      readIntegerTensor(*file, "bool_mask", IntegerInputKind::Ids, error));
  EXPECT_EQ(error,
            path + ": tensor 'bool_mask' has dtype BOOL, expected I64 or I32");
  EXPECT_FALSE(
      readIntegerTensor(*file, "input_ids", IntegerInputKind::Ids, error));
  EXPECT_EQ(error, path + ": missing tensor 'input_ids'");
}

TEST_F(SafetensorsLookupTest, IntegerInputFromUnalignedData) {
  // I64 at data offset 1: read element by element, not through a cast.
  std::string header =
      R"({"pad":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("input_ids":{"dtype":"I64","shape":[2],"data_offsets":[1,17]}})";
  std::string data = "p" + bytesOf<int64_t>({42, -42});
  std::string unaligned = writeFile("in.safetensors", header, data);
  std::string error;
  std::optional<SafetensorsFile> in = SafetensorsFile::open(unaligned, error);
  ASSERT_TRUE(in) << error;
  std::optional<IntegerTensor> ids =
      readIntegerTensor(*in, "input_ids", IntegerInputKind::Ids, error);
  ASSERT_TRUE(ids) << error;
  EXPECT_EQ(ids->values, (std::vector<int64_t>{42, -42}));
}

//===----------------------------------------------------------------------===//
// FileIO.h: atomic outputs, regular-file inputs
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, OutputFileReplacesOnlyOnCommit) {
  std::string path = writeBytes("out", "old");
  std::string error;
  std::optional<tfmc::support::OutputFile> file =
      tfmc::support::OutputFile::create("--output", path, {}, true, error);
  ASSERT_TRUE(file) << error;
  std::string temporary = file->temporaryPath();
  EXPECT_EQ(temporary.rfind(path + ".tmp-", 0), 0u);
  EXPECT_TRUE(std::filesystem::exists(temporary));
  ASSERT_TRUE(file->write("new", 3, error)) << error;
  std::ifstream before(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(before), {}), "old");
  ASSERT_TRUE(file->commit(error)) << error;
  std::ifstream after(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(after), {}), "new");
  EXPECT_FALSE(std::filesystem::exists(temporary));
}

TEST_F(SafetensorsTest, AnOutputFileNotCommittedLeavesNothing) {
  std::string path = writeBytes("out", "old");
  std::string temporary;
  {
    std::string error;
    std::optional<tfmc::support::OutputFile> file =
        tfmc::support::OutputFile::create("--output", path, {}, true, error);
    ASSERT_TRUE(file) << error;
    temporary = file->temporaryPath();
    ASSERT_TRUE(file->write("partial", 7, error));
  }
  EXPECT_FALSE(std::filesystem::exists(temporary));
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
}

// Every file the process read is an input no program output may replace
// (FileIO's list): refused when the output is created, and again at commit
// for a file read after that; a library caller may opt out.
TEST_F(SafetensorsTest, OutputFileRefusesEveryFileTheProcessRead) {
  std::string error, contents;
  std::string read = writeBytes("read-first", "tokens");
  ASSERT_TRUE(tfmc::support::readRegularFile(read, contents, error)) << error;
  EXPECT_FALSE(tfmc::support::OutputFile::create("--output", read, {}, true, error));
  EXPECT_EQ(error, "--output " + read + ": is the same file as the input " +
                       read + "; writing it would destroy the input");
  EXPECT_TRUE(tfmc::support::OutputFile::create("", read, {}, false, error)) << error;

  std::string later = writeBytes("read-later", "vocab");
  std::optional<tfmc::support::OutputFile> file =
      tfmc::support::OutputFile::create("--output", later, {}, true, error);
  ASSERT_TRUE(file) << error;
  ASSERT_TRUE(file->write("logits", 6, error)) << error;
  ASSERT_TRUE(tfmc::support::readRegularFile(later, contents, error)) << error;
  EXPECT_FALSE(file->commit(error));
  EXPECT_EQ(error, "--output " + later + ": is the same file as the input " +
                       later + "; writing it would destroy the input");
  std::ifstream kept(later);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "vocab");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            2);
}

TEST_F(SafetensorsTest, OutputFileRefusesWhatItMustNotReplace) {
  std::string error;
  std::string input = writeBytes("w", "weights");
  EXPECT_FALSE(
      tfmc::support::OutputFile::create("--output", input, {{"--weights", input}}, true,
                         error));
  EXPECT_EQ(error, "--output " + input + ": is the same file as --weights " +
                       input + "; writing it would destroy the input");
  std::string link = pathOf("link");
  ASSERT_EQ(::symlink(input.c_str(), link.c_str()), 0);
  EXPECT_FALSE(tfmc::support::OutputFile::create("--output", link, {}, true, error));
  EXPECT_EQ(error, "--output " + link +
                       ": refusing to replace a symbolic link; give its "
                       "target or a new path");
  std::string fifo = pathOf("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(tfmc::support::OutputFile::create("", fifo, {}, true, error));
  EXPECT_EQ(error, fifo + ": refusing to replace a FIFO; give a regular file "
                          "or a new path");
  EXPECT_FALSE(tfmc::support::OutputFile::create("--output", dir, {}, true, error));
  EXPECT_EQ(error, "--output " + dir + ": refusing to replace a directory; "
                                       "give a regular file or a new path");
  // Nothing was created next to any of them.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            3);
}

TEST_F(SafetensorsTest, ReadRegularFileRefusesFifosWithoutBlocking) {
  std::string fifo = pathOf("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string contents, error;
  EXPECT_FALSE(tfmc::support::readRegularFile(fifo, contents, error));
  EXPECT_EQ(error, fifo + ": cannot read: a FIFO, not a regular file");
  EXPECT_FALSE(tfmc::support::readRegularFile(dir, contents, error));
  EXPECT_EQ(error, dir + ": cannot read: a directory, not a regular file");
  std::string big = writeBytes("big", std::string(100, 'x'));
  EXPECT_FALSE(tfmc::support::readRegularFile(big, contents, error, 99));
  EXPECT_EQ(error, big + ": cannot read: 100 bytes is more than the limit "
                         "of 99");
  ASSERT_TRUE(tfmc::support::readRegularFile(big, contents, error, 100)) << error;
  EXPECT_EQ(contents, std::string(100, 'x'));
}

} // namespace
