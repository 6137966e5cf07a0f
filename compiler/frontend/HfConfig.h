//===- HfConfig.h - Hugging Face config.json -> AST -------------*- C++ -*-===//
//
// `tfmc DIR` or `tfmc DIR/config.json` compiles a Hugging Face checkpoint's
// architecture. The config is mapped onto the same AST a .tfm description
// gives, so everything after the frontend is shared; only the weight names
// differ (Model::weightNaming, compiler/frontend/WeightNames.h).
//
// Supported: `model_type: gpt2` (DESIGN.md, "GPT-2 import honours ...").
// Every key of the config is either honoured, checked, or on an explicit
// list of keys that cannot change the forward pass (dropout, task heads,
// tokens, metadata); any other key is an error naming it, as is a value
// tfmc cannot compile. Errors are one line: `PATH: error: key 'K': ...`.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_HFCONFIG_H
#define TFMC_FRONTEND_HFCONFIG_H

#include "compiler/frontend/AST.h"

#include <string>

namespace tfmc::frontend {

/// Whether `path` names a Hugging Face config: a directory (that should
/// hold config.json) or a file whose name ends in `.json`.
bool isHfConfigPath(const std::string &path);

/// Reads `path` (a config.json, or a directory holding one) and maps it onto
/// a Model. Diagnostics name the config.json path, with line and column 0.
ParseResult importHfConfig(const std::string &path);

/// Same, from the text of a config; diagnostics name `configPath`, and the
/// model is named after the directory that holds it.
ParseResult importHfConfigText(const std::string &text,
                               const std::string &configPath);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_HFCONFIG_H
