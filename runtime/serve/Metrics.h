//===- Metrics.h - NAME serve's Prometheus metrics --------------*- C++ -*-===//
//
// GET /metrics in Prometheus's text exposition format (version 0.0.4):
// requests by endpoint and status, prompt and generated tokens, the queue
// and the batch, and histograms of the time to first token and the time
// per output token. Thread-safe; every handler records into one Metrics.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_METRICS_H
#define TFMC_RUNTIME_SERVE_METRICS_H

#include "runtime/generate/ContinuousBatcher.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::runtime::serve {

/// A cumulative histogram over fixed upper bounds (seconds).
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// NAME_bucket{le=...}, NAME_sum, NAME_count lines.
  void write(std::string &out, const std::string &name) const;

private:
  std::vector<double> bounds;
  std::vector<uint64_t> counts; // per bound, then +Inf
  double sum = 0;
  uint64_t count = 0;
};

class Metrics {
public:
  Metrics();
  void request(const std::string &endpoint, int status);
  void tokens(int64_t prompt, int64_t generated);
  void firstToken(double seconds);
  void perToken(double seconds);
  /// The whole exposition; the gauges are the caller's (queue, batch), and
  /// so are the count of prompt chunks run beside a running batch and the
  /// prefix cache's figures.
  std::string text(const BatcherState &state) const;

private:
  mutable std::mutex mutex;
  std::map<std::pair<std::string, int>, uint64_t> requests;
  uint64_t promptTokens = 0, generatedTokens = 0;
  Histogram timeToFirstToken, timePerToken;
};

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_METRICS_H
