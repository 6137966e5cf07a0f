//===- Canary.cpp - Proof that a sanitizer report fails the run -----------===//
//
// tfmc-sanitizer-canary, built only in sanitized builds (TFMC_SANITIZE):
// reads element 3 of a 4-element heap array before freeing it, or after
// freeing it when TFMC_SANITIZER_CANARY=1 (`make check-sanitize
// SANITIZER_CANARY=1`). AddressSanitizer then writes a heap-use-after-free
// report under ASAN_OPTIONS' log_path and run_tests.py counts it as a
// failure of the run, whichever test started the process
// (sanitizers/canary.test lets the process fail on purpose).
//
// A use after free, not a read past the end: UBSan's object-size check
// catches that first, and in GCC's combined ASan + UBSan build UBSan's
// reports go to stderr, not to a log file (docs/testing.md, "Sanitizers").
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main() {
  const char *canary = std::getenv("TFMC_SANITIZER_CANARY");
  const bool bad = canary && std::strcmp(canary, "1") == 0;
  int *data = new int[4]{1, 2, 3, 4};
  int *volatile alias = data; // opaque to the compiler
  if (bad)
    delete[] data;
  volatile int value = alias[3];
  std::printf("canary read element 3 of 4%s: %d\n",
              bad ? " after freeing it" : "", int(value));
  if (!bad)
    delete[] data;
  return 0;
}
