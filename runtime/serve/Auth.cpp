//===- Auth.cpp - serve's API key, response ids and times -----------------===//

#include "runtime/serve/Auth.h"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <random>

namespace tfmc::runtime::serve {

bool sameSecret(const std::string &given, const std::string &expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i)
    difference |= static_cast<unsigned char>(
        expected[i] ^ (i < given.size() ? given[i] : 0));
  return difference == 0;
}

bool bearerAuthorized(const std::string &authorization,
                      const std::string &apiKey) {
  if (apiKey.empty())
    return true;
  const std::string bearer = "Bearer ";
  const std::string given = authorization.compare(0, bearer.size(), bearer) == 0
                                ? authorization.substr(bearer.size())
                                : "";
  return sameSecret(given, apiKey);
}

std::string randomId(const char *prefix) {
  static std::mutex mutex;
  static std::mt19937_64 engine{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mutex);
  return fmt::format("{}{:016x}", prefix, engine());
}

int64_t unixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace tfmc::runtime::serve
