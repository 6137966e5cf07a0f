//===- Canary.cpp - Proof that a sanitizer report fails the run -----------===//
//
// tfmc-sanitizer-canary, built only in sanitized builds (TFMC_SANITIZE):
// reads element 3 of a 4-element heap array, or element 4, one past its end,
// when TFMC_SANITIZER_CANARY=1 (`make check-sanitize SANITIZER_CANARY=1`).
// AddressSanitizer then writes a report under ASAN_OPTIONS' log_path and
// run_tests.py counts it as a failure of the run, whichever test started
// the process (sanitizers/canary.test lets the process fail on purpose).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main() {
  const char *canary = std::getenv("TFMC_SANITIZER_CANARY");
  const int index = canary && std::strcmp(canary, "1") == 0 ? 4 : 3;
  int *data = new int[4]{1, 2, 3, 4};
  volatile int value = data[index];
  std::printf("canary read element %d of 4: %d\n", index, int(value));
  delete[] data;
  return 0;
}
