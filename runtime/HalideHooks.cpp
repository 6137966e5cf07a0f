//===- HalideHooks.cpp - The runtime's calls into Halide's runtime --------===//
//
// Links against the Halide runtime object of a compiled model (never
// libHalide). Halide's error handler is process-wide; the message lands in a
// thread-local string so that concurrent models on different threads each
// see their own failure, with a process-wide copy as the fallback for errors
// raised on Halide's worker threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/HalideHooks.h"

#include <HalideRuntime.h>

#include <mutex>

namespace tfmc::runtime {
namespace {

thread_local std::string lastThreadError;
std::mutex lastAnyErrorMutex;
std::string lastAnyError;

std::string oneLine(const char *message) {
  std::string text = message ? message : "";
  while (!text.empty() &&
         (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  std::string line;
  for (char c : text)
    line += (c == '\n' || c == '\r') ? std::string("; ") : std::string(1, c);
  if (line.rfind("Error: ", 0) == 0)
    line.erase(0, 7);
  return line;
}

extern "C" void tfmcHalideErrorHandler(void *, const char *message) {
  // No allocation may escape into Halide's C code as an exception.
  try {
    std::string line = oneLine(message);
    {
      std::lock_guard<std::mutex> lock(lastAnyErrorMutex);
      lastAnyError = line;
    }
    lastThreadError = std::move(line);
  } catch (...) {
  }
}

} // namespace

void installHalideErrorHandler() {
  static std::once_flag installed;
  std::call_once(installed,
                 [] { halide_set_error_handler(tfmcHalideErrorHandler); });
}

std::string takeHalideError() {
  std::string message;
  message.swap(lastThreadError);
  std::lock_guard<std::mutex> lock(lastAnyErrorMutex);
  if (message.empty())
    message = lastAnyError;
  lastAnyError.clear();
  return message;
}

void setHalideThreads(int threads) { halide_set_num_threads(threads); }

} // namespace tfmc::runtime
