//===- BenchMachine.cpp - The machine's limits, measured for bench ---------===//

#include "runtime/cli/BenchMachine.h"
#include "runtime/ukernels/Microkernels.h"
#include "runtime/ukernels/Peaks.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace tfmc::runtime::cli {
namespace {

/// Bytes the bandwidth probe reads a pass: far more than any last-level
/// cache of the machines tfmc runs on.
constexpr std::size_t kProbeBytes = std::size_t(256) << 20;
constexpr int kPasses = 5;
/// Steps of each peak probe (about 20 ms on a 2026 core).
constexpr int64_t kPeakSteps = 10'000'000;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// `body(t)` on threads 0 .. threads - 1 at once; returns the seconds of
/// the slowest.
template <class Body> double onThreads(int threads, Body body) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t)
    others.emplace_back([&body, t] { body(t); });
  body(0);
  for (std::thread &other : others)
    other.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Bytes a second that `threads` threads read from memory together, each
/// summing its own slice (which it wrote first, so its pages are its own).
double readBandwidth(int threads) {
  const std::size_t words = kProbeBytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[words]);
  const std::size_t slice = words / std::size_t(threads);
  std::vector<uint64_t> sums(std::size_t(threads), 0);
  onThreads(threads, [&](int t) {
    std::fill(buffer.get() + slice * t, buffer.get() + slice * (t + 1),
              uint64_t(t + 1));
  });
  std::vector<double> rates;
  for (int pass = 0; pass < kPasses; ++pass) {
    const double seconds = onThreads(threads, [&](int t) {
      const uint64_t *words = buffer.get() + slice * t;
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (std::size_t i = 0; i + 4 <= slice; i += 4) {
        s0 += words[i];
        s1 += words[i + 1];
        s2 += words[i + 2];
        s3 += words[i + 3];
      }
      sums[std::size_t(t)] += s0 + s1 + s2 + s3;
    });
    rates.push_back(double(slice * std::size_t(threads) * sizeof(uint64_t)) /
                    seconds);
  }
  volatile uint64_t sink = sums[0];
  (void)sink;
  return median(rates);
}

/// The summed rate of `probe` run on every thread at once (median of 3).
double peak(int threads, double (*probe)(int64_t)) {
  std::vector<double> rates;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<double> each(std::size_t(threads), 0);
    onThreads(threads, [&](int t) { each[std::size_t(t)] = probe(kPeakSteps); });
    double total = 0;
    for (double rate : each)
      total += rate;
    rates.push_back(total);
  }
  return median(rates);
}

} // namespace

MachineProbe measureMachine(const std::string &target, int threads, bool int8) {
  MachineProbe probe;
  const bool avx512 = target.rfind("x86-64-avx512", 0) == 0;
  if (!avx512 && target != "x86-64-avx2")
    return probe;
  probe.threads = std::max(1, threads);
  probe.roof.readBytesPerSecond = readBandwidth(probe.threads);
  probe.f32Probe = avx512 ? "vfmadd231ps zmm" : "vfmadd231ps ymm";
  probe.roof.f32OpsPerSecond =
      peak(probe.threads, avx512 ? ukernels::f32PeakAvx512 : ukernels::f32PeakAvx2);
  if (int8) {
    // What the integer microkernels run here (Microkernels.cpp's choice):
    // with AMX, the block panels' form of 16 rows or more multiplies by
    // tdpbssd, whose peak is the roof (the forms of fewer rows, vpdpbusd,
    // reach a sixth of it at most).
    const bool amx = avx512 && ukernels::cpuHasAmx();
    const bool vnni = avx512 && ukernels::cpuHasVnni();
    probe.int8Probe = amx    ? "tdpbssd 16x16x64"
                      : vnni ? "vpdpbusd zmm"
                             : "vpmaddubsw+vpmaddwd ymm";
    probe.roof.int8OpsPerSecond =
        peak(probe.threads, amx    ? ukernels::int8PeakAmx
                            : vnni ? ukernels::int8PeakVnni
                                   : ukernels::int8PeakAvx2);
  }
  return probe;
}

} // namespace tfmc::runtime::cli
