//===- FuzzPlan.cpp - The runtime's plan reader ---------------------------===//
//
// Bytes as the plan JSON a compiled program carries (codegen writes it; a
// C library user may link an object built elsewhere). parsePlans either
// accepts the plans, whose indices Model then trusts, or fails with one
// line. An accepted plan's dims must print (formatDims walks every symbol
// index), and every index the executor follows must be in range.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "runtime/core/Plan.h"

using namespace tfmc::runtime;

namespace {

void checkDims(const Plan &plan, const std::vector<DimExpr> &dims) {
  for (const DimExpr &dim : dims)
    for (const DimTerm &term : dim)
      TFMC_FUZZ_CHECK(!term.isSymbol ||
                      (term.value >= 0 &&
                       term.value < static_cast<int64_t>(plan.symbols.size())));
  (void)formatDims(plan, dims);
}

void checkPlan(const Plan &plan) {
  for (const PlanInput &input : plan.inputs)
    checkDims(plan, input.dims);
  const int64_t values = static_cast<int64_t>(plan.values.size());
  TFMC_FUZZ_CHECK(!plan.outputs.empty());
  for (const PlanOutput &output : plan.outputs) {
    checkDims(plan, output.dims);
    TFMC_FUZZ_CHECK(output.value >= 0 && output.value < values);
  }
  for (const PlanValue &value : plan.values) {
    const bool ofWeight = value.kind == ValueKind::Weight;
    int64_t limit = value.kind == ValueKind::Input   ? plan.inputs.size()
                    : ofWeight                       ? plan.weights.size()
                    : value.kind == ValueKind::Cache ? plan.cache.size()
                                                     : 1;
    TFMC_FUZZ_CHECK(value.kind == ValueKind::Arena ||
                    (value.index >= 0 && value.index < limit));
  }
  for (const PlanStep &step : plan.steps) {
    TFMC_FUZZ_CHECK(!step.kernel.empty());
    for (const PlanArg &arg : step.args) {
      TFMC_FUZZ_CHECK(arg.value >= 0 && arg.value < values);
      checkDims(plan, arg.dims);
      checkDims(plan, arg.mins);
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string json(tfmc::fuzz::asText(data, size));
  std::string error;
  if (std::optional<std::vector<Plan>> plans = parsePlans(json, error)) {
    TFMC_FUZZ_CHECK(!plans->empty());
    for (const Plan &plan : *plans)
      checkPlan(plan);
  } else {
    TFMC_FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
  }
  error.clear();
  if (std::optional<Plan> plan = parsePlan(json, error))
    checkPlan(*plan);
  else
    TFMC_FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
  return 0;
}
