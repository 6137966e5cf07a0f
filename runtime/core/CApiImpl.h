//===- CApiImpl.h - What the C API's files share ------------------*- C++ -*-===//
//
// Private to the runtime: the C handle of a model and the error discipline
// of every C entry point (core/CApi.cpp; generate/GenerateCApi.cpp for the
// generation functions, linked only into models with a decoder).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_CORE_CAPIIMPL_H
#define TFMC_RUNTIME_CORE_CAPIIMPL_H

#include "runtime/core/Model.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <new>
#include <string>

struct tfmc_model {
  std::unique_ptr<tfmc::runtime::Model> model;
};

namespace tfmc::runtime::capi {

/// The message of this thread's last failure (tfmc_last_error()).
std::string &lastError();

/// Sets the last error (one line); returns 1, a C entry point's failure.
inline int failWith(const std::string &message) {
  try {
    // The same one-line form as the command line's errors.
    lastError() = support::oneLine(message);
  } catch (...) {
    // Keep whatever was there; there is no memory for more.
  }
  return 1;
}

/// Runs the body of a C entry point (which returns 0, or failWith(...)),
/// turning anything it throws into the thread's last error: no exception
/// crosses the C API.
template <typename Body> int guarded(const char *entryPoint, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return failWith("out of memory");
  } catch (const std::exception &e) {
    return failWith(e.what());
  } catch (...) {
    return failWith(fmt::format("{}: unknown error", entryPoint));
  }
}

} // namespace tfmc::runtime::capi

#endif // TFMC_RUNTIME_CORE_CAPIIMPL_H
