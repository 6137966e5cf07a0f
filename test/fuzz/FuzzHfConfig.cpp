//===- FuzzHfConfig.cpp - Hugging Face config.json importer ---------------===//
//
// The text of a config.json, as `tfmc DIR` imports it. A config either maps
// onto a model that dumps (`--emit ast`) or is an error with a one-line
// message naming the file; crashes and sanitizer reports are findings.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "compiler/frontend/AST.h"
#include "compiler/frontend/HfConfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = "fuzz/gpt2/config.json";
  tfmc::frontend::ParseResult result = tfmc::frontend::importHfConfigText(
      std::string(tfmc::fuzz::asText(data, size)), path);
  if (result) {
    TFMC_FUZZ_CHECK(!tfmc::frontend::dumpModel(*result.model).empty());
  } else {
    std::string message = result.error->str();
    TFMC_FUZZ_CHECK(message.rfind(path, 0) == 0);
    TFMC_FUZZ_CHECK(message.find('\n') == std::string::npos);
  }
  return 0;
}
