// TEMPORARY stand-in (lead's local build only; replaced by wip-stream)
#ifndef TFMC_RUNTIME_GENERATEOPTIONS_H
#define TFMC_RUNTIME_GENERATEOPTIONS_H
#include "runtime/BeamSearch.h"
#include "runtime/Sampling.h"
#include <string>
namespace tfmc::runtime {
inline bool checkGenerateOptions(const SamplingOptions &, const BeamOptions &, int64_t, bool, std::string &) { return true; }
}
#endif
