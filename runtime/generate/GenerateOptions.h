//===- GenerateOptions.h - Checking generation options ----------*- C++ -*-===//
//
// The sampling and beam-search options of a generate call, checked before
// any work: one line naming the option as the CLI spells it (--top-p) or,
// for the C API, as tfmc_generate_options names its field (top_p).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GENERATEOPTIONS_H
#define TFMC_RUNTIME_GENERATEOPTIONS_H

#include "runtime/generate/BeamSearch.h"
#include "runtime/generate/Sampling.h"

#include <cstdint>
#include <string>

namespace tfmc::runtime {

/// False with `error` set when an option is out of range, or beams need
/// more rows than the model's max batch, or sampling is asked together
/// with beams (Hugging Face's beam sampling is not supported).
bool checkGenerateOptions(const SamplingOptions &sampling,
                          const BeamOptions &beams, int64_t maxBatch,
                          bool cApi, std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GENERATEOPTIONS_H
