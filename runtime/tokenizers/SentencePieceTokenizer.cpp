//===- SentencePieceTokenizer.cpp - tokenizer.model -----------------------===//
//
// See SentencePieceTokenizer.h: a thin adapter over libsentencepiece.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/SentencePieceTokenizer.h"
#include "support/FileIO.h"
#include "support/Text.h"
#include "runtime/tokenizers/Common.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

namespace tfmc::runtime {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
public:
  explicit SentencePieceTokenizer(std::string path) : path_(std::move(path)) {}

  bool load(std::string &error) {
    return loadSentencePieceModel(path_, processor_, error);
  }

  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override {
    ids.clear();
    if (!validateUtf8(utf8, error))
      return false;
    std::vector<int> pieces;
    sentencepiece::util::Status status =
        processor_.Encode(std::string(utf8), &pieces);
    if (!status.ok()) {
      error = fmt::format("{}: {}", path_, support::oneLine(status.ToString()));
      return false;
    }
    ids.assign(pieces.begin(), pieces.end());
    return true;
  }

  std::string decode(const std::vector<int64_t> &ids) const override {
    // Runs of valid ids decode together; SentencePiece drops the leading
    // space of each run's first piece.
    std::string text;
    std::vector<int> run;
    auto flush = [&] {
      std::string piece;
      if (!run.empty() && processor_.Decode(run, &piece).ok())
        text += piece;
      run.clear();
    };
    for (int64_t id : ids) {
      if (hasId(id)) {
        run.push_back(static_cast<int>(id));
      } else {
        flush();
        text += tokenizers::kReplacement;
      }
    }
    flush();
    return text;
  }

  bool hasId(int64_t id) const override { return id >= 0 && id < vocabSize(); }
  int64_t vocabSize() const override { return processor_.GetPieceSize(); }
  std::optional<int64_t> tokenId(std::string_view token) const override {
    int id = processor_.PieceToId(std::string(token));
    if (id == processor_.unk_id() && processor_.IdToPiece(id) != token)
      return std::nullopt;
    return id;
  }
  const std::string &directory() const override { return path_; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    prefix.clear();
    suffix.clear();
    if (processor_.bos_id() >= 0)
      prefix.push_back(processor_.bos_id());
    return true;
  }

private:
  std::string path_;
  sentencepiece::SentencePieceProcessor processor_;
};

} // namespace

bool loadSentencePieceModel(const std::string &path,
                            sentencepiece::SentencePieceProcessor &processor,
                            std::string &error) {
  // Read it ourselves: the runtime's checks on input files (a regular
  // file, its size) and its messages apply.
  std::string bytes;
  if (!support::readRegularFile(path, bytes, error))
    return false;
  sentencepiece::util::Status status = processor.LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    // Its messages start with the library's source position.
    std::string reason = status.error_message();
    if (std::size_t end = reason.find("] "); end != std::string::npos)
      reason = reason.substr(end + 2);
    if (reason.empty() || reason.find("ParseFromArray") != std::string::npos)
      reason = "the protobuf does not parse";
    error = fmt::format("{}: not a valid SentencePiece model ({})", path,
                        support::oneLine(reason));
    return false;
  }
  return true;
}

std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const std::string &path,
                                                      std::string &error) {
  auto tokenizer = std::make_unique<SentencePieceTokenizer>(path);
  if (!tokenizer->load(error))
    return nullptr;
  return tokenizer;
}

} // namespace tfmc::runtime
