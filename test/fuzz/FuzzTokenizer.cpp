//===- FuzzTokenizer.cpp - The runtime's tokenizers -----------------------===//
//
// The first byte picks what the rest is:
//   0: vocab.json (with data/tokenizer's merges.txt), 1: merges.txt (with
//      its vocab.json): Gpt2Tokenizer::load either accepts the files, and
//      the tokenizer then round-trips a fixed text, or fails with one line;
//   3: a tokenizer.json, 4: a tokenizer.model: loadTokenizer either
//      accepts it, and encoding a fixed text gives ids of the vocabulary,
//      or fails with one line naming the file;
//   5: text for test/fixtures/tokenizers/bytelevel (a byte-level
//      tokenizer.json with special tokens), checked as below;
//   6: a vocab.txt (BERT's WordPiece), 9: a Marian vocab.json (with the
//      marian fixture's source.spm and target.spm): loadTokenizer either
//      accepts it, and a fixed text encodes to ids of the vocabulary (and,
//      for WordPiece, to BERT's inputs), or fails with one line naming the
//      file;
//   7: text for test/fixtures/tokenizers/bert-uncased, 8: for .../marian:
//      valid UTF-8 encodes to ids of the vocabulary (BERT's inputs: [CLS]
//      first, [SEP] last, at most 16 with truncation, token types 0 then 1)
//      and decodes to valid UTF-8; anything else is validateUtf8's error;
//   10: a GGUF file: loadTokenizer either accepts it (its tokenizer.ggml.*
//      metadata), and encoding a fixed text gives ids of the vocabulary (or
//      fails with one line naming the file: a byte without a token) and
//      readPromptTokens gives ids of the vocabulary, or fails with one line
//      naming the file;
//   11, 12: text for data/tokenizer-gguf/spm.gguf ("llama", from the
//      spmodel fixture) and bpe.gguf ("gpt2", pre "llama-bpe", from the
//      bytelevel fixture), checked as 7 and 8;
//   else: text for `generate --text`, with data/tokenizer: valid UTF-8
//      encodes to ids of the vocabulary that decode to the same bytes;
//      anything else is an error naming the first bad byte, and no ids.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "runtime/tokenizers/Tokenizer.h"
#include "runtime/tokenizers/WordPieceTokenizer.h"

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace tfmc::runtime;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  TFMC_FUZZ_CHECK(in.good());
  return {std::istreambuf_iterator<char>(in), {}};
}

void writeFile(const std::string &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  TFMC_FUZZ_CHECK(out.good());
}

void checkRoundTrip(Tokenizer &tokenizer, std::string_view text) {
  std::vector<int64_t> ids;
  std::string error;
  if (Gpt2Tokenizer::validateUtf8(text, error)) {
    TFMC_FUZZ_CHECK(tokenizer.encode(text, ids, error));
    for (int64_t id : ids)
      TFMC_FUZZ_CHECK(id >= 0 && id < tokenizer.vocabSize());
    TFMC_FUZZ_CHECK(tokenizer.decode(ids) == text);
    TFMC_FUZZ_CHECK(Gpt2Tokenizer::toValidUtf8(text) == text);
  } else {
    std::string encodeError;
    TFMC_FUZZ_CHECK(!tokenizer.encode(text, ids, encodeError));
    TFMC_FUZZ_CHECK(ids.empty() && encodeError == error);
    TFMC_FUZZ_CHECK(error.find('\n') == std::string::npos);
    std::string valid = Gpt2Tokenizer::toValidUtf8(text);
    std::string validError;
    TFMC_FUZZ_CHECK(Gpt2Tokenizer::validateUtf8(valid, validError));
  }
}

/// The checks of modes 7 and 8 (and of a vocabulary modes 6 and 9 load).
void checkText(Tokenizer &tokenizer, std::string_view text) {
  std::vector<int64_t> ids;
  std::string error;
  if (!Tokenizer::validateUtf8(text, error)) {
    std::string encodeError;
    TFMC_FUZZ_CHECK(!tokenizer.encode(text, ids, encodeError));
    TFMC_FUZZ_CHECK(ids.empty() && encodeError == error);
    return;
  }
  TFMC_FUZZ_CHECK(tokenizer.encode(text, ids, error));
  for (int64_t id : ids)
    TFMC_FUZZ_CHECK(tokenizer.hasId(id));
  std::string decoded = tokenizer.decode(ids);
  TFMC_FUZZ_CHECK(Tokenizer::toValidUtf8(decoded) == decoded);
  auto *bert = dynamic_cast<WordPieceTokenizer *>(&tokenizer);
  if (!bert)
    return;
  // A pair: the text's two halves (cut at a character boundary).
  std::size_t half = text.size() / 2;
  while (half > 0 && (static_cast<unsigned char>(text[half]) & 0xC0) == 0x80)
    --half;
  std::string_view second = text.substr(half);
  std::vector<int64_t> typeIds;
  TFMC_FUZZ_CHECK(bert->encodeForModel(text.substr(0, half), &second, 16, ids,
                                       typeIds, error));
  TFMC_FUZZ_CHECK(ids.size() >= 3 && ids.size() <= 16 &&
                  ids.size() == typeIds.size());
  TFMC_FUZZ_CHECK(ids.front() == bert->clsId() && ids.back() == bert->sepId());
  TFMC_FUZZ_CHECK(typeIds.front() == 0 && typeIds.back() == 1);
  for (std::size_t i = 1; i < typeIds.size(); ++i)
    TFMC_FUZZ_CHECK(typeIds[i] >= typeIds[i - 1]);
}

std::unique_ptr<Tokenizer> loadFixture(const char *name) {
  std::string error;
  std::unique_ptr<Tokenizer> loaded =
      loadTokenizer(std::string(TFMC_TOKENIZER_FIXTURES "/") + name, error);
  if (!loaded) {
    std::fprintf(stderr, "fuzz set-up: %s\n", error.c_str());
    std::abort();
  }
  return loaded;
}

std::unique_ptr<Tokenizer> loadFixturePath(const std::string &path) {
  std::string error;
  std::unique_ptr<Tokenizer> loaded = loadTokenizer(path, error);
  if (!loaded) {
    std::fprintf(stderr, "fuzz set-up: %s\n", error.c_str());
    std::abort();
  }
  return loaded;
}

/// A directory of this process for tokenizer.json / tokenizer.model.
std::string hfDirectory() {
  static const std::string directory = [] {
    static char pattern[] = "/tmp/tfmc-fuzz-hf-tokenizer-XXXXXX";
    TFMC_FUZZ_CHECK(::mkdtemp(pattern) != nullptr);
    std::atexit([] { std::filesystem::remove_all(pattern); });
    return std::string(pattern);
  }();
  return directory;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string fixed = tfmc::fuzz::dataDir() + "/tokenizer";
  static std::optional<Gpt2Tokenizer> tokenizer = [] {
    std::string error;
    std::optional<Gpt2Tokenizer> loaded = Gpt2Tokenizer::load(fixed, error);
    if (!loaded) {
      std::fprintf(stderr, "fuzz set-up: %s\n", error.c_str());
      std::abort();
    }
    return loaded;
  }();
  if (size == 0)
    return 0;
  std::string_view rest = tfmc::fuzz::asText(data + 1, size - 1);
  if (data[0] == 5) {
    static std::unique_ptr<Tokenizer> byteLevel = [] {
      std::string error;
      std::unique_ptr<Tokenizer> loaded =
          loadTokenizer(TFMC_TOKENIZER_FIXTURES "/bytelevel", error);
      if (!loaded) {
        std::fprintf(stderr, "fuzz set-up: %s\n", error.c_str());
        std::abort();
      }
      return loaded;
    }();
    checkRoundTrip(*byteLevel, rest);
    return 0;
  }
  if (data[0] == 7 || data[0] == 8) {
    static std::unique_ptr<Tokenizer> bert = loadFixture("bert-uncased");
    static std::unique_ptr<Tokenizer> marian = loadFixture("marian");
    checkText(data[0] == 7 ? *bert : *marian, rest);
    return 0;
  }
  if (data[0] == 11 || data[0] == 12) {
    static const std::string gguf = tfmc::fuzz::dataDir() + "/tokenizer-gguf";
    static std::unique_ptr<Tokenizer> spm = loadFixturePath(gguf + "/spm.gguf");
    static std::unique_ptr<Tokenizer> bpe = loadFixturePath(gguf + "/bpe.gguf");
    checkText(data[0] == 11 ? *spm : *bpe, rest);
    return 0;
  }
  if (data[0] == 10) {
    const std::string file = hfDirectory() + "/model.gguf";
    writeFile(file, rest);
    std::string error;
    std::unique_ptr<Tokenizer> loaded = loadTokenizer(file, error);
    if (loaded) {
      std::vector<int64_t> ids;
      if (loaded->encode("Hello, world! \xc3\xa9t\xc3\xa9 2024 <s>", ids,
                         error)) {
        for (int64_t id : ids)
          TFMC_FUZZ_CHECK(loaded->hasId(id));
        loaded->decode(ids);
      } else {
        TFMC_FUZZ_CHECK(ids.empty() && error.rfind(file, 0) == 0 &&
                        error.find('\n') == std::string::npos);
      }
      PromptTokens tokens;
      TFMC_FUZZ_CHECK(readPromptTokens(file, *loaded, tokens, error));
      for (const auto *side : {&tokens.prefix, &tokens.suffix, &tokens.eos})
        for (int64_t id : *side)
          TFMC_FUZZ_CHECK(loaded->hasId(id));
    } else {
      TFMC_FUZZ_CHECK(error.rfind(file, 0) == 0 &&
                      error.find('\n') == std::string::npos);
    }
    std::filesystem::remove(file);
    return 0;
  }
  if (data[0] == 6 || data[0] == 9) {
    static const std::string directory = [] {
      static char pattern[] = "/tmp/tfmc-fuzz-wp-tokenizer-XXXXXX";
      TFMC_FUZZ_CHECK(::mkdtemp(pattern) != nullptr);
      std::atexit([] { std::filesystem::remove_all(pattern); });
      return std::string(pattern);
    }();
    static const std::string source =
        readFile(TFMC_TOKENIZER_FIXTURES "/marian/source.spm");
    static const std::string target =
        readFile(TFMC_TOKENIZER_FIXTURES "/marian/target.spm");
    std::filesystem::remove(directory + "/source.spm");
    std::filesystem::remove(directory + "/target.spm");
    std::filesystem::remove(directory + "/vocab.json");
    std::filesystem::remove(directory + "/vocab.txt");
    std::string file = directory + (data[0] == 6 ? "/vocab.txt" : "/vocab.json");
    if (data[0] == 9) {
      writeFile(directory + "/source.spm", source);
      writeFile(directory + "/target.spm", target);
    }
    writeFile(file, rest);
    std::string error;
    std::unique_ptr<Tokenizer> loaded = loadTokenizer(directory, error);
    if (loaded)
      checkText(*loaded, "Hello, [MASK] world! \xc3\xa9t\xc3\xa9 \xe6\x97\xa5 2024 </s>");
    else
      TFMC_FUZZ_CHECK(error.rfind(file, 0) == 0 &&
                      error.find('\n') == std::string::npos);
    return 0;
  }
  if (data[0] > 1 && data[0] != 3 && data[0] != 4) { // 2, 13 and above
    checkRoundTrip(*tokenizer, rest);
    return 0;
  }

  // A directory of this process for the two files.
  static const std::string directory = [] {
    static char pattern[] = "/tmp/tfmc-fuzz-tokenizer-XXXXXX";
    TFMC_FUZZ_CHECK(::mkdtemp(pattern) != nullptr);
    std::atexit([] {
      std::filesystem::remove_all(pattern);
    });
    return std::string(pattern);
  }();
  if (data[0] == 3 || data[0] == 4) {
    const std::string directory = hfDirectory();
    const std::string file =
        directory + (data[0] == 3 ? "/tokenizer.json" : "/tokenizer.model");
    std::filesystem::remove(directory + "/tokenizer.json");
    writeFile(file, rest);
    std::string error;
    std::unique_ptr<Tokenizer> loaded = loadTokenizer(directory, error);
    if (loaded) {
      std::vector<int64_t> ids;
      TFMC_FUZZ_CHECK(loaded->encode("Hello, world! \xc3\xa9t\xc3\xa9 2024 <s>",
                                     ids, error));
      for (int64_t id : ids)
        TFMC_FUZZ_CHECK(loaded->hasId(id));
      loaded->decode(ids);
      PromptTokens tokens;
      TFMC_FUZZ_CHECK(readPromptTokens(directory, *loaded, tokens, error));
    } else {
      TFMC_FUZZ_CHECK(error.rfind(file, 0) == 0 &&
                      error.find('\n') == std::string::npos);
    }
    std::filesystem::remove(file);
    return 0;
  }
  static const std::string vocab = readFile(fixed + "/vocab.json");
  static const std::string merges = readFile(fixed + "/merges.txt");
  writeFile(directory + "/vocab.json", data[0] == 0 ? rest : vocab);
  writeFile(directory + "/merges.txt", data[0] == 1 ? rest : merges);
  std::string error;
  std::optional<Gpt2Tokenizer> loaded = Gpt2Tokenizer::load(directory, error);
  if (loaded)
    checkRoundTrip(*loaded, "Hello, world! hello\n\xc3\xa9t\xc3\xa9 2024 's");
  else
    TFMC_FUZZ_CHECK(error.rfind(directory, 0) == 0 &&
                    error.find('\n') == std::string::npos);
  return 0;
}
