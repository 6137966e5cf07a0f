//===- GgufImport.h - llama.cpp's GGUF files -> AST -------------*- C++ -*-===//
//
// `tfmc model.gguf` compiles a GGUF file's architecture (docs/gguf.md). The
// header, the metadata and the tensor infos are read through support/Gguf.h
// (never the tensor data: a file of many GB costs what its metadata costs).
// The architecture's metadata is translated into the Hugging Face config
// keys of the family it is (HfFamily.h: llama and qwen2 -> HfLlama.cpp's,
// gpt2 -> HfGpt2.cpp's) and read by that family's reader, so that a GGUF
// file and the checkpoint it was converted from give the same AST but for
// the weight names (`gguf-llama`, `gguf-gpt2`: llama.cpp's tensor names).
// A message of that reader names the Hugging Face key; it is mapped back
// through the same table, so that every error names the GGUF key or tensor:
// `model.gguf: error: key 'llama.block_count': expected a positive
// integer, found 0`.
//
// The file's tensor types also say how the weights are stored
// (Model::fileWeights): the dominant type of its 2-D tensors, by values,
// gives the weight dtype tfmc compiles with when --weight-dtype is not
// given (Q8_0 -> int8 in groups of 32, Q4_0 -> int4, BF16 -> bf16, the
// K-quants -> int8 in groups of 32, F32 and F16 -> f32).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_GGUFIMPORT_H
#define TFMC_FRONTEND_GGUFIMPORT_H

#include "compiler/frontend/AST.h"

#include <string>

namespace tfmc::frontend {

/// Reads the GGUF file at `path` and maps its architecture onto a Model
/// named after the file's stem; diagnostics name `path`, with line and
/// column 0.
ParseResult importGgufFile(const std::string &path);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_GGUFIMPORT_H
