//===- Auth.h - serve's API key, response ids and times ---------*- C++ -*-===//
//
// `serve --api-key KEY`: every /v1 request must carry
// "Authorization: Bearer KEY" (OpenAI's clients send it), compared in time
// that does not depend on where a wrong key differs. And the ids and
// `created` times of OpenAI's response bodies.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_AUTH_H
#define TFMC_RUNTIME_SERVE_AUTH_H

#include <cstdint>
#include <string>

namespace tfmc::runtime::serve {

/// Whether two strings are equal, in time that depends on the length of
/// `expected` alone.
bool sameSecret(const std::string &given, const std::string &expected);

/// Whether an Authorization header's value is "Bearer " + `apiKey`. No key
/// (empty) admits every request.
bool bearerAuthorized(const std::string &authorization,
                      const std::string &apiKey);

/// `prefix` and 16 random hex digits ("chatcmpl-3f9c..."); thread-safe.
std::string randomId(const char *prefix);

/// Seconds since 1970, as OpenAI's `created`.
int64_t unixTime();

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_AUTH_H
