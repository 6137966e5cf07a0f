//===- Embeddings.h - Sentence embeddings from last_hidden_state -*- C++ -*-===//
//
// An encoder-only model's sentence embeddings: `run --pooling` and serve's
// /v1/embeddings (Embeddings.cpp) pool its last_hidden_state the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_EMBEDDINGS_H
#define TFMC_RUNTIME_SERVE_EMBEDDINGS_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfmc::runtime::serve {

/// Row `row`'s sentence embedding from last_hidden_state [B, S, d]: the
/// mean over the tokens `mask` [B, S] keeps ([CLS] and [SEP] included, as
/// sentence-transformers' mean pooling), or the first token's ("cls").
std::vector<float> pooledRow(const std::string &pooling,
                             const OutputView &output,
                             const std::vector<int64_t> &mask, int64_t row);

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_EMBEDDINGS_H
