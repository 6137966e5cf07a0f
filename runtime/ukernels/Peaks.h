//===- Peaks.h - Probes of one core's arithmetic peak, per ISA -*- C++ -*-===//
//
// What `NAME bench` measures each kernel against (runtime/core/Roofline.h):
// each probe runs `iterations` steps of 12 independent chains of one
// instruction set's widest multiply-add (enough to cover its latency on
// two pipes; AMX: 4 tile accumulators) on the calling thread, and returns
// the operations per second (a multiply-add is 2). Compiled, as the microkernels are, one
// file per instruction set; call one only where the CPU has it.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_PEAKS_H
#define TFMC_RUNTIME_UKERNELS_PEAKS_H

#include <cstdint>

namespace tfmc::runtime::ukernels {

/// f32 FMAs: vfmadd on ymm (AVX2 + FMA) or zmm (AVX512F).
double f32PeakAvx2(int64_t iterations);
double f32PeakAvx512(int64_t iterations);
/// int8 products as the integer microkernels compute them: vpmaddubsw,
/// vpmaddwd and vpaddd on ymm (AVX2: 32 products), vpdpbusd on zmm
/// (AVX512-VNNI: 64 products).
double int8PeakAvx2(int64_t iterations);
double int8PeakVnni(int64_t iterations);
/// int8 products of AMX's tdpbssd (16 x 16 x 64 a tile product), for a CPU
/// whose block-panel microkernel runs it (Microkernels.cpp's cpuHasAmx).
double int8PeakAmx(int64_t iterations);

} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_PEAKS_H
