//===- HfConfig.h - Hugging Face config.json -> AST -------------*- C++ -*-===//
//
// `tfmc DIR` or `tfmc DIR/config.json` compiles a Hugging Face checkpoint's
// architecture. The config is mapped onto the same AST a .tfm description
// gives, so everything after the frontend is shared; only the weight names
// differ (Model::weightNaming, compiler/frontend/WeightNames.h).
//
// Supported: the model_types the families of compiler/frontend/families/
// register (HfFamily.h; docs/families.md). Every key of the config is
// either honoured, checked, or on an explicit list of keys that cannot
// change the forward pass (dropout, task heads, tokens, metadata); any
// other key is an error naming it, as is a value tfmc cannot compile.
// Errors are one line: `PATH: error: key 'K': ...`.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_HFCONFIG_H
#define TFMC_FRONTEND_HFCONFIG_H

#include "compiler/frontend/AST.h"

#include <string>

namespace tfmc::frontend {

/// Maps the text of a config.json onto a Model (ModelFile.h reads it);
/// diagnostics name `configPath`, with line and column 0, and the model is
/// named after the directory that holds it.
ParseResult importHfConfigText(const std::string &text,
                               const std::string &configPath);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_HFCONFIG_H
