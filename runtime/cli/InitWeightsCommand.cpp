//===- InitWeightsCommand.cpp - NAME init-weights: random weights ---------===//
//
//   NAME init-weights --seed N --output W.safetensors
//
// Deterministic N(0, 0.02^2) weights; what the plan marks as ones or zeros
// (LayerNorm gains and biases) is filled with them.
// splitmix64 and Box-Muller in double, rounded once to float, so the file is
// the same on every machine.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Safetensors.h"
#include "support/Text.h"
#include "runtime/cli/Cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tfmc::runtime::cli {
namespace {

uint64_t fnv1a(const std::string &text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void fillWeight(const PlanWeight &weight, uint64_t seed,
                std::vector<float> &values) {
  if (weight.init != PlanWeight::Init::Normal) {
    std::fill(values.begin(), values.end(),
              weight.init == PlanWeight::Init::Ones ? 1.0f : 0.0f);
    return;
  }
  uint64_t state = seed ^ fnv1a(weight.name);
  const double twoPi = 6.283185307179586476925286766559;
  for (std::size_t i = 0; i < values.size(); i += 2) {
    // u1 in (0, 1] keeps the log finite.
    double u1 = static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    double radius = std::sqrt(-2.0 * std::log(u1));
    values[i] = static_cast<float>(0.02 * radius * std::cos(twoPi * u2));
    if (i + 1 < values.size())
      values[i + 1] = static_cast<float>(0.02 * radius * std::sin(twoPi * u2));
  }
}

} // namespace

int initWeightsCommand(int argc, char **argv) {
  Options options("init-weights", {"--seed", "--output"}, argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const std::string &seedText = options.get("--seed");
  std::optional<int64_t> seed = parseInteger(seedText);
  if (!seed || *seed < 0)
    fail(fmt::format("--seed expects a non-negative integer, got {}",
                     support::quote(seedText)));
  const std::string &path = options.get("--output");
  std::vector<support::OutputFile> outputs = checkOutputs({{"--output", path}}, {});
  const Plan &plan = requirePlan();

  std::vector<std::vector<float>> storage;
  std::vector<TensorView> views;
  std::size_t bytes = 0;
  storage.reserve(plan.weights.size());
  for (const PlanWeight &weight : plan.weights) {
    int64_t count = elementCount(weight.shape).value_or(0);
    storage.emplace_back(static_cast<std::size_t>(count));
    fillWeight(weight, static_cast<uint64_t>(*seed), storage.back());
    TensorView view;
    view.name = weight.name;
    view.dtype = DType::F32;
    view.shape = weight.shape;
    if (weight.transposed) // stored as the file would hold it (Conv1D)
      std::reverse(view.shape.begin(), view.shape.end());
    view.data = storage.back().data();
    view.bytes = storage.back().size() * sizeof(float);
    bytes += view.bytes;
    views.push_back(std::move(view));
  }
  std::string error;
  if (!writeSafetensors(
          outputs.front(), views, error,
          {{"tfmc", fmt::format("init-weights --seed {}", *seed)}}))
    fail(error);
  std::fprintf(stderr, "init-weights: wrote %zu %s (%.1f MiB) to %s\n",
               views.size(), views.size() == 1 ? "tensor" : "tensors",
               static_cast<double>(bytes) / (1 << 20),
               support::oneLine(path).c_str());
  return 0;
}

} // namespace tfmc::runtime::cli
