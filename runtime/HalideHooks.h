//===- HalideHooks.h - The runtime's calls into Halide's runtime -*- C++
//-*-===//
//
// The only functions of Halide's runtime that the executor calls. They are
// defined by the standalone Halide runtime object that codegen links into
// every compiled model; unit tests, which have no such object, link a test
// double of this header instead of HalideHooks.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_HALIDEHOOKS_H
#define TFMC_RUNTIME_HALIDEHOOKS_H

#include <string>

namespace tfmc::runtime {

/// Routes Halide's runtime errors (halide_error) into a per-thread "last
/// message" instead of stderr. Idempotent and thread-safe.
void installHalideErrorHandler();

/// The last message Halide reported on this thread, on one line, and clears
/// it. When the failure was reported on one of Halide's worker threads, the
/// last message of any thread. Empty when there is none.
std::string takeHalideError();

/// Sets the size of Halide's thread pool (threads >= 1).
void setHalideThreads(int threads);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_HALIDEHOOKS_H
