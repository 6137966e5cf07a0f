//===- RuntimeCommandTest.cpp - The compiled program's command line ------===//
//
// `tfmc-runtime-fake-model` (the tiny model of TinyModel.cpp linked with the
// runtime's main()) run as a user runs a compiled program: run, init-weights,
// info, every error as one line with exit code 1; and tfmc-compare.
//
//===----------------------------------------------------------------------===//

#include "test/unit/RuntimeFixture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace tfmc::test;
using namespace tfmc::runtime;

namespace {

//===----------------------------------------------------------------------===//
// The command line (tfmc-runtime-fake-model: this plan with the runtime's
// main()) and tfmc-compare
//===----------------------------------------------------------------------===//

struct Result {
  int exitCode = -1;
  std::string out, err;
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class CommandTest : public RuntimeTest {
protected:
  Result runTool(const std::string &tool, const std::string &arguments) {
    std::string out = pathOf("stdout.txt"), err = pathOf("stderr.txt");
    std::string command =
        tool + " " + arguments + " >" + out + " 2>" + err + " </dev/null";
    int status = std::system(command.c_str());
    Result result;
    result.exitCode =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = readAll(out);
    result.err = readAll(err);
    return result;
  }
  Result model(const std::string &arguments) {
    return runTool(TFMC_FAKE_MODEL, arguments);
  }
  Result compare(const std::string &arguments) {
    return runTool(TFMC_COMPARE, arguments);
  }

  /// Expects exit 1 and exactly `message` as the one line on stderr.
  void expectError(const Result &result, const std::string &message) {
    EXPECT_EQ(result.exitCode, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, message + "\n");
  }
  void expectModelError(const std::string &arguments,
                        const std::string &message) {
    SCOPED_TRACE(arguments);
    expectError(model(arguments), "tfmc-runtime-fake-model: error: " + message);
  }

  std::string writeInputs(const std::string &name,
                          std::vector<TensorView> tensors) {
    std::string path = pathOf(name), error;
    EXPECT_TRUE(writeSafetensors(path, tensors, error)) << error;
    return path;
  }
};

TEST_F(CommandTest, RunWithInputAndOutputFiles) {
  std::vector<int64_t> ids = {1, 2, 3, 9, 8, 0}, mask = {1, 1, 1, 1, 0, 0};
  std::string in =
      writeInputs("in.safetensors", {intView("input_ids", {2, 3}, ids),
                                     intView("attention_mask", {2, 3}, mask)});
  std::string out = pathOf("out.safetensors");
  Result result = model("run --weights " + weights + " --input " + in +
                        " --output " + out + " --threads 2");
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err.rfind("forward: batch 2 x 3 tokens in ", 0), 0u)
      << result.err;
  EXPECT_EQ(result.err.substr(result.err.size() - 4), " ms\n");
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1);

  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(out, error);
  ASSERT_TRUE(file) << error;
  ASSERT_EQ(file->tensors().size(), 1u);
  const TensorView *logits =
      expectTensor(*file, "logits", DType::F32, {2, 3, 3}, error);
  ASSERT_TRUE(logits) << error;
  const auto *data = static_cast<const float *>(logits->data);
  EXPECT_EQ(std::vector<float>(data, data + 18), referenceLogits(ids, mask));

  // Masks may be BOOL or U8 in the file; ids I32.
  std::vector<uint8_t> boolMask = {1, 1, 1, 1, 0, 0};
  std::vector<int32_t> ids32(ids.begin(), ids.end());
  TensorView maskView{
      "attention_mask", DType::Bool, {2, 3}, boolMask.data(), 6};
  TensorView idsView{"input_ids", DType::I32, {2, 3}, ids32.data(), 24};
  std::string in2 = writeInputs("in2.safetensors", {idsView, maskView});
  std::string out2 = pathOf("out2.safetensors");
  result = model("run --weights=" + weights + " --input=" + in2 +
                 " --output=" + out2);
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(readAll(out2), readAll(out));
}

TEST_F(CommandTest, RunWithIds) {
  Result result = model("run --weights " + weights + " --ids 1,2,9");
  EXPECT_EQ(result.exitCode, 0) << result.err;
  // Every logit grows with n (proj[1][n] = 100 + 10n + d), so the argmax is 2
  // wherever the hidden state is positive, and 0 where it is all zero (id 0,
  // d 0 is 0 but d 1.. are not: still 2).
  EXPECT_EQ(result.out, "logits: [1, 3, 3]\nargmax: 2 2 2\n");
  EXPECT_EQ(result.err.rfind("forward: batch 1 x 3 tokens in ", 0), 0u)
      << result.err;

  expectModelError("run --weights " + weights + " --ids 1,2,10",
                   "input_ids[0, 2] = 10 is not a token id (vocab 10)");
  expectModelError("run --weights " + weights + " --ids 1,x",
                   "--ids expects comma-separated token ids, got '1,x'");
  expectModelError("run --weights " + weights + " --ids 1,2,3,4,5,6,7,8,9",
                   "input_ids has 9 tokens, more than max_len 8");
  expectModelError("run --weights " + weights + " --ids 1 --decoder-ids 2",
                   "unknown input 'decoder_input_ids'; this model takes "
                   "input_ids, attention_mask");
}

TEST_F(CommandTest, InitWeightsIsDeterministic) {
  std::string first = pathOf("a.safetensors"), second = pathOf("b.safetensors"),
              other = pathOf("c.safetensors");
  Result result = model("init-weights --seed 7 --output " + first);
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err,
            "init-weights: wrote 4 tensors (0.0 MiB) to " + first + "\n");
  EXPECT_EQ(model("init-weights --seed 7 --output " + second).exitCode, 0);
  EXPECT_EQ(model("init-weights --seed 8 --output " + other).exitCode, 0);
  EXPECT_EQ(readAll(first), readAll(second));
  EXPECT_NE(readAll(first), readAll(other));

  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(first, error);
  ASSERT_TRUE(file) << error;
  const TensorView *gain =
      expectTensor(*file, "final.norm.weight", DType::F32, {4}, error);
  const TensorView *bias =
      expectTensor(*file, "final.norm.bias", DType::F32, {4}, error);
  const TensorView *embed =
      expectTensor(*file, "embed.weight", DType::F32, {10, 4}, error);
  ASSERT_TRUE(gain && bias && embed) << error;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(static_cast<const float *>(gain->data)[i], 1.0f);
    EXPECT_EQ(static_cast<const float *>(bias->data)[i], 0.0f);
  }
  double sum = 0, squares = 0;
  const auto *values = static_cast<const float *>(embed->data);
  for (int i = 0; i < 40; ++i) {
    EXPECT_LT(std::fabs(values[i]), 0.02f * 5);
    sum += values[i];
    squares += values[i] * values[i];
  }
  EXPECT_GT(std::sqrt(squares / 40), 0.01);
  EXPECT_LT(std::sqrt(squares / 40), 0.03);
  // The file runs.
  EXPECT_EQ(model("run --weights " + first + " --ids 3,4").exitCode, 0);
}

TEST_F(CommandTest, InfoAndHelp) {
  Result result = model("info");
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out,
            "model: tiny\n"
            "entry: forward\n"
            "target: host (runs on this CPU)\n"
            "device: host\n"
            "input: input_ids [B, S] (token ids)\n"
            "input: attention_mask [B, S] (mask, optional)\n"
            "output: logits [B, S, 3] f32\n"
            "weights: 4 tensors, 72 parameters, 288 bytes (0.0 MiB)\n"
            "weight dtype: f32\n"
            "activations: f32\n"
            "arena: 528 bytes (0.0 MiB)\n"
            "limits: vocab 10, max_len 8, max batch 2, max seq 6\n"
            "kernels: 3 steps, 3 distinct kernels\n");
  for (const char *help : {"--help", "help", "run --help"}) {
    result = model(help);
    EXPECT_EQ(result.exitCode, 0) << help;
    EXPECT_EQ(result.out.rfind("usage: tfmc-runtime-fake-model <command>", 0),
              0u);
    EXPECT_EQ(result.err, "");
  }
}

TEST_F(CommandTest, EveryErrorIsOneLineAndExitCode1) {
  std::string w = " --weights " + weights;
  // Every command is named (the list once left out generate, bench and
  // convert-weights).
  const std::string commands = "run, generate, serve, bench, init-weights, "
                               "convert-weights, info, help";
  expectModelError("", "missing command (" + commands +
                           "); see 'tfmc-runtime-fake-model --help'");
  expectModelError("generat", "unknown command 'generat' (" + commands + ")");
  expectModelError("--weights x", "unknown option '--weights'; the command "
                                  "comes first (" + commands + ")");
  expectModelError("run --weights", "--weights needs a value");
  expectModelError("run" + w + " --bogus 1", "run: unknown option '--bogus'");
  expectModelError("run" + w + " stray", "run: unexpected argument 'stray'");
  expectModelError("run" + w + w + " --ids 1", "--weights is given twice");
  expectModelError("run --ids 1", "run needs --weights");
  expectModelError("run" + w, "run needs --input (with --output), --ids or --text");
  expectModelError("run" + w + " --input x", "run needs --output");
  expectModelError("run" + w + " --input x --output y --ids 1",
                   "run takes one of --input, --ids and --text");
  expectModelError("run" + w + " --ids 1 --pooling mean",
                   "--pooling is for --text");
  expectModelError("run" + w + " --text hi --pooling max",
                   "--pooling expects mean or cls, got 'max'");
  expectModelError("run" + w + " --text hi",
                   "--text needs --tokenizer DIR (tokenizer.json, "
                   "tokenizer.model, vocab.json and merges.txt, or vocab.txt)");
  expectModelError("run" + w + " --ids 1 --threads 0",
                   "--threads must be between 1 and 1024, got 0");
  expectModelError("run" + w + " --ids 1 --threads two",
                   "--threads expects a positive integer, got 'two'");
  expectModelError("run" + w + " --ids 1 --threads 99999999999999999999",
                   "--threads expects a positive integer, got "
                   "'99999999999999999999'");
  expectModelError("init-weights --seed -1 --output x",
                   "--seed expects a non-negative integer, got '-1'");
  expectModelError("init-weights --seed 1.5 --output x",
                   "--seed expects a non-negative integer, got '1.5'");
  expectModelError("init-weights --seed 1", "init-weights needs --output");
  expectModelError("serve" + w + " --port 70000",
                   "--port expects an integer from 0 to 65535, got '70000'");
  expectModelError("serve" + w + " --port 0 --api-key=",
                   "--api-key is empty");
  // The socket is bound before the model loads: a model that cannot
  // generate still ends with one line (and the listener stopped).
  expectModelError("serve" + w + " --port 0",
                   "model 'tiny' cannot generate (no decoder) and outputs "
                   "logits, not last_hidden_state: it has nothing to serve");
  expectModelError("serve --weights " + pathOf("missing.safetensors") +
                       " --port 0",
                   pathOf("missing.safetensors") +
                       ": cannot open: No such file or directory");
  expectModelError("info --verbose x", "info: unknown option '--verbose'");
  expectModelError("help me", "help: unexpected argument 'me'");

  std::string missing = pathOf("missing.safetensors");
  expectModelError("run --weights " + missing + " --ids 1",
                   missing + ": cannot open: No such file or directory");
  std::string noProj = writeWeights("noproj.safetensors", {}, "proj.weight");
  expectModelError("run --weights " + noProj + " --ids 1",
                   noProj + ": missing tensor 'proj.weight'");

  // Input files: unknown tensors, wrong dtypes, bad values; no output left.
  std::vector<int64_t> ids = {1, 2, 3};
  std::vector<float> floats = {1, 2, 3};
  std::string out = pathOf("out.safetensors");
  std::string extra = writeInputs("extra.safetensors",
                                  {intView("input_ids", {1, 3}, ids),
                                   intView("token_type_ids", {1, 3}, ids)});
  expectModelError("run" + w + " --input " + extra + " --output " + out,
                   extra + ": unknown input 'token_type_ids'; this model takes "
                           "input_ids, attention_mask");
  std::string floatIds = writeInputs("float.safetensors",
                                     {floatView("input_ids", {1, 3}, floats)});
  expectModelError("run" + w + " --input " + floatIds + " --output " + out,
                   floatIds +
                       ": tensor 'input_ids' has dtype F32, expected I64 "
                       "or I32");
  std::vector<int64_t> bigIds = {1, 2, 30};
  std::string badIds =
      writeInputs("bad.safetensors", {intView("input_ids", {1, 3}, bigIds)});
  expectModelError("run" + w + " --input " + badIds + " --output " + out,
                   "input_ids[0, 2] = 30 is not a token id (vocab 10)");
  std::string noIds = writeInputs("noids.safetensors",
                                  {intView("attention_mask", {1, 3}, ids)});
  expectModelError("run" + w + " --input " + noIds + " --output " + out,
                   "missing input 'input_ids'; this model takes input_ids, "
                   "attention_mask");
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));

  std::string unwritable = pathOf("no/such/dir/out.safetensors");
  std::string good =
      writeInputs("good.safetensors", {intView("input_ids", {1, 3}, ids)});
  Result result =
      model("run" + w + " --input " + good + " --output " + unwritable);
  EXPECT_EQ(result.exitCode, 1);
  // The output is checked before the forward pass: no "forward: " line.
  EXPECT_EQ(result.err, "tfmc-runtime-fake-model: error: --output " +
                            unwritable +
                            ": cannot write: No such file or directory\n");
}

TEST_F(CommandTest, ComparePassesAndFailsAtUnpaddedPositions) {
  // [2, 3, 2]: row 1 has two padded positions.
  std::vector<float> expected = {0.5f, -2, 1, 1, 3, 0, 4, 4, 9, 9, 9, 9};
  std::vector<int64_t> mask = {1, 1, 1, 1, 0, 0}, ids = {1, 1, 1, 1, 0, 0};
  std::string expectedPath = writeInputs(
      "expected.safetensors", {floatView("logits", {2, 3, 2}, expected)});
  std::string inputs = writeInputs("inputs.safetensors",
                                   {intView("input_ids", {2, 3}, ids),
                                    intView("attention_mask", {2, 3}, mask)});

  // Padded positions differ wildly; real ones within tolerance.
  std::vector<float> close = expected;
  close[0] += 3e-5f; // max |expected| over real positions is 4: tolerance 4e-5
  close[10] = 1000;
  std::string closePath =
      writeInputs("close.safetensors", {floatView("logits", {2, 3, 2}, close)});
  Result result =
      compare(expectedPath + " " + closePath + " --inputs " + inputs);
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out, "logits: max |diff| 3.0e-05 over 4 of 2 x 3 positions "
                        "(tolerance 4.0e-05)\n");

  // Without the inputs every position counts.
  result = compare(expectedPath + " " + closePath);
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_EQ(result.out,
            "logits[1, 2, 0]: expected 9, got 1000 (|diff| 9.9e+02 > "
            "tolerance 9.0e-05)\n");

  result = compare(expectedPath + " " + expectedPath + " --inputs " + inputs);
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.out, "logits: max |diff| 0.0e+00 over 4 of 2 x 3 positions "
                        "(tolerance 4.0e-05)\n");

  std::vector<float> far = expected;
  far[3] = 1.7f;
  std::string farPath =
      writeInputs("far.safetensors", {floatView("logits", {2, 3, 2}, far)});
  result = compare(expectedPath + " " + farPath + " --inputs " + inputs);
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_EQ(result.out, "logits[0, 1, 1]: expected 1, got 1.7 (|diff| 0.7 > "
                        "tolerance 4.0e-05)\n");
  result = compare(expectedPath + " " + farPath + " --inputs " + inputs +
                   " --tolerance 0.2");
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.out, "logits: max |diff| 7.0e-01 over 4 of 2 x 3 positions "
                        "(tolerance 8.0e-01)\n");

  std::vector<float> nan = expected;
  nan[1] = NAN;
  std::string nanPath =
      writeInputs("nan.safetensors", {floatView("logits", {2, 3, 2}, nan)});
  result = compare(expectedPath + " " + nanPath + " --inputs " + inputs);
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_EQ(result.out, "logits[0, 0, 1]: expected -2, got nan (|diff| inf > "
                        "tolerance 4.0e-05)\n");

  // The decoder's mask is preferred for an encoder-decoder's logits [B, T, V].
  std::vector<int64_t> encoderMask = {1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<int64_t> encoderIds = {1, 1, 1, 1, 1, 1, 1, 1};
  std::string encDec = writeInputs(
      "encdec.safetensors", {intView("input_ids", {2, 4}, encoderIds),
                             intView("attention_mask", {2, 4}, encoderMask),
                             intView("decoder_input_ids", {2, 3}, ids),
                             intView("decoder_attention_mask", {2, 3}, mask)});
  result = compare(expectedPath + " " + closePath + " --inputs " + encDec);
  EXPECT_EQ(result.exitCode, 0) << result.out;

  std::vector<float> hidden = expected;
  std::string hiddenPath =
      writeInputs("hidden.safetensors",
                  {floatView("last_hidden_state", {2, 3, 2}, hidden)});
  result = compare(hiddenPath + " " + hiddenPath);
  EXPECT_EQ(result.out, "last_hidden_state: max |diff| 0.0e+00 over 6 of 2 x "
                        "3 positions (tolerance 9.0e-05)\n");

  // A mask that hides every position leaves nothing to compare: that is a
  // failure, not a pass, whatever the outputs hold.
  std::vector<int64_t> none = {0, 0, 0, 0, 0, 0};
  std::string masked = writeInputs("masked.safetensors",
                                   {intView("input_ids", {2, 3}, ids),
                                    intView("attention_mask", {2, 3}, none)});
  result = compare(expectedPath + " " + farPath + " --inputs " + masked);
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_EQ(result.out, "logits: no value compared (0 of 2 x 3 positions, "
                        "each of 2 values)\n");
}

TEST_F(CommandTest, CompareErrors) {
  std::vector<float> values(12, 1.0f);
  std::string a =
      writeInputs("a.safetensors", {floatView("logits", {2, 3, 2}, values)});
  std::string b =
      writeInputs("b.safetensors", {floatView("logits", {3, 2, 2}, values)});
  std::string c = writeInputs(
      "c.safetensors", {floatView("last_hidden_state", {2, 3, 2}, values)});
  std::string missing = pathOf("missing.safetensors");
  expectError(compare(a + " " + b),
              "tfmc-compare: error: " + b +
                  ": tensor 'logits' has shape [3, 2, 2], "
                  "but " +
                  a + " has [2, 3, 2]");
  expectError(compare(a + " " + c),
              "tfmc-compare: error: " + c + ": missing tensor 'logits'");
  expectError(compare(a + " " + missing),
              "tfmc-compare: error: " + missing +
                  ": cannot open: No such file or directory");
  expectError(compare(a + " " + a + " --inputs " + missing),
              "tfmc-compare: error: " + missing +
                  ": cannot open: No such file or directory");
  expectError(compare(a), "tfmc-compare: error: expected two files: "
                          "EXPECTED.safetensors ACTUAL.safetensors");
  expectError(compare(a + " " + a + " --tolerance x"),
              "tfmc-compare: error: --tolerance expects a non-negative number, "
              "got 'x'");
  expectError(compare(a + " " + a + " --inputs"),
              "tfmc-compare: error: --inputs needs a value");
  expectError(compare(a + " " + a + " --bogus"),
              "tfmc-compare: error: unknown option '--bogus'");
}

TEST_F(CommandTest, CompareAFixtureWithItself) {
  std::string fixture =
      std::string(TFMC_SOURCE_DIR) + "/test/fixtures/encdec_post/";
  Result result = compare(fixture + "expected.safetensors " + fixture +
                          "expected.safetensors --inputs " + fixture +
                          "inputs.safetensors");
  EXPECT_EQ(result.exitCode, 0) << result.err;
  // decoder rows 29 and 17 of T 29
  EXPECT_EQ(result.out.rfind(
                "logits: max |diff| 0.0e+00 over 46 of 2 x 29 positions", 0),
            0u)
      << result.out;
}

} // namespace
