//===- BenchMachine.h - The machine's limits, measured for bench -*- C++ -*-===//
//
// `NAME bench` measures, in the same run as its kernels, what the roofline
// (runtime/core/Roofline.h) bounds them by: the read bandwidth of memory
// and the arithmetic peak of the program's instruction set, each on the
// threads the kernels run on, each the median of a few passes.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_CLI_BENCHMACHINE_H
#define TFMC_RUNTIME_CLI_BENCHMACHINE_H

#include "runtime/core/Roofline.h"

#include <string>

namespace tfmc::runtime::cli {

/// What to measure, and how it was measured (for the report).
struct MachineProbe {
  MachineRoof roof;
  int threads = 0;
  std::string f32Probe, int8Probe; // the instructions timed ("" if none)
};

/// Measures the machine for a program of `target` (x86-64-avx2 or
/// x86-64-avx512*; any other target, a GPU's, gets no figures, and the
/// result's threads is 0) on `threads` threads: the read bandwidth, the
/// f32 FMA peak, and with `int8` the peak of the integer microkernels'
/// products on this CPU.
MachineProbe measureMachine(const std::string &target, int threads, bool int8);

} // namespace tfmc::runtime::cli

#endif // TFMC_RUNTIME_CLI_BENCHMACHINE_H
