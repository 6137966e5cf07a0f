//===- GenerateOptions.cpp - Checking generation options ------------------===//

#include "runtime/generate/GenerateOptions.h"

#include <fmt/format.h>

#include <cmath>

namespace tfmc::runtime {

bool checkGenerateOptions(const SamplingOptions &sampling,
                          const BeamOptions &beams, int64_t maxBatch,
                          bool cApi, std::string &error) {
  auto name = [&](const char *flag, const char *field) {
    return std::string(cApi ? field : flag);
  };
  auto fail = [&](std::string message) {
    error = std::move(message);
    return false;
  };
  if (!std::isfinite(sampling.temperature) || sampling.temperature < 0)
    return fail(fmt::format("{} must be 0 (greedy) or more, got {}",
                            name("--temperature", "temperature"),
                            sampling.temperature));
  if (sampling.topK < 0)
    return fail(fmt::format("{} must be 0 (off) or more, got {}",
                            name("--top-k", "top_k"), sampling.topK));
  if (!(sampling.topP > 0 && sampling.topP <= 1))
    return fail(fmt::format("{} must be in (0, 1], got {}",
                            name("--top-p", "top_p"), sampling.topP));
  if (!std::isfinite(sampling.repetitionPenalty) ||
      sampling.repetitionPenalty <= 0)
    return fail(fmt::format("{} must be positive, got {}",
                            name("--repetition-penalty", "repetition_penalty"),
                            sampling.repetitionPenalty));
  if (beams.numBeams < 1)
    return fail(fmt::format("{} must be at least 1, got {}",
                            name("--num-beams", "num_beams"), beams.numBeams));
  if (!std::isfinite(beams.lengthPenalty))
    return fail(fmt::format("{} must be a finite number, got {}",
                            name("--length-penalty", "length_penalty"),
                            beams.lengthPenalty));
  if (beams.numBeams > maxBatch)
    return fail(fmt::format(
        "{} {} needs a model compiled with --max-batch {} or more (this one: "
        "{}): the beams are rows of one batch",
        name("--num-beams", "num_beams"), beams.numBeams, beams.numBeams,
        maxBatch));
  if (beams.numBeams > 1 && sampling.temperature > 0)
    return fail(fmt::format(
        "{} with {} > 0: beam search chooses by score; sampling beams is not "
        "supported",
        name("--num-beams", "num_beams"), name("--temperature", "temperature")));
  return true;
}

} // namespace tfmc::runtime
