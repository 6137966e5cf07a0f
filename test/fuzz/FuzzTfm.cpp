//===- FuzzTfm.cpp - .tfm descriptions through the middle end -------------===//
//
// A .tfm description, as `tfmc FILE --emit mlir-opt` compiles it: lexer,
// parser, the tfm builder, the dialect's verifiers and the default pipeline
// (fusion, tiling, memory planning). Any input must either compile or fail
// with diagnostics; crashes, sanitizer reports and hangs are findings.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "compiler/driver/Driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfmc::fuzz::MemoryFile file("fuzz.tfm");
  tfmc::driver::CompileOptions options;
  options.inputPath = file.write(tfmc::fuzz::asText(data, size));
  options.emit = tfmc::driver::Emit::MlirOpt;
  (void)tfmc::driver::compile(options, llvm::nulls(), llvm::nulls());
  return 0;
}
