/* A stand-in for the CUDA driver (libcuda.so.1) for the tests of what a
 * CUDA build says when the driver is there but cannot be used. It defines
 * the three calls tfmc's runtime makes before Halide's: cuInit returns
 * $FAKE_CUINIT (default 0), cuDeviceGetCount reports $FAKE_DEVICES (default
 * 0) GPUs. */
#include <stdlib.h>

static int fromEnv(const char *name, int fallback) {
  const char *value = getenv(name);
  return value ? atoi(value) : fallback;
}

int cuInit(unsigned int flags) {
  (void)flags;
  return fromEnv("FAKE_CUINIT", 0);
}

int cuDeviceGetCount(int *count) {
  *count = fromEnv("FAKE_DEVICES", 0);
  return 0;
}

int cuGetErrorName(int error, const char **name) {
  switch (error) {
  case 100:
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  case 999:
    *name = "CUDA_ERROR_UNKNOWN";
    return 0;
  default:
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  }
}
