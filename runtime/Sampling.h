// TEMPORARY stand-in (lead's local build only; replaced by wip-sample)
#ifndef TFMC_RUNTIME_SAMPLING_H
#define TFMC_RUNTIME_SAMPLING_H
#include <cmath>
#include <cstdint>
#include <vector>
namespace tfmc::runtime {
struct SamplingOptions {
  double temperature = 0; int64_t topK = 0; double topP = 1; uint64_t seed = 0;
  double repetitionPenalty = 1;
};
inline void applyRepetitionPenalty(float *, int64_t, const std::vector<int64_t> &, double) {}
inline void logSoftmax(float *l, int64_t v) {
  float m = l[0]; for (int64_t i = 1; i < v; ++i) m = std::max(m, l[i]);
  double s = 0; for (int64_t i = 0; i < v; ++i) s += std::exp(double(l[i] - m));
  float ls = float(std::log(s)); for (int64_t i = 0; i < v; ++i) l[i] = l[i] - m - ls;
}
class Sampler {
public:
  Sampler(const SamplingOptions &, uint64_t) {}
  int64_t next(float *l, int64_t v, const std::vector<int64_t> &) {
    int64_t b = 0; for (int64_t i = 1; i < v; ++i) if (l[i] > l[b]) b = i; return b; }
};
}
#endif
