//===- Scratch.h - A thread's scratch memory for the microkernels -*- C++ -*-===//
//
// What a microkernel repacks per call (IntegerPanels.h: a panel of W)
// lives in a thread_local Scratch: 64-byte aligned, so that its vector loads and
// stores split no cache line, and kept between calls, so that a call
// allocates nothing once its thread has seen the largest shape.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_SCRATCH_H
#define TFMC_RUNTIME_UKERNELS_SCRATCH_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace tfmc::runtime::ukernels {

/// A thread's scratch memory, 64-byte aligned, kept between calls.
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { std::free(memory); }
  void reserve(std::size_t bytes) {
    if (bytes <= size)
      return;
    std::free(memory);
    size = (bytes + 63) / 64 * 64;
    memory = std::aligned_alloc(64, size);
    if (memory == nullptr)
      throw std::bad_alloc();
  }
  uint8_t *bytes() { return static_cast<uint8_t *>(memory); }
  float *floats() { return static_cast<float *>(memory); }

private:
  void *memory = nullptr;
  std::size_t size = 0;
};

} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_SCRATCH_H
