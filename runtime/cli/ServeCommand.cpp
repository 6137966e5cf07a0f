//===- ServeCommand.cpp - NAME serve ---------------------------------------===//
//
//   NAME serve --weights W [--tokenizer DIR] [--host 127.0.0.1] [--port 8080]
//              [--threads N] [--api-key KEY] [--model-id ID] [--max-queue N]
//              [--max-body-bytes N] [--read-timeout S] [--shutdown-timeout S]
//              [--pooling mean|cls]  (encoder-only models: /v1/embeddings)
//              [--prefill-chunk N]  (a newcomer's prompt, N tokens a step)
//              [--prefix-cache MIB]  (prompts' cached prefixes, 0: none)
//
// The command line checked into ServerSettings, the tokenizer and its chat
// template read, and the server run (runtime/serve/Server.h), which loads
// the model once it listens.
//
//===----------------------------------------------------------------------===//

#include "runtime/cli/Cli.h"
#include "runtime/serve/Server.h"
#include "support/Text.h"

#include <fmt/format.h>

namespace tfmc::runtime::cli {

int serveCommand(int argc, char **argv) {
  Options options("serve",
                  {"--weights", "--tokenizer", "--host", "--port", "--threads",
                   "--api-key", "--model-id", "--max-queue",
                   "--max-body-bytes", "--read-timeout", "--shutdown-timeout",
                   "--pooling", "--prefill-chunk", "--prefix-cache"},
                  argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &plan = requirePlan();
  serve::ServerSettings settings;
  settings.programName = programName();
  settings.modelId =
      options.has("--model-id") ? options.get("--model-id") : programName();
  if (options.has("--api-key")) {
    settings.apiKey = options.get("--api-key");
    if (settings.apiKey.empty())
      fail("--api-key is empty");
  }
  if (options.has("--host"))
    settings.host = options.get("--host");
  settings.port = integerOption(options, "--port", 8080, 0, 65535);
  settings.maxQueue = integerOption(options, "--max-queue", 64, 1, 4096);
  settings.maxBodyBytes =
      integerOption(options, "--max-body-bytes", 1 << 20, 1024, 1 << 30);
  settings.readTimeout =
      integerOption(options, "--read-timeout", 30, 1, 3600);
  settings.shutdownTimeout =
      integerOption(options, "--shutdown-timeout", 30, 0, 3600);
  settings.prefillChunk = integerOption(
      options, "--prefill-chunk", ContinuousBatcher::kDefaultPrefillChunk, 0,
      plan.maxLen);
  settings.prefixCacheMiB = integerOption(
      options, "--prefix-cache", serve::ServerSettings::kDefaultPrefixCacheMiB,
      0, int64_t(1) << 20);
  settings.prefixCacheGiven = options.has("--prefix-cache");
  if (options.has("--pooling")) {
    settings.pooling = options.get("--pooling");
    if (settings.pooling != "mean" && settings.pooling != "cls")
      fail(fmt::format("--pooling expects mean or cls, got {}",
                       support::quote(settings.pooling)));
  }
  serve::ServedText text;
  if (options.has("--tokenizer")) {
    const std::string &dir = options.get("--tokenizer");
    std::string error;
    text.tokenizer = loadTokenizer(dir, error);
    if (!text.tokenizer ||
        !readPromptTokens(dir, *text.tokenizer, text.promptTokens, error) ||
        !serve::readChatSetup(dir, *text.tokenizer, text.chat, error))
      fail(error);
  }

  serve::Server server(settings, plan, std::move(text));
  std::string error;
  if (!server.run(
          [&] {
            std::unique_ptr<Model> model = loadModel(weightsPath(options));
            applyThreads(options);
            return model;
          },
          error))
    fail(error);
  return 0;
}

} // namespace tfmc::runtime::cli
