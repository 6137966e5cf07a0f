//===- ModelInputs.cpp - Binding a call's inputs and output ---------------===//
//
// The inputs are validated completely before any kernel runs: each given
// tensor is one of the plan's inputs, of the right rank and shape, within
// the compiled batch and sequence limits, and holds token ids inside the
// vocabulary or 0/1 masks. A bad input is a one-line error naming the
// tensor or value.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/ModelImpl.h"

#include <optional>

namespace tfmc::runtime {
namespace {

/// `[1, 5]`: the row-major position of element `flat` of `shape`.
std::string formatPosition(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> position(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    position[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return formatShape(position);
}

/// "input_ids, attention_mask": the inputs `plan` takes, for messages.
std::string inputNamesOf(const Plan &plan) {
  std::string text;
  for (const PlanInput &input : plan.inputs) {
    if (!text.empty())
      text += ", ";
    text += support::escapeText(input.name);
  }
  return text;
}

/// A mask no kernel reads: all ones, or (causal attention only) rows of
/// ones then zeros, right padding, which cannot change a causal model's
/// outputs at the unpadded positions.
bool checkUnusedMask(const Plan &plan, const PlanInput &input,
                     const InputView &view, std::string &error) {
  const int64_t rows = view.shape[0], columns = view.shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    bool padded = false;
    for (int64_t c = 0; c < columns; ++c) {
      int64_t value = view.data[r * columns + c];
      if (value == 0 && !input.causal) {
        error = fmt::format(
            "{}{} = 0, but model {} reads no {} (no padding in its masks) "
            "and its attention is not causal, so padding would change the "
            "outputs; give all ones, or compile the model with padding in "
            "its masks",
            support::escapeText(input.name), formatShape({r, c}), support::quote(plan.model),
            support::escapeText(input.name));
        return false;
      }
      if (value == 1 && padded) {
        error = fmt::format(
            "{}{} = 1 after a 0: model {} reads no {} (its attention is "
            "causal, without padding), which leaves the outputs unchanged "
            "only for right padding (ones, then zeros)",
            support::escapeText(input.name), formatShape({r, c}), support::quote(plan.model),
            support::escapeText(input.name));
        return false;
      }
      padded |= value == 0;
    }
  }
  return true;
}

/// The values an id-like input may hold, [0, limit), and how a message
/// names them ("is not a token id (vocab 50257)"); none for a mask (0 or 1,
/// checked on its own).
struct ValueRange {
  int64_t limit;
  const char *what;
  const char *bound;
};

std::optional<ValueRange> valueRange(const Plan &plan, const PlanInput &input) {
  switch (input.kind) {
  case InputKind::Ids:
    return ValueRange{plan.vocab, "a token id", "vocab"};
  case InputKind::Types:
    return ValueRange{input.limit, "a token type", "the model has"};
  case InputKind::Positions:
    return ValueRange{plan.maxLen, "a position", "max_len"};
  case InputKind::Mask:
    break;
  }
  return std::nullopt;
}

} // namespace

std::string Model::inputNames() const { return inputNamesOf(plan_); }

bool Model::Impl::bindInputs(Call &call, const std::vector<InputView> &inputs,
                             std::string &error) {
  const Plan &plan = call.plan;
  const std::size_t numInputs = plan.inputs.size();
  // Which plan input each given tensor is.
  std::vector<const InputView *> &given = call.given;
  given.assign(numInputs, nullptr);
  for (const InputView &view : inputs) {
    std::size_t index = 0;
    while (index < numInputs && plan.inputs[index].name != view.name)
      ++index;
    if (index == numInputs) {
      error = fmt::format("unknown input {}; this model takes {}",
                          support::quote(view.name), inputNamesOf(call.forward));
      return false;
    }
    if (given[index]) {
      error = fmt::format("input {} is given twice", support::quote(view.name));
      return false;
    }
    std::optional<int64_t> count = elementCount(view.shape);
    if (!count) {
      error = fmt::format("input {} has an invalid shape {}", support::quote(view.name),
                          formatShape(view.shape));
      return false;
    }
    if (*count > 0 && !view.data) {
      error = fmt::format("input {} has no data", support::quote(view.name));
      return false;
    }
    given[index] = &view;
  }
  for (std::size_t i = 0; i < numInputs; ++i)
    if (!given[i] && !plan.inputs[i].optional) {
      error = fmt::format("missing input {}; this model takes {}",
                          support::quote(plan.inputs[i].name),
                          inputNamesOf(call.forward));
      return false;
    }
  for (std::size_t i = 0; i < numInputs; ++i) {
    const PlanInput &input = plan.inputs[i];
    if (given[i] && given[i]->shape.size() != input.dims.size()) {
      error = fmt::format("input {} has rank {}, expected {} ({})",
                          support::quote(input.name), given[i]->shape.size(),
                          input.dims.size(), formatDims(plan, input.dims));
      return false;
    }
  }

  // Symbols: bound by the first input whose dim is exactly that symbol;
  // every later input must agree.
  std::vector<int64_t> &symbols = call.symbols;
  std::vector<int> &boundBy = call.boundBy;
  boundBy.assign(plan.symbols.size(), -1);
  for (std::size_t i = 0; i < numInputs; ++i) {
    if (!given[i])
      continue;
    const PlanInput &input = plan.inputs[i];
    for (std::size_t d = 0; d < input.dims.size(); ++d) {
      const DimExpr &dim = input.dims[d];
      if (dim.size() != 1 || !dim[0].isSymbol)
        continue;
      int64_t symbol = dim[0].value;
      int64_t extent = given[i]->shape[d];
      if (boundBy[symbol] < 0) {
        boundBy[symbol] = static_cast<int>(i);
        symbols[symbol] = extent;
      } else if (symbols[symbol] != extent) {
        error = fmt::format("{} has shape {}, but {} has {}",
                            support::escapeText(input.name),
                            formatShape(given[i]->shape),
                            support::escapeText(plan.inputs[boundBy[symbol]].name),
                            formatShape(given[boundBy[symbol]]->shape));
        return false;
      }
    }
  }
  return true;
}

bool Model::Impl::checkInputs(Call &call, std::string &error) {
  const Plan &plan = call.plan;
  const std::vector<const InputView *> &given = call.given;
  const std::size_t numInputs = plan.inputs.size();
  // Dims that are products or constants: the whole shape must match.
  std::vector<int64_t> expected;
  for (std::size_t i = 0; i < numInputs; ++i) {
    if (!given[i])
      continue;
    const PlanInput &input = plan.inputs[i];
    if (!call.evaluateAll(input.dims, expected) ||
        expected != given[i]->shape) {
      error = fmt::format("input {} has shape {}, expected {}",
                          support::quote(input.name), formatShape(given[i]->shape),
                          formatDims(plan, input.dims));
      return false;
    }
  }

  // Sizes: symbol 0 is the batch, the others are sequence lengths.
  for (std::size_t i = 0; i < numInputs; ++i) {
    if (!given[i])
      continue;
    const PlanInput &input = plan.inputs[i];
    for (std::size_t d = 0; d < input.dims.size(); ++d) {
      const DimExpr &dim = input.dims[d];
      if (dim.size() != 1 || !dim[0].isSymbol)
        continue;
      int64_t extent = given[i]->shape[d];
      if (dim[0].value == 0) {
        if (extent == 0) {
          error = fmt::format("{} has batch 0 (shape {})",
                              support::escapeText(input.name),
                              formatShape(given[i]->shape));
          return false;
        }
        if (extent > plan.maxBatch) {
          error = fmt::format("batch {} is more than the {} this binary was "
                              "compiled for (tfmc --max-batch {})",
                              extent, plan.maxBatch, extent);
          return false;
        }
      } else {
        if (extent == 0) {
          error = fmt::format("{} has 0 tokens (shape {})",
                              support::escapeText(input.name),
                              formatShape(given[i]->shape));
          return false;
        }
        if (extent > plan.maxLen) {
          error = fmt::format("{} has {} tokens, more than max_len {}",
                              support::escapeText(input.name), extent, plan.maxLen);
          return false;
        }
        // A decode step's mask covers the L cached keys: max_len bounds it.
        if (extent > plan.maxSeq && plan.symbols[dim[0].value] != "L") {
          error = fmt::format("{} has {} tokens, more than the {} this "
                              "binary was compiled for (tfmc --max-seq {})",
                              support::escapeText(input.name), extent, plan.maxSeq,
                              extent);
          return false;
        }
      }
    }
  }

  // Values: token ids inside the vocabulary, masks 0 or 1.
  for (std::size_t i = 0; i < numInputs; ++i) {
    if (!given[i])
      continue;
    const PlanInput &input = plan.inputs[i];
    const InputView &view = *given[i];
    int64_t count = *elementCount(view.shape);
    const std::optional<ValueRange> range = valueRange(plan, input);
    for (int64_t e = 0; e < count; ++e) {
      int64_t value = view.data[e];
      if (range && (value < 0 || value >= range->limit)) {
        error = fmt::format("{}{} = {} is not {} ({} {})",
                            support::escapeText(input.name),
                            formatPosition(view.shape, e), value, range->what,
                            range->bound, range->limit);
        return false;
      }
      if (input.kind == InputKind::Mask && value != 0 && value != 1) {
        error = fmt::format("{}{} = {}: expected 0 or 1",
                            support::escapeText(input.name),
                            formatPosition(view.shape, e), value);
        return false;
      }
    }
  }

  // Masks the model takes but does not read: ignoring one is only right
  // where it cannot change the unpadded outputs.
  for (std::size_t i = 0; i < numInputs; ++i)
    if (given[i] && plan.inputs[i].unused &&
        !checkUnusedMask(plan, plan.inputs[i], *given[i], error))
      return false;

  // Where each input's values live; absent masks are all ones.
  call.inputData.assign(numInputs, {nullptr, 0});
  for (std::size_t i = 0; i < numInputs; ++i) {
    if (given[i]) {
      call.inputData[i] = {given[i]->data, *elementCount(given[i]->shape)};
      continue;
    }
    std::vector<int64_t> shape;
    std::optional<int64_t> count;
    if (!call.evaluateAll(plan.inputs[i].dims, shape) ||
        !(count = elementCount(shape))) {
      error = fmt::format("plan: input {}: shape {} overflows for {}", i,
                          formatDims(plan, plan.inputs[i].dims),
                          call.symbolText());
      return false;
    }
    std::vector<int64_t> &values = defaultInputs[i];
    if (plan.inputs[i].kind == InputKind::Positions) {
      // [B, S]: each row at P .. P+S-1.
      const int64_t columns = shape.back();
      values.resize(static_cast<std::size_t>(*count));
      for (int64_t e = 0; e < *count; ++e)
        values[e] = call.past + (columns ? e % columns : 0);
    } else {
      // Masks all ones; token types 0.
      values.assign(static_cast<std::size_t>(*count),
                    plan.inputs[i].kind == InputKind::Types ? 0 : 1);
    }
    call.inputData[i] = {values.data(), *count};
  }
  return true;
}

bool Model::Impl::bindOutputs(Call &call, std::string &error) {
  const Plan &plan = call.plan;
  call.outputs.clear();
  for (const PlanOutput &planOutput : plan.outputs) {
    OutputView output;
    output.name = planOutput.name;
    std::optional<int64_t> outputCount;
    const PlanValue &outputValue = plan.values[planOutput.value];
    if (!call.evaluateAll(planOutput.dims, output.shape) ||
        !(outputCount = elementCount(output.shape)) ||
        *outputCount > (plan.arenaBytes - outputValue.offset) / 4) {
      error = fmt::format("plan: output {} {} does not fit in the arena at "
                          "offset {} ({} bytes) for {}",
                          support::quote(planOutput.name),
                          formatDims(plan, planOutput.dims),
                          outputValue.offset, plan.arenaBytes,
                          call.symbolText());
      return false;
    }
    if (outputValue.offset % 4 != 0) {
      error = fmt::format("plan: output {} is at arena offset {}, which is "
                          "not a multiple of 4",
                          support::quote(planOutput.name), outputValue.offset);
      return false;
    }
    output.data = reinterpret_cast<const float *>(
        static_cast<uint8_t *>(arena.data()) + outputValue.offset);
    call.outputs.push_back(std::move(output));
  }
  return true;
}

bool Model::Impl::uploadInputs(Call &call, std::string &error) {
  const Plan &plan = call.plan;
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    auto [data, count] = call.inputData[i];
    if (count > inputCapacity) {
      error = fmt::format("plan: input {} has {} values, more than the {} "
                          "its GPU buffer holds",
                          support::quote(plan.inputs[i].name), count, inputCapacity);
      return false;
    }
    if (!upload(inputDevice[i], data, static_cast<std::size_t>(count) * 8,
                fmt::format("input {}", support::quote(plan.inputs[i].name)), error))
      return false;
  }
  return true;
}

} // namespace tfmc::runtime
