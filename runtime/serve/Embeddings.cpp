//===- Embeddings.cpp - /v1/embeddings ------------------------------------===//
//
// An encoder-only model's forward over batches of up to max_batch inputs
// (right-padded, one batch at a time), pooled per input.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/Embeddings.h"

#include "runtime/serve/Server.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tfmc::runtime::serve {

std::vector<float> pooledRow(const std::string &pooling,
                             const OutputView &output,
                             const std::vector<int64_t> &mask, int64_t row) {
  const int64_t length = output.shape[1], width = output.shape[2];
  std::vector<double> sum(static_cast<std::size_t>(width), 0.0);
  int64_t count = 0;
  for (int64_t s = 0; s < (pooling == "cls" ? 1 : length); ++s) {
    if (mask[row * length + s] == 0)
      continue;
    ++count;
    const float *values = output.data + (row * length + s) * width;
    for (int64_t d = 0; d < width; ++d)
      sum[d] += values[d];
  }
  std::vector<float> pooled(static_cast<std::size_t>(width));
  for (int64_t d = 0; d < width; ++d)
    pooled[d] = static_cast<float>(sum[d] / std::max<int64_t>(count, 1));
  return pooled;
}

void Server::embeddings(const httplib::Request &httpRequest,
                        httplib::Response &response) {
  EmbeddingRequest request;
  ApiError error;
  if (!parseEmbeddingRequest(httpRequest.body, settings.modelId, request,
                             error))
    return sendError(response, error);
  if (settings.pooling.empty()) {
    error.param = "model";
    error.message = fmt::format("model {} generates: /v1/embeddings needs an "
                                "encoder-only model (serve --pooling)",
                                support::quote(settings.modelId));
    return sendError(response, error);
  }
  const std::size_t count = request.ids.size();
  std::vector<std::vector<int64_t>> types(count);
  int64_t tokens = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::string param = count == 1 ? "input" : fmt::format("input[{}]", i);
    error.param = "input";
    if (request.texts[i]) {
      std::string message;
      if (!text.tokenizer) {
        error.message = "a text input needs the server to have --tokenizer "
                        "DIR (give token ids instead)";
        return sendError(response, error);
      }
      if (static_cast<int64_t>(request.texts[i]->size()) >
          kMaxTextBytesPerPosition * plan.maxLen) {
        error.message = fmt::format("{} is {} bytes, more than max_len {} "
                                    "tokens can hold",
                                    param, request.texts[i]->size(),
                                    plan.maxLen);
        return sendError(response, error);
      }
      std::unique_lock<std::mutex> encoding(encodeMutex);
      if (!encodeModelText(*text.tokenizer, text.promptTokens,
                           *request.texts[i], nullptr, plan.maxLen,
                           request.ids[i], types[i], message)) {
        error.message = param + ": " + message;
        return sendError(response, error);
      }
    }
    const std::vector<int64_t> &ids = request.ids[i];
    if (ids.empty() || static_cast<int64_t>(ids.size()) > plan.maxLen) {
      error.message = fmt::format("{} has {} tokens; the model takes 1 to {}",
                                  param, ids.size(), plan.maxLen);
      return sendError(response, error);
    }
    for (std::size_t t = 0; t < ids.size(); ++t)
      if (ids[t] >= plan.vocab) {
        error.message = fmt::format("{}[{}] = {} is not a token id (vocab "
                                    "{})",
                                    param, t, ids[t], plan.vocab);
        return sendError(response, error);
      }
    tokens += static_cast<int64_t>(ids.size());
  }
  std::vector<std::vector<float>> vectors;
  std::lock_guard<std::mutex> lock(forwardMutex);
  for (std::size_t first = 0; first < count;
       first += static_cast<std::size_t>(plan.maxBatch)) {
    const std::size_t last =
        std::min(count, first + static_cast<std::size_t>(plan.maxBatch));
    const int64_t batch = static_cast<int64_t>(last - first);
    std::size_t length = 0;
    for (std::size_t i = first; i < last; ++i)
      length = std::max(length, request.ids[i].size());
    auto tensor = [&](bool mask, bool typeIds) {
      IntegerTensor values;
      values.shape = {batch, static_cast<int64_t>(length)};
      values.values.assign(static_cast<std::size_t>(batch) * length, 0);
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t t = 0; t < request.ids[i].size(); ++t)
          values.values[(i - first) * length + t] =
              mask      ? 1
              : typeIds ? (t < types[i].size() ? types[i][t] : 0)
                        : request.ids[i][t];
      return values;
    };
    std::map<std::string, IntegerTensor> inputs;
    inputs["input_ids"] = tensor(false, false);
    IntegerTensor mask = tensor(true, false);
    if (entryTakes(*model, "forward", "attention_mask"))
      inputs["attention_mask"] = mask;
    if (entryTakes(*model, "forward", "token_type_ids"))
      inputs["token_type_ids"] = tensor(false, true);
    std::string message;
    std::optional<OutputView> output = model->forward(inputs, message);
    if (!output) {
      ApiError failure;
      failure.status = 500;
      failure.type = "server_error";
      failure.message = message;
      return sendError(response, failure);
    }
    for (int64_t b = 0; b < batch; ++b)
      vectors.push_back(pooledRow(settings.pooling, *output, mask.values, b));
  }
  metrics.tokens(tokens, 0);
  response.set_content(
      embeddingBody(settings.modelId, vectors, tokens, request.base64),
      "application/json");
}

} // namespace tfmc::runtime::serve
