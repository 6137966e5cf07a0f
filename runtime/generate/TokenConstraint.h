//===- TokenConstraint.h - Which tokens may come next -----------*- C++ -*-===//
//
// Constrained sampling (serve's response_format): a TokenConstraint says
// which tokens a sequence may take next, and follows the tokens it takes.
// The batcher asks it before each choice of its row, and the Sampler sets
// every other token's logit to -inf after the logits processors and before
// temperature, top-k and top-p (so those act within the allowed tokens;
// logprobs stay the model's own). Implementations live with their users
// (runtime/serve/JsonConstraint.h).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GENERATE_TOKENCONSTRAINT_H
#define TFMC_RUNTIME_GENERATE_TOKENCONSTRAINT_H

#include <cstdint>
#include <vector>

namespace tfmc::runtime {

class TokenConstraint {
public:
  virtual ~TokenConstraint() = default;
  /// `allowed` [vocab]: 1 for each token that may come next, else 0.
  virtual void allowed(std::vector<uint8_t> &allowed) = 0;
  /// Follows the chosen token (one that allowed() allowed).
  virtual void accept(int64_t token) = 0;
  /// The output is whole: where no token is allowed (a model without an
  /// eos token), the sequence ends here, as if by eos.
  virtual bool complete() const = 0;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GENERATE_TOKENCONSTRAINT_H
