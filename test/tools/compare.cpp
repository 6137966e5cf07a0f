//===- compare.cpp - tfmc-compare: check a model's output against a reference //
//
//   tfmc-compare EXPECTED.safetensors ACTUAL.safetensors [--inputs
//   IN.safetensors]
//                [--tolerance X] [--last-positions]
//
// Compares the one output tensor (`logits` or `last_hidden_state`, the same
// name in both files) at unpadded positions only: a position [b, s] counts
// when the row mask of the inputs is 1 there. The row mask is the input mask
// of shape [B, S_out]: `decoder_attention_mask` when it has that shape, else
// `attention_mask` when it has it (and the inputs hold no decoder ids, whose
// length the output then has); without one every position counts. When
// EXPECTED also holds `pooler_output` [B, W] (BERT), it is compared too,
// every row, on a line of its own; the run passes when both do.
//
// With --last-positions, ACTUAL [B, n, W] holds the last n positions of
// EXPECTED [B, S, W] (n <= S): `generate --dump-logits` keeps only the
// logits each new token was chosen from, which are a full forward's last
// rows. It takes no --inputs (the mask's positions would not line up).
//
// Passes when max |actual - expected| <= X * max(1, max |expected|) over the
// counted positions (X = 1e-5 unless --tolerance says otherwise: the bound
// test/fixtures/README.md prescribes: over 30x the f32 error tfmc's builds
// measure, and at least 10x below every deliberate mistake
// `make_fixtures.py --self-test` checks for). Prints the number of positions
// compared, so that a test can pin it:
//   logits: max |diff| 1.2e-06 over 46 of 2 x 29 positions (tolerance 2.1e-05)
// and exits 0. Otherwise prints the worst position
//   logits[1, 3, 7]: expected 0.5, got 0.7 (|diff| 0.2 > tolerance 1.0e-05)
// and exits 1. Comparing no position at all (every row masked) is a failure
// too: it would pass whatever the output held. Errors (missing file or
// tensor, shape mismatch, bad option) are one line `tfmc-compare: error: ...`
// and exit 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Safetensors.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

using namespace tfmc::runtime;

namespace {

struct CompareError {
  std::string message;
};

[[noreturn]] void fail(std::string message) {
  throw CompareError{std::move(message)};
}

SafetensorsFile openFile(const std::string &path) {
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  if (!file)
    fail(error);
  return std::move(*file);
}

/// The output tensor of `file`: `logits` or `last_hidden_state`, or the
/// file's only tensor.
const TensorView &findOutput(const SafetensorsFile &file) {
  const TensorView *found = nullptr;
  for (const char *name : {"logits", "last_hidden_state"})
    if (const TensorView *tensor = file.find(name)) {
      if (found)
        fail(fmt::format("{}: holds both 'logits' and 'last_hidden_state'",
                         file.path()));
      found = tensor;
    }
  if (!found && file.tensors().size() == 1)
    found = &file.tensors().front();
  if (!found)
    fail(fmt::format("{}: no 'logits' or 'last_hidden_state' tensor",
                     file.path()));
  return *found;
}

/// The values of a float tensor as doubles (F32 or F64).
std::vector<double> readFloats(const SafetensorsFile &file,
                               const TensorView &tensor) {
  std::vector<double> values(static_cast<std::size_t>(tensor.numElements()));
  if (tensor.dtype == DType::F32) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      float value;
      std::memcpy(&value, static_cast<const char *>(tensor.data) + 4 * i, 4);
      values[i] = value;
    }
  } else if (tensor.dtype == DType::F64) {
    for (std::size_t i = 0; i < values.size(); ++i)
      std::memcpy(&values[i], static_cast<const char *>(tensor.data) + 8 * i,
                  8);
  } else {
    fail(fmt::format("{}: tensor '{}' has dtype {}, expected F32", file.path(),
                     tensor.name, dtypeName(tensor.dtype)));
  }
  return values;
}

/// The [B, S] mask selecting the positions to compare, or nothing.
std::optional<IntegerTensor> rowMask(const std::string &inputsPath,
                                     const std::vector<int64_t> &outputShape) {
  SafetensorsFile inputs = openFile(inputsPath);
  std::vector<int64_t> rows = {outputShape[0], outputShape[1]};
  bool hasDecoder = inputs.find("decoder_input_ids") != nullptr;
  for (const char *name : {"decoder_attention_mask", "attention_mask"}) {
    const TensorView *tensor = inputs.find(name);
    if (!tensor || tensor->shape != rows)
      continue;
    if (std::strcmp(name, "attention_mask") == 0 && hasDecoder)
      continue; // the output is the decoder's; the encoder's mask is not its
    std::string error;
    std::optional<IntegerTensor> mask =
        readIntegerTensor(inputs, name, IntegerInputKind::Mask, error);
    if (!mask)
      fail(error);
    return mask;
  }
  return std::nullopt;
}

std::string formatIndex(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return formatShape(index);
}

std::optional<double> parseTolerance(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(value) || value < 0)
    return std::nullopt;
  return value;
}

/// Compares one tensor of EXPECTED with ACTUAL's of the same name and
/// prints its line; 0 when it passes. A rank-3 [B, S, W] output counts its
/// unpadded positions (the mask of `inputsPath`, when given); a rank-2
/// [B, W] one (pooler_output, the first position's) counts every row.
int compareTensor(const SafetensorsFile &expectedFile,
                  const SafetensorsFile &actualFile,
                  const TensorView &expectedTensor,
                  const std::string &inputsPath, double tolerance,
                  bool lastPositions) {
  const std::string &name = expectedTensor.name;
  const TensorView *actualTensor = actualFile.find(name);
  if (!actualTensor)
    fail(fmt::format("{}: missing tensor '{}'", actualFile.path(), name));
  const bool perRow = expectedTensor.shape.size() == 2;
  if (expectedTensor.shape.size() != 3 && !perRow)
    fail(fmt::format("{}: tensor '{}' has shape {}, expected rank 3{}",
                     expectedFile.path(), name,
                     formatShape(expectedTensor.shape),
                     name == "pooler_output" ? " or 2" : ""));
  std::vector<int64_t> shape = actualTensor->shape;
  std::vector<int64_t> full = expectedTensor.shape;
  bool tail = lastPositions && !perRow && shape.size() == 3 &&
              shape[0] == full[0] && shape[1] <= full[1] && shape[2] == full[2];
  if (shape != full && !tail)
    fail(fmt::format("{}: tensor '{}' has shape {}, but {} has {}{}",
                     actualFile.path(), name, formatShape(shape),
                     expectedFile.path(), formatShape(full),
                     lastPositions ? " (--last-positions: [B, n <= S, W] "
                                     "against [B, S, W])"
                                   : ""));
  std::vector<double> expected = readFloats(expectedFile, expectedTensor);
  std::vector<double> actual = readFloats(actualFile, *actualTensor);
  if (perRow) {
    // [B, W] as [B, 1, W]: one position per row.
    shape.insert(shape.begin() + 1, 1);
    full = shape;
  }
  if (tail) {
    // EXPECTED's last shape[1] positions of each row, in ACTUAL's layout.
    std::vector<double> last;
    last.reserve(actual.size());
    const int64_t skip = full[1] - shape[1];
    for (int64_t b = 0; b < full[0]; ++b) {
      auto row = expected.begin() + (b * full[1] + skip) * full[2];
      last.insert(last.end(), row, row + shape[1] * full[2]);
    }
    expected = std::move(last);
  }

  std::optional<IntegerTensor> mask;
  if (!inputsPath.empty() && !perRow)
    mask = rowMask(inputsPath, shape);

  const int64_t rows = shape[0] * shape[1], width = shape[2];
  int64_t counted = 0;
  double maxExpected = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (mask && mask->values[r] == 0)
      continue;
    ++counted;
    for (int64_t c = 0; c < width; ++c)
      if (std::isfinite(expected[r * width + c]))
        maxExpected = std::max(maxExpected, std::fabs(expected[r * width + c]));
  }
  const double absolute = tolerance * std::max(1.0, maxExpected);

  double worst = -1;
  int64_t worstIndex = -1;
  for (int64_t r = 0; r < rows; ++r) {
    if (mask && mask->values[r] == 0)
      continue;
    for (int64_t c = 0; c < width; ++c) {
      int64_t i = r * width + c;
      double diff = std::fabs(actual[i] - expected[i]);
      if (std::isnan(diff))
        diff = INFINITY; // a NaN anywhere is the worst possible answer
      if (diff > worst) {
        worst = diff;
        worstIndex = i;
      }
    }
  }

  std::string positions =
      perRow ? fmt::format("{} rows", counted)
             : fmt::format("{} of {} x {} positions", counted, shape[0],
                           shape[1]);
  if (counted == 0 || width == 0) {
    std::printf("%s: no value compared (%s, each of %s values)\n",
                name.c_str(), positions.c_str(),
                std::to_string(width).c_str());
    return 1;
  }
  if (worst <= absolute) {
    std::printf("%s: max |diff| %s over %s (tolerance %s)\n", name.c_str(),
                fmt::format("{:.1e}", worst).c_str(), positions.c_str(),
                fmt::format("{:.1e}", absolute).c_str());
    return 0;
  }
  std::printf("%s%s: expected %s, got %s (|diff| %s > tolerance %s)\n",
              name.c_str(),
              formatIndex(perRow ? expectedTensor.shape : shape, worstIndex)
                  .c_str(),
              fmt::format("{:.8g}", expected[worstIndex]).c_str(),
              fmt::format("{:.8g}", actual[worstIndex]).c_str(),
              fmt::format("{:.2g}", worst).c_str(),
              fmt::format("{:.1e}", absolute).c_str());
  return 1;
}


int compare(int argc, char **argv) {
  std::vector<std::string> files;
  std::string inputsPath;
  double tolerance = 1e-5;
  bool lastPositions = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: tfmc-compare EXPECTED.safetensors ACTUAL.safetensors "
                  "[--inputs IN.safetensors] [--tolerance X] "
                  "[--last-positions]\n");
      return 0;
    }
    if (arg == "--last-positions") {
      lastPositions = true;
      continue;
    }
    if (arg == "--inputs" || arg == "--tolerance") {
      if (i + 1 >= argc)
        fail(fmt::format("{} needs a value", arg));
      std::string value = argv[++i];
      if (arg == "--inputs") {
        inputsPath = value;
      } else {
        std::optional<double> parsed = parseTolerance(value);
        if (!parsed)
          fail(fmt::format("--tolerance expects a non-negative number, got "
                           "'{}'",
                           value));
        tolerance = *parsed;
      }
    } else if (arg.rfind("-", 0) == 0 && arg.size() > 1) {
      fail(fmt::format("unknown option '{}'", arg));
    } else {
      files.push_back(arg);
    }
  }
  if (files.size() != 2)
    fail("expected two files: EXPECTED.safetensors ACTUAL.safetensors");
  if (lastPositions && !inputsPath.empty())
    fail("--last-positions takes no --inputs");

  SafetensorsFile expectedFile = openFile(files[0]);
  SafetensorsFile actualFile = openFile(files[1]);
  // The model's output, then BERT's pooler_output when EXPECTED holds one.
  int status = compareTensor(expectedFile, actualFile,
                             findOutput(expectedFile), inputsPath, tolerance,
                             lastPositions);
  if (const TensorView *pooled = expectedFile.find("pooler_output");
      pooled && !lastPositions)
    status |= compareTensor(expectedFile, actualFile, *pooled, inputsPath,
                            tolerance, false);
  return status;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return compare(argc, argv);
  } catch (const CompareError &e) {
    std::fprintf(stderr, "tfmc-compare: error: %s\n", e.message.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tfmc-compare: error: %s\n", e.what());
  }
  return 1;
}
