//===- PeakChains.h - The timing loop of Peaks.h's probes -----*- C++ -*-===//
//
// kChains independent chains of one multiply-add instruction, each from
// its own value (a compiler merges chains that are the same expression,
// and a probe of 12 then times 2), timed over `iterations` steps. Each
// Peak*.cpp includes it with its own instruction set's flags.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_PEAKCHAINS_H
#define TFMC_RUNTIME_UKERNELS_PEAKCHAINS_H

#include <chrono>
#include <cstdint>

namespace tfmc::runtime::ukernels {
namespace {

/// Enough chains to cover a multiply-add's latency on two pipes.
constexpr int kChains = 12;

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Operations a second of kChains chains acc[i] = step(acc[i]) from
/// acc[i] = start(i), each step `ops` operations. The chains' last values
/// go to memory through an empty asm, so that none is dead.
template <class T, class Start, class Step>
double chainRate(int64_t iterations, double ops, Start start, Step step) {
  T acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = start(i);
  const auto began = std::chrono::steady_clock::now();
  for (int64_t n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i)
      acc[i] = step(acc[i]);
  }
  const double elapsed = secondsSince(began);
  __asm__ volatile("" : : "m"(acc));
  return double(iterations) * kChains * ops / elapsed;
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_PEAKCHAINS_H
